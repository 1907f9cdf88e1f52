// What the delivery controller caches of namespaces and copies, and how it keeps that small:
// the watchers' transforms keep only the fields the controller reads (see watches.ts's
// header), and equal strings and mark maps are shared between objects.

import type { KubernetesObject } from '@kubernetes/client-node';
import type { MirrorDelivery, SourceKind } from '@mirrorhub/shared/api/types.gen';
import { stripManagedFields } from '@mirrorhub/shared/kit/k8s/watcher';
import { RESERVED_PREFIX } from '@mirrorhub/shared/api/contract';

/** A namespace as cached: name, labels, terminating. */
export interface NamespaceObject extends KubernetesObject {
  metadata: {
    name: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    deletionTimestamp?: Date;
  };
}

/** What is cached of a copy's metadata: identity, resourceVersion, mirrorhub.io/ marks. */
export interface CopyMetadata {
  readonly name: string;
  readonly namespace: string;
  readonly uid: string | undefined;
  readonly resourceVersion: string | undefined;
  /** mirrorhub.io/ labels and annotations only; shared between copies (frozen). */
  readonly labels: Readonly<Record<string, string>> | undefined;
  readonly annotations: Readonly<Record<string, string>> | undefined;
}

/**
 * A copy as cached: identity, resourceVersion, mirrorhub.io/ marks; never data. One object per
 * copy (20k copies: 20k of them): it is its own `metadata`, and `apiVersion` is on the
 * prototype, so the watcher and the controller read `copy.metadata.uid` as on any object
 * without a second object per copy.
 */
export class CopyObject implements CopyMetadata {
  /**
   * The payload resourceVersion this very object, at its resourceVersion, is known to hold
   * ('' for a delivery without a payload version), or undefined when that is not known: what
   * CopyKnowledge knows of the copy's content, kept on the cached object rather than in a map of
   * its own. The watcher keeps an object while its resourceVersion stays and replaces it when
   * the copy changes, so a change by anyone else drops what was known with the old object.
   * Only CopyKnowledge sets it.
   */
  heldPayload: string | undefined = undefined;
  constructor(
    readonly kind: SourceKind,
    readonly name: string,
    readonly namespace: string,
    readonly uid: string | undefined,
    readonly resourceVersion: string | undefined,
    readonly labels: Readonly<Record<string, string>> | undefined,
    readonly annotations: Readonly<Record<string, string>> | undefined,
  ) {}
  get apiVersion(): string {
    return 'v1';
  }
  get metadata(): CopyMetadata {
    return this;
  }
}

/**
 * One instance per distinct string, and per distinct string map. Every copy of a delivery
 * carries the same marks (delivery name, origin, mirror, hash) and many share names and
 * namespaces, but each watch event parses them into fresh strings and objects; sharing them
 * keeps the copy cache at a few hundred bytes per copy. Shared maps are frozen: the cache's
 * objects are read-only anyway, and a write to one would change every copy sharing it.
 */
export class Interner {
  private readonly strings = new Map<string, string>();
  private readonly maps = new Map<string, Readonly<Record<string, string>>>();
  constructor(private readonly max = 100_000) {}
  get(s: string): string {
    const seen = this.strings.get(s);
    if (seen !== undefined) return seen;
    if (this.strings.size >= this.max) this.strings.clear();
    this.strings.set(s, s);
    return s;
  }
  /** The shared, frozen instance of a map with exactly these entries (in any order). */
  map(m: Record<string, string>): Readonly<Record<string, string>> {
    const keys = Object.keys(m).sort();
    const key = JSON.stringify(keys.map((k) => [k, m[k]]));
    const seen = this.maps.get(key);
    if (seen !== undefined) return seen;
    if (this.maps.size >= this.max) this.maps.clear();
    const shared: Record<string, string> = {};
    for (const k of keys) shared[this.get(k)] = this.get(m[k] as string);
    Object.freeze(shared);
    this.maps.set(key, shared);
    return shared;
  }
}

/**
 * The mirrorhub.io/ entries of `map` (undefined when there are none), as a shared instance
 * with `intern`.
 */
function pickReserved(
  map: Record<string, string> | undefined,
  intern?: Interner,
): Readonly<Record<string, string>> | undefined {
  if (!map) return undefined;
  let out: Record<string, string> | undefined;
  for (const [k, v] of Object.entries(map)) {
    if (k.startsWith(RESERVED_PREFIX)) (out ??= {})[k] = v;
  }
  return out && intern ? intern.map(out) : out;
}

/**
 * A copy as a write's answer shows it, in the cache's shape (not interned: it lives only until
 * the copy's watch event arrives, see `CopyKnowledge.unseen`).
 */
export function answeredCopy(
  kind: SourceKind,
  m: {
    name?: string | undefined;
    namespace?: string | undefined;
    uid?: string | undefined;
    resourceVersion?: string | undefined;
    labels?: Record<string, string> | undefined;
    annotations?: Record<string, string> | undefined;
  },
): CopyObject {
  return new CopyObject(
    kind,
    m.name ?? '',
    m.namespace ?? '',
    m.uid,
    m.resourceVersion,
    pickReserved(m.labels),
    pickReserved(m.annotations),
  );
}

/**
 * The copy watchers' transform: a copy as `CopyObject` (name, namespace, uid, resourceVersion,
 * mirrorhub.io/ labels and annotations), strings and mark maps shared through `intern`.
 */
export function slimCopy(
  kind: SourceKind,
  intern: Interner,
  cachedUid: (name: string, namespace: string) => string | undefined,
) {
  return (obj: KubernetesObject): CopyObject => {
    const m = obj.metadata ?? {};
    // Every event parses a new uid string; keep the one the cache (and our indexes) hold.
    const cached = m.name && m.namespace ? cachedUid(m.name, m.namespace) : undefined;
    return new CopyObject(
      kind,
      intern.get(m.name ?? ''),
      intern.get(m.namespace ?? ''),
      cached !== undefined && cached === m.uid ? cached : m.uid,
      m.resourceVersion,
      pickReserved(m.labels, intern),
      pickReserved(m.annotations, intern),
    );
  };
}

/** The namespace watcher's transform: name, uid, resourceVersion, labels, deletionTimestamp. */
export function slimNamespace(intern: Interner) {
  return (obj: KubernetesObject): NamespaceObject => {
    const m = obj.metadata ?? {};
    const metadata: NamespaceObject['metadata'] = { name: intern.get(m.name ?? '') };
    if (m.uid) metadata.uid = m.uid;
    if (m.resourceVersion) metadata.resourceVersion = m.resourceVersion;
    if (m.labels) {
      const labels: Record<string, string> = {};
      for (const [k, v] of Object.entries(m.labels)) labels[k] = intern.get(v);
      metadata.labels = labels;
    }
    if (m.deletionTimestamp) metadata.deletionTimestamp = m.deletionTimestamp;
    return { apiVersion: 'v1', kind: 'Namespace', metadata };
  };
}

/**
 * The deliveries watcher's transform: without managedFields (as by default), and with the
 * entries of `status.namespaces` and the names of `status.syncedNamespaces` shared. A delivery
 * reports up to 500 namespaces, and the same namespace appears in many deliveries (at 200
 * deliveries x 100 namespaces: 20,000 names, 2,000 distinct). Entries are read only (plan
 * compares, settle copies).
 */
export function slimDelivery(
  intern: Interner,
  /**
   * The cached delivery of this name. While its uid and generation are the same, the new
   * object takes over its spec object: the API server moves the generation on every change of
   * spec, so the spec is the one held, and what is remembered per spec object stays valid
   * (a status write or its watch echo does not make the agent verify the signature again).
   */
  cached?: (name: string) => MirrorDelivery | undefined,
) {
  return (d: MirrorDelivery): MirrorDelivery => {
    stripManagedFields(d);
    const m = d.metadata;
    const held = cached?.(m.name ?? '');
    if (
      held &&
      m.generation !== undefined &&
      held.metadata.generation === m.generation &&
      held.metadata.uid === m.uid
    ) {
      d.spec = held.spec;
    }
    const status = d.status;
    if (status?.namespaces) {
      status.namespaces = status.namespaces.map(
        (e) => intern.map(e as unknown as Record<string, string>) as unknown as typeof e,
      );
    }
    if (status?.syncedNamespaces) {
      status.syncedNamespaces = status.syncedNamespaces.map((name) => intern.get(name));
    }
    return d;
  };
}
