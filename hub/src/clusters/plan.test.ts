import type { MirrorCluster, MirrorClusterStatus } from '@mirrorhub/shared';
import { describe, expect, it } from 'vitest';
import {
  formatPendingCleanups,
  HEALTHY_PROBE_FACTOR,
  nextProbe,
  parsePendingCleanups,
  planClusterStatus,
  resolveAccess,
  withLatestHeartbeat,
  type ClusterStatusInput,
  type ProbeResult,
} from './plan.js';

const NOW = new Date('2026-01-02T03:04:05Z');
const GRACE = 90_000;
const REPORT = 300_000;
const ROLE = 'arn:aws:iam::222222222222:role/mirrorhub-follower';

function mc(
  spec: MirrorCluster['spec'],
  name = 'follower-a',
  status?: MirrorClusterStatus,
): MirrorCluster {
  return {
    apiVersion: 'mirrorhub.io/v1alpha1',
    kind: 'MirrorCluster',
    metadata: { name, generation: 2, labels: { env: 'prod' } },
    spec,
    ...(status ? { status } : {}),
  };
}

const eks = (o: Partial<NonNullable<MirrorCluster['spec']['eks']>> = {}) =>
  mc({ eks: { name: 'follower-a', region: 'eu-west-1', roleArn: ROLE, externalId: 'x1', ...o } });

describe('resolveAccess', () => {
  it('eks, with the default agent namespace', () => {
    const r = resolveAccess(eks(), 'hub');
    expect(r).toMatchObject({
      ok: true,
      access: {
        type: 'EKS',
        agentNamespace: 'mirrorhub-system',
        eks: { name: 'follower-a', externalId: 'x1' },
      },
    });
  });

  it('a kubeconfig Secret, key defaulted', () => {
    const r = resolveAccess(
      mc({ kubeconfigSecretRef: { namespace: 'ops', name: 'kc' }, agentNamespace: 'mh' }),
      'hub',
    );
    expect(r).toMatchObject({
      ok: true,
      access: {
        type: 'Kubeconfig',
        agentNamespace: 'mh',
        secret: { namespace: 'ops', name: 'kc', key: 'kubeconfig' },
      },
    });
  });

  it('the access key changes with the access, not with anything else', () => {
    const key = (m: MirrorCluster) =>
      (resolveAccess(m, 'hub') as { access: { key: string } }).access.key;
    const a = eks();
    expect(key({ ...a, metadata: { ...a.metadata, labels: { env: 'dev' } } })).toBe(key(a));
    expect(key(eks({ externalId: 'x2' }))).not.toBe(key(a));
    expect(key(eks({ roleArn: `${ROLE}-2` }))).not.toBe(key(a));
    expect(key({ ...a, spec: { ...a.spec, agentNamespace: 'other' } })).not.toBe(key(a));
  });

  it.each<[string, MirrorCluster, RegExp]>([
    [
      'an inCluster MirrorCluster not named like the hub',
      mc({ inCluster: true }, 'mgmt'),
      /must be named like it: "hub"/,
    ],
    [
      "a remote MirrorCluster with the hub's name",
      mc({ kubeconfigSecretRef: { namespace: 'a', name: 'b' } }, 'hub'),
      /only an inCluster MirrorCluster may use it/,
    ],
    ['a name that is not a DNS label', mc({ inCluster: true }, 'a.b'), /must be a DNS label/],
    [
      'two kinds of access',
      mc({ inCluster: true, kubeconfigSecretRef: { namespace: 'a', name: 'b' } }, 'hub'),
      /exactly one of/,
    ],
    ['no access', mc({}, 'x'), /exactly one of .*found none/],
  ])('refuses %s', (_, cluster, error) => {
    const r = resolveAccess(cluster, 'hub');
    expect(r.ok).toBe(false);
    expect((r as { error: string }).error).toMatch(error);
  });

  it("an inCluster MirrorCluster named like the hub is the hub's cluster", () => {
    expect(resolveAccess(mc({ inCluster: true }, 'hub'), 'hub')).toMatchObject({
      ok: true,
      access: { type: 'InCluster' },
    });
  });
});

const lease = (renewTime: string, version = '0.1.0'): ProbeResult['lease'] => ({
  ok: true,
  lease: { renewTime, version },
});
const healthy: ProbeResult = {
  at: NOW.getTime(),
  version: { ok: true, gitVersion: 'v1.33.1' },
  lease: lease('2026-01-02T03:03:50.123456Z'),
};

function plan(probe: ProbeResult | undefined, o: Partial<ClusterStatusInput> = {}) {
  return planClusterStatus({
    cluster: eks(),
    probe,
    agentNamespace: 'mirrorhub-system',
    heartbeatGraceMs: GRACE,
    heartbeatReportMs: REPORT,
    now: NOW,
    ...o,
  });
}
const cond = (s: MirrorClusterStatus, type: string) => s.conditions?.find((c) => c.type === type);

describe('planClusterStatus', () => {
  it('a healthy cluster: every field, Ready True, one Normal Event', () => {
    const expires = new Date(NOW.getTime() + 3_000_000);
    const r = plan(healthy, { eks: { credentialsExpireAt: expires } });
    expect(r.status).toMatchObject({
      type: 'EKS',
      observedGeneration: 2,
      reachable: true,
      authenticated: true,
      kubernetesVersion: 'v1.33.1',
      credentialsExpireAt: '2026-01-02T03:54:05Z',
      agent: { present: true, version: '0.1.0', lastHeartbeat: '2026-01-02T03:03:50Z' },
    });
    expect(r.status.lastError).toBeUndefined();
    expect(r.status.conditions?.map((c) => [c.type, c.status])).toEqual([
      ['Ready', 'True'],
      ['Reachable', 'True'],
      ['Authenticated', 'True'],
      ['AgentHealthy', 'True'],
    ]);
    expect(r.events).toEqual([expect.objectContaining({ type: 'Normal', reason: 'ClusterReady' })]);
  });

  it('nothing changes and nothing is announced when the next probe finds the same', () => {
    const first = plan(healthy).status;
    const again = plan(healthy, { cluster: { ...eks(), status: first } });
    expect(again.status).toEqual(first);
    expect(again.events).toEqual([]);
  });

  it.each<[string, ProbeResult, Partial<MirrorClusterStatus>, [string, string, string], RegExp]>([
    [
      'AssumeRole refused',
      {
        at: 0,
        accessError: `AssumeRole ${ROLE} failed: AccessDenied: not authorized; check the role exists, its trust policy allows the hub role and the externalId matches`,
      },
      { reachable: false, authenticated: false },
      ['False', 'AccessFailed', 'Authenticated:False'],
      /AssumeRole .* failed: AccessDenied.*externalId/,
    ],
    [
      'API server down',
      {
        at: 0,
        version: {
          ok: false,
          failure: {
            kind: 'unreachable',
            message: 'GET /version failed: connect ECONNREFUSED; check that the hub can reach x',
          },
        },
      },
      { reachable: false },
      ['False', 'Unreachable', 'Reachable:False'],
      /ECONNREFUSED/,
    ],
    [
      'token refused',
      {
        at: 0,
        version: {
          ok: false,
          failure: {
            kind: 'unauthorized',
            status: 401,
            message:
              "GET /version: the API server refused the hub's credentials (401 Unauthorized); check ...",
          },
        },
      },
      { reachable: true, authenticated: false },
      ['False', 'Unauthorized', 'Authenticated:False'],
      /401/,
    ],
    [
      'the Lease is forbidden (hub-access RBAC missing)',
      {
        at: 0,
        version: { ok: true, gitVersion: 'v1.33.1' },
        lease: {
          ok: false,
          failure: {
            kind: 'forbidden',
            status: 403,
            message:
              'reading Lease mirrorhub-system/mirrorhub-agent: 403 Forbidden; check hub-access',
          },
        },
      },
      { reachable: true, authenticated: false, kubernetesVersion: 'v1.33.1' },
      ['False', 'Forbidden', 'Authenticated:False'],
      /403 Forbidden; check hub-access/,
    ],
  ])('%s', (_, probe, fields, [readyStatus, readyReason, other], lastError) => {
    const r = plan(probe);
    expect(r.status).toMatchObject(fields);
    if (!('authenticated' in fields)) expect(r.status.authenticated).toBeUndefined();
    expect(cond(r.status, 'Ready')).toMatchObject({ status: readyStatus, reason: readyReason });
    const [type, status] = other.split(':');
    expect(cond(r.status, type!)?.status).toBe(status);
    expect(r.status.lastError).toMatch(lastError);
    expect(r.events).toEqual([expect.objectContaining({ type: 'Warning', reason: readyReason })]);
  });

  it('no agent: AgentMissing says what to install', () => {
    const r = plan({ ...healthy, lease: { ok: true, lease: undefined } });
    expect(r.status.agent).toEqual({ present: false });
    expect(cond(r.status, 'AgentHealthy')).toMatchObject({
      status: 'False',
      reason: 'AgentMissing',
    });
    expect(cond(r.status, 'Ready')?.message).toMatch(/install the agent .*clusterName=follower-a/);
  });

  it('a heartbeat older than the grace period makes the agent Unknown, not gone', () => {
    const r = plan({ ...healthy, lease: lease('2026-01-02T03:02:00Z') });
    expect(r.status.agent).toEqual({
      present: false,
      version: '0.1.0',
      lastHeartbeat: '2026-01-02T03:02:00Z',
    });
    expect(cond(r.status, 'AgentHealthy')).toMatchObject({
      status: 'Unknown',
      reason: 'HeartbeatStale',
    });
    expect(cond(r.status, 'Ready')).toMatchObject({ status: 'Unknown', reason: 'HeartbeatStale' });
    expect(r.status.reachable).toBe(true);
  });

  it('while unreachable, keeps the last agent fields and lets them go stale', () => {
    const down: ProbeResult = {
      at: 0,
      version: { ok: false, failure: { kind: 'unreachable', message: 'down' } },
    };
    const before = plan(healthy).status;
    const soon = plan(down, { cluster: { ...eks(), status: before } });
    expect(soon.status.agent).toEqual(before.agent);
    expect(soon.status.kubernetesVersion).toBe('v1.33.1');
    const later = plan(down, {
      cluster: { ...eks(), status: before },
      now: new Date(NOW.getTime() + GRACE),
    });
    expect(later.status.agent?.present).toBe(false);
    expect(cond(later.status, 'AgentHealthy')).toMatchObject({
      status: 'Unknown',
      reason: 'Unreachable',
    });
  });

  it("a healthy agent's renewals are written once per report period, not each time", () => {
    const before = plan(healthy).status;
    const at = (iso: string, now: string, status = before) =>
      plan({ ...healthy, lease: lease(iso) }, { cluster: { ...eks(), status }, now: new Date(now) })
        .status;
    // 30 s later, renewed again: nothing in status changes, so nothing is written.
    expect(at('2026-01-02T03:04:20Z', '2026-01-02T03:04:35Z')).toEqual(before);
    // A report period after the recorded heartbeat: the new time is written.
    const later = at('2026-01-02T03:08:51Z', '2026-01-02T03:08:55Z');
    expect(later.agent?.lastHeartbeat).toBe('2026-01-02T03:08:51Z');
    // A new agent version, or an agent coming back from stale, is written at once.
    const upgraded = plan(
      {
        ...healthy,
        lease: { ok: true, lease: { renewTime: '2026-01-02T03:04:20Z', version: '0.2.0' } },
      },
      { cluster: { ...eks(), status: before }, now: new Date('2026-01-02T03:04:35Z') },
    ).status;
    expect(upgraded.agent).toEqual({
      present: true,
      version: '0.2.0',
      lastHeartbeat: '2026-01-02T03:04:20Z',
    });
    const stale = { ...before, agent: { ...before.agent, present: false } };
    expect(at('2026-01-02T03:04:20Z', '2026-01-02T03:04:35Z', stale).agent).toEqual({
      present: true,
      version: '0.1.0',
      lastHeartbeat: '2026-01-02T03:04:20Z',
    });
  });

  it('the dashboard sees the latest renewal read, not the one status holds', () => {
    const recorded = { ...eks(), status: plan(healthy).status }; // 03:03:50.123456Z recorded
    const later = Date.parse('2026-01-02T03:05:20Z');
    expect(withLatestHeartbeat(recorded, later).status?.agent).toEqual({
      present: true,
      version: '0.1.0',
      lastHeartbeat: '2026-01-02T03:05:20Z',
    });
    expect(recorded.status.agent?.lastHeartbeat).toBe('2026-01-02T03:03:50Z'); // not changed
    // Nothing newer read, or no agent recorded: the object as it is.
    expect(withLatestHeartbeat(recorded, Date.parse('2026-01-02T03:03:00Z'))).toBe(recorded);
    expect(withLatestHeartbeat(recorded, undefined)).toBe(recorded);
    const none = eks();
    expect(withLatestHeartbeat(none, later)).toBe(none);
  });

  it('unreachable after unwritten renewals: the last renewal read decides staleness', () => {
    const down: ProbeResult = {
      at: 0,
      version: { ok: false, failure: { kind: 'unreachable', message: 'down' } },
    };
    const before = plan(healthy).status; // heartbeat 03:03:50 recorded
    const now = new Date(NOW.getTime() + GRACE + 60_000);
    const renewedSince = Date.parse('2026-01-02T03:05:30Z');
    const r = plan(down, {
      cluster: { ...eks(), status: before },
      now,
      lastRenewedAt: renewedSince,
    });
    expect(r.status.agent?.present).toBe(true);
    const without = plan(down, { cluster: { ...eks(), status: before }, now });
    expect(without.status.agent?.present).toBe(false);
  });

  it('recovering announces Ready again', () => {
    const down: ProbeResult = {
      at: 0,
      version: { ok: false, failure: { kind: 'unreachable', message: 'down' } },
    };
    const bad = plan(down, { cluster: { ...eks(), status: plan(healthy).status } }).status;
    const r = plan(healthy, { cluster: { ...eks(), status: bad } });
    expect(r.events.map((e) => e.reason)).toEqual(['ClusterReady']);
    expect(r.status.lastError).toBeUndefined();
  });

  it('a failing credential refresh shows in lastError while the old session works', () => {
    const r = plan(healthy, { eks: { lastError: { message: 'AssumeRole x failed: Throttling' } } });
    expect(cond(r.status, 'Ready')?.status).toBe('True');
    expect(r.status.lastError).toBe('AssumeRole x failed: Throttling');
  });

  it('an invalid spec: Ready False/InvalidSpec with the reason, nothing probed', () => {
    const r = plan(undefined, {
      cluster: mc({ inCluster: true }, 'mgmt'),
      invalid: 'an inCluster MirrorCluster ... must be named "hub"',
    });
    expect(r.status).toMatchObject({
      type: 'InCluster',
      lastError: expect.stringContaining('must be named'),
    });
    expect(cond(r.status, 'Ready')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(r.events.map((e) => e.reason)).toEqual(['InvalidSpec']);
  });

  it('before the first probe: Unknown, no Event', () => {
    const r = plan(undefined);
    expect(cond(r.status, 'Ready')).toMatchObject({ status: 'Unknown', reason: 'Probing' });
    expect(r.events).toEqual([]);
  });
});

describe('cleanups left in a cluster', () => {
  const pending = [
    { delivery: 'csm-wildcard-tls-3f2a9c1b', mirror: 'ClusterSecretMirror//wildcard-tls' },
    { delivery: 'sm-team-a-db-0123abcd', mirror: 'SecretMirror/team-a/db' },
  ];

  it('records them in status.pendingCleanup (read back after a restart) and says so in a condition', () => {
    const r = plan(healthy, { pending: [...pending].reverse() });
    expect(r.status.pendingCleanup).toEqual(pending);
    const c = cond(r.status, 'CleanupPending');
    expect(c).toMatchObject({ status: 'True', reason: 'CleanupPending' });
    expect(c?.message).toBe(formatPendingCleanups(pending));
    expect(parsePendingCleanups(r.status)).toEqual(pending);
    // Done: the field goes with the condition.
    const done = plan(healthy, { cluster: { ...eks(), status: r.status }, pending: [] });
    expect(done.status.pendingCleanup).toBeUndefined();
  });

  it('shows the EKS identity and server the hub uses', () => {
    const r = plan(healthy, {
      eks: {
        identity: 'arn:aws:sts::222222222222:assumed-role/mirrorhub/mirrorhub-hub-x',
        server: 'https://abc.eks',
      },
    });
    expect(r.status).toMatchObject({
      identity: 'arn:aws:sts::222222222222:assumed-role/mirrorhub/mirrorhub-hub-x',
      server: 'https://abc.eks',
    });
  });

  it('announces new ones and the end of them', () => {
    const withOne = plan(healthy, { pending: pending.slice(0, 1) }).status;
    const withTwo = plan(healthy, { cluster: { ...eks(), status: withOne }, pending });
    expect(withTwo.events).toEqual([
      expect.objectContaining({
        type: 'Warning',
        reason: 'CleanupPending',
        message: expect.stringContaining('sm-team-a-db-0123abcd'),
      }),
    ]);
    const done = plan(healthy, { cluster: { ...eks(), status: withTwo.status }, pending: [] });
    expect(cond(done.status, 'CleanupPending')).toBeUndefined();
    expect(done.events.map((e) => e.reason)).toEqual(['CleanupDone']);
  });
});

describe('when to probe again', () => {
  const o = { now: NOW.getTime(), intervalMs: 10_000, graceMs: GRACE };
  const renewed = (agoMs: number) => NOW.getTime() - agoMs;

  it('waits three periods while the cluster answers and its agent heartbeats', () => {
    expect(HEALTHY_PROBE_FACTOR).toBe(3);
    expect(nextProbe(healthy, renewed(15_000), o)).toEqual({ healthy: true, inMs: 30_000 });
  });

  it('probes every period once a heartbeat could go stale before the later probe', () => {
    // 90 s grace, the later probe up to 33 s away: a renewal 57 s old or more is not "healthy"
    expect(nextProbe(healthy, renewed(56_000), o).healthy).toBe(true);
    expect(nextProbe(healthy, renewed(57_000), o)).toEqual({ healthy: false, inMs: 10_000 });
    expect(nextProbe(healthy, undefined, o).healthy).toBe(false);
  });

  it('probes every period when the API server or the Lease did not answer, or there is no agent', () => {
    const failure = { kind: 'unreachable' as const, message: 'x' };
    for (const p of [
      { at: o.now, accessError: 'AssumeRole refused' },
      { at: o.now, version: { ok: false as const, failure } },
      { ...healthy, lease: { ok: false as const, failure } },
      { ...healthy, lease: { ok: true as const, lease: undefined } },
    ]) {
      expect(nextProbe(p, renewed(1_000), o)).toEqual({ healthy: false, inMs: 10_000 });
    }
  });

  it('never waits longer than a period when the grace is shorter than three', () => {
    expect(nextProbe(healthy, renewed(0), { ...o, graceMs: 30_000 }).inMs).toBe(10_000);
  });
});

describe('planClusterStatus: Reconciling and Stalled, as kstatus and kubectl wait read them', () => {
  const refused = (status: 401 | 403): ProbeResult => ({
    at: 0,
    version: {
      ok: false,
      failure: {
        kind: status === 401 ? 'unauthorized' : 'forbidden',
        status,
        message: `GET /version: ${status}`,
      },
    },
  });
  const down: ProbeResult = {
    at: 0,
    version: { ok: false, failure: { kind: 'unreachable', message: 'ECONNREFUSED' } },
  };
  it.each<[string, ProbeResult | undefined, string | undefined, string | undefined]>([
    ['healthy', healthy, undefined, undefined],
    ['not probed yet', undefined, 'Probing', undefined],
    ['unreachable: retried', down, 'Unreachable', undefined],
    [
      'credentials refused: only a permission change helps',
      refused(401),
      undefined,
      'Unauthorized',
    ],
  ])('%s', (_, probe, reconciling, stalled) => {
    const r = plan(probe);
    expect(cond(r.status, 'Reconciling')?.reason).toBe(reconciling);
    expect(cond(r.status, 'Stalled')?.reason).toBe(stalled);
    for (const c of r.status.conditions ?? []) expect(c.observedGeneration).toBe(2);
    // A steady cluster is not rewritten: the next probe with the same result changes nothing.
    expect(plan(probe, { cluster: { ...eks(), status: r.status } }).status).toEqual(r.status);
  });
});
