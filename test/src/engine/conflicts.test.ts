import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { clusterSecretMirror, Engine } from '../support/engine.js';
import { consistently, eventually } from '../support/eventually.js';

// Adopt is an administrator's tool (ClusterSecretMirror), and the cluster's owner must allow it
// in the agent's policy; security.test.ts proves every path where it is refused.
describe('objects mirrorhub does not own', () => {
  let e: Engine;

  beforeAll(async () => {
    e = await Engine.start({ agent: { policy: { allowAdopt: true } } });
    for (const ns of ['src', 'team-1', 'team-2']) await e.ensureNamespace(ns);
    await e.putSecret('src', 'api-key', { key: 'from-source' });
    // team-1 already has its own Secret with the target name.
    await e.putSecret(
      'team-1',
      'api-key',
      { key: 'team-1-own' },
      { metadata: { labels: { owner: 'team-1' } } },
    );
  });

  afterAll(async () => {
    await e?.stop();
  });

  it('never overwrites them under conflictPolicy Skip, and reports the conflict per namespace and as an Event', async () => {
    await e.applyMirror(
      clusterSecretMirror('api-key', {
        source: { kind: 'Secret', name: 'api-key', namespace: 'src' },
        destination: { namespaces: ['team-.*'] },
        pollPeriodSeconds: 3600,
      }),
    );
    await eventually(async () =>
      expect(await e.secretData('team-2', 'api-key')).toEqual({ key: 'from-source' }),
    );
    // The copy names its source, namespace included (a ClusterSecretMirror's own has none).
    expect((await e.readSecret('team-2', 'api-key'))?.metadata?.annotations).toMatchObject({
      'mirrorhub.io/origin': 'hub/src/api-key',
    });
    const m = await e.mirrorStatus('ClusterSecretMirror', 'api-key', undefined, (m) => {
      expect(m.status?.counts?.conflicts).toBe(1);
      expect(m.status?.problems).toEqual([
        expect.objectContaining({
          namespace: 'team-1',
          state: 'Conflict',
          message: expect.stringMatching(/not managed by mirrorhub|owned|Adopt/i),
        }),
      ]);
    });
    expect(m.status?.phase).toBe('Degraded');
    await e.eventWith('default', 'api-key', 'Conflict');
    await consistently(
      async () => expect(await e.secretData('team-1', 'api-key')).toEqual({ key: 'team-1-own' }),
      { forMs: 1_500 },
    );
  });

  it('takes them over under conflictPolicy Adopt', async () => {
    const m = await e.getMirror('ClusterSecretMirror', 'api-key');
    await e.applyMirror({ ...m!, spec: { ...m!.spec, conflictPolicy: 'Adopt' } });
    await eventually(
      async () => expect(await e.secretData('team-1', 'api-key')).toEqual({ key: 'from-source' }),
      { timeoutMs: 5_000 },
    );
    const adopted = await e.readSecret('team-1', 'api-key');
    expect(adopted?.metadata?.labels?.['mirrorhub.io/managed-by']).toBe('mirrorhub');
    await e.mirrorStatus('ClusterSecretMirror', 'api-key', undefined, (m) => {
      expect(m.status?.phase).toBe('Active');
      expect(m.status?.counts?.conflicts).toBe(0);
    });
  });
});
