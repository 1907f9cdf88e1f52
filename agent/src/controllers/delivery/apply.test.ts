import { describe, expect, it } from 'vitest';
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import type { SourceKind } from '@mirrorhub/shared/api/types.gen';
import { KubeApiError } from '@mirrorhub/shared/kit/k8s/rest';
import {
  applyActions,
  CREATE_ONLY,
  mapLimit,
  pruneBody,
  sameContent,
  type CopyClient,
  type WriteObserver,
} from './apply.js';
import type { Action, Copy, ObjectRef, Outcome } from './plan.js';

type Obj = V1Secret | V1ConfigMap;
const DELIVERY = 'sm-a-tls-1';
const MARKS = { 'mirrorhub.io/managed-by': 'mirrorhub', 'mirrorhub.io/delivery': DELIVERY };

const apiError = (code: number, reason: string) =>
  new KubeApiError(code, { code, reason, message: `${reason.toLowerCase()} (test)` }, 'TEST');

function secret(ns: string, over: Partial<V1Secret> = {}, labels?: Record<string, string>): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'tls', namespace: ns, uid: `uid-${ns}`, resourceVersion: '5', labels },
    type: 'Opaque',
    data: { a: 'MQ==' },
    ...over,
  };
}

const desired = (ns: string, type = 'Opaque'): Copy => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'tls', namespace: ns, labels: { ...MARKS }, annotations: { x: '1' } },
  type,
  data: { a: 'Mg==' },
});

const FM = 'mirrorhub-agent';
const MAX_RV = CREATE_ONLY;
type Entry = NonNullable<NonNullable<Obj['metadata']>['managedFields']>[number];
type Maps = 'labels' | 'annotations' | 'data' | 'binaryData';

/** The keys of one map an entry owns, e.g. owned(e, 'labels'). */
function owned(e: Entry | undefined, field: Maps): string[] {
  const f = e?.fieldsV1 as Record<string, Record<string, unknown>> | undefined;
  const set =
    field === 'labels' || field === 'annotations'
      ? f?.['f:metadata']?.[`f:${field}`]
      : f?.[`f:${field}`];
  return Object.keys((set as object | undefined) ?? {})
    .filter((k) => k.startsWith('f:'))
    .map((k) => k.slice(2));
}
function fieldsOf(maps: Partial<Record<Maps, Record<string, string> | undefined>>): object {
  const set = (m: Record<string, string> | undefined) =>
    Object.fromEntries(Object.keys(m ?? {}).map((k) => [`f:${k}`, {}]));
  return {
    'f:metadata': { 'f:labels': set(maps.labels), 'f:annotations': set(maps.annotations) },
    ...(maps.data ? { 'f:data': set(maps.data) } : {}),
    ...(maps.binaryData ? { 'f:binaryData': set(maps.binaryData) } : {}),
  };
}

/**
 * An in-memory API for one kind, recording every call. `apply` follows server-side apply as far
 * as these tests need: keys our Apply entry owned and no longer sends go (unless another entry
 * owns them too), everyone else's stay.
 */
class FakeClient implements CopyClient {
  readonly fieldManager = FM;
  readonly objects = new Map<string, Obj>();
  readonly calls: string[] = [];
  readonly bodies: unknown[] = [];
  /** Next error per verb (once). */
  readonly failNext = new Map<string, unknown>();
  private rv = 100;

  private fail(verb: string): void {
    const err = this.failNext.get(verb);
    if (err) {
      this.failNext.delete(verb);
      throw err;
    }
  }
  private key(ns: string, name: string) {
    return `${ns}/${name}`;
  }
  put(obj: Obj): void {
    this.objects.set(this.key(obj.metadata!.namespace!, obj.metadata!.name!), obj);
  }
  get(ns: string): Obj | undefined {
    return this.objects.get(this.key(ns, 'tls'));
  }
  read(_kind: SourceKind, ns: string, name: string): Promise<Obj | undefined> {
    this.calls.push(`read ${ns}`);
    return Promise.resolve(this.objects.get(this.key(ns, name)));
  }
  apply(obj: Copy & { metadata: { resourceVersion?: string | undefined } }): Promise<Obj> {
    this.calls.push(`apply ${obj.metadata.namespace} rv=${obj.metadata.resourceVersion}`);
    this.bodies.push(obj);
    this.fail('apply');
    const rv = obj.metadata.resourceVersion;
    const cur = this.objects.get(this.key(obj.metadata.namespace, obj.metadata.name));
    if (cur && rv && rv !== cur.metadata?.resourceVersion) throw apiError(409, 'Conflict');
    if (!cur && rv && rv !== MAX_RV) throw apiError(404, 'NotFound');
    if (cur && obj.kind === 'Secret' && ((cur as V1Secret).type ?? 'Opaque') !== obj.type)
      throw apiError(422, 'Invalid');
    const entries = cur?.metadata?.managedFields ?? [];
    const mine = entries.find((e) => e.manager === FM && e.operation === 'Apply');
    const others = entries.filter((e) => e !== mine);
    const merge = (
      field: Maps,
      have: Record<string, string> | undefined,
      want: Record<string, string> | undefined,
    ) => {
      const out = { ...(have ?? {}) };
      for (const k of owned(mine, field)) {
        if (!Object.hasOwn(want ?? {}, k) && !others.some((e) => owned(e, field).includes(k)))
          delete out[k];
      }
      return { ...out, ...(want ?? {}) };
    };
    const m = obj.metadata;
    const stored = {
      ...(cur ?? {}),
      ...obj,
      metadata: {
        name: m.name,
        namespace: m.namespace,
        uid: cur?.metadata?.uid ?? 'new',
        resourceVersion: String(++this.rv),
        labels: merge('labels', cur?.metadata?.labels, m.labels),
        annotations: merge('annotations', cur?.metadata?.annotations, m.annotations),
        managedFields: [
          { manager: FM, operation: 'Apply', fieldsV1: fieldsOf({ ...m, data: obj.data ?? {} }) },
          ...others,
        ],
      },
      data: merge('data', (cur as V1Secret | undefined)?.data, obj.data),
    } as Obj;
    this.put(stored);
    return Promise.resolve({ metadata: stored.metadata });
  }
  remove(ref: ObjectRef): Promise<void> {
    this.calls.push(`delete ${ref.namespace}`);
    this.fail('delete');
    if (!this.objects.delete(this.key(ref.namespace, ref.name))) throw apiError(404, 'NotFound');
    return Promise.resolve();
  }
  mergePatch(_kind: SourceKind, ns: string, name: string, body: unknown): Promise<Obj> {
    this.calls.push(`patch ${ns} ${JSON.stringify(body)}`);
    const cur = this.objects.get(this.key(ns, name));
    if (!cur) throw apiError(404, 'NotFound');
    const b = body as { metadata?: Record<string, unknown>; data?: Record<string, string | null> };
    if (
      b.metadata?.['resourceVersion'] &&
      b.metadata['resourceVersion'] !== cur.metadata?.resourceVersion
    )
      throw apiError(409, 'Conflict');
    const patchMap = (have: Record<string, string> | undefined, p: unknown) => {
      const out = { ...(have ?? {}) };
      for (const [k, v] of Object.entries((p as Record<string, string | null> | undefined) ?? {})) {
        if (v === null) delete out[k];
        else out[k] = v;
      }
      return out;
    };
    const metadata = {
      ...cur.metadata,
      resourceVersion: String(++this.rv),
      labels: patchMap(cur.metadata?.labels, b.metadata?.['labels']),
      annotations: patchMap(cur.metadata?.annotations, b.metadata?.['annotations']),
      ...(b.metadata?.['managedFields']
        ? { managedFields: b.metadata['managedFields'] as Entry[] }
        : {}),
    };
    const stored = { ...cur, metadata, data: patchMap((cur as V1Secret).data, b.data) } as Obj;
    this.put(stored);
    return Promise.resolve({ metadata });
  }
}

async function run(
  action: Action,
  setup: (c: FakeClient) => void = () => undefined,
  adopt = false,
): Promise<{ outcome: Outcome; calls: string[]; client: FakeClient; wrote: string[] }> {
  const client = new FakeClient();
  setup(client);
  const wrote: string[] = [];
  const obs: WriteObserver = {
    wrote: (_k, o) => wrote.push(`${o.metadata?.namespace} rv=${o.metadata?.resourceVersion}`),
    removing: () => undefined,
    written: () => undefined,
    failed: () => undefined,
  };
  const [outcome] = await applyActions(
    { client, deliveryName: DELIVERY, adopt, observer: obs },
    [action],
    4,
  );
  return { outcome: outcome!, calls: client.calls, client, wrote };
}

const current: ObjectRef = {
  kind: 'Secret',
  namespace: 'a',
  name: 'tls',
  uid: 'uid-a',
  resourceVersion: '5',
};

describe('applyActions: one action, its outcome and its calls', () => {
  it.each<[string, Action, (c: FakeClient) => void, boolean, Partial<Outcome>, string[]]>([
    [
      'create',
      { op: 'create', namespace: 'a', object: desired('a') },
      () => undefined,
      false,
      { result: 'ok' },
      [`apply a rv=${MAX_RV}`],
    ],
    [
      'create over a foreign object (Skip): conflict, nothing written',
      { op: 'create', namespace: 'a', object: desired('a') },
      (c) => c.put(secret('a')),
      false,
      {
        result: 'conflict',
        adoptable: true,
        message: 'Secret a/tls exists and is not managed by mirrorhub (conflictPolicy Skip)',
      },
      [`apply a rv=${MAX_RV}`, 'read a'],
    ],
    [
      'create over a foreign object (Adopt): applied at its resourceVersion',
      { op: 'create', namespace: 'a', object: desired('a') },
      (c) => c.put(secret('a')),
      true,
      { result: 'ok' },
      [`apply a rv=${MAX_RV}`, 'read a', 'apply a rv=5'],
    ],
    [
      "create over another delivery's copy: conflict even under Adopt",
      { op: 'create', namespace: 'a', object: desired('a') },
      (c) => c.put(secret('a', {}, { ...MARKS, 'mirrorhub.io/delivery': 'other' })),
      true,
      {
        result: 'conflict',
        adoptable: false,
        message: 'Secret a/tls is a copy of MirrorDelivery "other"',
      },
      [`apply a rv=${MAX_RV}`, 'read a'],
    ],
    [
      'create over our own copy the cache had not shown: applied',
      { op: 'create', namespace: 'a', object: desired('a') },
      (c) => c.put(secret('a', {}, MARKS)),
      false,
      { result: 'ok' },
      [`apply a rv=${MAX_RV}`, 'read a', 'apply a rv=5'],
    ],
    [
      'create forbidden: failed with the API message',
      { op: 'create', namespace: 'a', object: desired('a') },
      (c) => c.failNext.set('apply', apiError(403, 'Forbidden')),
      false,
      { result: 'failed', message: '403 Forbidden: forbidden (test)' },
      [`apply a rv=${MAX_RV}`],
    ],
    [
      'adopt a foreign Secret of another type: delete and create',
      { op: 'adopt', namespace: 'a', object: desired('a', 'kubernetes.io/tls') },
      (c) => c.put(secret('a')),
      true,
      { result: 'ok' },
      ['read a', 'delete a', `apply a rv=${MAX_RV}`],
    ],
    [
      // The plan asks for adopt only where policy allows it; without ctx.adopt the foreign
      // object is still left alone.
      'adopt where policy forbids it: a conflict, nothing written',
      { op: 'adopt', namespace: 'a', object: desired('a', 'kubernetes.io/tls') },
      (c) => c.put(secret('a')),
      false,
      { result: 'conflict', adoptable: true },
      ['read a'],
    ],
    [
      'update: a conditional apply',
      { op: 'update', namespace: 'a', object: desired('a'), current, recreate: false },
      (c) => c.put(secret('a', {}, MARKS)),
      false,
      { result: 'ok' },
      ['apply a rv=5'],
    ],
    [
      'update on a stale resourceVersion: retry',
      { op: 'update', namespace: 'a', object: desired('a'), current, recreate: false },
      (c) =>
        c.put(
          secret('a', {
            metadata: {
              name: 'tls',
              namespace: 'a',
              uid: 'uid-a',
              resourceVersion: '6',
              labels: MARKS,
            },
          }),
        ),
      false,
      { result: 'retry' },
      ['apply a rv=5'],
    ],
    [
      'update refused for a type change (422): delete and create',
      {
        op: 'update',
        namespace: 'a',
        object: desired('a', 'kubernetes.io/tls'),
        current,
        recreate: false,
      },
      (c) => c.put(secret('a', {}, MARKS)),
      false,
      { result: 'ok' },
      ['apply a rv=5', 'read a', 'delete a', `apply a rv=${MAX_RV}`],
    ],
    [
      'update with a known type change: delete and create at once',
      {
        op: 'update',
        namespace: 'a',
        object: desired('a', 'kubernetes.io/tls'),
        current,
        recreate: true,
      },
      (c) => c.put(secret('a', {}, MARKS)),
      false,
      { result: 'ok' },
      ['delete a', `apply a rv=${MAX_RV}`],
    ],
    [
      'verify: data as it should be, nothing written',
      { op: 'verify', namespace: 'a', object: desired('a'), current },
      (c) =>
        c.put(
          secret('a', {
            data: { a: 'Mg==' },
            metadata: { name: 'tls', namespace: 'a', labels: MARKS, annotations: { x: '1' } },
          }),
        ),
      false,
      { result: 'unchanged' },
      ['read a'],
    ],
    [
      'verify: edited data is rewritten',
      { op: 'verify', namespace: 'a', object: desired('a'), current },
      (c) => c.put(secret('a', { data: { a: 'SEFDSw==' } }, MARKS)),
      false,
      { result: 'ok' },
      ['read a', 'apply a rv=5'],
    ],
    [
      'verify: marks gone meanwhile, leave it to the next round',
      { op: 'verify', namespace: 'a', object: desired('a'), current },
      (c) => c.put(secret('a', { data: { a: 'SEFDSw==' } })),
      false,
      { result: 'retry' },
      ['read a'],
    ],
    [
      'delete: already gone is fine',
      { op: 'delete', namespace: 'a', target: current },
      () => undefined,
      false,
      { result: 'ok' },
      ['delete a'],
    ],
    [
      'delete on a changed object (precondition): retry',
      { op: 'delete', namespace: 'a', target: current },
      (c) => c.failNext.set('delete', apiError(409, 'Conflict')),
      false,
      { result: 'retry' },
      ['delete a'],
    ],
    [
      'release: our labels and annotations are removed, conditionally',
      { op: 'release', namespace: 'a', target: current },
      (c) => c.put(secret('a', {}, MARKS)),
      false,
      { result: 'ok' },
      [
        'patch a {"metadata":{"resourceVersion":"5","labels":{"mirrorhub.io/managed-by":null,"mirrorhub.io/delivery":null},"annotations":{"mirrorhub.io/origin":null,"mirrorhub.io/mirror":null,"mirrorhub.io/content-hash":null}}}',
      ],
    ],
  ])('%s', async (_, action, setup, adopt, outcome, calls) => {
    const r = await run(action, setup, adopt);
    expect(r.outcome).toMatchObject({ namespace: 'a', op: action.op, ...outcome });
    expect(r.calls).toEqual(calls);
  });

  it('records what it wrote (for drift detection), not what it only tried', async () => {
    const ok = await run({ op: 'create', namespace: 'a', object: desired('a') });
    expect(ok.wrote).toEqual(['a rv=101']);
    const conflict = await run({ op: 'create', namespace: 'a', object: desired('a') }, (c) =>
      c.put(secret('a')),
    );
    expect(conflict.wrote).toEqual([]);
  });

  it('never throws: an unexpected error becomes a failed outcome', async () => {
    const r = await run({ op: 'create', namespace: 'a', object: desired('a') }, (c) =>
      c.failNext.set('apply', new Error('socket hang up')),
    );
    expect(r.outcome).toMatchObject({ result: 'failed', message: 'socket hang up' });
  });
});

describe('applyActions: server-side apply keeps what others add', () => {
  const other = (fields: object): Entry => ({
    manager: 'reloader',
    operation: 'Update',
    fieldsV1: fields,
  });

  it('creates with one apply: the whole copy, force, conditional on no object holding the name', async () => {
    const r = await run({ op: 'create', namespace: 'a', object: desired('a') });
    expect(r.calls).toEqual([`apply a rv=${CREATE_ONLY}`]);
    expect(r.client.bodies[0]).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'tls',
        namespace: 'a',
        labels: MARKS,
        annotations: { x: '1' },
        resourceVersion: CREATE_ONLY,
      },
      type: 'Opaque',
      data: { a: 'Mg==' },
    });
  });

  it('sends an empty data map as {} (the copy holds no keys), never null or absent', async () => {
    const empty = { ...desired('a'), data: {} } as Copy;
    const r = await run(
      { op: 'update', namespace: 'a', object: empty, current, recreate: false },
      (c) => c.put(secret('a', {}, MARKS)),
    );
    expect(r.outcome).toMatchObject({ result: 'ok' });
    expect((r.client.bodies[0] as { data: unknown }).data).toEqual({});
    expect(JSON.stringify(r.client.bodies[0])).not.toContain('null');
  });

  it('an update keeps labels and annotations of others, and drops a template label we no longer send', async () => {
    const r = await run(
      {
        op: 'update',
        namespace: 'a',
        object: desired('a'),
        current,
        recreate: false,
      },
      (c) =>
        c.put(
          secret('a', {
            metadata: {
              name: 'tls',
              namespace: 'a',
              uid: 'uid-a',
              resourceVersion: '5',
              labels: { ...MARKS, env: 'prod', 'argocd.argoproj.io/instance': 'app' },
              annotations: { x: '0', 'reloader.stakater.com/match': 'true' },
              managedFields: [
                {
                  manager: FM,
                  operation: 'Apply',
                  fieldsV1: fieldsOf({
                    labels: { ...MARKS, env: 'prod' },
                    annotations: { x: '0' },
                    data: { a: '' },
                  }),
                },
                other(
                  fieldsOf({
                    labels: { 'argocd.argoproj.io/instance': 'app' },
                    annotations: { 'reloader.stakater.com/match': 'true' },
                  }),
                ),
              ],
            },
          }),
        ),
    );
    // One write: nothing else to prune.
    expect(r.calls).toEqual(['apply a rv=5']);
    const copy = r.client.get('a')!;
    expect(copy.metadata?.labels).toEqual({ ...MARKS, 'argocd.argoproj.io/instance': 'app' });
    expect(copy.metadata?.annotations).toEqual({ x: '1', 'reloader.stakater.com/match': 'true' });
    expect(r.wrote).toEqual(['a rv=101']);
  });

  it('drift: restores data, removes a data key someone added, keeps their annotation', async () => {
    const r = await run({ op: 'verify', namespace: 'a', object: desired('a'), current }, (c) =>
      c.put(
        secret('a', {
          data: { a: 'd3Jvbmc=', extra: 'eA==' },
          metadata: {
            name: 'tls',
            namespace: 'a',
            uid: 'uid-a',
            resourceVersion: '5',
            labels: MARKS,
            annotations: { x: '1', 'reloader.stakater.com/match': 'true' },
          },
        }),
      ),
    );
    expect(r.outcome).toMatchObject({ result: 'ok' });
    expect(r.calls).toEqual([
      'read a',
      'apply a rv=5',
      'patch a {"metadata":{"resourceVersion":"101"},"data":{"extra":null}}',
    ]);
    const copy = r.client.get('a') as V1Secret;
    expect(copy.data).toEqual({ a: 'Mg==' });
    expect(copy.metadata?.annotations).toEqual({ x: '1', 'reloader.stakater.com/match': 'true' });
    // What is known to hold the payload is the version after the prune.
    expect(r.wrote).toEqual(['a rv=102']);
  });

  it('a copy an older agent wrote (PUT): keys it set and we no longer send go, and its entry too', async () => {
    const legacy: Entry = {
      manager: FM,
      operation: 'Update',
      fieldsV1: fieldsOf({
        labels: { ...MARKS, env: 'prod' },
        annotations: { x: '1' },
        data: { a: '', old: '' },
      }),
    };
    const r = await run(
      { op: 'update', namespace: 'a', object: desired('a'), current, recreate: false },
      (c) =>
        c.put(
          secret('a', {
            data: { a: 'MQ==', old: 'eA==' },
            metadata: {
              name: 'tls',
              namespace: 'a',
              uid: 'uid-a',
              resourceVersion: '5',
              labels: { ...MARKS, env: 'prod', team: 'x' },
              annotations: { x: '1' },
              managedFields: [legacy, other(fieldsOf({ labels: { team: 'x' } }))],
            },
          }),
        ),
    );
    expect(r.outcome).toMatchObject({ result: 'ok' });
    expect(r.calls).toHaveLength(2);
    const patch = JSON.parse(r.calls[1]!.replace(/^patch a /, '')) as {
      metadata: { managedFields: Entry[]; labels: unknown };
      data: unknown;
    };
    expect(patch.metadata.labels).toEqual({ env: null });
    expect(patch.data).toEqual({ old: null });
    expect(patch.metadata.managedFields.map((e) => `${e.manager}/${e.operation}`)).toEqual([
      `${FM}/Apply`,
      'reloader/Update',
    ]);
    const copy = r.client.get('a') as V1Secret;
    expect(copy.metadata?.labels).toEqual({ ...MARKS, team: 'x' });
    expect(copy.data).toEqual({ a: 'Mg==' });
  });

  it('the prune is conditional: a copy changed in between is a retry, not recorded as written', async () => {
    const r = await run({ op: 'verify', namespace: 'a', object: desired('a'), current }, (c) => {
      c.put(secret('a', { data: { a: 'Mg==', extra: 'eA==' } }, MARKS));
      const apply = c.apply.bind(c);
      c.apply = async (obj) => {
        const w = await apply(obj);
        c.put({ ...c.get('a')!, metadata: { ...c.get('a')!.metadata, resourceVersion: '999' } });
        return w;
      };
    });
    expect(r.outcome).toMatchObject({ result: 'retry' });
    expect(r.wrote).toEqual([]);
  });
});

describe('pruneBody', () => {
  const written = (managedFields: Entry[]) => ({
    metadata: { resourceVersion: '7', managedFields },
  });
  it('nothing when only our apply owns data and no older entry of ours exists', () => {
    expect(
      pruneBody(
        desired('a'),
        written([{ manager: FM, operation: 'Apply', fieldsV1: fieldsOf({ data: { a: '' } }) }]),
        undefined,
        FM,
      ),
    ).toBeUndefined();
  });
  it('data keys another manager owns and the copy lacks; ConfigMap binaryData too', () => {
    const cm: Copy = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'tls', namespace: 'a', labels: MARKS, annotations: {} },
      data: { k: 'v' },
    };
    expect(
      pruneBody(
        cm,
        written([
          {
            manager: 'kubectl-edit',
            operation: 'Update',
            fieldsV1: fieldsOf({ data: { k: '', x: '' }, binaryData: { b: '' } }),
          },
        ]),
        undefined,
        FM,
      ),
    ).toEqual({ metadata: { resourceVersion: '7' }, data: { x: null }, binaryData: { b: null } });
  });
  it('an annotation of another manager is never pruned', () => {
    expect(
      pruneBody(
        desired('a'),
        written([
          {
            manager: 'kubectl',
            operation: 'Update',
            fieldsV1: fieldsOf({ annotations: { y: '' } }),
          },
        ]),
        undefined,
        FM,
      ),
    ).toBeUndefined();
  });
});

describe('sameContent', () => {
  it.each<[string, Obj, boolean]>([
    [
      'identical',
      secret('a', { data: { a: 'Mg==' }, metadata: { labels: MARKS, annotations: { x: '1' } } }),
      true,
    ],
    [
      'extra labels and annotations of others are fine',
      secret('a', {
        data: { a: 'Mg==' },
        metadata: { labels: { ...MARKS, extra: 'y' }, annotations: { x: '1', y: '2' } },
      }),
      true,
    ],
    [
      'an extra data key is drift',
      secret('a', {
        data: { a: 'Mg==', b: 'eA==' },
        metadata: { labels: MARKS, annotations: { x: '1' } },
      }),
      false,
    ],
    [
      'another type',
      secret('a', {
        type: 'kubernetes.io/tls',
        data: { a: 'Mg==' },
        metadata: { labels: MARKS, annotations: { x: '1' } },
      }),
      false,
    ],
    [
      'an annotation changed',
      secret('a', { data: { a: 'Mg==' }, metadata: { labels: MARKS, annotations: { x: '2' } } }),
      false,
    ],
  ])('%s', (_, existing, same) => {
    expect(sameContent(desired('a'), existing)).toBe(same);
  });
});

describe('mapLimit', () => {
  it('keeps order and never runs more than the limit at once', async () => {
    let running = 0;
    let peak = 0;
    const out = await mapLimit([5, 1, 4, 2, 3, 0], 2, async (n) => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, n));
      running--;
      return n * 10;
    });
    expect(out).toEqual([50, 10, 40, 20, 30, 0]);
    expect(peak).toBe(2);
  });
});
