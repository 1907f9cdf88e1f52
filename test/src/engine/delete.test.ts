import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine, secretMirror } from '../support/engine.js';
import { eventually } from '../support/eventually.js';

describe('deleting a mirror', () => {
  let e: Engine;

  beforeAll(async () => {
    e = await Engine.start();
    for (const ns of ['src', 'app-1', 'app-2']) await e.ensureNamespace(ns);
    await e.putSecret('src', 'token', { token: 'abc' });
  });

  afterAll(async () => {
    await e?.stop();
  });

  async function mirrorAndWait(name: string, deletePolicy: 'Delete' | 'Retain') {
    await e.applyMirror(
      secretMirror('src', name, {
        source: { kind: 'Secret', name: 'token' },
        destination: { namespaces: ['app-.*'], name },
        deletePolicy,
        pollPeriodSeconds: 3600,
      }),
    );
    await eventually(async () => {
      expect(await e.readSecret('app-1', name)).toBeDefined();
      expect(await e.readSecret('app-2', name)).toBeDefined();
    });
    // The hub guards its cleanup with a finalizer before it writes anything.
    expect((await e.getMirror('SecretMirror', name, 'src'))?.metadata?.finalizers).toContain(
      'mirrorhub.io/hub-cleanup',
    );
  }

  it('removes every copy under deletePolicy Delete, and the delivery with its payload', async () => {
    await mirrorAndWait('del', 'Delete');
    await e.deleteMirror('SecretMirror', 'del', 'src');
    await eventually(async () => {
      expect(await e.readSecret('app-1', 'del')).toBeUndefined();
      expect(await e.readSecret('app-2', 'del')).toBeUndefined();
      expect(await e.getMirror('SecretMirror', 'del', 'src')).toBeUndefined();
    });
    expect((await e.deliveries()).filter((d) => d.spec.target.name === 'del')).toEqual([]);
    const payloads = await e.core().listNamespacedSecret({
      namespace: 'mirrorhub-system',
      labelSelector: 'mirrorhub.io/payload=true',
    });
    expect(payloads.items.filter((s) => s.metadata?.name?.includes('-del-'))).toEqual([]);
    // The source is never touched.
    expect(await e.secretData('src', 'token')).toEqual({ token: 'abc' });
  });

  it('leaves the copies in place without ownership marks under deletePolicy Retain', async () => {
    await mirrorAndWait('keep', 'Retain');
    await e.deleteMirror('SecretMirror', 'keep', 'src');
    await eventually(async () =>
      expect(await e.getMirror('SecretMirror', 'keep', 'src')).toBeUndefined(),
    );
    for (const ns of ['app-1', 'app-2']) {
      const s = await e.readSecret(ns, 'keep');
      expect(s, ns).toBeDefined();
      expect(await e.secretData(ns, 'keep')).toEqual({ token: 'abc' });
      expect(s?.metadata?.labels?.['mirrorhub.io/managed-by']).toBeUndefined();
      expect(
        Object.keys(s?.metadata?.annotations ?? {}).filter((k) => k.startsWith('mirrorhub.io/')),
      ).toEqual([]);
    }
  });

  it('still cleans up when the mirror was deleted while the hub was down', async () => {
    await mirrorAndWait('offline', 'Delete');
    await e.stopHub();
    await e.deleteMirror('SecretMirror', 'offline', 'src');
    // The finalizer holds the mirror until a hub has cleaned up.
    expect(
      (await e.getMirror('SecretMirror', 'offline', 'src'))?.metadata?.deletionTimestamp,
    ).toBeDefined();
    expect(await e.readSecret('app-1', 'offline')).toBeDefined();
    await e.startHub();
    await eventually(async () => {
      expect(await e.getMirror('SecretMirror', 'offline', 'src')).toBeUndefined();
      expect(await e.readSecret('app-1', 'offline')).toBeUndefined();
      expect(await e.readSecret('app-2', 'offline')).toBeUndefined();
    });
  });
});
