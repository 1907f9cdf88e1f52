import { describe, expect, it } from 'vitest';
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import type { SourceKind } from '@mirrorhub/shared/api/types.gen';
import { KubeApiError } from '@mirrorhub/shared/k8s/rest';
import {
  applyActions,
  mapLimit,
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

/** An in-memory API for one kind, recording every call. */
class FakeClient implements CopyClient {
  readonly objects = new Map<string, Obj>();
  readonly calls: string[] = [];
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
  read(_kind: SourceKind, ns: string, name: string): Promise<Obj | undefined> {
    this.calls.push(`read ${ns}`);
    return Promise.resolve(this.objects.get(this.key(ns, name)));
  }
  create(obj: Copy): Promise<Obj> {
    this.calls.push(`create ${obj.metadata.namespace}`);
    this.fail('create');
    if (this.objects.has(this.key(obj.metadata.namespace, obj.metadata.name))) {
      throw apiError(409, 'AlreadyExists');
    }
    const stored = {
      ...obj,
      metadata: { ...obj.metadata, uid: 'new', resourceVersion: String(++this.rv) },
    };
    this.put(stored);
    return Promise.resolve(stored);
  }
  replace(obj: Copy & { metadata: { resourceVersion?: string | undefined } }): Promise<Obj> {
    this.calls.push(`replace ${obj.metadata.namespace} rv=${obj.metadata.resourceVersion}`);
    this.fail('replace');
    const cur = this.objects.get(this.key(obj.metadata.namespace, obj.metadata.name));
    if (!cur) throw apiError(404, 'NotFound');
    if (
      obj.metadata.resourceVersion &&
      obj.metadata.resourceVersion !== cur.metadata?.resourceVersion
    ) {
      throw apiError(409, 'Conflict');
    }
    if (obj.kind === 'Secret' && (cur as V1Secret).type !== obj.type)
      throw apiError(422, 'Invalid');
    const stored = {
      ...obj,
      metadata: { ...obj.metadata, uid: cur.metadata?.uid, resourceVersion: String(++this.rv) },
    };
    this.put(stored);
    return Promise.resolve(stored);
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
    return Promise.resolve(cur);
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
      ['create a'],
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
      ['create a', 'read a'],
    ],
    [
      'create over a foreign object (Adopt): replaced at its resourceVersion',
      { op: 'create', namespace: 'a', object: desired('a') },
      (c) => c.put(secret('a')),
      true,
      { result: 'ok' },
      ['create a', 'read a', 'replace a rv=5'],
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
      ['create a', 'read a'],
    ],
    [
      'create over our own copy the cache had not shown: replaced',
      { op: 'create', namespace: 'a', object: desired('a') },
      (c) => c.put(secret('a', {}, MARKS)),
      false,
      { result: 'ok' },
      ['create a', 'read a', 'replace a rv=5'],
    ],
    [
      'create forbidden: failed with the API message',
      { op: 'create', namespace: 'a', object: desired('a') },
      (c) => c.failNext.set('create', apiError(403, 'Forbidden')),
      false,
      { result: 'failed', message: '403 Forbidden: forbidden (test)' },
      ['create a'],
    ],
    [
      'adopt a foreign Secret of another type: delete and create',
      { op: 'adopt', namespace: 'a', object: desired('a', 'kubernetes.io/tls') },
      (c) => c.put(secret('a')),
      true,
      { result: 'ok' },
      ['read a', 'delete a', 'create a'],
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
      'update: conditional replace',
      { op: 'update', namespace: 'a', object: desired('a'), current, recreate: false },
      (c) => c.put(secret('a', {}, MARKS)),
      false,
      { result: 'ok' },
      ['replace a rv=5'],
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
      ['replace a rv=5'],
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
      ['replace a rv=5', 'read a', 'delete a', 'create a'],
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
      ['delete a', 'create a'],
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
      ['read a', 'replace a rv=5'],
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
      c.failNext.set('create', new Error('socket hang up')),
    );
    expect(r.outcome).toMatchObject({ result: 'failed', message: 'socket hang up' });
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
