// A ClusterSecretMirror selecting clusters by MirrorCluster labels lands in the matching
// namespaces of exactly the selected EKS followers, reached through AssumeRole + ExternalId and
// an access entry scoped to the agent namespace; kubectl on the hub shows the result per cluster.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { eventually } from '../support/eventually.js';
import {
  clusterSecretMirror,
  condition,
  HUB,
  MultiCluster,
  SYSTEM_NS,
} from '../support/multicluster.js';

describe('delivery to the followers a label selector picks', () => {
  let m: MultiCluster;

  beforeAll(async () => {
    m = await MultiCluster.start();
    for (const c of m.names()) {
      for (const ns of ['team-a', 'team-b', 'other']) await m.ensureNamespace(c, ns);
    }
    await m.ensureNamespace(HUB, 'certs');
    await m.putSecret(HUB, 'certs', 'wildcard-tls', { 'tls.crt': 'cert-1', 'tls.key': 'key-1' });
    await m.applyMirror(
      clusterSecretMirror('wildcard-tls', {
        source: { kind: 'Secret', name: 'wildcard-tls', namespace: 'certs' },
        destination: {
          clusters: { selector: { matchLabels: { env: 'prod' } } },
          namespaces: ['team-.+'],
        },
      }),
    );
  });

  afterAll(async () => {
    await m?.stop();
  });

  it('registers every follower as a healthy MirrorCluster, shown by kubectl', async () => {
    for (const f of m.followers) {
      const mc = await m.mirrorClusterStatus(f.name, (mc) =>
        expect(condition(mc, 'Ready')?.status).toBe('True'),
      );
      expect(mc.status).toMatchObject({
        type: 'EKS',
        reachable: true,
        authenticated: true,
        agent: { present: true, version: '0.1.0-test' },
        kubernetesVersion: expect.stringMatching(/^v1\.\d+/),
        credentialsExpireAt: expect.any(String),
      });
      expect(mc.status?.lastError).toBeUndefined();
      expect(Date.parse(mc.status!.credentialsExpireAt!)).toBeGreaterThan(Date.now() + 30 * 60_000);
    }
    const table = await m.kubectl('get', 'mirrorclusters');
    expect(table).toMatch(/^NAME\s+TYPE\s+REACHABLE\s+AGENT\s+LAST HEARTBEAT\s+AGE/);
    for (const f of m.followers)
      expect(table).toMatch(new RegExp(`^${f.name}\\s+EKS\\s+true\\s+0\\.1\\.0-test\\s`, 'm'));
  });

  it('lands in the matching namespaces of follower-a and follower-b only', async () => {
    await eventually(
      async () => {
        for (const c of ['follower-a', 'follower-b']) {
          expect(await m.copies(c, 'wildcard-tls'), c).toEqual(['team-a', 'team-b']);
          expect(await m.secretData(c, 'team-a', 'wildcard-tls')).toEqual({
            'tls.crt': 'cert-1',
            'tls.key': 'key-1',
          });
        }
      },
      { timeoutMs: 30_000 },
    );
    for (const c of [HUB, 'follower-c']) {
      expect(await m.copies(c, 'wildcard-tls'), c).toEqual([]);
      expect(await m.deliveries(c), c).toEqual([]);
    }
    const status = (
      await m.mirrorStatus('ClusterSecretMirror', 'wildcard-tls', undefined, (s) =>
        expect(s.status?.phase).toBe('Active'),
      )
    ).status!;
    expect(status.clusters?.map((c) => [c.name, c.phase, c.synced, c.namespaces])).toEqual([
      ['follower-a', 'Active', 2, 2],
      ['follower-b', 'Active', 2, 2],
    ]);
    expect(status).toMatchObject({
      synced: '4/4',
      counts: { clusters: 2, namespaces: 4, synced: 4 },
    });
    const table = await m.kubectl('get', 'clustersecretmirrors');
    expect(table).toMatch(/^wildcard-tls\s+Secret\s+wildcard-tls\s+.*Active\s+4\/4/m);
    const wide = await m.kubectl(
      'get',
      'clustersecretmirrors',
      'wildcard-tls',
      '-o',
      'jsonpath={range .status.clusters[*]}{.name}={.phase} {.synced}/{.namespaces};{end}',
    );
    expect(wide).toBe('follower-a=Active 2/2;follower-b=Active 2/2;');
  });

  it('reaches every selected follower on a source change', async () => {
    await m.putSecret(HUB, 'certs', 'wildcard-tls', { 'tls.crt': 'cert-2', 'tls.key': 'key-2' });
    await eventually(async () => {
      for (const c of ['follower-a', 'follower-b']) {
        for (const ns of ['team-a', 'team-b'])
          expect(await m.secretData(c, ns, 'wildcard-tls')).toEqual({
            'tls.crt': 'cert-2',
            'tls.key': 'key-2',
          });
      }
    });
  });

  it('re-selects at once when MirrorCluster labels change, and removes what is no longer selected', async () => {
    await m.labelMirrorCluster('follower-c', { env: 'prod' });
    await eventually(async () =>
      expect(await m.copies('follower-c', 'wildcard-tls')).toEqual(['team-a', 'team-b']),
    );
    await m.labelMirrorCluster('follower-b', { env: 'staging' });
    await eventually(async () => {
      expect(await m.copies('follower-b', 'wildcard-tls')).toEqual([]);
      expect(await m.deliveries('follower-b')).toEqual([]);
      expect(await m.payloads('follower-b')).toEqual([]);
    });
    await m.mirrorStatus('ClusterSecretMirror', 'wildcard-tls', undefined, (s) =>
      expect(s.status?.clusters?.map((c) => c.name)).toEqual(['follower-a', 'follower-c']),
    );
    // follower-a never noticed: one delivery, written once.
    expect((await m.deliveries('follower-a')).map((d) => d.metadata.name)).toHaveLength(1);
  });

  it('delivers to the hub cluster once when an inCluster MirrorCluster gives it labels', async () => {
    await m.applyMirrorCluster(
      HUB,
      { inCluster: true, agentNamespace: SYSTEM_NS },
      { env: 'prod' },
    );
    await eventually(async () =>
      expect(await m.copies(HUB, 'wildcard-tls')).toEqual(['team-a', 'team-b']),
    );
    expect(await m.deliveries(HUB)).toHaveLength(1);
    const mc = await m.mirrorClusterStatus(HUB, (mc) =>
      expect(condition(mc, 'Ready')?.status).toBe('True'),
    );
    expect(mc.status?.type).toBe('InCluster');
    await m.mirrorStatus('ClusterSecretMirror', 'wildcard-tls', undefined, (s) =>
      expect(s.status?.clusters?.map((c) => c.name)).toEqual(['follower-a', 'follower-c', HUB]),
    );
  });

  it('refuses an inCluster MirrorCluster under another name, saying why, and changes nothing', async () => {
    await m.applyMirrorCluster('management', { inCluster: true }, { env: 'prod' });
    const mc = await m.mirrorClusterStatus('management', (mc) =>
      expect(condition(mc, 'Ready')?.reason).toBe('InvalidSpec'),
    );
    expect(mc.status?.lastError).toContain('must be named like it: "hub"');
    await m.eventWith('default', 'management', 'InvalidSpec');
    expect(await m.deliveries(HUB)).toHaveLength(1);
  });
});
