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
import { generateKeyPairSync } from 'node:crypto';
import {
  createSigner,
  createVerifier,
  deliveryMessage,
  payloadMessage,
} from '@mirrorhub/shared/mirror/signing';
import { compilePattern } from '@mirrorhub/shared/mirror/namespaces';
import {
  planCleanup,
  planDeletionStatus,
  planMirror,
  type ClusterObservation,
  type MirrorPlan,
  type PlanInput,
  type Tenancy,
} from './plan.js';
import { statusCoalesceMs, statusWriteDelay, type SourceObservation } from '../../status.js';
import { ANNOTATION_CONTENT_HASH, ANNOTATION_SIGNATURE } from '@mirrorhub/shared/api/contract';
import { deliveryUpToDate } from './delivery.js';

const NOW = new Date('2026-01-02T03:04:05Z');
/** What a SecretMirror's status says of a problem in a namespace other than its own. */
const REDACTED = (state: string) =>
  new RegExp(
    `^${state}: details in MirrorDelivery sm-src-tls-[0-9a-f]+ \\(namespace mirrorhub-system of cluster hub\\), readable by its administrators$`,
  );
const OPEN_TENANCY: Tenancy = {
  remoteNamespaces: [compilePattern('.*', 'remoteNamespaces[0]')],
  requireAcceptance: false,
};
const SIGNER = createSigner(
  generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
);
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
    signer: SIGNER,
    // Most tables are about delivery, not tenancy: the SecretMirrors here may reach every
    // cluster. The tenancy tables below set their own.
    tenancy: OPEN_TENANCY,
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
    payload: {
      contentHash: w.delivery!.spec.contentHash,
      signature: w.payload?.metadata.annotations?.[ANNOTATION_SIGNATURE],
    },
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
    [
      // A Vault error a retry cannot fix (denied, login failed, TLS): decide.failedObservation.
      'unreadable and denied after delivering: Error, copies kept',
      { state: 'unreadable', error: 'Vault: permission denied', denied: true },
      deliveredCluster(),
      'Error',
      /cannot read source Secret src\/tls: Vault: permission denied; copies are kept as they are$/,
      ['SourceUnreadable'],
    ],
    [
      // Vault sealed, unreachable, slow: retried, the mirror Degraded meanwhile.
      'unreadable for a while after delivering: Degraded, copies kept',
      { state: 'unreadable', error: 'Vault: sealed' },
      deliveredCluster(),
      'Degraded',
      /cannot read source Secret src\/tls: Vault: sealed; copies are kept as they are$/,
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

  it('counts copies taken over per tool over the clusters, with one TakenOver Event per rise', () => {
    const reporting = (name: string, takenOver: MirrorDeliveryStatus['takenOver']) =>
      deliveredCluster({ takenOver }, { name });
    const clusters = [
      reporting('hub', [
        { namespace: 'app-a', from: 'reflector' },
        { namespace: 'app-b', from: 'reflector' },
      ]),
      reporting('spoke', [{ namespace: 'app-a', from: 'kubed' }]),
    ];
    const m = mirror({
      destination: { namespaces: ['app-.*'], clusters: { names: ['hub', 'spoke'] } },
    });
    const p = plan({ mirror: m, clusters });
    expect(p.status.takenOver).toEqual([
      { from: 'kubed', copies: 1 },
      { from: 'reflector', copies: 2 },
    ]);
    const taken = p.events.filter((e) => e.reason === 'TakenOver');
    expect(taken.map((e) => e.message)).toEqual([
      "1 copy made by kubed from this mirror's source taken over in place (their kubed marks and ownerReferences removed)",
      "2 copies made by reflector from this mirror's source taken over in place (their reflector marks and ownerReferences removed)",
    ]);
    // The same counts again: no Event; no takeover anywhere: no field.
    const again = plan({ mirror: mirror(m.spec, p.status), clusters });
    expect(again.events.filter((e) => e.reason === 'TakenOver')).toEqual([]);
    expect(plan().status).not.toHaveProperty('takenOver');
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
          // A SecretMirror's author does not learn what another namespace holds.
          message: expect.stringMatching(REDACTED('Conflict')),
        },
      ],
    });
    expect(p.status.message).toMatch(
      /^1\/2 namespaces synced in 1 cluster; 1 conflict; hub: 1\/2 namespaces synced, 1 conflict; details in MirrorDelivery/,
    );
    expect(reasons(p)).toEqual(['Degraded', 'Conflict']);
    expect(p.events.find((e) => e.reason === 'Conflict')?.message).toMatch(/hub\/team-000/);
    const again = plan({ mirror: mirror({}, p.status), clusters: [conflicted(2)] });
    expect(reasons(again)).toEqual([]);
  });

  it("names no other mirror's delivery in its own namespace's problem either", () => {
    const planted = 'Secret src/tls is a copy of MirrorDelivery "sm-team-b-db-89abcdef01234567"';
    const p = plan({
      clusters: [
        deliveredCluster({
          phase: 'Degraded',
          counts: { namespaces: 1, synced: 0, failed: 0, conflicts: 1 },
          namespaces: [{ name: 'src', state: 'Conflict', message: planted }],
        }),
      ],
    });
    expect(p.status.problems).toEqual([
      {
        cluster: 'hub',
        namespace: 'src',
        state: 'Conflict',
        message: "Secret src/tls is a copy of another mirror's MirrorDelivery",
      },
    ]);
    expect(JSON.stringify(p.status)).not.toContain('team-b');
    expect(JSON.stringify(p.events)).not.toContain('team-b');
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
      {
        cluster: 'hub',
        namespace: 'x',
        state: 'Failed',
        message: expect.stringMatching(REDACTED('Failed')),
      },
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

describe('planMirror: sequence (a delivery cannot be replayed older)', () => {
  const later = new Date(NOW.getTime() + 60_000);
  const sequenceOf = (p: MirrorPlan) => p.writes[0]?.delivery?.spec.sequence;

  it('a first delivery carries the clock, in milliseconds', () => {
    expect(sequenceOf(plan())).toBe(NOW.getTime());
  });

  it('nothing changed: nothing written, whenever the hub looks again (a restart included)', () => {
    expect(plan({ clusters: [deliveredCluster()], now: later }).writes).toEqual([]);
  });

  it('a source change: the delivery is written with a higher sequence', () => {
    const p = plan({
      clusters: [deliveredCluster()],
      source: found({ password: b64('changed') }),
      now: later,
    });
    expect(sequenceOf(p)).toBe(later.getTime());
  });

  it('a hub whose clock is behind what it wrote: one above the observed sequence', () => {
    const earlier = new Date(NOW.getTime() - 60_000);
    const p = plan({
      clusters: [deliveredCluster()],
      source: found({ password: b64('changed') }),
      now: earlier,
    });
    expect(sequenceOf(p)).toBe(NOW.getTime() + 1);
  });

  it('the agent refused what is there as a replay: written again above what the agent applied, even unchanged', () => {
    // A replayed delivery whose spec is what the hub wants again (say, the source went back to
    // that value): the agent reports the newest sequence it applied.
    const newest = NOW.getTime() + 5_000;
    const replayed = deliveredCluster({
      phase: 'Error',
      message: 'Replayed: ...',
      newestSequence: newest,
    });
    const p = plan({ clusters: [replayed], now: NOW });
    expect(p.writes).toHaveLength(1);
    expect(p.writes[0]!.payload).toBeUndefined();
    expect(sequenceOf(p)).toBe(newest + 1);
    // Once written, the agent's stale report (below the new sequence) asks for nothing more.
    const rewritten = cluster({
      delivery: stored(p.writes[0]!.delivery!, { newestSequence: newest }),
      payload: replayed.payload,
    });
    expect(plan({ clusters: [rewritten], now: NOW }).writes).toEqual([]);
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
    const delivered = deliveredCluster().delivery!.spec;
    // A changed delivery: a higher sequence (the clock has not moved on in this test).
    expect(p.writes[0]!.delivery!.spec).toEqual({
      ...delivered,
      suspend: true,
      sequence: delivered.sequence! + 1,
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

describe('statusCoalesceMs', () => {
  it.each([
    [0, 1000],
    [1, 1000],
    [20, 1000],
    [21, 2000],
    [100, 5000],
    [1000, 50_000],
  ])('%i clusters -> %i ms', (clusters, ms) => {
    expect(statusCoalesceMs(clusters, 1000)).toBe(ms);
  });
});

describe('planMirror: trust', () => {
  const follower = (o: Partial<ClusterObservation> = {}) =>
    cluster({ name: 'follower', local: false, ...o });
  const toFollower = mirror({
    destination: { namespaces: ['app-.*'], clusters: { names: ['follower'] } },
  });
  const strict: Tenancy = { remoteNamespaces: [], requireAcceptance: false };
  const csm = (spec: Partial<SecretMirrorSpec> = {}): ClusterSecretMirror => ({
    apiVersion: 'mirrorhub.io/v1alpha1',
    kind: 'ClusterSecretMirror',
    metadata: { name: 'tls', uid: 'uid-2', generation: 1 },
    spec: {
      source: { kind: 'Secret', name: 'tls', namespace: 'src' },
      destination: { namespaces: ['app-.*'], clusters: { names: ['follower'] } },
      ...spec,
    },
  });

  it.each<[string, Partial<PlanInput>, RegExp | undefined]>([
    [
      'a SecretMirror may not reach another cluster by default',
      { mirror: toFollower, clusters: [cluster(), follower()], tenancy: strict },
      /SecretMirrors in namespace src may deliver only to the hub's own cluster, not to follower: use a ClusterSecretMirror, or ask the hub's administrators to add the namespace to tenancy.remoteNamespaces/,
    ],
    [
      'a SecretMirror may, where the hub grants its namespace remote clusters',
      {
        mirror: toFollower,
        clusters: [cluster(), follower()],
        tenancy: { remoteNamespaces: [compilePattern('sr.', 'p')], requireAcceptance: false },
      },
      undefined,
    ],
    [
      'a ClusterSecretMirror may, whatever the tenancy',
      { mirror: csm(), clusters: [cluster(), follower()], tenancy: strict },
      undefined,
    ],
    [
      'a SecretMirror never adopts (the CRD refuses it too; this is for older CRDs)',
      { mirror: mirror({ conflictPolicy: 'Adopt' }), tenancy: strict },
      /conflictPolicy Adopt is for ClusterSecretMirrors only/,
    ],
  ])('%s', (_, input, error) => {
    const p = plan(input);
    if (error) {
      expect(p.status.phase).toBe('Error');
      expect(p.status.message).toMatch(error);
      expect(p.writes).toEqual([]);
      expect(reasons(p)).toEqual(['InvalidSpec']);
    } else {
      expect(p.status.phase).not.toBe('Error');
      expect(p.writes.map((w) => w.cluster)).toContain('follower');
    }
  });

  it('asks for acceptance by label, for SecretMirrors only', () => {
    const tenancy: Tenancy = { remoteNamespaces: [], requireAcceptance: true };
    expect(plan({ tenancy }).writes[0]?.delivery?.spec.acceptLabel).toBe('accept.mirrorhub.io/src');
    const admin = plan({ mirror: csm({ destination: { namespaces: ['app-.*'] } }), tenancy });
    expect(admin.writes[0]?.delivery?.spec).not.toHaveProperty('acceptLabel');
  });

  it("keeps the details of a ClusterSecretMirror's problems: its authors are admins", () => {
    const first = plan({ mirror: csm(), clusters: [follower()] });
    const w = first.writes[0]!;
    const p = plan({
      mirror: csm(),
      clusters: [
        follower({
          delivery: stored(w.delivery!, {
            phase: 'Degraded',
            counts: { namespaces: 1, synced: 0, failed: 0, conflicts: 0, denied: 1 },
            namespaces: [
              {
                name: 'kube-system',
                state: 'PolicyDenied',
                message: 'PolicyDenied (policy.namespaces.always-denied): x',
              },
            ],
          }),
          payload: {
            contentHash: w.delivery!.spec.contentHash,
            signature: w.payload?.metadata.annotations?.[ANNOTATION_SIGNATURE],
          },
        }),
      ],
    });
    expect(p.status).toMatchObject({
      phase: 'Degraded',
      counts: { clusters: 1, namespaces: 1, synced: 0, denied: 1 },
      problems: [
        {
          cluster: 'follower',
          namespace: 'kube-system',
          state: 'PolicyDenied',
          message: 'PolicyDenied (policy.namespaces.always-denied): x',
        },
      ],
    });
    expect(reasons(p)).toContain('PolicyDenied');
  });

  it('signs every delivery and payload for the cluster, namespace and name it is written to', () => {
    const p = plan({
      mirror: csm(),
      clusters: [cluster(), follower({ agentNamespace: 'agents' })],
    });
    const verifier = createVerifier(SIGNER.publicKeyPem);
    for (const w of p.writes) {
      const d = w.delivery!;
      const place = {
        cluster: w.cluster,
        namespace: d.metadata.namespace!,
        name: d.metadata.name!,
      };
      const sig = d.metadata.annotations?.[ANNOTATION_SIGNATURE];
      expect(verifier.verify(deliveryMessage(place, d.spec), sig)).toMatchObject({ ok: true });
      // Bound to the place: the same object is refused in another cluster.
      const elsewhere = { ...place, cluster: w.cluster === 'hub' ? 'follower' : 'hub' };
      expect(verifier.verify(deliveryMessage(elsewhere, d.spec), sig)).toMatchObject({ ok: false });
      const payload = w.payload!;
      const pa = payload.metadata.annotations ?? {};
      expect(
        verifier.verify(
          payloadMessage(place, {
            contentHash: pa[ANNOTATION_CONTENT_HASH],
            binaryKeys: undefined,
            data: payload.data,
          }),
          pa[ANNOTATION_SIGNATURE],
        ),
      ).toMatchObject({ ok: true });
    }
  });

  it('writes nothing while signatures match, and re-signs everything for a new key', () => {
    const first = plan({ mirror: csm(), clusters: [follower()] });
    const w = first.writes[0]!;
    const landed = follower({
      delivery: stored(w.delivery!, {}),
      payload: {
        contentHash: w.delivery!.spec.contentHash,
        signature: w.payload?.metadata.annotations?.[ANNOTATION_SIGNATURE],
      },
    });
    expect(plan({ mirror: csm(), clusters: [landed] }).writes).toEqual([]);
    const rotated = createSigner(
      generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    );
    const again = plan({ mirror: csm(), clusters: [landed], signer: rotated });
    expect(again.writes).toHaveLength(1);
    expect(again.writes[0]?.payload).toBeDefined();
    expect(again.writes[0]?.delivery?.metadata.annotations?.[ANNOTATION_SIGNATURE]).toMatch(
      new RegExp(`^${rotated.keyId}\\.`),
    );
  });
});

describe('planMirror: the delivery under the mirror name is written only if it is this mirror’s', () => {
  const follower = (o: Partial<ClusterObservation> = {}) =>
    cluster({ name: 'follower', local: false, ...o });
  const OTHER_SIGNER = createSigner(
    generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  );
  /** The cluster as it is after a mirror with this uid delivered there (and the agent reported). */
  const deliveredBy = (uid: string, o: Partial<ClusterObservation> = {}, signer = SIGNER) =>
    deliveredCluster(
      { phase: 'Error', message: "the agent's report on it" },
      o,
      plan({
        mirror: mirror(
          { destination: { namespaces: ['app-.*'], clusters: { names: [o.name ?? 'hub'] } } },
          undefined,
          { uid },
        ),
        clusters: [cluster(o)],
        signer,
      }),
    );
  /** `obs` with its delivery's spec.mirror / originCluster changed (as forged or another's). */
  const claiming = (
    obs: ClusterObservation,
    spec: Partial<MirrorDelivery['spec']>,
  ): ClusterObservation => ({
    ...obs,
    delivery: { ...obs.delivery!, spec: { ...obs.delivery!.spec, ...spec } },
  });
  const CONFLICT =
    /^conflict: MirrorDelivery sm-src-tls-[0-9a-f]{16} \(namespace mirrorhub-system\) belongs to another mirror \((.+)\), not to this one \(uid uid-1\)\. Nothing is written there; if it is stale, delete it \(kubectl -n mirrorhub-system delete mirrordelivery sm-src-tls-[0-9a-f]{16}\) and this mirror delivers$/;

  it.each<[string, ClusterObservation, string | undefined]>([
    [
      'another mirror',
      claiming(deliveredBy('uid-1'), {
        mirror: { kind: 'SecretMirror', namespace: 'other', name: 'tls', uid: 'uid-9' },
      }),
      'SecretMirror/other/tls uid uid-9 from cluster hub',
    ],
    [
      'a ClusterSecretMirror of the same name',
      claiming(deliveredBy('uid-1'), {
        mirror: { kind: 'ClusterSecretMirror', name: 'tls', uid: 'uid-9' },
      }),
      'ClusterSecretMirror//tls uid uid-9 from cluster hub',
    ],
    [
      "another hub's (same mirror name and uid)",
      claiming(deliveredBy('uid-1'), { originCluster: 'hub-2' }),
      'SecretMirror/src/tls uid uid-1 from cluster hub-2',
    ],
    [
      'this name, another uid, not signed (forged, or older than signing)',
      {
        ...deliveredBy('uid-0'),
        delivery: {
          ...deliveredBy('uid-0').delivery!,
          metadata: { ...deliveredBy('uid-0').delivery!.metadata, annotations: {} },
        },
      },
      'SecretMirror/src/tls uid uid-0 from cluster hub',
    ],
    [
      'this name, another uid, signed with a key this hub does not hold',
      deliveredBy('uid-0', {}, OTHER_SIGNER),
      'SecretMirror/src/tls uid uid-0 from cluster hub',
    ],
    [
      'this name, no uid at all',
      claiming(deliveredBy('uid-1'), {
        mirror: { kind: 'SecretMirror', namespace: 'src', name: 'tls', uid: '' },
      }),
      'SecretMirror/src/tls uid (none) from cluster hub',
    ],
  ])('%s: nothing written or deleted, the cluster in Error saying whose it is', (_, obs, owner) => {
    const p = plan({ clusters: [obs] });
    expect(p.writes).toEqual([]);
    expect(p.deletes).toEqual([]);
    const entry = p.status.clusters?.[0];
    expect(entry).toMatchObject({ name: 'hub', phase: 'Error', synced: 0, namespaces: 0 });
    expect(entry?.message).toMatch(CONFLICT);
    expect(CONFLICT.exec(entry!.message!)?.[1]).toBe(owner);
    // Another mirror's report is not this mirror's: nothing of it is counted or redacted away.
    expect(p.status.problems).toEqual([]);
    expect(p.status.phase).toBe('Error');
    expect(p.status.message).toContain(`hub: ${entry!.message}`);
    expect(reasons(p)).toContain('SyncError');
    expect(JSON.stringify(p.status)).not.toContain("the agent's report on it");
  });

  it('writes as usual over its own delivery, however it got there', () => {
    const own = deliveredBy('uid-1');
    expect(plan({ clusters: [own] }).writes).toEqual([]);
    const changed = plan({ clusters: [own], source: found({ password: b64('new') }) });
    expect(changed.writes.map((w) => w.cluster)).toEqual(['hub']);
  });

  it("never deletes another mirror's delivery from a cluster no longer selected", () => {
    const spec = { destination: { namespaces: ['a'], clusters: { names: ['hub'] } } };
    const other = claiming(deliveredBy('uid-1', { name: 'follower', local: false }), {
      mirror: { kind: 'SecretMirror', namespace: 'other', name: 'tls', uid: 'uid-9' },
    });
    expect(plan({ mirror: mirror(spec), clusters: [cluster(), other] }).deletes).toEqual([]);
    const previous = deliveredBy('uid-0', { name: 'follower', local: false });
    expect(plan({ mirror: mirror(spec), clusters: [cluster(), previous] }).deletes).toEqual([
      'follower',
    ]);
  });

  it('never suspends (writes) another mirror’s delivery', () => {
    const other = claiming(deliveredBy('uid-1'), {
      mirror: { kind: 'SecretMirror', namespace: 'other', name: 'tls', uid: 'uid-9' },
    });
    expect(plan({ mirror: mirror({ suspend: true }), clusters: [other] }).writes).toEqual([]);
    expect(
      plan({ mirror: mirror({ suspend: true }), clusters: [deliveredBy('uid-0')] }).writes,
    ).toEqual([]);
  });

  describe('a mirror deleted and created again under the same name', () => {
    // The old mirror (uid-0) was deleted while the follower was unreachable: its finalizer was
    // released with the cleanup pending, and its delivery is still there when it is back.
    const old = deliveredBy('uid-0', { name: 'follower', local: false });
    const toFollower = mirror({
      destination: { namespaces: ['app-.*'], clusters: { names: ['follower'] } },
    });

    it('cleans the old delivery up first (it was signed by this hub, for that mirror)', () => {
      const p = plan({ mirror: toFollower, clusters: [old] });
      expect(p.writes).toEqual([]);
      expect(p.deletes).toEqual(['follower']);
      expect(p.status.clusters?.[0]).toMatchObject({ name: 'follower', phase: 'Pending' });
      expect(p.status.clusters?.[0]?.message).toMatch(
        /^removing MirrorDelivery sm-src-tls-[0-9a-f]{16} \(namespace mirrorhub-system\), left by a deleted mirror with this name \(uid uid-0\); delivering once it is gone$/,
      );
      expect(p.status.phase).toBe('Pending');
    });

    it('cleans it up even while the new mirror has no source yet', () => {
      const p = plan({ mirror: toFollower, clusters: [old], source: { state: 'missing' } });
      expect(p.writes).toEqual([]);
      expect(p.deletes).toEqual(['follower']);
    });

    it('waits while the agent removes its copies, then delivers', () => {
      const deleting = {
        ...old,
        payload: undefined,
        delivery: {
          ...old.delivery!,
          metadata: { ...old.delivery!.metadata, deletionTimestamp: NOW },
        },
      };
      const waiting = plan({ mirror: toFollower, clusters: [deleting] });
      expect(waiting.writes).toEqual([]);
      expect(waiting.deletes).toEqual([]);
      expect(waiting.status.clusters?.[0]?.message).toBe(
        'waiting for the previous delivery to be removed',
      );
      const gone = plan({ mirror: toFollower, clusters: [follower()] });
      expect(gone.writes.map((w) => w.cluster)).toEqual(['follower']);
      expect(gone.writes[0]?.delivery?.spec.mirror.uid).toBe('uid-1');
    });
  });
});

describe('planCleanup: only what is the mirror’s', () => {
  const id = { kind: 'SecretMirror', namespace: 'src', name: 'tls' } as const;
  const d = deliveredCluster();
  const other: ClusterObservation = {
    ...d,
    delivery: {
      ...d.delivery!,
      spec: {
        ...d.delivery!.spec,
        mirror: { kind: 'SecretMirror', namespace: 'other', name: 'tls', uid: 'uid-9' },
      },
    },
  };
  const olderUid: ClusterObservation = {
    ...d,
    delivery: {
      ...d.delivery!,
      spec: { ...d.delivery!.spec, mirror: { ...d.delivery!.spec.mirror, uid: 'uid-0' } },
    },
  };

  it.each<[string, ClusterObservation, string[], boolean]>([
    ['its own delivery', d, ['hub'], false],
    ['an earlier mirror of the same name (deleted too)', olderUid, ['hub'], false],
    ['a delivery naming another mirror: neither deleted nor waited for', other, [], true],
  ])('%s', (_, obs, deletes, done) => {
    expect(planCleanup([obs], { mirror: id })).toMatchObject({ deletes, done });
  });

  it('without the mirror (older callers), deletes whatever holds the name', () => {
    expect(planCleanup([other]).deletes).toEqual(['hub']);
  });
});
