// One follower's API server goes away: that cluster shows unreachable in its MirrorCluster and in
// the mirror's status, the other follower keeps syncing, and when it comes back everything
// converges with no manual step.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { eventually } from '../support/eventually.js';
import { clusterSecretMirror, condition, HUB, MultiCluster } from '../support/multicluster.js';

describe('a follower whose API server is down', () => {
  let m: MultiCluster;
  const KIND = 'ClusterSecretMirror';

  beforeAll(async () => {
    m = await MultiCluster.start();
    await m.ensureNamespace(HUB, 'certs');
    for (const c of ['follower-a', 'follower-b']) await m.ensureNamespace(c, 'team-a');
    await m.putSecret(HUB, 'certs', 'tls', { v: '1' });
    await m.applyMirror(
      clusterSecretMirror('tls', {
        source: { kind: 'Secret', name: 'tls', namespace: 'certs' },
        destination: {
          clusters: { selector: { matchLabels: { env: 'prod' } } },
          namespaces: ['team-a'],
        },
      }),
    );
    await m.mirrorStatus(
      KIND,
      'tls',
      undefined,
      (s) => expect(s.status?.phase).toBe('Active'),
      30_000,
    );
  });

  afterAll(async () => {
    await m?.stop();
  });

  it('is reported unreachable while follower-b keeps syncing', async () => {
    await m.kit.cluster('follower-a').stopApiServer();
    const mc = await m.mirrorClusterStatus('follower-a', (mc) => {
      expect(mc.status?.reachable).toBe(false);
      expect(condition(mc, 'Ready')).toMatchObject({ status: 'False', reason: 'Unreachable' });
    });
    expect(mc.status?.lastError).toMatch(
      /GET \/version failed: .*ECONNREFUSED.*check that the hub can reach https:\/\/127\.0\.0\.1:\d+/,
    );
    expect(condition(mc, 'Reachable')?.status).toBe('False');
    expect(await m.kubectl('get', 'mirrorclusters', 'follower-a')).toMatch(
      /^follower-a\s+EKS\s+false\s/m,
    );
    await m.eventWith('default', 'follower-a', 'Unreachable');
    expect(
      await m.hubMetric('mirrorhub_cluster_request_errors_total', {
        cluster: 'follower-a',
        code: 'network',
      }),
    ).toBeGreaterThan(0);

    const started = Date.now();
    await m.putSecret(HUB, 'certs', 'tls', { v: '2' });
    await eventually(async () =>
      expect(await m.secretData('follower-b', 'team-a', 'tls')).toEqual({ v: '2' }),
    );
    console.error(
      `outage: follower-b synced a source change in ${Date.now() - started} ms with follower-a down`,
    );
    expect(Date.now() - started).toBeLessThan(5_000);

    const s = await m.mirrorStatus(KIND, 'tls', undefined, (s) => {
      expect(s.status?.phase).toBe('Degraded');
      expect(s.status?.clusters?.find((c) => c.name === 'follower-a')).toMatchObject({
        phase: 'Error',
        message: expect.stringMatching(/^cluster unreachable: /),
      });
    });
    expect(s.status?.clusters?.find((c) => c.name === 'follower-b')).toMatchObject({
      phase: 'Active',
      synced: 1,
    });
    expect(s.status?.message).toMatch(/follower-a: cluster unreachable/);
    expect(await m.kubectl('get', 'clustersecretmirrors', 'tls')).toMatch(/Degraded/);
    expect((await m.mirrorClusterStatus('follower-b', () => {})).status?.reachable).toBe(true);
  });

  it('converges with no manual step when it returns', async () => {
    await m.kit.cluster('follower-a').startApiServer();
    await eventually(
      async () => expect(await m.secretData('follower-a', 'team-a', 'tls')).toEqual({ v: '2' }),
      { timeoutMs: 60_000 },
    );
    await m.mirrorStatus(
      KIND,
      'tls',
      undefined,
      (s) => {
        expect(s.status?.phase).toBe('Active');
        expect(s.status?.synced).toBe('2/2');
      },
      60_000,
    );
    const mc = await m.mirrorClusterStatus(
      'follower-a',
      (mc) => expect(condition(mc, 'Ready')?.status).toBe('True'),
      30_000,
    );
    expect(mc.status?.reachable).toBe(true);
    expect(mc.status?.lastError).toBeUndefined();
    await m.eventWith('default', 'follower-a', 'ClusterReady');
  });
});

// A healthy cluster is probed only every 3 health intervals (60 s here). When its API server
// goes away, the hub's own failing requests wake the probe: the outage shows in the
// MirrorCluster at once, not at the next slow probe.
describe('a healthy follower, probed rarely, whose API server goes away', () => {
  let m: MultiCluster;

  beforeAll(async () => {
    m = await MultiCluster.start({
      followers: [{ name: 'follower-a', labels: { env: 'prod' } }],
      hub: { clusterHealthIntervalMs: 20_000, agentHeartbeatGraceMs: 600_000 },
    });
    await m.ensureNamespace(HUB, 'certs');
    await m.ensureNamespace('follower-a', 'team-a');
    await m.putSecret(HUB, 'certs', 'tls', { v: '1' });
    await m.applyMirror(
      clusterSecretMirror('tls', {
        source: { kind: 'Secret', name: 'tls', namespace: 'certs' },
        destination: { clusters: { names: ['follower-a'] }, namespaces: ['team-a'] },
      }),
    );
  });

  afterAll(async () => {
    await m?.stop();
  });

  it('is reported unreachable as soon as a request to it fails', async () => {
    await m.mirrorClusterStatus(
      'follower-a',
      (mc) => expect(condition(mc, 'Ready')?.status).toBe('True'),
      30_000,
    );
    await eventually(
      async () => expect(await m.secretData('follower-a', 'team-a', 'tls')).toEqual({ v: '1' }),
      { timeoutMs: 30_000 },
    );
    const woken = () =>
      m.logs.lines.filter((l) => l.includes('a request to the cluster failed; probing it now'));
    expect(woken()).toEqual([]);
    await m.kit.cluster('follower-a').stopApiServer();
    const mc = await m.mirrorClusterStatus(
      'follower-a',
      (mc) =>
        expect(condition(mc, 'Ready')).toMatchObject({ status: 'False', reason: 'Unreachable' }),
      30_000,
    );
    expect(mc.status?.reachable).toBe(false);
    expect(woken()).toHaveLength(1);
    expect(woken()[0]).toContain('"cluster":"follower-a"');
  });
});
