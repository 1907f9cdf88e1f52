import { describe, expect, it } from 'vitest';
import type { V1Secret } from '@kubernetes/client-node';
import type { MirrorDelivery, MirrorDeliverySpec } from '@mirrorhub/shared/api/types.gen';
import type { SourceKind } from '@mirrorhub/shared/api/types.gen';
import { parsePolicy } from '@mirrorhub/agent/policy';
import { KubeApiError } from '@mirrorhub/shared/kit/k8s/rest';
import {
  applyActions,
  type CopyClient,
  type TakeoverContext,
  type WriteObserver,
} from './apply.js';
import type { Copy, Outcome } from './plan.js';
import {
  localSource,
  predecessorOf,
  predecessorText,
  sourceToCheck,
  takeoverPatch,
  type ExistingObject,
  type Predecessor,
} from './takeover.js';

const CLUSTER = 'hub';

function delivery(spec: Partial<MirrorDeliverySpec> = {}): MirrorDelivery {
  return {
    apiVersion: 'mirrorhub.io/v1alpha1',
    kind: 'MirrorDelivery',
    metadata: { name: 'sm-apps-tls-1', namespace: 'mirrorhub-system' },
    spec: {
      mirror: { kind: 'SecretMirror', namespace: 'apps', name: 'tls-mirror', uid: 'u1' },
      originCluster: CLUSTER,
      origin: `${CLUSTER}/apps/tls`,
      payloadSecretName: 'sm-apps-tls-1',
      target: { kind: 'Secret', name: 'tls' },
      namespaces: ['team-.+'],
      contentHash: 'h1',
      ...spec,
    },
  };
}
const clusterDelivery = (name = 'tls') =>
  delivery({ mirror: { kind: 'ClusterSecretMirror', name, uid: 'u2' } });

function existing(
  over: {
    name?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string }[];
  } = {},
): ExistingObject {
  return {
    kind: 'Secret',
    metadata: {
      name: over.name ?? 'tls',
      namespace: 'team-a',
      resourceVersion: '5',
      labels: over.labels,
      annotations: over.annotations,
      ownerReferences: over.ownerReferences,
    },
  };
}

// Copies shaped as each tool writes them (their sources, see takeover.ts).
const REFLECTOR = existing({
  annotations: {
    'reflector.v1.k8s.emberstack.com/auto-reflects': 'True',
    'reflector.v1.k8s.emberstack.com/reflects': 'apps/tls',
    'reflector.v1.k8s.emberstack.com/reflected-version': '123',
    'reflector.v1.k8s.emberstack.com/reflected-at': '"2025-01-01T00:00:00+00:00"',
  },
});
const KUBED = existing({
  labels: {
    'kubed.appscode.com/origin.name': 'tls',
    'kubed.appscode.com/origin.namespace': 'apps',
    'kubed.appscode.com/origin.cluster': '',
  },
  annotations: {
    'kubed.appscode.com/origin':
      '{"kind":"Secret","namespace":"apps","name":"tls","uid":"s1","apiVersion":"v1","resourceVersion":"9"}',
  },
});
const KTS = existing({
  annotations: {
    'mirrors.kts.studio/owned-by': 'apps/tls-mirror',
    'mirrors.kts.studio/last-sync-at': '2025-01-01 00:00:00 +0000 UTC',
    'mirrors.kts.studio/parent-version': '9',
    'mirrors.kts.studio/source-type': 'secret',
  },
});
const CS_OWNER = {
  apiVersion: 'clustersecret.io/v1',
  kind: 'ClusterSecret',
  name: 'tls',
  uid: 'c1',
};
const CLUSTERSECRET = existing({
  labels: { 'clustersecret.io': 'true' },
  annotations: {
    'clustersecret.io/created-by': 'ClusterSecrets',
    'clustersecret.io/version': '0.0.14',
    'clustersecret.io/last-sync': '2025-01-01T00:00:00',
  },
  ownerReferences: [CS_OWNER],
});

const tool = (
  e: ExistingObject,
  d: MirrorDelivery = delivery(),
  cluster = CLUSTER,
  kind = 'Secret',
): Predecessor | undefined => predecessorOf(e, kind, d, cluster);

describe('predecessorOf: a proof from the copy itself, or nothing', () => {
  it.each<[string, ExistingObject, MirrorDelivery, Predecessor]>([
    ['kubernetes-reflector: reflects = source ns/name', REFLECTOR, delivery(), 'reflector'],
    [
      'kubernetes-reflector: a manual reflection under another name',
      existing({
        name: 'tls-copy',
        annotations: { 'reflector.v1.k8s.emberstack.com/reflects': 'apps/tls' },
      }),
      delivery({ target: { kind: 'Secret', name: 'tls-copy' } }),
      'reflector',
    ],
    ['kubed: origin labels = source ns/name, origin.cluster empty', KUBED, delivery(), 'kubed'],
    [
      "kubed: origin.cluster = this cluster's name",
      existing({
        labels: {
          'kubed.appscode.com/origin.name': 'tls',
          'kubed.appscode.com/origin.namespace': 'apps',
          'kubed.appscode.com/origin.cluster': CLUSTER,
        },
      }),
      delivery(),
      'kubed',
    ],
    ['KTS: owned-by <source ns>/<any mirror>, same name', KTS, delivery(), 'kts-mirrors'],
    [
      'ClusterSecret: label + annotation + ownerReference, ClusterSecretMirror of its name',
      CLUSTERSECRET,
      clusterDelivery(),
      'ClusterSecret',
    ],
    [
      'ClusterSecret: the annotation alone, no ownerReference',
      existing({ annotations: { 'clustersecret.io/created-by': 'ClusterSecrets' } }),
      clusterDelivery(),
      'ClusterSecret',
    ],
    [
      'a namespaced SecretMirror takes over a reflector copy too',
      REFLECTOR,
      delivery(),
      'reflector',
    ],
  ])('accepts %s', (_name, e, d, want) => {
    expect(tool(e, d)).toBe(want);
  });

  it.each<[string, () => Predecessor | undefined]>([
    ['an unmarked Secret', () => tool(existing())],
    [
      'a reflector copy of another source',
      () =>
        tool(existing({ annotations: { 'reflector.v1.k8s.emberstack.com/reflects': 'apps/db' } })),
    ],
    [
      'a reflector copy of a source of that name in another namespace',
      () =>
        tool(
          existing({ annotations: { 'reflector.v1.k8s.emberstack.com/reflects': 'other/tls' } }),
        ),
    ],
    [
      'a reflector source (reflection-allowed), not a copy',
      () =>
        tool(
          existing({
            annotations: { 'reflector.v1.k8s.emberstack.com/reflection-allowed': 'true' },
          }),
        ),
    ],
    ['the delivery to another cluster', () => tool(REFLECTOR, delivery(), 'spoke-1')],
    [
      'a delivery whose source lives in another cluster',
      () => tool(REFLECTOR, delivery({ originCluster: 'other', origin: 'other/apps/tls' })),
    ],
    ['a Vault source', () => tool(REFLECTOR, delivery({ origin: `${CLUSTER}/vault:kv/apps/tls` }))],
    [
      'a delivery of an older hub without origin',
      () => tool(REFLECTOR, delivery({ origin: undefined })),
    ],
    ['another kind than the target', () => tool(REFLECTOR, delivery(), CLUSTER, 'ConfigMap')],
    [
      'a kubed copy of another namespace’s source',
      () =>
        tool(
          existing({
            labels: {
              'kubed.appscode.com/origin.name': 'tls',
              'kubed.appscode.com/origin.namespace': 'other',
            },
          }),
        ),
    ],
    [
      'a kubed copy synced here from another cluster (sync-contexts)',
      () =>
        tool(
          existing({
            labels: {
              'kubed.appscode.com/origin.name': 'tls',
              'kubed.appscode.com/origin.namespace': 'apps',
              'kubed.appscode.com/origin.cluster': 'prod-eu',
            },
          }),
        ),
    ],
    [
      'a KTS copy owned by a mirror of another namespace',
      () => tool(existing({ annotations: { 'mirrors.kts.studio/owned-by': 'other/tls-mirror' } })),
    ],
    [
      'a KTS copy under another name than the source',
      () =>
        tool(
          existing({ name: 'db', annotations: { 'mirrors.kts.studio/owned-by': 'apps/m' } }),
          delivery({ target: { kind: 'Secret', name: 'db' } }),
        ),
    ],
    [
      'a KTS copy of a Vault source',
      () =>
        tool(
          existing({
            annotations: {
              'mirrors.kts.studio/owned-by': 'apps/m',
              'mirrors.kts.studio/source-type': 'vault',
            },
          }),
        ),
    ],
    ['a ClusterSecret copy, delivered by a namespaced SecretMirror', () => tool(CLUSTERSECRET)],
    [
      'a ClusterSecret copy, delivered by a ClusterSecretMirror of another name',
      () => tool(CLUSTERSECRET, clusterDelivery('other')),
    ],
    [
      'a ClusterSecret copy owned by another ClusterSecret',
      () =>
        tool(
          existing({
            labels: { 'clustersecret.io': 'true' },
            ownerReferences: [{ ...CS_OWNER, name: 'other' }],
          }),
          clusterDelivery(),
        ),
    ],
    [
      'a ClusterSecret copy with an ownerReference to something else',
      () =>
        tool(
          existing({
            labels: { 'clustersecret.io': 'true' },
            ownerReferences: [
              CS_OWNER,
              { apiVersion: 'apps/v1', kind: 'Deployment', name: 'tls', uid: 'd1' },
            ],
          }),
          clusterDelivery(),
        ),
    ],
    [
      'a reflector copy owned by something',
      () =>
        tool(
          existing({
            annotations: { 'reflector.v1.k8s.emberstack.com/reflects': 'apps/tls' },
            ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: 'x' }],
          }),
        ),
    ],
  ])('refuses %s', (_name, decide) => {
    expect(decide()).toBeUndefined();
  });

  it("kubed under its own cluster name: the origin annotation's uid must be the source's here", () => {
    const unicorn = existing({
      labels: { ...KUBED.metadata!.labels, 'kubed.appscode.com/origin.cluster': 'unicorn' },
      annotations: KUBED.metadata!.annotations,
    });
    const d = delivery();
    expect(sourceToCheck(unicorn, 'Secret', d, CLUSTER)).toEqual({
      namespace: 'apps',
      name: 'tls',
    });
    expect(predecessorOf(unicorn, 'Secret', d, CLUSTER)).toBeUndefined();
    expect(predecessorOf(unicorn, 'Secret', d, CLUSTER, 's1')).toBe('kubed');
    // Synced here from another cluster's apps/tls: another uid.
    expect(predecessorOf(unicorn, 'Secret', d, CLUSTER, 's2')).toBeUndefined();
    // Nothing to read for: no origin annotation, another source, or already proven.
    const bare = existing({ labels: unicorn.metadata!.labels });
    expect(sourceToCheck(bare, 'Secret', d, CLUSTER)).toBeUndefined();
    expect(sourceToCheck(REFLECTOR, 'Secret', d, CLUSTER)).toBeUndefined();
    expect(sourceToCheck(unicorn, 'Secret', d, 'spoke')).toBeUndefined();
  });

  it('reads the source from spec.origin of the delivery to its own cluster only', () => {
    expect(localSource(delivery(), CLUSTER)).toEqual({ namespace: 'apps', name: 'tls' });
    expect(localSource(delivery(), 'spoke')).toBeUndefined();
    expect(localSource(delivery({ origin: 'hub/apps/x/y' }), CLUSTER)).toBeUndefined();
    expect(predecessorText('kubed', delivery())).toBe('a copy kubed made from Secret apps/tls');
  });
});

const copy: Copy = {
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: {
    name: 'tls',
    namespace: 'team-a',
    labels: { 'mirrorhub.io/managed-by': 'mirrorhub', 'mirrorhub.io/delivery': 'sm-apps-tls-1' },
    annotations: { 'mirrorhub.io/content-hash': 'h1', 'mirrorhub.io/origin': 'hub/apps/tls' },
  },
  type: 'Opaque',
  data: { a: 'Mg==', b: 'Mw==' },
};

const asSecret = (e: ExistingObject, data: Record<string, string>): V1Secret =>
  ({ ...e, apiVersion: 'v1', type: 'Opaque', data }) as V1Secret;

describe('takeoverPatch: one write that makes the copy mirrorhub’s', () => {
  it('sets content and marks, drops every foreign mark and the ownerReferences, keeps the rest', () => {
    const e = asSecret(
      existing({
        labels: { 'clustersecret.io': 'true', team: 'a', 'app.kubernetes.io/managed-by': 'Helm' },
        annotations: {
          'clustersecret.io/created-by': 'ClusterSecrets',
          'clustersecret.io/version': '0.0.14',
          'reloader.stakater.com/match': 'true',
        },
        ownerReferences: [CS_OWNER],
      }),
      { a: 'MQ==', stale: 'eA==' },
    );
    expect(takeoverPatch(copy, e)).toEqual({
      metadata: {
        resourceVersion: '5',
        labels: {
          'app.kubernetes.io/managed-by': null,
          'clustersecret.io': null,
          ...copy.metadata.labels,
        },
        annotations: {
          'clustersecret.io/created-by': null,
          'clustersecret.io/version': null,
          ...copy.metadata.annotations,
        },
        ownerReferences: null,
      },
      data: { stale: null, a: 'Mg==', b: 'Mw==' },
    });
  });

  it("removes a key on the policy's own list too", () => {
    const e = asSecret(existing({ labels: { 'tool.example.com/owner': 'x' } }), {});
    const body = takeoverPatch(copy, e, ['tool.example.com/*']) as {
      metadata: { labels: Record<string, unknown> };
    };
    expect(body.metadata.labels['tool.example.com/owner']).toBeNull();
  });
});

/** Just enough of the API for takeover through applyActions: read and merge patch. */
class Fake implements CopyClient {
  readonly fieldManager = 'mirrorhub-agent';
  readonly calls: string[] = [];
  constructor(
    public obj: V1Secret,
    /** The source, in namespace apps. */
    public source?: V1Secret,
  ) {}
  read(_k: SourceKind, ns: string): Promise<V1Secret | undefined> {
    this.calls.push(`read ${ns}`);
    return Promise.resolve(ns === 'apps' ? this.source : this.obj);
  }
  apply(): Promise<never> {
    this.calls.push('apply');
    // CREATE_ONLY over an existing name: 409 Conflict, as the API server answers.
    return Promise.reject(
      new KubeApiError(409, { code: 409, reason: 'Conflict', message: 'conflict (test)' }, 'TEST'),
    );
  }
  remove(): Promise<void> {
    this.calls.push('delete');
    return Promise.resolve();
  }
  mergePatch(_k: SourceKind, _ns: string, _n: string, body: unknown): Promise<V1Secret> {
    this.calls.push(`patch ${JSON.stringify(body)}`);
    return Promise.resolve({ metadata: { ...this.obj.metadata, resourceVersion: '6' } });
  }
}

async function create(
  e: ExistingObject,
  d: MirrorDelivery,
  takeOver: boolean,
  source?: V1Secret,
): Promise<{ outcome: Outcome; calls: string[] }> {
  const client = new Fake(asSecret(e, { a: 'Mg==', b: 'Mw==' }), source);
  const policy = parsePolicy({ takeOver }, 'mirrorhub-system');
  const takeover: TakeoverContext = {
    predecessorOf: (x, kind, uid) => predecessorOf(x, kind, d, CLUSTER, uid),
    sourceToCheck: (x, kind) => sourceToCheck(x, kind, d, CLUSTER),
    describe: (t) => predecessorText(t, d),
    enabled: policy.takeOver,
    offMessage: (what) => policy.takeOverOff(what),
    foreignPatterns: policy.foreignOwnership,
  };
  const observer: WriteObserver = {
    wrote: () => undefined,
    removing: () => undefined,
    written: () => undefined,
    failed: () => undefined,
  };
  const [outcome] = await applyActions(
    { client, deliveryName: 'sm-apps-tls-1', adopt: false, observer, takeover },
    [{ op: 'create', namespace: 'team-a', object: copy }],
    1,
  );
  return { outcome: outcome!, calls: client.calls };
}

describe('applyActions: a create that finds a predecessor copy', () => {
  it('takes it over in one conditional merge patch, no delete, without Adopt', async () => {
    const { outcome, calls } = await create(KUBED, delivery(), true);
    expect(outcome).toEqual({
      namespace: 'team-a',
      op: 'create',
      result: 'ok',
      takenOver: 'kubed',
    });
    expect(calls.map((c) => c.split(' ')[0])).toEqual(['apply', 'read', 'patch']);
    expect(calls[2]).toContain('"resourceVersion":"5"');
    expect(calls[2]).toContain('"kubed.appscode.com/origin.name":null');
  });

  it('leaves it a Conflict saying so when policy.takeOver is false', async () => {
    const { outcome, calls } = await create(KUBED, delivery(), false);
    expect(outcome).toMatchObject({ result: 'conflict', adoptable: true });
    expect((outcome as { message: string }).message).toBe(
      "Secret team-a/tls is a copy kubed made from Secret apps/tls; this cluster's policy turned takeover off (policy.takeOver: false), so it is left as it is",
    );
    expect(calls).toEqual(['apply', 'read team-a']);
  });

  it('reads the source when only its uid proves a kubed copy, and takes it over if it matches', async () => {
    const unicorn = existing({
      labels: { ...KUBED.metadata!.labels, 'kubed.appscode.com/origin.cluster': 'unicorn' },
      annotations: KUBED.metadata!.annotations,
    });
    const source = (uid: string) =>
      asSecret({ metadata: { name: 'tls', uid } } as ExistingObject, {});
    const same = await create(unicorn, delivery(), true, source('s1'));
    expect(same.outcome).toMatchObject({ result: 'ok', takenOver: 'kubed' });
    expect(same.calls.map((c) => (c.startsWith('patch ') ? 'patch' : c))).toEqual([
      'apply',
      'read team-a',
      'read apps',
      'patch',
    ]);
    const other = await create(unicorn, delivery(), true, source('s2'));
    expect(other.outcome).toMatchObject({ result: 'conflict' });
    expect(other.calls).toEqual(['apply', 'read team-a', 'read apps']);
  });

  it('leaves anything unproven a plain Conflict', async () => {
    const { outcome, calls } = await create(existing(), delivery(), true);
    expect(outcome).toMatchObject({
      result: 'conflict',
      message: 'Secret team-a/tls exists and is not managed by mirrorhub (conflictPolicy Skip)',
    });
    expect(calls).toEqual(['apply', 'read team-a']);
  });
});
