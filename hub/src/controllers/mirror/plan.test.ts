import {
  deliveryName,
  type ClusterSecretMirror,
  type MirrorDelivery,
  type MirrorDeliveryStatus,
  type MirrorStatus,
  type SecretMirror,
  type SecretMirrorSpec,
} from '@mirrorhub/shared';
import { describe, expect, it } from 'vitest';
import {
  deliveryUpToDate,
  planCleanup,
  planDeletionStatus,
  planMirror,
  type ClusterObservation,
  type MirrorPlan,
  type PlanInput,
  type SourceObservation,
  statusWriteDelay,
} from './plan.js';

const NOW = new Date('2026-01-02T03:04:05Z');
const HUB_SECRET = 'hub-secret-for-tests';
const VALUE = 'pa55w0rd-never-in-status';
const b64 = (s: string) => Buffer.from(s).toString('base64');
const NAME = deliveryName({ kind: 'SecretMirror', namespace: 'src', name: 'tls' }, 'hub');

function mirror(
  spec: Partial<SecretMirrorSpec> = {},
  status?: MirrorStatus,
  meta: Partial<SecretMirror['metadata']> = {},
): SecretMirror {
  return {
    apiVersion: 'mirrorhub.io/v1alpha1',
    kind: 'SecretMirror',
    metadata: { name: 'tls', namespace: 'src', uid: 'uid-1', generation: 1, ...meta },
    spec: {
      source: { kind: 'Secret', name: 'tls' },
      destination: { namespaces: ['app-.*'] },
      ...spec,
    },
    ...(status ? { status } : {}),
  };
}

const found = (data: Record<string, string> = { password: b64(VALUE) }): SourceObservation => ({
  state: 'found',
  object: { type: 'Opaque', data, metadata: { labels: { team: 'a' } } },
});

function cluster(o: Partial<ClusterObservation> = {}): ClusterObservation {
  return {
    name: 'hub',
    agentNamespace: 'mirrorhub-system',
    labels: {},
    local: true,
    synced: true,
    ...o,
  };
}

function plan(input: Partial<PlanInput> = {}): MirrorPlan {
  return planMirror({
    mirror: mirror(),
    source: found(),
    clusters: [cluster()],
    hubSecret: HUB_SECRET,
    originCluster: 'hub',
    now: NOW,
    ...input,
  });
}

/** A delivery as the cluster would hold it after our write, with an agent report. */
function stored(d: MirrorDelivery, report?: Partial<MirrorDeliveryStatus>): MirrorDelivery {
  return {
    ...d,
    metadata: { ...d.metadata, generation: 3, resourceVersion: '10' },
    ...(report
      ? {
          status: {
            observedGeneration: 3,
            observedHash: d.spec.contentHash,
            phase: 'Active',
            lastSyncTime: '2026-01-02T03:00:00Z',
            counts: { namespaces: 2, synced: 2, failed: 0, conflicts: 0 },
            ...report,
          },
        }
      : {}),
  };
}

/** The clusters as they are once the first plan's writes landed (and the agent reported). */
function deliveredCluster(
  report: Partial<MirrorDeliveryStatus> | null = {},
  o: Partial<ClusterObservation> = {},
  first: MirrorPlan = plan({
    mirror: mirror({
      destination: { namespaces: ['app-.*'], clusters: { names: [o.name ?? 'hub'] } },
    }),
    clusters: [cluster(o)],
  }),
): ClusterObservation {
  const w = first.writes.find((x) => x.cluster === (o.name ?? 'hub'))!;
  return cluster({
    ...o,
    delivery: stored(w.delivery!, report ?? undefined),
    payload: { contentHash: w.delivery!.spec.contentHash },
  });
}

const reasons = (p: MirrorPlan) => p.events.map((e) => e.reason);
const condition = (p: MirrorPlan, type: string) =>
  p.status.conditions?.find((c) => c.type === type);

describe('planMirror: invalid specs change nothing and say why', () => {
  it.each<[string, Partial<PlanInput>, RegExp[]]>([
    [
      'a regex that does not compile',
      { mirror: mirror({ destination: { namespaces: ['app-.*', 'project-('] } }) },
      [/destination\.namespaces\[1\]/, /project-\(/],
    ],
    [
      'a SecretMirror reading another namespace',
      { mirror: mirror({ source: { kind: 'Secret', name: 'tls', namespace: 'other' } }) },
      [/"other"/, /ClusterSecretMirror/],
    ],
    [
      'a ClusterSecretMirror without source.namespace',
      {
        mirror: {
          ...mirror(),
          kind: 'ClusterSecretMirror',
          metadata: { name: 'tls', uid: 'u', generation: 1 },
        } as ClusterSecretMirror,
      },
      [/source\.namespace is required/],
    ],
    [
      'an invalid namespace selector',
      {
        mirror: mirror({
          destination: { namespaceSelector: { matchLabels: { 'bad key!': 'x' } } },
        }),
      },
      [/destination\.namespaceSelector/, /bad key!/],
    ],
    [
      'an invalid cluster selector',
      {
        mirror: mirror({
          destination: {
            namespaces: ['a'],
            clusters: { selector: { matchExpressions: [{ key: 'env', operator: 'In' }] } },
          },
        }),
      },
      [/destination\.clusters\.selector/, /non-empty/],
    ],
  ])('%s', (_, input, patterns) => {
    const p = plan({ ...input, clusters: [deliveredCluster()] });
    expect(p.status.phase).toBe('Error');
    for (const re of patterns) expect(p.status.message).toMatch(re);
    expect(p.invalid).toBe(p.status.message);
    expect(p.writes).toEqual([]);
    expect(p.deletes).toEqual([]);
    expect(condition(p, 'Ready')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(reasons(p)).toEqual(['InvalidSpec']);
  });

  it('keeps the last counts (copies are kept) and emits InvalidSpec once', () => {
    const active = plan({ clusters: [deliveredCluster()] });
    const broken = mirror({ destination: { namespaces: ['('] } }, active.status);
    const first = plan({ mirror: broken, clusters: [deliveredCluster()] });
    expect(first.status.counts).toEqual(active.status.counts);
    const again = plan({
      mirror: { ...broken, status: first.status },
      clusters: [deliveredCluster()],
    });
    expect(again.events).toEqual([]);
    expect(again.status).toEqual(first.status);
  });
});

describe('planMirror: the source', () => {
  it.each<[string, SourceObservation, ClusterObservation, string, RegExp, string[]]>([
    [
      'missing, nothing delivered: Pending',
      { state: 'missing' },
      cluster(),
      'Pending',
      /^source Secret src\/tls not found$/,
      ['SourceNotFound'],
    ],
    [
      'missing after delivering: Degraded, copies kept',
      { state: 'missing' },
      deliveredCluster(),
      'Degraded',
      /^source Secret src\/tls not found; copies are kept as they are$/,
      ['SourceNotFound'],
    ],
    [
      'unreadable, nothing delivered: Error',
      { state: 'unreadable', error: '403 Forbidden' },
      cluster(),
      'Error',
      /cannot read source Secret src\/tls: 403 Forbidden/,
      ['SourceUnreadable'],
    ],
  ])('%s', (_, source, obs, phase, message, events) => {
    const p = plan({ source, clusters: [obs] });
    expect(p.status.phase).toBe(phase);
    expect(p.status.message).toMatch(message);
    expect(p.writes).toEqual([]);
    expect(p.deletes).toEqual([]);
    expect(reasons(p)).toEqual(events);
  });

  it('says SourceFound False, then SourceFound (Normal) when it appears', () => {
    const missing = plan({ source: { state: 'missing' } });
    expect(condition(missing, 'SourceFound')).toMatchObject({
      status: 'False',
      reason: 'SourceNotFound',
    });
    const back = plan({ mirror: mirror({}, missing.status) });
    expect(condition(back, 'SourceFound')).toMatchObject({ status: 'True' });
    expect(reasons(back)).toContain('SourceFound');
    expect(back.writes).toHaveLength(1);
  });
});

describe('planMirror: what to write', () => {
  const base = plan();
  const hash = base.writes[0]!.delivery!.spec.contentHash;

  it('writes payload and delivery into the agent namespace, marked as ours', () => {
    expect(base.writes).toHaveLength(1);
    const { payload, delivery } = base.writes[0]!;
    expect(payload?.metadata).toMatchObject({
      name: NAME,
      namespace: 'mirrorhub-system',
      labels: {
        'mirrorhub.io/payload': 'true',
        'mirrorhub.io/delivery': NAME,
        'mirrorhub.io/origin-cluster': 'hub',
      },
      annotations: {
        'mirrorhub.io/content-hash': hash,
        'mirrorhub.io/mirror': 'SecretMirror/src/tls',
      },
    });
    expect(payload?.data).toEqual({ password: b64(VALUE) });
    expect(delivery).toMatchObject({
      metadata: {
        name: NAME,
        namespace: 'mirrorhub-system',
        labels: { 'mirrorhub.io/origin-cluster': 'hub' },
      },
      spec: {
        mirror: { kind: 'SecretMirror', namespace: 'src', name: 'tls', uid: 'uid-1' },
        originCluster: 'hub',
        payloadSecretName: NAME,
        target: { kind: 'Secret', name: 'tls' },
        namespaces: ['app-.*'],
        sourceNamespace: 'src',
        template: { type: 'Opaque', labels: { team: 'a' }, annotations: {} },
        deletePolicy: 'Delete',
        conflictPolicy: 'Skip',
        suspend: false,
      },
    });
    expect(hash).toMatch(/^[0-9a-f]{32}$/);
    expect(base.status).toMatchObject({ phase: 'Pending', synced: '0/0' });
    expect(base.status.clusters).toEqual([
      expect.objectContaining({ name: 'hub', message: 'delivering' }),
    ]);
  });

  it.each<[string, () => ClusterObservation, Partial<PlanInput>, ('payload' | 'delivery')[]]>([
    ['nothing when both are up to date', () => deliveredCluster(), {}, []],
    [
      'the payload only when it is missing',
      () => ({ ...deliveredCluster(), payload: undefined }),
      {},
      ['payload'],
    ],
    [
      'the payload only when it holds other content',
      () => ({ ...deliveredCluster(), payload: { contentHash: 'old' } }),
      {},
      ['payload'],
    ],
    [
      'the delivery only when the spec changed',
      () => deliveredCluster(),
      { mirror: mirror({ destination: { namespaces: ['team-.*'] } }) },
      ['delivery'],
    ],
    [
      'the delivery only when a policy changed',
      () => deliveredCluster(),
      { mirror: mirror({ deletePolicy: 'Retain' }) },
      ['delivery'],
    ],
    [
      'both when the source data changed',
      () => deliveredCluster(),
      { source: found({ password: b64('new') }) },
      ['payload', 'delivery'],
    ],
    [
      'both when the source labels changed (they are in the hash)',
      () => deliveredCluster(),
      {
        source: {
          state: 'found',
          object: { data: { password: b64(VALUE) }, metadata: { labels: { team: 'b' } } },
        },
      },
      ['payload', 'delivery'],
    ],
    [
      'the delivery when our label was removed from it',
      () => {
        const c = deliveredCluster();
        return {
          ...c,
          delivery: { ...c.delivery!, metadata: { ...c.delivery!.metadata, labels: {} } },
        };
      },
      {},
      ['delivery'],
    ],
    ['nothing while the cluster is not synced', () => cluster({ synced: false }), {}, []],
    [
      'nothing while the old delivery is being deleted',
      () => {
        const c = deliveredCluster();
        return {
          ...c,
          delivery: {
            ...c.delivery!,
            metadata: { ...c.delivery!.metadata, deletionTimestamp: NOW },
          },
        };
      },
      { source: found({ password: b64('new') }) },
      [],
    ],
  ])('writes %s', (_, obs, input, what) => {
    const p = plan({ ...input, clusters: [obs()] });
    const w = p.writes[0];
    expect(w ? (['payload', 'delivery'] as const).filter((k) => w[k]) : []).toEqual(what);
  });

  it('is stable: the same input hashes the same, another mirror uid hashes differently', () => {
    expect(plan().writes[0]!.delivery!.spec.contentHash).toBe(hash);
    const other = plan({ mirror: mirror({}, undefined, { uid: 'uid-2' }) });
    expect(other.writes[0]!.delivery!.spec.contentHash).not.toBe(hash);
  });

  it.each<[string, ClusterObservation, Partial<SecretMirrorSpec>, string | undefined]>([
    ['own cluster, same name', cluster(), {}, 'src'],
    [
      'own cluster, renamed copy',
      cluster(),
      { destination: { namespaces: ['a'], name: 'other' } },
      undefined,
    ],
    ['another cluster', cluster({ name: 'follower', local: false }), {}, undefined],
  ])('sourceNamespace: %s', (_, obs, spec, expected) => {
    const m = mirror({
      ...spec,
      destination: {
        ...(spec.destination ?? { namespaces: ['a'] }),
        clusters: { names: [obs.name] },
      },
    });
    const p = plan({ mirror: m, clusters: [obs] });
    expect(p.writes[0]!.delivery!.spec.sourceNamespace).toBe(expected);
  });

  it('carries a ConfigMap in the payload (base64, binary keys listed), with no Secret type', () => {
    const p = plan({
      mirror: mirror({ source: { kind: 'ConfigMap', name: 'tls' } }),
      source: {
        state: 'found',
        object: { data: { 'a.conf': 'x=1' }, binaryData: { 'b.bin': 'AAE=' } },
      },
    });
    const w = p.writes[0]!;
    expect(w.payload!.data).toEqual({ 'a.conf': b64('x=1'), 'b.bin': 'AAE=' });
    expect(w.payload!.metadata.annotations?.['mirrorhub.io/binary-keys']).toBe('b.bin');
    expect(w.delivery!.spec.target.kind).toBe('ConfigMap');
    expect(w.delivery!.spec.template?.type).toBeUndefined();
  });

  it('reports a template key missing from the source, and still syncs', () => {
    const m = mirror({ template: { keys: [{ from: 'password' }, { from: 'nope' }] } });
    const first = plan({ mirror: m });
    const p = plan({ mirror: m, clusters: [deliveredCluster({}, {}, first)] });
    expect(p.status.phase).toBe('Active');
    expect(p.status.message).toMatch(/template\.keys: source has no key "nope"/);
  });
});

describe('planMirror: clusters', () => {
  const follower = (o: Partial<ClusterObservation> = {}) =>
    cluster({ name: 'follower', local: false, labels: { env: 'prod' }, ...o });

  it('selects by names and labels, reports unknown names, and removes deselected deliveries', () => {
    const spec = { destination: { namespaces: ['a'], clusters: { names: ['hub', 'gone'] } } };
    const stale = deliveredCluster({}, { name: 'follower', local: false });
    const p = plan({ mirror: mirror(spec), clusters: [cluster(), stale] });
    expect(p.writes.map((w) => w.cluster)).toEqual(['hub']);
    expect(p.deletes).toEqual(['follower']);
    expect(p.status.clusters?.map((c) => [c.name, c.phase])).toEqual([
      ['gone', 'Error'],
      ['hub', 'Pending'],
    ]);
    expect(p.status.clusters?.[0]?.message).toBe('no cluster named "gone" is registered');
    const bySelector = plan({
      mirror: mirror({
        destination: {
          namespaces: ['a'],
          clusters: { selector: { matchLabels: { env: 'prod' } } },
        },
      }),
      clusters: [cluster(), follower()],
    });
    expect(bySelector.writes.map((w) => w.cluster)).toEqual(['follower']);
    expect(bySelector.deletes).toEqual([]);
  });

  it('does not delete from a cluster whose caches are not synced', () => {
    const p = plan({ clusters: [cluster(), follower({ synced: false })] });
    expect(p.deletes).toEqual([]);
  });

  it.each<[string, ClusterObservation[], string, RegExp]>([
    ['connecting', [cluster({ synced: false })], 'Pending', /hub: connecting to the cluster/],
    [
      'unreachable (wins over the last known state)',
      [deliveredCluster({}, { error: 'connect ECONNREFUSED' })],
      'Error',
      /hub: cluster unreachable: connect ECONNREFUSED/,
    ],
    [
      'a failing write',
      [{ ...deliveredCluster(), writeError: '403 Forbidden: no' }],
      'Error',
      /hub: writing to the cluster failed: 403 Forbidden: no/,
    ],
    [
      'one of two clusters failing',
      [
        deliveredCluster(),
        deliveredCluster({}, { name: 'follower', local: false, error: 'timeout' }),
      ],
      'Degraded',
      /follower: cluster unreachable: timeout/,
    ],
    [
      'no agent report yet',
      [deliveredCluster(null)],
      'Pending',
      /waiting for the agent \(no report yet\)/,
    ],
    [
      'the agent still on the old content',
      [deliveredCluster({ observedHash: 'old' })],
      'Pending',
      /waiting for the agent to apply the latest content/,
    ],
    [
      'the agent behind the spec generation',
      [deliveredCluster({ observedGeneration: 2 })],
      'Pending',
      /waiting for the agent/,
    ],
    ['the agent done', [deliveredCluster()], 'Active', /^2\/2 namespaces synced in 1 cluster$/],
  ])('phase while %s', (_, clusters, phase, message) => {
    const m = mirror({
      destination: { namespaces: ['app-.*'], clusters: { names: clusters.map((c) => c.name) } },
    });
    const p = plan({ mirror: m, clusters });
    expect(p.status.phase).toBe(phase);
    expect(p.status.message).toMatch(message);
  });

  it('counts nothing as synced while the agent has not applied the latest content', () => {
    const p = plan({ clusters: [deliveredCluster({ observedHash: 'old' })] });
    expect(p.status.counts).toEqual({
      clusters: 1,
      namespaces: 2,
      synced: 0,
      failed: 0,
      conflicts: 0,
    });
    expect(p.status.synced).toBe('0/2');
  });

  it('selects no cluster with clusters: {} and is Active with nothing to do', () => {
    const p = plan({ mirror: mirror({ destination: { namespaces: ['a'], clusters: {} } }) });
    expect(p.status).toMatchObject({
      phase: 'Active',
      message: 'no cluster selected',
      synced: '0/0',
    });
  });
});

describe('planMirror: aggregated status', () => {
  const conflicted = (n: number) =>
    deliveredCluster({
      phase: 'Degraded',
      counts: { namespaces: n + 1, synced: 1, failed: 0, conflicts: n },
      namespaces: [
        { name: 'ok', state: 'Synced' },
        ...Array.from({ length: n }, (_, i) => ({
          name: `team-${String(i).padStart(3, '0')}`,
          state: 'Conflict' as const,
          message: 'exists and is not managed by mirrorhub',
        })),
      ],
    });

  it('lists conflicts as problems, Degraded, with a Conflict Event once', () => {
    const p = plan({ clusters: [conflicted(1)] });
    expect(p.status).toMatchObject({
      phase: 'Degraded',
      synced: '1/2',
      counts: { clusters: 1, namespaces: 2, synced: 1, failed: 0, conflicts: 1 },
      problems: [
        {
          cluster: 'hub',
          namespace: 'team-000',
          state: 'Conflict',
          message: 'exists and is not managed by mirrorhub',
        },
      ],
    });
    expect(p.status.message).toBe('1/2 namespaces synced in 1 cluster; 1 conflict');
    expect(reasons(p)).toEqual(['Degraded', 'Conflict']);
    expect(p.events.find((e) => e.reason === 'Conflict')?.message).toMatch(/hub\/team-000/);
    const again = plan({ mirror: mirror({}, p.status), clusters: [conflicted(2)] });
    expect(reasons(again)).toEqual([]);
  });

  it('keeps at most 50 problems, counts all', () => {
    const p = plan({ clusters: [conflicted(120)] });
    expect(p.status.problems).toHaveLength(50);
    expect(p.status.counts?.conflicts).toBe(120);
  });

  it('reports failures with a SyncFailed Event', () => {
    const p = plan({
      clusters: [
        deliveredCluster({
          phase: 'Degraded',
          counts: { namespaces: 1, synced: 0, failed: 1, conflicts: 0 },
          namespaces: [{ name: 'x', state: 'Failed', message: '403 Forbidden' }],
        }),
      ],
    });
    expect(p.status.problems).toEqual([
      { cluster: 'hub', namespace: 'x', state: 'Failed', message: '403 Forbidden' },
    ]);
    expect(reasons(p)).toContain('SyncFailed');
  });

  it('takes lastSyncTime from the newest cluster report', () => {
    const m = mirror({ destination: { namespaces: ['a'], clusters: { names: ['hub', 'f'] } } });
    const p = plan({
      mirror: m,
      clusters: [
        deliveredCluster({ lastSyncTime: '2026-01-01T00:00:00Z' }),
        deliveredCluster({ lastSyncTime: '2026-01-02T00:00:00Z' }, { name: 'f', local: false }),
      ],
    });
    expect(p.status.lastSyncTime).toBe('2026-01-02T00:00:00Z');
  });

  it('fills destination summary, observedGeneration and conditions', () => {
    const p = plan({
      mirror: mirror({}, undefined, { generation: 7 }),
      clusters: [deliveredCluster()],
    });
    expect(p.status).toMatchObject({ destination: '/app-.*/', observedGeneration: 7 });
    expect(condition(p, 'Ready')).toMatchObject({
      status: 'True',
      reason: 'Synced',
      observedGeneration: 7,
      lastTransitionTime: '2026-01-02T03:04:05Z',
    });
    expect(condition(p, 'SourceFound')).toMatchObject({
      status: 'True',
      message: 'source Secret src/tls',
    });
  });

  it('emits Synced on the way to Active, then nothing while steady (same status, no patch)', () => {
    const first = plan({ clusters: [deliveredCluster()] });
    expect(reasons(first)).toEqual(['Synced']);
    const later = new Date(NOW.getTime() + 60_000);
    const steady = plan({
      mirror: mirror({}, first.status),
      clusters: [deliveredCluster()],
      now: later,
    });
    expect(steady.events).toEqual([]);
    expect(steady.status).toEqual(first.status);
  });

  it('never puts payload data in status or Events', () => {
    for (const p of [
      plan(),
      plan({ clusters: [deliveredCluster()] }),
      plan({ clusters: [conflicted(3)] }),
    ]) {
      const text = JSON.stringify([p.status, p.events]);
      expect(text).not.toContain(VALUE);
      expect(text).not.toContain(b64(VALUE));
    }
  });
});

describe('planMirror: suspend', () => {
  it('tells the existing delivery to suspend, writes nothing else, keeps the phase', () => {
    const active = plan({ clusters: [deliveredCluster()] });
    const m = mirror({ suspend: true }, active.status);
    const p = plan({
      mirror: m,
      clusters: [deliveredCluster()],
      source: found({ password: b64('changed') }),
    });
    expect(p.writes).toHaveLength(1);
    expect(p.writes[0]!.payload).toBeUndefined();
    expect(p.writes[0]!.delivery!.spec).toEqual({
      ...deliveredCluster().delivery!.spec,
      suspend: true,
    });
    expect(p.status.phase).toBe('Active');
    expect(p.status.message).toMatch(/^suspended/);
    expect(condition(p, 'Ready')).toMatchObject({ status: 'False', reason: 'Suspended' });
    expect(reasons(p)).toEqual(['Suspended']);
    const resumed = plan({ mirror: mirror({}, p.status), clusters: [deliveredCluster()] });
    expect(reasons(resumed)).toContain('Resumed');
  });

  it('creates nothing and deletes nothing while suspended', () => {
    const m = mirror({
      suspend: true,
      destination: { namespaces: ['a'], clusters: { names: ['x'] } },
    });
    const p = plan({ mirror: m, clusters: [cluster()] });
    expect(p.writes).toEqual([]);
    expect(p.deletes).toEqual([]);
  });
});

describe('planCleanup', () => {
  const d = deliveredCluster();
  it.each<[string, ClusterObservation[], string[], string[], boolean]>([
    ['nothing anywhere', [cluster()], [], [], true],
    ['delivery and payload', [d], ['hub'], ['hub'], false],
    ['payload only', [{ ...d, delivery: undefined }], ['hub'], ['hub'], false],
    [
      'delivery being deleted by the agent, payload gone',
      [
        {
          ...d,
          payload: undefined,
          delivery: {
            ...d.delivery!,
            metadata: { ...d.delivery!.metadata, deletionTimestamp: NOW },
          },
        },
      ],
      [],
      [],
      true,
    ],
    ['a cluster not synced yet', [cluster({ name: 'f', synced: false })], [], ['f'], false],
  ])('%s', (_, clusters, deletes, waitingFor, done) => {
    expect(planCleanup(clusters)).toEqual({ deletes, waitingFor, abandoned: [], done });
  });

  describe('gives up on clusters it cannot clean up once the grace period is over', () => {
    const since = new Date(NOW.getTime() - 60_000);
    const down = cluster({ name: 'f', local: false, synced: false, error: 'connect ECONNREFUSED' });
    const failing = deliveredCluster({}, { name: 'g', local: false, writeError: '403 Forbidden' });
    const slow = deliveredCluster({}, { name: 'h', local: false });
    const at = (now: Date, clusters: ClusterObservation[]) =>
      planCleanup(clusters, { deletingSince: since, now, graceMs: 120_000 });

    it('waits within the grace period and says until when', () => {
      const p = at(NOW, [down, failing, cluster()]);
      expect(p).toMatchObject({
        deletes: ['g'],
        waitingFor: ['f', 'g'],
        abandoned: [],
        done: false,
      });
      expect(p.deadline).toEqual(new Date(since.getTime() + 120_000));
    });

    it('abandons the failing clusters after it, with why', () => {
      const later = new Date(since.getTime() + 120_000);
      expect(at(later, [down, failing, cluster()])).toMatchObject({
        abandoned: [
          { cluster: 'f', reason: 'unreachable: connect ECONNREFUSED' },
          { cluster: 'g', reason: 'deleting failed: 403 Forbidden' },
        ],
        done: true,
      });
    });

    it('still waits for a reachable cluster that is making progress', () => {
      const later = new Date(since.getTime() + 600_000);
      const p = at(later, [down, slow]);
      expect(p.abandoned.map((a) => a.cluster)).toEqual(['f']);
      expect(p.done).toBe(false);
    });

    it('has no deadline when nothing fails', () => {
      expect(at(NOW, [slow]).deadline).toBeUndefined();
    });
  });
});

describe('planDeletionStatus', () => {
  const since = new Date(NOW.getTime() - 60_000);
  const down = cluster({
    name: 'follower-a',
    local: false,
    synced: false,
    error: 'connect ECONNREFUSED',
  });

  it('says what it waits for and until when', () => {
    const cleanup = planCleanup([down], { deletingSince: since, now: NOW, graceMs: 120_000 });
    const r = planDeletionStatus({ phase: 'Active' }, cleanup, NAME, NOW);
    expect(r.status.phase).toBe('Active');
    expect(r.status.message).toMatch(
      /^deleting: removing deliveries from follower-a; .* by 2026-01-02T03:05:05Z/,
    );
    expect(r.status.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'Deleting',
    });
    expect(r.events).toEqual([]);
  });

  it('names the clusters left with copies, in status and a Warning Event', () => {
    const cleanup = planCleanup([down], {
      deletingSince: since,
      now: new Date(since.getTime() + 120_000),
      graceMs: 120_000,
    });
    const r = planDeletionStatus({}, cleanup, NAME, NOW);
    expect(r.status.message).toContain(
      'cleanup pending in cluster follower-a (unreachable: connect ECONNREFUSED)',
    );
    expect(r.status.message).toContain(`MirrorDelivery ${NAME}`);
    expect(r.status.conditions?.find((c) => c.type === 'Ready')?.reason).toBe('CleanupPending');
    expect(r.events).toEqual([
      expect.objectContaining({ type: 'Warning', reason: 'CleanupPending' }),
    ]);
    expect(r.events[0]!.message).toContain('follower-a');
  });
});

describe('deliveryUpToDate', () => {
  const desired = plan().writes[0]!.delivery!;
  it.each<[string, MirrorDelivery | undefined, boolean]>([
    ['absent', undefined, false],
    ['identical', desired, true],
    [
      'with status and other labels',
      {
        ...stored(desired, {}),
        metadata: { ...desired.metadata, labels: { ...desired.metadata.labels, x: 'y' } },
      },
      true,
    ],
    ['other spec', { ...desired, spec: { ...desired.spec, suspend: true } }, false],
    [
      'our annotation missing',
      { ...desired, metadata: { ...desired.metadata, annotations: {} } },
      false,
    ],
  ])('%s', (_, observed, expected) => {
    expect(deliveryUpToDate(observed, desired)).toBe(expected);
  });
});

describe('statusWriteDelay', () => {
  const active = (synced: number, at: string): MirrorStatus => ({
    phase: 'Active',
    synced: `${synced}/10`,
    lastSyncTime: at,
    conditions: [
      {
        type: 'Ready',
        status: 'True',
        reason: 'Synced',
        message: '',
        lastTransitionTime: '2026-11-21T00:00:00Z',
      },
    ],
  });
  const base = { events: 0, now: 10_000, coalesceMs: 1000 };

  it('holds progress written less than coalesceMs ago until that time is up', () => {
    expect(
      statusWriteDelay({
        ...base,
        prev: active(5, '2026-11-21T00:00:09Z'),
        next: active(6, '2026-11-21T00:00:10Z'),
        lastWriteAt: 9_700,
      }),
    ).toBe(700);
  });

  it('writes progress at once when the last write is older, or there was none', () => {
    const o = { ...base, prev: active(5, 'a'), next: active(6, 'b') };
    expect(statusWriteDelay({ ...o, lastWriteAt: 8_000 })).toBe(0);
    expect(statusWriteDelay({ ...o, lastWriteAt: undefined })).toBe(0);
  });

  it('never holds a phase change, a condition change or an Event', () => {
    const o = { ...base, lastWriteAt: 9_900 };
    const degraded: MirrorStatus = { ...active(5, 'b'), phase: 'Degraded' };
    expect(statusWriteDelay({ ...o, prev: active(5, 'a'), next: degraded })).toBe(0);
    const notReady: MirrorStatus = {
      ...active(5, 'b'),
      conditions: [{ ...active(5, 'b').conditions![0]!, status: 'False' }],
    };
    expect(statusWriteDelay({ ...o, prev: active(5, 'a'), next: notReady })).toBe(0);
    expect(statusWriteDelay({ ...o, prev: active(5, 'a'), next: active(6, 'b'), events: 1 })).toBe(
      0,
    );
  });
});
