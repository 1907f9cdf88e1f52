// Applies a delivery plan's actions to one cluster, each independently: one action's failure is
// an outcome for its namespace, never an exception that stops the others.
//
// Every write to an object we saw in the cache is conditional (resourceVersion in the body or
// in delete preconditions), so a copy replaced behind our back by someone else's object is
// never overwritten: the write fails with 409 and the queue retries with fresh cache contents.
//
// Copies are written with server-side apply (force, field manager `mirrorhub-agent`), never
// replaced as a whole: a PUT drops every label and annotation someone else put on a copy (a
// reloader's `reloader.stakater.com/match`, Argo CD's tracking label), on every sync. With apply
// the API server merges: mirrorhub's fields (its marks, the template's labels and annotations,
// data, type) are set and taken back from whoever changed them (force), everyone else's stay,
// and a label, annotation or data key mirrorhub applied before and no longer sends is removed,
// because managedFields says it was ours. A merge patch would keep others' keys too, but could
// not tell a template label we stopped wanting from someone else's without a record of our own.
//
// Two things apply alone does not do, done by one merge patch after it (`prune`) only when the
// answer shows them, so the steady state stays one write with a metadata-only answer:
// - data is mirrorhub's as a whole: a data key someone else added (owned by another manager, or
//   seen in an object we read) is removed;
// - a copy written by an agent before this one (POST/PUT: an `Update` entry of our manager)
//   co-owns every field it set, which would keep keys apply drops: those keys are removed and the
//   entry goes, so from then on the copy is apply's alone.
// An empty data map is sent as `{}` (the copy then holds no keys), never as null.

import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import { ownershipOf } from '@mirrorhub/shared/mirror/names';
import type { SourceKind } from '@mirrorhub/shared/api/types.gen';
import { errorMessage, httpStatusOf } from '@mirrorhub/shared/kit/runtime/errors';
import {
  ACCEPT_METADATA,
  CONTENT_TYPE,
  corePath,
  isAlreadyExists,
  isConflict,
  isNotFound,
  type RestClient,
} from '@mirrorhub/shared/kit/k8s/rest';
import type { Action, Copy, ObjectRef, Outcome } from './plan.js';
import { takeoverPatch, type Predecessor } from './takeover.js';
import {
  ANNOTATION_CONTENT_HASH,
  ANNOTATION_MIRROR,
  ANNOTATION_ORIGIN,
  LABEL_DELIVERY,
  LABEL_MANAGED_BY,
} from '@mirrorhub/shared/api/contract';

type StringMap = Record<string, string>;
type KubeObject = V1Secret | V1ConfigMap;
/**
 * What a write answers: the object's metadata (uid, resourceVersion, ...). The REST client asks
 * for metadata only, so a copy's data is not sent back and parsed once per write.
 */
export type Written = Pick<KubeObject, 'metadata'>;

/** What the controller learns from a write: the copy's new state (for drift detection). */
export interface WriteObserver {
  /** We wrote (or read and confirmed) `kind` ns/name at this resourceVersion. */
  wrote(kind: SourceKind, obj: Written): void;
  /** We are about to delete or release this object: its watch event is our own doing. */
  removing(kind: SourceKind, ref: ObjectRef): void;
  /** Count a successful API write / a failed one. */
  written(kind: SourceKind, verb: 'create' | 'update' | 'patch' | 'delete'): void;
  failed(kind: SourceKind, verb: 'create' | 'update' | 'patch' | 'delete', err: unknown): void;
}

/**
 * A resourceVersion no object has (the largest uint64; etcd revisions count up from 1). An apply
 * carrying it creates the copy when the name is free, and fails with 409 Conflict when any
 * object holds the name: a create that never takes over someone else's object, as a POST (409
 * AlreadyExists), but owned by apply from its first write. (A POST would leave an `Update` entry
 * co-owning every field, which keeps keys our later applies drop.)
 */
export const CREATE_ONLY = '18446744073709551615';

/** The calls apply makes on copies (a fake in unit tests, `restCopyClient` for real). */
export interface CopyClient {
  /** The field manager of `apply` (our entries in managedFields). */
  readonly fieldManager: string;
  /** undefined when it does not exist. */
  read(kind: SourceKind, namespace: string, name: string): Promise<KubeObject | undefined>;
  /**
   * Server-side apply with force. `obj.metadata.resourceVersion` makes it conditional
   * (CREATE_ONLY: only if nothing holds the name).
   */
  apply(obj: Copy & { metadata: { resourceVersion?: string | undefined } }): Promise<Written>;
  /** DELETE with preconditions (uid, resourceVersion). */
  remove(ref: ObjectRef): Promise<void>;
  mergePatch(kind: SourceKind, namespace: string, name: string, body: unknown): Promise<Written>;
}

const PLURAL: Record<SourceKind, string> = { Secret: 'secrets', ConfigMap: 'configmaps' };

export function restCopyClient(rest: RestClient, fieldManager: string): CopyClient {
  const q = { fieldManager };
  return {
    fieldManager,
    async read(kind, namespace, name) {
      try {
        return await rest.get<KubeObject>(corePath(PLURAL[kind], namespace, name));
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    // Writes answer with metadata only (ACCEPT_METADATA): uid, version and managedFields.
    apply: (obj) =>
      rest.patch(
        corePath(PLURAL[obj.kind], obj.metadata.namespace, obj.metadata.name),
        obj,
        CONTENT_TYPE.apply,
        { fieldManager, force: true },
        ACCEPT_METADATA,
      ),
    async remove(ref) {
      const preconditions = {
        ...(ref.uid ? { uid: ref.uid } : {}),
        ...(ref.resourceVersion ? { resourceVersion: ref.resourceVersion } : {}),
      };
      await rest.delete(corePath(PLURAL[ref.kind], ref.namespace, ref.name), {
        apiVersion: 'v1',
        kind: 'DeleteOptions',
        preconditions,
      });
    },
    mergePatch: (kind, namespace, name, body) =>
      rest.patch(
        corePath(PLURAL[kind], namespace, name),
        body,
        CONTENT_TYPE.merge,
        q,
        ACCEPT_METADATA,
      ),
  };
}

export interface ApplyContext {
  client: CopyClient;
  deliveryName: string;
  /** Adopt foreign objects found on create (conflictPolicy Adopt). */
  adopt: boolean;
  observer: WriteObserver;
  /**
   * Predecessor copies (takeover.ts): an object mirrorhub does not own that another tool made
   * from this delivery's source is taken over in place, without Adopt, unless policy.takeOver
   * is off. Absent: every such object is a plain conflict.
   */
  takeover?: TakeoverContext | undefined;
}

export interface TakeoverContext {
  /**
   * The tool whose copy of this delivery's source `existing` provably is, or undefined;
   * `sourceUid` when sourceToCheck asked for it.
   */
  predecessorOf(
    existing: KubeObject,
    kind: SourceKind,
    sourceUid?: string,
  ): Predecessor | undefined;
  /** The source to read when only its uid decides (takeover.ts, kubed), else undefined. */
  sourceToCheck(
    existing: KubeObject,
    kind: SourceKind,
  ): { namespace: string; name: string } | undefined;
  /** "a copy kubed made from Secret ns/name". */
  describe(tool: Predecessor): string;
  /** policy.takeOver. */
  enabled: boolean;
  /** The conflict message when it is off (policy.takeOverOff). */
  offMessage(what: string): string;
  /** Ownership and trigger keys the takeover removes (the policy's foreignOwnership list). */
  foreignPatterns: readonly string[];
}

/** Runs `fn` over `items` with at most `limit` at once; results in input order. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), items.length) }, worker));
  return results;
}

export async function applyActions(
  ctx: ApplyContext,
  actions: readonly Action[],
  parallelism: number,
): Promise<Outcome[]> {
  return mapLimit(actions, parallelism, (a) => applyOne(ctx, a));
}

async function applyOne(ctx: ApplyContext, action: Action): Promise<Outcome> {
  const base = { namespace: action.namespace, op: action.op };
  const tag = (r: Result): Outcome => ({ ...base, ...r }) as Outcome;
  try {
    switch (action.op) {
      case 'create':
        return tag(await create(ctx, action.object));
      case 'adopt':
        return tag(await adopt(ctx, action.object));
      case 'update':
        return tag(await update(ctx, action.object, action.current, action.recreate));
      case 'verify':
        return tag(await verify(ctx, action.object, action.current));
      case 'delete':
        return tag(await remove(ctx, action.target));
      case 'release':
        return tag(await release(ctx, action.target));
    }
  } catch (err) {
    return tag(failure(err));
  }
}

/** An outcome before it is tagged with its namespace and op. */
type Result = Outcome extends infer O
  ? O extends unknown
    ? Omit<O, 'namespace' | 'op'>
    : never
  : never;
const OK: Result = { result: 'ok' };

function failure(err: unknown): Result {
  // 409 on a stale resourceVersion, or the object vanished: a race the next round resolves.
  if (isConflict(err) || isNotFound(err)) return { result: 'retry', message: errorMessage(err) };
  return { result: 'failed', message: errorMessage(err) };
}

// ---- the API calls (one place per verb, counted) ----------------------------------------------

async function call<T>(
  ctx: ApplyContext,
  kind: SourceKind,
  verb: 'create' | 'update' | 'patch' | 'delete',
  fn: () => Promise<T>,
): Promise<T> {
  try {
    const r = await fn();
    ctx.observer.written(kind, verb);
    return r;
  } catch (err) {
    ctx.observer.failed(kind, verb, err);
    throw err;
  }
}

function read(ctx: ApplyContext, kind: SourceKind, ns: string, name: string) {
  return ctx.client.read(kind, ns, name);
}

/** Create `obj` where nothing holds its name (a 409 Conflict otherwise). */
function createRaw(ctx: ApplyContext, obj: Copy): Promise<Written> {
  return applyRaw(ctx, obj, CREATE_ONLY, undefined);
}

/**
 * Apply `obj`, conditional on `resourceVersion`, then prune what apply leaves (see the header).
 * `existing`: the object as just read, when we read it (its data keys are pruned too).
 */
async function applyRaw(
  ctx: ApplyContext,
  obj: Copy,
  resourceVersion: string | undefined,
  existing: KubeObject | undefined,
): Promise<Written> {
  const metadata: Copy['metadata'] & { resourceVersion?: string | undefined } = {
    ...obj.metadata,
    resourceVersion,
  };
  const body = { ...obj, metadata };
  const verb = resourceVersion === CREATE_ONLY ? 'create' : 'update';
  let written = await call(ctx, obj.kind, verb, () => ctx.client.apply(body));
  const patch = pruneBody(obj, written, existing, ctx.client.fieldManager);
  if (patch) {
    const { kind } = obj;
    const { namespace, name } = obj.metadata;
    written = await call(ctx, kind, 'patch', () =>
      ctx.client.mergePatch(kind, namespace, name, patch),
    );
  }
  ctx.observer.wrote(obj.kind, written);
  return written;
}

async function deleteRaw(ctx: ApplyContext, ref: ObjectRef): Promise<void> {
  ctx.observer.removing(ref.kind, ref);
  await call(ctx, ref.kind, 'delete', () => ctx.client.remove(ref));
}

// ---- actions ----------------------------------------------------------------------------------

async function create(ctx: ApplyContext, obj: Copy): Promise<Result> {
  try {
    await createRaw(ctx, obj);
    return OK;
  } catch (err) {
    // CREATE_ONLY answers 409 Conflict when the name is taken (AlreadyExists: a create race).
    if (!isConflict(err) && !isAlreadyExists(err)) throw err;
  }
  // The name is taken by an object our cache does not show as ours: look at it.
  return takeOver(ctx, obj, ctx.adopt);
}

async function adopt(ctx: ApplyContext, obj: Copy): Promise<Result> {
  // The plan asks for this only where policy allows Adopt; ctx.adopt says so again.
  return takeOver(ctx, obj, ctx.adopt);
}

/**
 * An object holds the target name: write over it if it is ours, a predecessor's copy of our
 * source (takeover.ts) or adoptable, else conflict.
 */
async function takeOver(ctx: ApplyContext, obj: Copy, adoptForeign: boolean): Promise<Result> {
  const { namespace, name } = obj.metadata;
  const existing = await read(ctx, obj.kind, namespace, name);
  const owner = ownershipOf(existing, ctx.deliveryName);
  const tool = owner === 'foreign' ? await predecessor(ctx, existing!, obj.kind) : undefined;
  if (tool && ctx.takeover?.enabled) {
    await replacePredecessor(ctx, obj, existing!, ctx.takeover.foreignPatterns);
    return { result: 'ok', takenOver: tool };
  }
  switch (owner) {
    case 'absent':
      return { result: 'retry', message: `${obj.kind} ${namespace}/${name} vanished` };
    case 'other-delivery':
      return {
        result: 'conflict',
        adoptable: false,
        message: `${obj.kind} ${namespace}/${name} is a copy of MirrorDelivery "${existing?.metadata?.labels?.[LABEL_DELIVERY] ?? ''}"`,
      };
    case 'foreign':
      if (!adoptForeign) {
        const what = `${obj.kind} ${namespace}/${name}`;
        return {
          result: 'conflict',
          adoptable: true,
          message:
            tool && ctx.takeover
              ? ctx.takeover.offMessage(`${what} is ${ctx.takeover.describe(tool)}`)
              : `${what} exists and is not managed by mirrorhub (conflictPolicy Skip)`,
        };
      }
      break;
    case 'ours':
      break;
  }
  await overwrite(ctx, obj, existing!);
  return OK;
}

/** Whose copy `existing` provably is (takeover.ts), reading the source when the proof needs it. */
async function predecessor(
  ctx: ApplyContext,
  existing: KubeObject,
  kind: SourceKind,
): Promise<Predecessor | undefined> {
  const t = ctx.takeover;
  if (!t) return undefined;
  const tool = t.predecessorOf(existing, kind);
  const source = tool ? undefined : t.sourceToCheck(existing, kind);
  if (!source) return tool;
  const found = await read(ctx, kind, source.namespace, source.name);
  const uid = found?.metadata?.uid;
  return uid ? t.predecessorOf(existing, kind, uid) : undefined;
}

/**
 * Take a predecessor's copy over in ONE write that keeps the object: a merge patch conditional
 * on the version read, which sets mirrorhub's content and marks and removes the old tool's marks
 * and ownerReferences together (takeoverPatch). Server-side apply cannot do it: it keeps keys
 * another manager owns, and the old tool's marks are the old tool's. The patch leaves an `Update`
 * entry of our manager, which the next apply prunes (pruneBody's `legacy`). Only a copy whose
 * type must change (Kubernetes refuses that in place) is deleted and created.
 */
async function replacePredecessor(
  ctx: ApplyContext,
  obj: Copy,
  existing: KubeObject,
  foreignPatterns: readonly string[],
): Promise<void> {
  if (mustRecreate(obj, existing)) {
    await overwrite(ctx, obj, existing);
    return;
  }
  const { kind } = obj;
  const { namespace, name } = obj.metadata;
  const patch = takeoverPatch(obj, existing, foreignPatterns);
  const written = await call(ctx, kind, 'patch', () =>
    ctx.client.mergePatch(kind, namespace, name, patch),
  );
  ctx.observer.wrote(kind, written);
}

/** Apply `obj` over `existing`, recreating it when Kubernetes refuses the change in place. */
async function overwrite(ctx: ApplyContext, obj: Copy, existing: KubeObject): Promise<void> {
  const ref: ObjectRef = {
    kind: obj.kind,
    namespace: obj.metadata.namespace,
    name: obj.metadata.name,
    uid: existing.metadata?.uid,
    resourceVersion: existing.metadata?.resourceVersion,
  };
  if (mustRecreate(obj, existing)) {
    await deleteRaw(ctx, ref);
    await createRaw(ctx, obj);
    return;
  }
  await applyRaw(ctx, obj, ref.resourceVersion, existing);
}

/** Secret type and immutable objects cannot change in place. */
function mustRecreate(obj: Copy, existing: KubeObject): boolean {
  if ((existing as { immutable?: boolean }).immutable) return true;
  return obj.kind === 'Secret' && ((existing as V1Secret).type ?? 'Opaque') !== obj.type;
}

async function update(
  ctx: ApplyContext,
  obj: Copy,
  current: ObjectRef,
  recreate: boolean,
): Promise<Result> {
  if (recreate) {
    await deleteRaw(ctx, current);
    await createRaw(ctx, obj);
    return OK;
  }
  try {
    await applyRaw(ctx, obj, current.resourceVersion, undefined);
    return OK;
  } catch (err) {
    // 422: e.g. the Secret type changed and the cache could not tell us (metadata only).
    if (httpStatusOf(err) !== 422) throw err;
    const existing = await read(ctx, obj.kind, current.namespace, current.name);
    if (!existing || existing.metadata?.uid !== current.uid || !mustRecreate(obj, existing)) {
      throw err;
    }
    await overwrite(ctx, obj, existing);
    return OK;
  }
}

/** Read a copy someone else changed; write it only if its content is not what it should be. */
async function verify(ctx: ApplyContext, obj: Copy, current: ObjectRef): Promise<Result> {
  const existing = await read(ctx, obj.kind, current.namespace, current.name);
  if (!existing) return { result: 'retry', message: `${obj.kind} vanished` };
  if (ownershipOf(existing, ctx.deliveryName) !== 'ours') {
    // Our marks went since the cache saw it: the watch will tell; decide then.
    return { result: 'retry', message: `${obj.kind} is no longer marked as ours` };
  }
  if (sameContent(obj, existing)) {
    ctx.observer.wrote(obj.kind, existing);
    return { result: 'unchanged' };
  }
  await overwrite(ctx, obj, existing);
  return OK;
}

async function remove(ctx: ApplyContext, target: ObjectRef): Promise<Result> {
  try {
    await deleteRaw(ctx, target);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  return OK;
}

/** Retain: the object stays, our labels and annotations go (it is no longer a copy). */
async function release(ctx: ApplyContext, target: ObjectRef): Promise<Result> {
  const { kind, namespace, name } = target;
  const body = {
    metadata: {
      ...(target.resourceVersion ? { resourceVersion: target.resourceVersion } : {}),
      labels: { [LABEL_MANAGED_BY]: null, [LABEL_DELIVERY]: null },
      annotations: {
        [ANNOTATION_ORIGIN]: null,
        [ANNOTATION_MIRROR]: null,
        [ANNOTATION_CONTENT_HASH]: null,
      },
    },
  };
  ctx.observer.removing(kind, target);
  try {
    await call(ctx, kind, 'patch', () => ctx.client.mergePatch(kind, namespace, name, body));
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  return OK;
}

// ---- pruning what apply leaves -----------------------------------------------------------------

type MapField = 'data' | 'binaryData';
const DATA_FIELDS: Record<SourceKind, readonly MapField[]> = {
  Secret: ['data'],
  ConfigMap: ['data', 'binaryData'],
};

/** The keys of map `field` in a managedFields fieldsV1 set (`{"f:data": {"f:key": {}}}`). */
function ownedKeys(fields: unknown, field: string): string[] {
  const set = (fields as Record<string, unknown> | undefined)?.[`f:${field}`];
  if (!set || typeof set !== 'object') return [];
  return Object.keys(set)
    .filter((k) => k.startsWith('f:'))
    .map((k) => k.slice(2));
}

/**
 * The merge patch that removes what apply left and is not mirrorhub's wish (see the header), or
 * undefined when there is nothing (the steady state). Conditional on the version apply wrote.
 */
export function pruneBody(
  obj: Copy,
  written: Written,
  existing: KubeObject | undefined,
  fieldManager: string,
): Record<string, unknown> | undefined {
  const entries = written.metadata?.managedFields ?? [];
  const ours = (e: (typeof entries)[number]) => e.manager === fieldManager && !e.subresource;
  const legacy = entries.find((e) => ours(e) && e.operation === 'Update');
  const body: Record<string, Record<string, null> | Record<string, unknown>> = {};
  const drop = (into: Record<string, unknown>, field: string, key: string) => {
    ((into[field] ??= {}) as Record<string, null>)[key] = null;
  };
  const metadata: Record<string, unknown> = {};
  let pruned = false;

  // Data: every key not in the copy goes, whoever put it there.
  for (const field of DATA_FIELDS[obj.kind]) {
    const want = ((obj as Record<MapField, StringMap | undefined>)[field] ?? {}) as StringMap;
    const seen = new Set(Object.keys((existing as Record<MapField, unknown>)?.[field] ?? {}));
    for (const e of entries) {
      if (ours(e) && e.operation === 'Apply') continue;
      for (const k of ownedKeys(e.fieldsV1, field)) seen.add(k);
    }
    for (const k of [...seen].sort()) {
      if (!Object.hasOwn(want, k)) {
        drop(body, field, k);
        pruned = true;
      }
    }
  }
  // Labels and annotations: only what an older agent of ours set and the copy no longer has.
  if (legacy) {
    const meta = (legacy.fieldsV1 as Record<string, unknown> | undefined)?.['f:metadata'];
    for (const field of ['labels', 'annotations'] as const) {
      const want = obj.metadata[field];
      for (const k of ownedKeys(meta, field).sort()) {
        if (!Object.hasOwn(want, k)) {
          drop(metadata, field, k);
          pruned = true;
        }
      }
    }
    metadata['managedFields'] = entries.filter((e) => e !== legacy);
  }
  if (!pruned && !legacy) return undefined;
  return {
    metadata: { resourceVersion: written.metadata?.resourceVersion, ...metadata },
    ...body,
  };
}

// ---- comparison -------------------------------------------------------------------------------

function sameMap(a: StringMap | undefined, b: StringMap | undefined): boolean {
  const ka = Object.keys(a ?? {});
  const kb = Object.keys(b ?? {});
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b ?? {}, k) && b![k] === a![k]);
}

/** Every entry of `want` is in `have` with the same value (others may add their own). */
function contains(have: StringMap | undefined, want: StringMap): boolean {
  return Object.entries(want).every(([k, v]) => have?.[k] === v);
}

/**
 * The existing object carries what the copy should: the same data (exactly), the same type, and
 * our labels and annotations (others may add theirs, e.g. a reloader's annotation).
 */
export function sameContent(obj: Copy, existing: KubeObject): boolean {
  if (
    !contains(existing.metadata?.labels, obj.metadata.labels) ||
    !contains(existing.metadata?.annotations, obj.metadata.annotations)
  ) {
    return false;
  }
  if (obj.kind === 'Secret') {
    const s = existing as V1Secret;
    return (s.type ?? 'Opaque') === obj.type && sameMap(s.data, obj.data);
  }
  const c = existing as V1ConfigMap;
  return sameMap(c.data, obj.data) && sameMap(c.binaryData, obj.binaryData);
}
