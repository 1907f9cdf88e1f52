import { describe, expect, it } from 'vitest';
import { parsePolicy } from '@mirrorhub/agent/policy';
import {
  type MirrorDelivery,
  type MirrorDeliverySpec,
  type MirrorDeliveryStatus,
  type Payload,
} from '@mirrorhub/shared';
import {
  hubMidWrite,
  plan,
  settle,
  type Action,
  type ConflictInfo,
  type CopyView,
  type NamespaceView,
  type Outcome,
  type PlanInput,
} from './plan.js';
import {
  AGENT_FINALIZER,
  ANNOTATION_CONTENT_HASH,
  ANNOTATION_MIRROR,
  ANNOTATION_ORIGIN,
  LABEL_DELIVERY,
  LABEL_MANAGED_BY,
} from '@mirrorhub/shared/api/contract';

const NOW = new Date('2025-01-02T03:04:05.678Z');
/** The agent chart's default policy, in the agent namespace mirrorhub-system. */
const DEFAULT_POLICY = parsePolicy({}, 'mirrorhub-system');
const NOW_K8S = '2025-01-02T03:04:05Z';
const EARLIER = '2025-01-01T00:00:00Z';
const HASH = 'h-new';
const NAME = 'sm-apps-tls-1234abcd';

function delivery(
  spec: Partial<MirrorDeliverySpec> = {},
  meta: Partial<MirrorDelivery['metadata']> = {},
  status?: MirrorDeliveryStatus,
): MirrorDelivery {
  return {
    apiVersion: 'mirrorhub.io/v1alpha1',
    kind: 'MirrorDelivery',
    metadata: {
      name: NAME,
      namespace: 'mirrorhub-system',
      generation: 3,
      finalizers: [AGENT_FINALIZER],
      ...meta,
    },
    spec: {
      mirror: { kind: 'SecretMirror', namespace: 'apps', name: 'tls', uid: 'u1' },
      originCluster: 'hub',
      payloadSecretName: NAME,
      target: { kind: 'Secret', name: 'tls' },
      namespaces: ['team-.+'],
      template: { type: 'kubernetes.io/tls', labels: { app: 'web' } },
      contentHash: HASH,
      ...spec,
    },
    ...(status ? { status } : {}),
  };
}

const payload: Payload = { data: { 'tls.crt': 'Y3J0', 'tls.key': 'a2V5' }, binaryKeys: [] };

const ns = (name: string, labels?: Record<string, string>, terminating = false): NamespaceView => ({
  name,
  labels,
  terminating,
});
const NAMESPACES = [ns('team-a'), ns('team-b'), ns('other', { team: 'x' })];

const goodMarks = {
  labels: { [LABEL_MANAGED_BY]: 'mirrorhub', [LABEL_DELIVERY]: NAME },
  annotations: {
    [ANNOTATION_ORIGIN]: 'hub/apps/tls',
    [ANNOTATION_MIRROR]: 'SecretMirror/apps/tls',
    [ANNOTATION_CONTENT_HASH]: HASH,
  },
};

function copy(namespace: string, over: Partial<CopyView> = {}): CopyView {
  return {
    kind: 'Secret',
    namespace,
    name: 'tls',
    uid: `uid-${namespace}`,
    resourceVersion: '7',
    labels: goodMarks.labels,
    annotations: goodMarks.annotations,
    verified: true,
    ...over,
  };
}
const withHash = (h: string) => ({
  annotations: { ...goodMarks.annotations, [ANNOTATION_CONTENT_HASH]: h },
});

function input(over: Partial<PlanInput> = {}): PlanInput {
  return {
    delivery: delivery(),
    payload,
    namespaces: NAMESPACES,
    copies: [],
    agentVersion: '1.2.3',
    now: NOW,
    policy: DEFAULT_POLICY,
    signature: { ok: true },
    ...over,
  };
}

/** `op namespace` per action, sorted: enough to read a table. */
function ops(actions: readonly Action[]): string[] {
  return actions
    .map((a) => {
      const extra = a.op === 'update' && a.recreate ? ' (recreate)' : '';
      const which = 'target' in a ? ` ${a.target.kind}/${a.target.name}` : '';
      return `${a.op} ${a.namespace}${which}${extra}`;
    })
    .sort();
}

const steadyStatus = (namespaces: string[]): MirrorDeliveryStatus => ({
  observedGeneration: 3,
  observedHash: HASH,
  phase: 'Active',
  message: `${namespaces.length}/${namespaces.length} namespaces synced`,
  lastSyncTime: EARLIER,
  agentVersion: '1.2.3',
  counts: { namespaces: namespaces.length, synced: namespaces.length, failed: 0, conflicts: 0 },
  namespaces: [],
  syncedNamespaces: namespaces,
  truncated: false,
});

describe('plan: actions', () => {
  it.each<[string, Partial<PlanInput>, string[]]>([
    ['creates a copy in every matching namespace', {}, ['create team-a', 'create team-b']],
    [
      'no write when hash and marks are right and the data is known',
      { copies: [copy('team-a'), copy('team-b')] },
      [],
    ],
    [
      'updates a copy with another content hash',
      { copies: [copy('team-a', withHash('h-old')), copy('team-b')] },
      ['update team-a'],
    ],
    [
      'updates a copy whose marks are wrong (origin edited)',
      {
        copies: [
          copy('team-a', { annotations: { ...goodMarks.annotations, [ANNOTATION_ORIGIN]: 'x' } }),
          copy('team-b'),
        ],
      },
      ['update team-a'],
    ],
    [
      'no second write of a copy just written (its watch event on the way, the cache older)',
      { copies: [copy('team-a', { ...withHash('h-old'), echoPending: true }), copy('team-b')] },
      [],
    ],
    [
      'verifies a copy someone else changed (resourceVersion we did not write)',
      { copies: [copy('team-a', { verified: false }), copy('team-b')] },
      ['verify team-a'],
    ],
    [
      'recreates a Secret whose type changes (known type)',
      { copies: [copy('team-a', { ...withHash('h-old'), type: 'Opaque' }), copy('team-b')] },
      ['update team-a (recreate)'],
    ],
    [
      'a known, equal type is updated in place',
      {
        copies: [
          copy('team-a', { ...withHash('h-old'), type: 'kubernetes.io/tls' }),
          copy('team-b'),
        ],
      },
      ['update team-a'],
    ],
    [
      'deletes the copy of a namespace that stopped matching (Delete)',
      { copies: [copy('team-a'), copy('team-b'), copy('other')] },
      ['delete other Secret/tls'],
    ],
    [
      'releases it under Retain',
      {
        delivery: delivery({ deletePolicy: 'Retain' }),
        copies: [copy('team-a'), copy('team-b'), copy('other')],
      },
      ['release other Secret/tls'],
    ],
    [
      'skips terminating namespaces (no create, no delete)',
      {
        namespaces: [ns('team-a'), ns('team-b', {}, true), ns('gone', {}, true)],
        copies: [copy('team-a'), copy('gone')],
      },
      [],
    ],
    [
      'never writes into the source namespace or an excluded one',
      {
        delivery: delivery({ sourceNamespace: 'team-a', excludeNamespaces: ['team-b'] }),
        namespaces: [...NAMESPACES, ns('team-c')],
      },
      ['create team-c'],
    ],
    [
      'selector OR patterns',
      { delivery: delivery({ namespaceSelector: { matchLabels: { team: 'x' } } }) },
      ['create other', 'create team-a', 'create team-b'],
    ],
    [
      'target renamed: old copy removed, new one created',
      {
        delivery: delivery({ target: { kind: 'Secret', name: 'tls-new' } }),
        namespaces: [ns('team-a')],
        copies: [copy('team-a')],
      },
      ['create team-a', 'delete team-a Secret/tls'],
    ],
    [
      'target kind changed: old Secret removed, ConfigMap created',
      {
        delivery: delivery({ target: { kind: 'ConfigMap', name: 'tls' } }),
        namespaces: [ns('team-a')],
        copies: [copy('team-a')],
      },
      ['create team-a', 'delete team-a Secret/tls'],
    ],
    [
      'ignores copies labelled for another delivery (the index should not hand them in)',
      {
        namespaces: [ns('team-a')],
        copies: [copy('team-a', { labels: { ...goodMarks.labels, [LABEL_DELIVERY]: 'other' } })],
      },
      ['create team-a'],
    ],
    [
      'Skip: a known conflict is not written',
      {
        conflicts: new Map<string, ConflictInfo>([
          ['team-a', { message: 'taken', adoptable: true }],
        ]),
      },
      ['create team-b'],
    ],
    [
      "Adopt, where the cluster's policy allows it: a foreign object is taken over",
      {
        delivery: delivery({ conflictPolicy: 'Adopt' }),
        conflicts: new Map([['team-a', { message: 'taken', adoptable: true }]]),
        policy: parsePolicy({ allowAdopt: true }, 'mirrorhub-system'),
      },
      ['adopt team-a', 'create team-b'],
    ],
    [
      "Adopt, where the cluster's policy does not allow it (the default): left alone",
      {
        delivery: delivery({ conflictPolicy: 'Adopt' }),
        conflicts: new Map([['team-a', { message: 'taken', adoptable: true }]]),
      },
      ['create team-b'],
    ],
    [
      "Adopt: another delivery's copy is never taken",
      {
        delivery: delivery({ conflictPolicy: 'Adopt' }),
        conflicts: new Map([['team-a', { message: 'other delivery', adoptable: false }]]),
      },
      ['create team-b'],
    ],
    [
      'a failed namespace is retried',
      { failures: new Map([['team-a', '403 Forbidden']]), copies: [copy('team-b')] },
      ['create team-a'],
    ],
    [
      'deleting (Delete): every copy goes, matching or not, known namespace or not',
      {
        delivery: delivery({}, { deletionTimestamp: new Date(NOW) }),
        copies: [copy('team-a'), copy('other'), copy('vanished')],
      },
      ['delete other Secret/tls', 'delete team-a Secret/tls', 'delete vanished Secret/tls'],
    ],
    [
      'deleting (Retain): every copy is released',
      {
        delivery: delivery({ deletePolicy: 'Retain' }, { deletionTimestamp: new Date(NOW) }),
        copies: [copy('team-a')],
      },
      ['release team-a Secret/tls'],
    ],
    [
      'deleting without our finalizer: nothing to do',
      {
        delivery: delivery({}, { deletionTimestamp: new Date(NOW), finalizers: ['other'] }),
        copies: [copy('team-a')],
      },
      [],
    ],
    [
      'deleting while suspended: nothing is removed',
      {
        delivery: delivery({ suspend: true }, { deletionTimestamp: new Date(NOW) }),
        copies: [copy('team-a')],
      },
      [],
    ],
    [
      'suspended: no writes at all',
      {
        delivery: delivery({ suspend: true }),
        copies: [copy('team-a', withHash('h-old')), copy('other')],
      },
      [],
    ],
    [
      'invalid regex: no writes (not even removals)',
      { delivery: delivery({ namespaces: ['team-('] }), copies: [copy('other')] },
      [],
    ],
    [
      'invalid selector: no writes',
      {
        delivery: delivery({
          namespaceSelector: { matchExpressions: [{ key: 'a', operator: 'Bogus' as 'In' }] },
        }),
      },
      [],
    ],
    ['payload missing: no writes', { payload: null, copies: [copy('other')] }, []],
  ])('%s', (_, over, expected) => {
    expect(ops(plan(input(over)).actions)).toEqual(expected);
  });

  it('renders the copy: payload data, template metadata, marks', () => {
    const [first] = plan(input({ namespaces: [ns('team-a')] })).actions;
    expect(first).toEqual({
      op: 'create',
      namespace: 'team-a',
      object: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {
          name: 'tls',
          namespace: 'team-a',
          labels: { app: 'web', ...goodMarks.labels },
          annotations: goodMarks.annotations,
        },
        type: 'kubernetes.io/tls',
        data: payload.data,
      },
    });
  });

  it('origin comes from the signed spec, never from an annotation anyone could write', () => {
    const d = delivery(
      { origin: 'hub/cert-manager/wildcard' },
      { annotations: { [ANNOTATION_ORIGIN]: 'forged/x/y' } },
    );
    const [first] = plan(input({ delivery: d, namespaces: [ns('team-a')] })).actions;
    expect(first?.op === 'create' && first.object.metadata.annotations[ANNOTATION_ORIGIN]).toBe(
      'hub/cert-manager/wildcard',
    );
  });

  it('conditional writes carry the uid and resourceVersion we saw', () => {
    const p = plan(input({ namespaces: [ns('team-a')], copies: [copy('team-a', withHash('x'))] }));
    expect(p.actions[0]).toMatchObject({
      op: 'update',
      current: {
        kind: 'Secret',
        namespace: 'team-a',
        name: 'tls',
        uid: 'uid-team-a',
        resourceVersion: '7',
      },
    });
  });
});

describe('plan: finalizer', () => {
  it.each<[string, Partial<PlanInput>, boolean, boolean]>([
    [
      'added before the first copy is written',
      { delivery: delivery({}, { finalizers: [] }) },
      true,
      false,
    ],
    [
      'added when copies exist already',
      {
        delivery: delivery({}, { finalizers: [] }),
        namespaces: [ns('team-a')],
        copies: [copy('team-a')],
      },
      true,
      false,
    ],
    ['not added twice', {}, false, false],
    [
      'not added when nothing is selected',
      { delivery: delivery({}, { finalizers: [] }), namespaces: [ns('other')] },
      false,
      false,
    ],
    [
      'removed once a deleted delivery is cleaned up',
      { delivery: delivery({}, { deletionTimestamp: new Date(NOW) }), copies: [copy('team-a')] },
      false,
      true,
    ],
    [
      'removed at once when suspended',
      { delivery: delivery({ suspend: true }, { deletionTimestamp: new Date(NOW) }) },
      false,
      true,
    ],
  ])('%s', (_, over, add, remove) => {
    const p = plan(input(over));
    expect([p.addFinalizer, p.removeFinalizer]).toEqual([add, remove]);
  });
});

describe('plan: status', () => {
  it.each<[string, Partial<PlanInput>, Partial<MirrorDeliveryStatus>]>([
    [
      'all copies to be written: Active, counts, lastSyncTime now',
      {},
      {
        observedGeneration: 3,
        observedHash: HASH,
        phase: 'Active',
        message: '2/2 namespaces synced',
        lastSyncTime: NOW_K8S,
        agentVersion: '1.2.3',
        counts: { namespaces: 2, synced: 2, failed: 0, conflicts: 0 },
        namespaces: [],
        syncedNamespaces: ['team-a', 'team-b'],
        truncated: false,
      },
    ],
    [
      'a conflict: Degraded, problems first',
      {
        conflicts: new Map([
          [
            'team-b',
            {
              message: 'Secret team-b/tls exists and is not managed by mirrorhub',
              adoptable: true,
            },
          ],
        ]),
      },
      {
        phase: 'Degraded',
        message:
          '1/2 namespaces synced; 1 conflict; first: team-b: Secret team-b/tls exists and is not managed by mirrorhub',
        counts: { namespaces: 2, synced: 1, failed: 0, conflicts: 1 },
        namespaces: [
          {
            name: 'team-b',
            state: 'Conflict',
            message: 'Secret team-b/tls exists and is not managed by mirrorhub',
          },
        ],
        syncedNamespaces: ['team-a'],
      },
    ],
    [
      'a known failure: Failed until a write succeeds',
      { failures: new Map([['team-a', '403 Forbidden: no']]) },
      {
        phase: 'Degraded',
        counts: { namespaces: 2, synced: 1, failed: 1, conflicts: 0 },
        namespaces: [{ name: 'team-a', state: 'Failed', message: '403 Forbidden: no' }],
        syncedNamespaces: ['team-b'],
      },
    ],
    [
      'invalid regex: Error with the message, hash not observed',
      {
        delivery: delivery({ namespaces: ['team-('] }, {}, { observedHash: 'h-old' }),
      },
      {
        phase: 'Error',
        message: expect.stringContaining('spec.namespaces[0]: invalid regular expression "team-("'),
        observedHash: 'h-old',
        counts: { namespaces: 0, synced: 0, failed: 0, conflicts: 0 },
      },
    ],
    [
      'payload missing: Error naming the Secret',
      { payload: null },
      {
        phase: 'Error',
        message: `payload Secret "${NAME}" not found in namespace "mirrorhub-system"`,
      },
    ],
    [
      'suspended: says so, keeps the rest',
      { delivery: delivery({ suspend: true }, {}, steadyStatus(['team-a'])) },
      {
        ...steadyStatus(['team-a']),
        message: 'Suspended: no copies are written or removed until spec.suspend is false',
      },
    ],
    [
      'nothing selected: Active with zero namespaces',
      { namespaces: [ns('other')] },
      {
        phase: 'Active',
        counts: { namespaces: 0, synced: 0, failed: 0, conflicts: 0 },
        namespaces: [],
        syncedNamespaces: [],
      },
    ],
  ])('%s', (_, over, expected) => {
    expect(plan(input(over)).report().status).toMatchObject(expected);
  });

  it('steady: no writes and no status change; lastSyncTime stays', () => {
    const p = plan(
      input({
        delivery: delivery({}, {}, steadyStatus(['team-a', 'team-b'])),
        copies: [copy('team-a'), copy('team-b')],
      }),
    );
    expect(p.actions).toEqual([]);
    expect(p.report().statusChanged).toBe(false);
    expect(p.report().status.lastSyncTime).toBe(EARLIER);
  });

  it('a verify alone does not move lastSyncTime', () => {
    const p = plan(
      input({
        delivery: delivery({}, {}, steadyStatus(['team-a', 'team-b'])),
        copies: [copy('team-a', { verified: false }), copy('team-b')],
      }),
    );
    expect(p.report().statusChanged).toBe(false);
    expect(p.report().status.lastSyncTime).toBe(EARLIER);
  });

  it("rewrites an earlier agent's status, which listed synced namespaces as entries", () => {
    const earlier: MirrorDeliveryStatus = {
      ...steadyStatus(['team-a', 'team-b']),
      namespaces: [
        { name: 'team-a', state: 'Synced' },
        { name: 'team-b', state: 'Synced' },
      ],
      syncedNamespaces: undefined,
    };
    const p = plan(
      input({ delivery: delivery({}, {}, earlier), copies: [copy('team-a'), copy('team-b')] }),
    );
    expect(p.actions).toEqual([]);
    expect(p.report().statusChanged).toBe(true);
    expect(p.report().status).toMatchObject({
      namespaces: [],
      syncedNamespaces: ['team-a', 'team-b'],
    });
  });

  it('does not write again for syncedNamespaces alone where the CRD has no such field', () => {
    // The API server drops a field its CRD does not have: the status reads back without it.
    const dropped = { ...steadyStatus(['team-a', 'team-b']), syncedNamespaces: undefined };
    const p = plan(
      input({ delivery: delivery({}, {}, dropped), copies: [copy('team-a'), copy('team-b')] }),
    );
    expect(p.report().statusChanged).toBe(false);
    // Anything else that changes is still written (and the field with it).
    const more = plan(
      input({
        delivery: delivery({}, {}, dropped),
        copies: [copy('team-a')],
      }),
    );
    expect(more.report().statusChanged).toBe(true);
    expect(more.report().status.syncedNamespaces).toEqual(['team-a', 'team-b']);
  });

  it('lists at most 500 namespaces, problems first, and says it truncated', () => {
    const many = Array.from({ length: 600 }, (_, i) => ns(`team-${String(i).padStart(3, '0')}`));
    const p = plan(input({ namespaces: many, failures: new Map([['team-599', 'boom']]) }));
    expect(p.report().status.namespaces).toEqual([
      { name: 'team-599', state: 'Failed', message: 'boom' },
    ]);
    expect(p.report().status.syncedNamespaces).toHaveLength(499);
    expect(p.report().status.syncedNamespaces?.[0]).toBe('team-000');
    expect(p.report().status.truncated).toBe(true);
    expect(p.report().status.counts).toEqual({
      namespaces: 600,
      synced: 599,
      failed: 1,
      conflicts: 0,
    });
  });
});

describe('settle: the status after applying', () => {
  const base = input({ delivery: delivery({}, {}, steadyStatus(['team-a', 'team-b'])) });
  const p = plan({ ...base, copies: [copy('team-a', withHash('h-old')), copy('other')] });
  // p: update team-a, create team-b, delete other

  it.each<[string, Outcome[], Partial<MirrorDeliveryStatus>, boolean]>([
    [
      'everything worked: Active, lastSyncTime now',
      [
        { namespace: 'team-a', op: 'update', result: 'ok' },
        { namespace: 'team-b', op: 'create', result: 'ok' },
        { namespace: 'other', op: 'delete', result: 'ok' },
      ],
      {
        phase: 'Active',
        lastSyncTime: NOW_K8S,
        counts: { namespaces: 2, synced: 2, failed: 0, conflicts: 0 },
        namespaces: [],
        syncedNamespaces: ['team-a', 'team-b'],
      },
      true,
    ],
    [
      'a create hit a foreign object: Conflict',
      [
        { namespace: 'team-a', op: 'update', result: 'ok' },
        {
          namespace: 'team-b',
          op: 'create',
          result: 'conflict',
          message: 'taken',
          adoptable: true,
        },
        { namespace: 'other', op: 'delete', result: 'ok' },
      ],
      {
        phase: 'Degraded',
        counts: { namespaces: 2, synced: 1, failed: 0, conflicts: 1 },
        namespaces: [{ name: 'team-b', state: 'Conflict', message: 'taken' }],
        syncedNamespaces: ['team-a'],
      },
      false,
    ],
    [
      'a 403 and a failed removal: both Failed, the removal outside the counted namespaces',
      [
        { namespace: 'team-a', op: 'update', result: 'failed', message: '403 Forbidden' },
        { namespace: 'team-b', op: 'create', result: 'ok' },
        { namespace: 'other', op: 'delete', result: 'failed', message: '500 boom' },
      ],
      {
        phase: 'Degraded',
        counts: { namespaces: 2, synced: 1, failed: 2, conflicts: 0 },
        namespaces: [
          { name: 'other', state: 'Failed', message: '500 boom' },
          { name: 'team-a', state: 'Failed', message: '403 Forbidden' },
        ],
        syncedNamespaces: ['team-b'],
      },
      false,
    ],
    [
      'a lost race keeps what was reported before',
      [
        { namespace: 'team-a', op: 'update', result: 'retry', message: '409' },
        { namespace: 'team-b', op: 'create', result: 'ok' },
        { namespace: 'other', op: 'delete', result: 'ok' },
      ],
      {
        phase: 'Active',
        namespaces: [],
        syncedNamespaces: ['team-a', 'team-b'],
      },
      false,
    ],
  ])('%s', (_, outcomes, expected, clean) => {
    const s = settle(base, p, outcomes);
    expect(s.status).toMatchObject(expected);
    expect(s.clean).toBe(clean);
  });

  it('a failure that is fixed by this round clears', () => {
    const withFailure = { ...base, failures: new Map([['team-b', '403 Forbidden']]) };
    const p2 = plan({ ...withFailure, copies: [copy('team-a')] });
    expect(p2.report().status.phase).toBe('Degraded');
    const s = settle(withFailure, p2, [{ namespace: 'team-b', op: 'create', result: 'ok' }]);
    expect(s.status.phase).toBe('Active');
    expect(s.status.counts).toEqual({ namespaces: 2, synced: 2, failed: 0, conflicts: 0 });
  });

  it('a copy taken over from another tool is listed, and stays listed while it is there', () => {
    const p1 = plan(base);
    const s = settle(base, p1, [
      { namespace: 'team-a', op: 'create', result: 'ok', takenOver: 'reflector' },
      { namespace: 'team-b', op: 'create', result: 'ok' },
    ]);
    expect(s.status.takenOver).toEqual([{ namespace: 'team-a', from: 'reflector' }]);
    expect(s.status.syncedNamespaces).toEqual(['team-a', 'team-b']);

    // The next round sees both copies as ours: the report keeps the takeover, nothing changes.
    const next = input({ delivery: delivery({}, {}, s.status) });
    const steady = plan({ ...next, copies: [copy('team-a'), copy('team-b')] });
    expect(steady.actions).toEqual([]);
    expect(steady.report().status.takenOver).toEqual(s.status.takenOver);
    expect(steady.report().statusChanged).toBe(false);

    // team-a no longer selected: its copy goes, and so does the entry.
    const narrowed = input({ delivery: delivery({ namespaces: ['team-b'] }, {}, s.status) });
    const p3 = plan({ ...narrowed, copies: [copy('team-a'), copy('team-b')] });
    expect(p3.report().status.takenOver).toBeUndefined();
  });

  it('a failed write or a missing payload keeps the takeover reported', () => {
    const s = settle(base, plan(base), [
      { namespace: 'team-a', op: 'create', result: 'ok', takenOver: 'kubed' },
      { namespace: 'team-b', op: 'create', result: 'ok' },
    ]);
    const next = input({ delivery: delivery({ contentHash: 'h2' }, {}, s.status) });
    const p2 = plan({ ...next, copies: [copy('team-a'), copy('team-b')] });
    const failed = settle(next, p2, [
      { namespace: 'team-a', op: 'update', result: 'failed', message: '500' },
      { namespace: 'team-b', op: 'update', result: 'ok' },
    ]);
    expect(failed.status.takenOver).toEqual([{ namespace: 'team-a', from: 'kubed' }]);
    const noPayload = plan({ ...next, payload: null, copies: [copy('team-a'), copy('team-b')] });
    expect(noPayload.report().status.takenOver).toEqual([{ namespace: 'team-a', from: 'kubed' }]);
  });

  it('a status without takeovers has no takenOver field', () => {
    const s = settle(base, plan(base), [
      { namespace: 'team-a', op: 'create', result: 'ok' },
      { namespace: 'team-b', op: 'create', result: 'ok' },
    ]);
    expect(s.status).not.toHaveProperty('takenOver');
  });

  it('a verify that found the copy intact writes no status', () => {
    const p2 = plan({ ...base, copies: [copy('team-a', { verified: false }), copy('team-b')] });
    const s = settle(base, p2, [{ namespace: 'team-a', op: 'verify', result: 'unchanged' }]);
    expect(s.statusChanged).toBe(false);
  });

  it('a verify that repaired drift moves lastSyncTime', () => {
    const p2 = plan({ ...base, copies: [copy('team-a', { verified: false }), copy('team-b')] });
    const s = settle(base, p2, [{ namespace: 'team-a', op: 'verify', result: 'ok' }]);
    expect(s.statusChanged).toBe(true);
    expect(s.status.lastSyncTime).toBe(NOW_K8S);
  });

  it('deleting: a failed removal is reported, a clean one changes nothing', () => {
    const deleting = input({
      delivery: delivery({}, { deletionTimestamp: new Date(NOW) }, steadyStatus(['team-a'])),
      copies: [copy('team-a')],
    });
    const pd = plan(deleting);
    const failed = settle(deleting, pd, [
      { namespace: 'team-a', op: 'delete', result: 'failed', message: '403 Forbidden' },
    ]);
    expect(failed.clean).toBe(false);
    expect(failed.status).toMatchObject({
      phase: 'Degraded',
      message: 'Removing copies: 1 failed; first: team-a: 403 Forbidden',
    });
    const ok = settle(deleting, pd, [{ namespace: 'team-a', op: 'delete', result: 'ok' }]);
    expect(ok.clean).toBe(true);
    expect(ok.status.phase).toBe('Active');
  });
});

describe("plan: the cluster owner's policy and the hub's signature", () => {
  const SYSTEM = [...NAMESPACES, ns('kube-system'), ns('mirrorhub-system')];
  const everywhere = delivery({ namespaces: ['.*'] });
  const denied = (p: ReturnType<typeof plan>) =>
    p.entries.filter((e) => e.state === 'PolicyDenied').map((e) => `${e.name}: ${e.message}`);

  it('never writes into always-denied namespaces, and says so per namespace', () => {
    const p = plan(input({ delivery: everywhere, namespaces: SYSTEM }));
    expect(ops(p.actions)).toEqual(['create other', 'create team-a', 'create team-b']);
    expect(denied(p)).toEqual([
      'kube-system: PolicyDenied (policy.namespaces.always-denied): namespace kube-system is never written by mirrorhub (system or agent namespace)',
      'mirrorhub-system: PolicyDenied (policy.namespaces.always-denied): namespace mirrorhub-system is never written by mirrorhub (system or agent namespace)',
    ]);
    expect(p.report().status).toMatchObject({
      phase: 'Degraded',
      counts: { namespaces: 5, synced: 3, failed: 0, conflicts: 0, denied: 2 },
    });
    expect(p.report().status.message).toMatch(
      /^3\/5 namespaces synced; 2 denied by policy; first: kube-system: PolicyDenied \(policy.namespaces.always-denied\)/,
    );
  });

  it('leaves its own copy alone in a namespace the policy now denies (no update, no delete)', () => {
    const policy = parsePolicy({ namespaces: { deny: ['team-b'] } }, 'mirrorhub-system');
    const p = plan(
      input({
        policy,
        copies: [copy('team-a', withHash('h-old')), copy('team-b', withHash('h-old'))],
      }),
    );
    expect(ops(p.actions)).toEqual(['update team-a']);
    expect(denied(p)).toEqual([
      'team-b: PolicyDenied (policy.namespaces.deny): namespace team-b matches denied pattern "team-b"',
    ]);
  });

  it.each<[string, Partial<MirrorDeliverySpec>, RegExp]>([
    [
      'a service-account token',
      { template: { type: 'kubernetes.io/service-account-token' } },
      /^PolicyDenied \(policy.secretTypes\): Secret type kubernetes.io\/service-account-token is never written/,
    ],
    [
      'an annotation under kubernetes.io',
      { template: { annotations: { 'kubernetes.io/service-account.name': 'default' } } },
      /^PolicyDenied \(policy.metadata.deniedDomains\): annotation kubernetes.io\/service-account.name/,
    ],
    [
      "Helm's release marks (the adoption squat)",
      {
        template: {
          labels: { 'app.kubernetes.io/managed-by': 'Helm' },
          annotations: { 'meta.helm.sh/release-name': 'db' },
        },
      },
      /^PolicyDenied \(policy.metadata.foreignOwnership\): label app.kubernetes.io\/managed-by is another controller's ownership/,
    ],
  ])(
    'refuses %s everywhere: nothing written, Error, every namespace PolicyDenied',
    (_, spec, message) => {
      const p = plan(
        input({ delivery: delivery(spec), copies: [copy('team-a', withHash('h-old'))] }),
      );
      expect(p.actions).toEqual([]);
      expect(p.report().status.phase).toBe('Error');
      expect(p.report().status.message).toMatch(message);
      expect(p.entries.map((e) => e.state)).toEqual(['PolicyDenied', 'PolicyDenied']);
      // The hub must see this report as the answer to this content, not wait for another.
      expect(p.report().status.observedHash).toBe(HASH);
    },
  );

  it('admits a namespace only with the acceptance label the hub asked for', () => {
    const d = delivery({ acceptLabel: 'accept.mirrorhub.io/apps' });
    const p = plan(
      input({
        delivery: d,
        namespaces: [ns('team-a', { 'accept.mirrorhub.io/apps': 'true' }), ns('team-b')],
      }),
    );
    expect(ops(p.actions)).toEqual(['create team-a']);
    // Not accepting is not an error: the namespace is simply not selected.
    expect(p.report().status).toMatchObject({
      phase: 'Active',
      counts: { namespaces: 1, synced: 1 },
    });
  });

  it('reports a conflict Adopt would need as PolicyDenied when Adopt is not allowed', () => {
    const i = input({ delivery: delivery({ conflictPolicy: 'Adopt' }) });
    const p = plan(i);
    const s = settle(i, p, [
      { namespace: 'team-a', op: 'create', result: 'conflict', message: 'taken', adoptable: true },
      { namespace: 'team-b', op: 'create', result: 'ok' },
    ]);
    expect(s.status.namespaces).toEqual([
      {
        name: 'team-a',
        state: 'PolicyDenied',
        message:
          "PolicyDenied (policy.allowAdopt): the target name is taken by an object mirrorhub does not own, and this cluster's policy does not allow Adopt",
      },
    ]);
    expect(s.status.syncedNamespaces).toEqual(['team-b']);
  });

  it('acts on nothing whose signature did not verify', () => {
    const signature = { ok: false as const, reason: 'MirrorDelivery x: not signed' };
    const p = plan(input({ signature, copies: [copy('team-a', withHash('h-old'))] }));
    expect(p.actions).toEqual([]);
    expect(p.addFinalizer).toBe(false);
    expect(p.report().status).toMatchObject({
      phase: 'Error',
      message:
        'SignatureInvalid: nothing is written for this delivery: MirrorDelivery x: not signed',
      observedHash: HASH,
    });
  });

  it('lets an unsigned delivery being deleted go without touching a copy', () => {
    const d = delivery({}, { deletionTimestamp: '2025-01-01T00:00:00Z' });
    const p = plan(
      input({ delivery: d, signature: { ok: false, reason: 'forged' }, copies: [copy('team-a')] }),
    );
    expect(p.actions).toEqual([]);
    expect(p.removeFinalizer).toBe(true);
    // The same delivery, signed, removes its copy first.
    expect(ops(plan(input({ delivery: d, copies: [copy('team-a')] })).actions)).toEqual([
      'delete team-a Secret/tls',
    ]);
  });
});

describe('plan: a replayed delivery (older than one applied under its name)', () => {
  const replay = { reason: 'Replayed: nothing is written for this delivery: ...', newest: 900 };

  it('writes nothing, keeps the copies as they are, and reports the newest sequence for the hub', () => {
    const older = delivery({ contentHash: 'h-old', sequence: 500 });
    const p = plan(input({ delivery: older, replay, copies: [copy('team-a')] }));
    expect(p.actions).toEqual([]);
    expect(p.addFinalizer).toBe(false);
    expect(p.report().status).toMatchObject({
      phase: 'Error',
      message: replay.reason,
      newestSequence: 900,
    });
  });

  it('a delivery being deleted goes without touching a copy: its spec is no longer the hub’s word', () => {
    const d = delivery({ deletePolicy: 'Delete' }, { deletionTimestamp: EARLIER });
    const p = plan(input({ delivery: d, replay, copies: [copy('team-a')] }));
    expect(p.actions).toEqual([]);
    expect(p.removeFinalizer).toBe(true);
  });

  it('without its memory of sequences the agent cannot tell a replay: nothing written or removed', () => {
    const memoryError =
      'reading ConfigMap mirrorhub-system/mirrorhub-agent-sequences: 403 Forbidden';
    const p = plan(input({ memoryError, copies: [copy('team-a', withHash('h-old'))] }));
    expect(p.actions).toEqual([]);
    expect(p.report().status).toMatchObject({
      phase: 'Error',
      message: `nothing is written for this delivery: ${memoryError}`,
    });
    const deleting = delivery({}, { deletionTimestamp: EARLIER });
    const d = plan(input({ delivery: deleting, memoryError, copies: [copy('team-a')] }));
    expect(d.actions).toEqual([]);
    expect(d.removeFinalizer).toBe(false);
  });

  it('once the hub’s newer delivery is accepted, newestSequence is no longer reported', () => {
    const refused = plan(input({ replay })).report().status;
    const p = plan(input({ delivery: delivery({ sequence: 901 }, {}, refused) }));
    const { status, statusChanged } = p.report();
    expect(status.newestSequence).toBeUndefined();
    expect(status.phase).toBe('Active');
    expect(statusChanged).toBe(true);
  });
});

describe('hubMidWrite: the payload and the delivery written out of step', () => {
  const payloadWith = (hash?: string) => ({
    metadata: { annotations: hash ? { [ANNOTATION_CONTENT_HASH]: hash } : {} },
  });
  it.each<[string, MirrorDelivery, ReturnType<typeof payloadWith> | undefined, boolean]>([
    ['payload and delivery agree', delivery(), payloadWith(HASH), false],
    ['payload ahead of the delivery', delivery(), payloadWith('h-next'), true],
    ['payload without the annotation (older hub)', delivery(), payloadWith(), false],
    ['no payload', delivery(), undefined, false],
    [
      'delivery being deleted',
      delivery({}, { deletionTimestamp: EARLIER }),
      payloadWith('h-next'),
      false,
    ],
  ])('%s', (_, d, p, expected) => {
    expect(hubMidWrite(d, p)).toBe(expected);
  });
});
