// What other tools put on a copy stays: a reloader's annotation and Argo CD's tracking label
// survive source updates, drift corrections and template changes, while mirrorhub's own fields
// (data, its marks, the template's labels and annotations) are always restored.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { mergePatchOptions } from '@mirrorhub/shared/testing/index';

import { Engine, secretMirror } from '../support/engine.js';
import { eventually } from '../support/eventually.js';

const OTHERS = {
  labels: { 'argocd.argoproj.io/instance': 'shop' },
  annotations: { 'reloader.stakater.com/match': 'true' },
};

const template = (labels: Record<string, string>, annotations: Record<string, string>) =>
  secretMirror('src', 'db', {
    source: { kind: 'Secret', name: 'db' },
    destination: { namespaces: ['app-1'] },
    template: { labels, annotations },
    deletePolicy: 'Retain',
    pollPeriodSeconds: 3600,
  });

describe("others' labels and annotations on a copy", () => {
  let e: Engine;

  const copy = async () => {
    const s = await e.readSecret('app-1', 'db');
    expect(s).toBeDefined();
    return s!;
  };
  /** The other tool's marks are still there. */
  const othersKept = async () => {
    const s = await copy();
    expect(s.metadata?.labels).toMatchObject(OTHERS.labels);
    expect(s.metadata?.annotations).toMatchObject(OTHERS.annotations);
    return s;
  };

  beforeAll(async () => {
    e = await Engine.start();
    for (const ns of ['src', 'app-1']) await e.ensureNamespace(ns);
    await e.putSecret('src', 'db', { password: 'v1' });
    await e.applyMirror(template({ env: 'prod', tier: 'db' }, { owner: 'team-a' }));
    await eventually(async () =>
      expect(await e.secretData('app-1', 'db')).toEqual({ password: 'v1' }),
    );
    // "Another tool" (a reloader, Argo CD) adds its own metadata to the copy.
    await e
      .core()
      .patchNamespacedSecret(
        { name: 'db', namespace: 'app-1', body: { metadata: OTHERS }, fieldManager: 'reloader' },
        mergePatchOptions(),
      );
  });

  afterAll(async () => {
    await e?.stop();
  });

  it('survive a source update; a key the source drops is gone', async () => {
    await e.putSecret('src', 'db', { password: 'v2', user: 'u' });
    await eventually(async () =>
      expect(await e.secretData('app-1', 'db')).toEqual({ password: 'v2', user: 'u' }),
    );
    await othersKept();
    await e.putSecret('src', 'db', { password: 'v3' });
    await eventually(async () =>
      expect(await e.secretData('app-1', 'db')).toEqual({ password: 'v3' }),
    );
    const s = await othersKept();
    expect(s.metadata?.labels).toMatchObject({ env: 'prod', tier: 'db' });
    expect(s.metadata?.annotations).toMatchObject({ owner: 'team-a' });
  });

  it('survive a drift correction of data (an edited value and an added key)', async () => {
    const s = await copy();
    await e.core().replaceNamespacedSecret({
      name: 'db',
      namespace: 'app-1',
      fieldManager: 'kubectl-edit',
      body: {
        ...s,
        data: {
          password: Buffer.from('wrong').toString('base64'),
          extra: Buffer.from('x').toString('base64'),
        },
      },
    });
    await eventually(
      async () => expect(await e.secretData('app-1', 'db')).toEqual({ password: 'v3' }),
      { timeoutMs: 5_000 },
    );
    await othersKept();
  });

  it("restores mirrorhub's own label and mark removed by hand, and keeps the other tool's", async () => {
    await e.core().patchNamespacedSecret(
      {
        name: 'db',
        namespace: 'app-1',
        fieldManager: 'kubectl-edit',
        body: { metadata: { labels: { env: null }, annotations: { 'mirrorhub.io/origin': null } } },
      },
      mergePatchOptions(),
    );
    await eventually(
      async () => {
        const s = await othersKept();
        expect(s.metadata?.labels).toMatchObject({ env: 'prod', tier: 'db' });
        expect(s.metadata?.annotations?.['mirrorhub.io/origin']).toBe('hub/src/db');
      },
      { timeoutMs: 5_000 },
    );
  });

  it('survive a template change; a template label removed from the template is gone', async () => {
    await e.applyMirror(template({ env: 'staging' }, { owner: 'team-b' }));
    await eventually(async () => {
      const s = await othersKept();
      expect(s.metadata?.labels?.['env']).toBe('staging');
      expect(s.metadata?.labels?.['tier']).toBeUndefined();
      expect(s.metadata?.annotations?.['owner']).toBe('team-b');
    });
    expect(await e.secretData('app-1', 'db')).toEqual({ password: 'v3' });
  });

  it('a source that loses its last key gives a copy without data', async () => {
    await e.putSecret('src', 'db', {});
    await eventually(async () => expect(await e.secretData('app-1', 'db')).toEqual({}));
    await othersKept();
    await e.putSecret('src', 'db', { password: 'v4' });
    await eventually(async () =>
      expect(await e.secretData('app-1', 'db')).toEqual({ password: 'v4' }),
    );
  });

  it("deletePolicy Retain releases the copy: only mirrorhub's marks go", async () => {
    await e.deleteMirror('SecretMirror', 'db', 'src');
    await eventually(async () => {
      const s = await othersKept();
      const keys = [
        ...Object.keys(s.metadata?.labels ?? {}),
        ...Object.keys(s.metadata?.annotations ?? {}),
      ];
      expect(keys.filter((k) => k.startsWith('mirrorhub.io/'))).toEqual([]);
      expect(s.metadata?.labels).toMatchObject({ env: 'staging' });
      expect(s.metadata?.annotations).toMatchObject({ owner: 'team-b' });
    });
    expect(await e.secretData('app-1', 'db')).toEqual({ password: 'v4' });
  });
});
