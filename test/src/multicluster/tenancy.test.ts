// A SecretMirror belongs to a namespace's owner, not to the platform team: it reaches the EKS
// followers only when the hub's configuration grants its namespace that right
// (tenancy.remoteNamespaces); otherwise it is refused with a clear status and nothing is written
// in any follower. The same mirror, granted, delivers there.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { consistently, eventually } from '../support/eventually.js';
import { HUB, MultiCluster, secretMirror } from '../support/multicluster.js';

describe('SecretMirrors and other clusters', () => {
  let m: MultiCluster;

  beforeAll(async () => {
    m = await MultiCluster.start();
    for (const c of m.names()) await m.ensureNamespace(c, 'team-a');
    await m.ensureNamespace(HUB, 'platform');
    await m.putSecret(HUB, 'platform', 'api-key', { key: 'k1' });
    await m.applyMirror(
      secretMirror('platform', 'api-key', {
        source: { kind: 'Secret', name: 'api-key' },
        destination: { clusters: { names: ['follower-a'] }, namespaces: ['team-a'] },
      }),
    );
  });

  afterAll(async () => {
    await m?.stop();
  });

  it('are refused by default: phase Error, and no delivery in the follower', async () => {
    const mirror = await m.mirrorStatus('SecretMirror', 'api-key', 'platform', (s) =>
      expect(s.status?.phase).toBe('Error'),
    );
    expect(mirror.status?.message).toBe(
      "SecretMirrors in namespace platform may deliver only to the hub's own cluster, not to follower-a: use a ClusterSecretMirror, or ask the hub's administrators to add the namespace to tenancy.remoteNamespaces",
    );
    await consistently(
      async () => {
        expect(await m.deliveries('follower-a')).toEqual([]);
        expect(await m.secretData('follower-a', 'team-a', 'api-key')).toBeUndefined();
      },
      { forMs: 1_500 },
    );
  });

  it('deliver once the hub grants the namespace remote clusters', async () => {
    await m.stopHub();
    await m.startHub({ remoteNamespaces: ['platform'] });
    await eventually(async () =>
      expect(await m.secretData('follower-a', 'team-a', 'api-key')).toEqual({ key: 'k1' }),
    );
    await m.mirrorStatus('SecretMirror', 'api-key', 'platform', (s) =>
      expect(s.status).toMatchObject({ phase: 'Active', synced: '1/1' }),
    );
  });
});
