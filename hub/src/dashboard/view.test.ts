import { describe, expect, it } from 'vitest';
import type {
  ClusterSecretMirror,
  MirrorCluster,
  MirrorDelivery,
  SecretMirror,
} from '@mirrorhub/shared/api/index';
import {
  FULL_ACCESS,
  clusterRows,
  matrix,
  mirrorDetail,
  overview,
  viewerInput,
  where,
  type Access,
  type ViewInput,
} from './view.js';

const NOW = Date.parse('2026-11-24T10:00:00Z');

function cluster(name: string, labels: Record<string, string>, status: MirrorCluster['status']) {
  return {
    apiVersion: 'mirrorhub.io/v1alpha1',
    kind: 'MirrorCluster',
    metadata: { name, labels },
    spec: {
      eks: { name, region: 'eu-west-1', roleArn: `arn:aws:iam::111122223333:role/mirrorhub` },
      agentNamespace: 'mirrorhub-system',
    },
    status,
  } as MirrorCluster;
}

const clusters = [
  cluster(
    'prod-eu',
    { env: 'prod' },
    {
      type: 'EKS',
      reachable: true,
      authenticated: true,
      agent: { present: true, version: '0.1.0', lastHeartbeat: '2026-11-24T09:59:50Z' },
      kubernetesVersion: 'v1.33.1',
      credentialsExpireAt: '2026-11-24T11:00:00Z',
    },
  ),
  cluster(
    'dev',
    { env: 'dev' },
    {
      type: 'EKS',
      reachable: false,
      lastError: 'dial tcp 10.0.0.1:443: connect: connection refused',
      agent: { present: false },
      credentialsExpireAt: '2026-11-24T10:05:00Z',
    },
  ),
];

const tls: ClusterSecretMirror = {
  apiVersion: 'mirrorhub.io/v1alpha1',
  kind: 'ClusterSecretMirror',
  metadata: { name: 'wildcard-tls' },
  spec: {
    source: { kind: 'Secret', name: 'wildcard', namespace: 'cert-manager' },
    destination: { clusters: { names: ['prod-eu', 'dev'] }, namespaces: ['app-.+'] },
  },
  status: {
    phase: 'Degraded',
    source: 'cert-manager/wildcard',
    destination: '/app-.+/',
    counts: { clusters: 2, namespaces: 3, synced: 2, failed: 0, conflicts: 1 },
    clusters: [
      { name: 'prod-eu', phase: 'Degraded', namespaces: 3, synced: 2, conflicts: 1 },
      { name: 'dev', phase: 'Pending', namespaces: 0, message: 'cluster unreachable' },
    ],
    problems: [{ cluster: 'prod-eu', namespace: 'app-b', state: 'Conflict', message: 'not owned' }],
    conditions: [
      {
        type: 'Ready',
        status: 'False',
        reason: 'Conflict',
        lastTransitionTime: '2026-11-24T09:00:00Z',
      },
    ],
  },
} as ClusterSecretMirror;

const teamMirror: SecretMirror = {
  apiVersion: 'mirrorhub.io/v1alpha1',
  kind: 'SecretMirror',
  metadata: { name: 'db', namespace: 'team-a' },
  spec: {
    source: { kind: 'Secret', name: 'db' },
    destination: { namespaces: ['team-a-.+'] },
  },
  status: {
    phase: 'Active',
    counts: { clusters: 1, namespaces: 1, synced: 1 },
    clusters: [{ name: 'prod-eu', phase: 'Active', namespaces: 1, synced: 1 }],
  },
} as SecretMirror;

function delivery(
  mirror: MirrorDelivery['spec']['mirror'],
  target: string,
  hash: string,
  status: MirrorDelivery['status'],
) {
  return {
    apiVersion: 'mirrorhub.io/v1alpha1',
    kind: 'MirrorDelivery',
    metadata: { name: `d-${mirror.name}`, namespace: 'mirrorhub-system' },
    spec: {
      mirror,
      originCluster: 'hub',
      payloadSecretName: `d-${mirror.name}`,
      target: { kind: 'Secret', name: target },
      contentHash: hash,
      template: { labels: { secret: 'never-shown' } },
    },
    status,
  } as MirrorDelivery;
}

const input: ViewInput = {
  now: NOW,
  clusters,
  mirrors: [tls, teamMirror],
  deliveries: new Map([
    [
      'prod-eu',
      [
        delivery(
          { kind: 'ClusterSecretMirror', name: 'wildcard-tls', uid: 'u1' },
          'wildcard',
          'h1',
          {
            phase: 'Degraded',
            observedHash: 'h1',
            namespaces: [
              { name: 'app-b', state: 'Conflict', message: 'not owned' },
              { name: 'app-a', state: 'Synced' },
              { name: 'app-c', state: 'Synced' },
            ],
          },
        ),
        delivery({ kind: 'SecretMirror', namespace: 'team-a', name: 'db', uid: 'u2' }, 'db', 'h2', {
          phase: 'Active',
          observedHash: 'h1-old',
          namespaces: [{ name: 'team-a-x', state: 'Synced' }],
        }),
      ],
    ],
    ['dev', []],
  ]),
  events: new Map([
    [
      'ClusterSecretMirror//wildcard-tls',
      [
        {
          type: 'Warning',
          reason: 'Conflict',
          message: 'app-b',
          time: '2026-11-24T09:00:00Z',
          count: 2,
        },
      ],
    ],
  ]),
};

const teamA: Access = { allMirrors: false, namespaces: new Set(['team-a']), clusters: false };

describe('dashboard views', () => {
  it('counts clusters, agents, mirrors by phase and copies for a cluster-wide viewer', () => {
    const o = overview(input, FULL_ACCESS);
    expect(o.clusters).toEqual({ reachable: 1, total: 2 });
    expect(o.agents).toEqual({ healthy: 1, total: 2 });
    expect(o.mirrors.total).toBe(2);
    expect(o.mirrors.byPhase).toEqual({ Pending: 0, Active: 1, Degraded: 1, Error: 0 });
    expect(o.copies).toEqual({ namespaces: 4, synced: 3, failed: 0, conflicts: 1, denied: 0 });
  });

  it('lists what needs attention, errors first, each with its reason', () => {
    const a = overview(input, FULL_ACCESS).attention;
    expect(a.map((x) => [x.severity, x.kind, x.ref])).toEqual([
      ['error', 'ClusterUnreachable', 'cluster:dev'],
      ['warning', 'CredentialsExpiring', 'cluster:dev'],
      ['warning', 'Conflict', 'ClusterSecretMirror//wildcard-tls'],
    ]);
    expect(a[0]!.reason).toContain('connection refused');
    expect(a[2]!.reason).toBe('1 conflict, e.g. prod-eu/app-b: not owned');
  });

  it('shows clusters with account, region, heartbeat age and last error', () => {
    const [dev, prod] = clusterRows(input, FULL_ACCESS);
    expect(prod).toMatchObject({
      name: 'prod-eu',
      type: 'EKS',
      account: '111122223333',
      region: 'eu-west-1',
      labels: { env: 'prod' },
      reachable: true,
      agent: { present: true, version: '0.1.0', heartbeatAgeSeconds: 10 },
    });
    expect(dev).toMatchObject({ name: 'dev', reachable: false, lastError: expect.any(String) });
  });

  it('shows a namespace viewer only its SecretMirrors and, by name, the clusters they reach', () => {
    const o = overview(input, teamA);
    expect(o.mirrors.total).toBe(1);
    expect(o.clusters).toEqual({ reachable: 1, total: 1 });
    expect(o.attention).toEqual([]);
    const rows = clusterRows(input, teamA);
    expect(rows).toEqual([
      { name: 'prod-eu', type: 'EKS', labels: {}, reachable: true, agent: { present: true } },
    ]);
    expect(matrix(input, teamA).rows.map((r) => r.key)).toEqual(['SecretMirror/team-a/db']);
    expect(where(input, teamA, 'wildcard').items).toEqual([]);
  });

  it('draws the matrix grouped by a label, with conflict, stale and none cells', () => {
    const m = matrix(input, FULL_ACCESS, 'env');
    expect(m.groupKeys).toEqual(['env']);
    expect(m.columns).toEqual([
      { cluster: 'dev', group: 'dev' },
      { cluster: 'prod-eu', group: 'prod' },
    ]);
    const byKey = Object.fromEntries(m.rows.map((r) => [r.key, r.cells.map((c) => c.state)]));
    expect(byKey).toEqual({
      'ClusterSecretMirror//wildcard-tls': ['stale', 'conflict'],
      // the agent has not synced the current content (observedHash differs): stale
      'SecretMirror/team-a/db': ['none', 'stale'],
    });
    expect(matrix(input, FULL_ACCESS, 'no-such-label').groupBy).toBe('');
    // a cluster a mirror reaches without a MirrorCluster (the hub's own) gets a column too
    const local = structuredClone(teamMirror);
    local.status!.clusters!.push({ name: 'hub', phase: 'Active', namespaces: 2, synced: 2 });
    const withHub = matrix({ ...input, mirrors: [tls, local] }, FULL_ACCESS);
    expect(withHub.columns.map((c) => c.cluster)).toEqual(['dev', 'hub', 'prod-eu']);
  });

  it('details a mirror per cluster and namespace from the agents reports and recent Events', () => {
    const d = mirrorDetail(input, tls);
    expect(d.perCluster.map((c) => [c.name, c.current, c.reported, c.copies.length])).toEqual([
      ['prod-eu', true, true, 3],
      ['dev', false, false, 0],
    ]);
    expect(d.perCluster[0]!.copies[0]).toEqual({
      namespace: 'app-b',
      state: 'Conflict',
      message: 'not owned',
    });
    expect(d.events[0]).toMatchObject({ reason: 'Conflict', count: 2 });
    expect(d.conditions[0]).toMatchObject({ type: 'Ready', status: 'False' });
    expect(JSON.stringify(d)).not.toContain('never-shown'); // copy metadata stays out
  });

  it('shows on the leader what another hub replica delivers, from its report (shared followers)', () => {
    // prod-eu is held by another replica: no delivery here, only the report the mirror's status
    // counts while it describes the current content.
    const shared: ViewInput = {
      ...input,
      deliveries: new Map([['prod-eu', []]]),
      heldBy: new Map([
        ['prod-eu', 'hub-1_0123abcd'],
        ['dev', ''],
      ]),
    };
    const cells = (v: ViewInput) =>
      matrix(v, FULL_ACCESS).rows.find((r) => r.key === 'SecretMirror/team-a/db')!.cells;
    expect(cells(shared).map((c) => c.state)).toEqual(['none', 'synced']);
    // Without knowing who holds it, no delivery here would read as never synced.
    expect(cells({ ...shared, heldBy: new Map() }).map((c) => c.state)).toEqual(['none', 'stale']);

    const d = mirrorDetail(shared, tls);
    expect(d.perCluster.map((c) => [c.name, c.current, c.reported, c.heldBy])).toEqual([
      ['prod-eu', true, true, 'hub-1_0123abcd'],
      ['dev', false, false, ''],
    ]);
    expect(d.perCluster[0]).toMatchObject({ namespaces: 3, synced: 2, conflicts: 1, copies: [] });
  });

  it('answers where a copy is: every cluster and namespace, sorted', () => {
    const w = where(input, FULL_ACCESS, 'wildcard');
    expect(w.items.map((i) => `${i.cluster}/${i.namespace}=${i.state}`)).toEqual([
      'prod-eu/app-a=Synced',
      'prod-eu/app-b=Conflict',
      'prod-eu/app-c=Synced',
    ]);
    expect(w.items[0]).toMatchObject({
      mirror: 'ClusterSecretMirror//wildcard-tls',
      kind: 'Secret',
    });
  });

  it('names to a namespace viewer no delivery, mirror or namespace report beyond theirs', () => {
    // team-b's mirror planted a copy in team-a's namespace; team-a's mirror reports the conflict
    // in its own namespace and, in team-a-x, a failure the agent describes in full.
    const foreign =
      'Secret team-a/db is a copy of MirrorDelivery "d-other" of SecretMirror/team-b/other';
    const mine = structuredClone(teamMirror);
    mine.status = {
      ...mine.status!,
      phase: 'Degraded',
      message: `prod-eu: 1 conflict; first: team-a: ${foreign}`,
      clusters: [
        { name: 'prod-eu', phase: 'Degraded', namespaces: 2, synced: 0, message: foreign },
      ],
      problems: [{ cluster: 'prod-eu', namespace: 'team-a', state: 'Conflict', message: foreign }],
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          reason: 'Conflict',
          message: foreign,
          lastTransitionTime: '2026-11-24T09:00:00Z',
        },
      ],
    };
    const other = delivery(
      { kind: 'SecretMirror', namespace: 'team-b', name: 'other', uid: 'u3' },
      'db',
      'h3',
      {
        phase: 'Active',
        observedHash: 'h3',
        namespaces: [{ name: 'team-a', state: 'Synced' }],
      },
    );
    const own = delivery(
      { kind: 'SecretMirror', namespace: 'team-a', name: 'db', uid: 'u2' },
      'db',
      'h2',
      {
        phase: 'Degraded',
        observedHash: 'h2',
        message: `first: team-a: ${foreign}`,
        namespaces: [
          { name: 'team-a', state: 'Conflict', message: foreign },
          {
            name: 'team-a-x',
            state: 'Failed',
            message: 'webhook of team-c refused Secret team-a-x/db',
          },
        ],
      },
    );
    const full: ViewInput = {
      ...input,
      mirrors: [tls, mine],
      deliveries: new Map([['prod-eu', [other, own]]]),
      events: new Map([
        [
          'SecretMirror/team-a/db',
          [
            {
              type: 'Warning',
              reason: 'Conflict',
              message: foreign,
              time: '2026-11-24T09:00:00Z',
              count: 1,
            },
          ],
        ],
      ]),
    };
    const seen = viewerInput(full, teamA);
    const shown = JSON.stringify([
      overview(seen, teamA),
      matrix(seen, teamA),
      mirrorDetail(seen, seen.mirrors[0]!),
      where(seen, teamA, 'db'),
    ]);
    expect(shown).toContain("is a copy of another mirror's MirrorDelivery");
    for (const name of ['d-other', 'team-b', 'team-c', 'wildcard'])
      expect(shown).not.toContain(name);
    const copies = mirrorDetail(seen, seen.mirrors[0]!).perCluster[0]!.copies;
    expect(copies).toEqual([
      {
        namespace: 'team-a',
        state: 'Conflict',
        message: "Secret team-a/db is a copy of another mirror's MirrorDelivery of another mirror",
      },
      {
        namespace: 'team-a-x',
        state: 'Failed',
        message:
          'Failed: details in MirrorDelivery d-db (namespace mirrorhub-system of cluster prod-eu), readable by its administrators',
      },
    ]);
    // Who may see every mirror sees the agents' words as they are.
    expect(viewerInput(full, FULL_ACCESS)).toBe(full);
  });

  it('uses the terminal / retrying distinction: a missing source is attention (retrying), an Error mirror fails in the matrix', () => {
    const cond = (type: string, status: 'True' | 'False', reason: string, message = '') => ({
      type,
      status,
      reason,
      message,
      lastTransitionTime: '2026-11-24T09:00:00Z',
    });
    const waiting = {
      ...teamMirror,
      metadata: { name: 'later', namespace: 'team-a' },
      status: {
        phase: 'Pending',
        message: 'Secret team-a/later not found',
        clusters: [{ name: 'prod-eu', phase: 'Pending', namespaces: 0 }],
        conditions: [
          cond('Ready', 'False', 'SourceNotFound', 'Secret team-a/later not found'),
          cond('Reconciling', 'True', 'SourceNotFound', 'Secret team-a/later not found'),
        ],
      },
    } as SecretMirror;
    const refused = {
      ...teamMirror,
      metadata: { name: 'vault-db', namespace: 'team-a' },
      status: {
        phase: 'Error',
        message: 'cannot read secret/team-z/db: permission denied; copies are kept as they are',
        // The copies from before are still in place, synced: still, nothing keeps them in sync.
        clusters: [{ name: 'prod-eu', phase: 'Active', namespaces: 1, synced: 1 }],
        conditions: [
          cond('Ready', 'False', 'SourceUnreadable'),
          cond('Stalled', 'True', 'VaultPermissionDenied', 'permission denied'),
        ],
      },
    } as SecretMirror;
    const progressing = {
      ...teamMirror,
      metadata: { name: 'rolling', namespace: 'team-a' },
      status: {
        phase: 'Pending',
        conditions: [
          cond('Ready', 'False', 'Progressing'),
          cond('Reconciling', 'True', 'Progressing'),
        ],
      },
    } as SecretMirror;
    const all: ViewInput = { ...input, mirrors: [tls, teamMirror, waiting, refused, progressing] };
    const a = overview(all, FULL_ACCESS).attention.filter((x) => x.ref.startsWith('SecretMirror/'));
    expect(a.map((x) => [x.severity, x.kind, x.ref, x.terminal])).toEqual([
      ['error', 'MirrorError', 'SecretMirror/team-a/vault-db', true],
      ['warning', 'MirrorPending', 'SecretMirror/team-a/later', false],
    ]);
    expect(a[1]!.reason).toBe('Secret team-a/later not found');
    const cells = Object.fromEntries(
      matrix(all, FULL_ACCESS).rows.map((r) => [r.key, r.cells.map((c) => c.state)]),
    );
    expect(cells['SecretMirror/team-a/vault-db']).toEqual(['none', 'failing']);
    expect(cells['SecretMirror/team-a/later']).toEqual(['none', 'stale']);
  });
});
