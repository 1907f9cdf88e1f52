import { describe, expect, it } from 'vitest';
import type { MirrorDelivery } from '@mirrorhub/shared/api/types.gen';
import { Interner, slimCopy, slimDelivery, slimNamespace } from './cached.js';

/** A copy as a metadata-only watch delivers it (PartialObjectMetadata). */
function copyMeta(namespace: string, overrides: Record<string, unknown> = {}) {
  return {
    apiVersion: 'meta.k8s.io/v1',
    kind: 'PartialObjectMetadata',
    metadata: {
      name: 'tls',
      namespace,
      uid: `uid-${namespace}`,
      resourceVersion: '42',
      generation: 1,
      creationTimestamp: new Date(0),
      ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'x', uid: 'o' }],
      managedFields: [{ manager: 'mirrorhub-agent', operation: 'Update' }],
      labels: {
        'mirrorhub.io/managed-by': 'mirrorhub',
        'mirrorhub.io/delivery': 'd-1',
        team: 'a',
      },
      annotations: {
        'mirrorhub.io/content-hash': 'h1',
        'mirrorhub.io/origin': 'hub/src/tls',
        'reloader.example/last': 'now',
      },
      ...overrides,
    },
  };
}

describe('slimCopy', () => {
  it('keeps exactly identity, resourceVersion and the mirrorhub.io/ marks', () => {
    const slim = slimCopy('Secret', new Interner(), () => undefined);
    const c = slim(copyMeta('ns-1'));
    // Everything the copy holds: its own properties (it is its own metadata).
    expect({ ...c }).toEqual({
      kind: 'Secret',
      name: 'tls',
      namespace: 'ns-1',
      uid: 'uid-ns-1',
      resourceVersion: '42',
      labels: { 'mirrorhub.io/managed-by': 'mirrorhub', 'mirrorhub.io/delivery': 'd-1' },
      annotations: { 'mirrorhub.io/content-hash': 'h1', 'mirrorhub.io/origin': 'hub/src/tls' },
    });
    // Read as any Kubernetes object is.
    expect(c.apiVersion).toBe('v1');
    expect(c.metadata.uid).toBe('uid-ns-1');
    expect(c.metadata.labels?.['mirrorhub.io/delivery']).toBe('d-1');
  });

  it('has no marks when the object carries none', () => {
    const slim = slimCopy('ConfigMap', new Interner(), () => undefined);
    const c = slim(copyMeta('ns-1', { labels: { team: 'a' }, annotations: undefined }));
    expect(c.kind).toBe('ConfigMap');
    expect(c.metadata.labels).toBeUndefined();
    expect(c.metadata.annotations).toBeUndefined();
  });

  it('shares equal mark maps between copies, frozen, and still tells different ones apart', () => {
    const slim = slimCopy('Secret', new Interner(), () => undefined);
    const a = slim(copyMeta('ns-1'));
    const b = slim(copyMeta('ns-2'));
    const changed = slim(
      copyMeta('ns-3', { annotations: { 'mirrorhub.io/content-hash': 'h2', x: 'y' } }),
    );
    expect(b.metadata.labels).toBe(a.metadata.labels);
    expect(b.metadata.annotations).toBe(a.metadata.annotations);
    expect(Object.isFrozen(a.metadata.labels)).toBe(true);
    expect(changed.metadata.labels).toBe(a.metadata.labels);
    expect(changed.metadata.annotations).toEqual({ 'mirrorhub.io/content-hash': 'h2' });
    // A copy someone edited is seen as edited: sharing never hides a difference.
    expect(a.metadata.annotations?.['mirrorhub.io/content-hash']).toBe('h1');
  });

  it('reuses the uid string the cache holds for the same object, not for another one', () => {
    const held = ['uid', 'ns-1'].join('-');
    const slim = slimCopy('Secret', new Interner(), (name, ns) =>
      name === 'tls' && ns === 'ns-1' ? held : 'someone-else',
    );
    expect(slim(copyMeta('ns-1')).metadata.uid).toBe(held);
    expect(slim(copyMeta('ns-2')).metadata.uid).toBe('uid-ns-2');
  });
});

describe('slimNamespace', () => {
  it('keeps name, uid, resourceVersion, labels and deletionTimestamp', () => {
    const deleting = new Date(1000);
    const ns = slimNamespace(new Interner())({
      metadata: {
        name: 'team-a',
        uid: 'u',
        resourceVersion: '7',
        labels: { env: 'prod' },
        annotations: { big: 'x'.repeat(1000) },
        managedFields: [{ manager: 'kubectl' }],
        deletionTimestamp: deleting,
      },
    });
    expect(ns).toEqual({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: 'team-a',
        uid: 'u',
        resourceVersion: '7',
        labels: { env: 'prod' },
        deletionTimestamp: deleting,
      },
    });
  });
});

describe('slimDelivery', () => {
  const delivery = (name: string, failed: string): MirrorDelivery =>
    ({
      apiVersion: 'mirrorhub.io/v1alpha1',
      kind: 'MirrorDelivery',
      metadata: { name, namespace: 'mirrorhub-system', managedFields: [{ manager: 'hub' }] },
      spec: { contentHash: 'h' },
      status: {
        phase: 'Degraded',
        namespaces: [
          { name: 'team-a', state: 'Synced' },
          { name: 'team-b', state: 'Failed', message: failed },
        ],
      },
    }) as unknown as MirrorDelivery;

  it('drops managedFields and shares equal status entries between deliveries', () => {
    const slim = slimDelivery(new Interner());
    const a = slim(delivery('a', 'forbidden'));
    const b = slim(delivery('b', 'quota'));
    expect(a.metadata.managedFields).toBeUndefined();
    expect(a.status?.namespaces).toEqual([
      { name: 'team-a', state: 'Synced' },
      { name: 'team-b', state: 'Failed', message: 'forbidden' },
    ]);
    expect(b.status?.namespaces?.[0]).toBe(a.status?.namespaces?.[0]);
    expect(b.status?.namespaces?.[1]).toEqual({
      name: 'team-b',
      state: 'Failed',
      message: 'quota',
    });
    expect(Object.isFrozen(a.status?.namespaces?.[0])).toBe(true);
  });

  it('keeps the cached spec object while uid and generation stay (a status write and its echo)', () => {
    const held = new Map<string, MirrorDelivery>();
    const slim = slimDelivery(new Interner(), (name) => held.get(name));
    const version = (generation: number, uid = 'u1', hash = 'h') => {
      const d = delivery('a', 'forbidden');
      d.metadata = { ...d.metadata, uid, generation };
      d.spec = { ...d.spec, contentHash: hash };
      return d;
    };
    const first = slim(version(1));
    held.set('a', first);
    expect(slim(version(1)).spec).toBe(first.spec); // a status change: same spec
    const next = slim(version(2, 'u1', 'h2')); // the spec changed: the generation moved
    expect(next.spec).not.toBe(first.spec);
    expect(next.spec.contentHash).toBe('h2');
    const recreated = slim(version(1, 'u2', 'h3')); // deleted and created again
    expect(recreated.spec.contentHash).toBe('h3');
  });
});

describe('Interner', () => {
  it('returns one instance per distinct string', () => {
    const i = new Interner();
    const a = i.get(['a', 'b'].join(''));
    expect(i.get(['a', 'b'].join(''))).toBe(a);
  });

  it('returns one frozen map per distinct set of entries, whatever their order', () => {
    const i = new Interner();
    const m = i.map({ a: '1', b: '2' });
    expect(i.map({ b: '2', a: '1' })).toBe(m);
    expect(i.map({ a: '1', b: '3' })).not.toBe(m);
    expect(i.map({ a: '1' })).toEqual({ a: '1' });
    expect(Object.isFrozen(m)).toBe(true);
  });

  it('starts over when full instead of growing without bound', () => {
    const i = new Interner(2);
    const first = i.map({ a: '1' });
    i.map({ a: '2' });
    i.map({ a: '3' });
    const again = i.map({ a: '1' });
    expect(again).toEqual(first);
    expect(again).not.toBe(first);
  });
});
