// The delivery controller's decisions, with no I/O. The mirror controller says what one delivery
// name should become in a cluster (apply a payload Secret and/or a MirrorDelivery, delete, or
// nothing); controller.ts gathers what that cluster's watches show under the name, and this
// module decides the writes and what is reported back to the mirror's plan. apply.ts performs
// the writes.
//
// Rules:
// - What plans see (`observation`): our last write until the watch shows it (WriteOverlay), else
//   the cache; nothing for what we deleted, even while an agent finalizer keeps the delivery; a
//   delivery read under the name that the watch does not show and that is not ours to write, for
//   a while (FOREIGN_RECHECK_MS doubling to FOREIGN_RECHECK_MAX_MS), so the mirror's plan says
//   whose it is.
// - Never over another's object: a MirrorDelivery is written only over one of the same mirror
//   (kind, namespace, name and spec.mirror uid) from the same origin and not being deleted; a
//   payload Secret only over one labelled as this hub's. A delivery the watch does not show is
//   read before anything is written for it (`needsLookUp`), and a name found taken on create is
//   refused with a message that says whose it is.
// - Writes: the payload (only when its content hash or signature differs) and the delivery
//   (only when not up to date). A first delivery is written after its payload, so an agent never
//   sees a delivery without one; a change to both that exist goes out at once (`together`): the
//   payload carries the contentHash it was signed with, and the agent waits until the delivery's
//   matches it (hubMidWrite), whichever lands first.
//   Delete: delivery, then payload.
import {
  type AnyMirror,
  type MirrorDelivery,
  type MirrorDeliverySpec,
} from '@mirrorhub/shared/api/index';
import {
  canonicalJson,
  deliveryMessage,
  mirrorRef,
  type MirrorIdentity,
  type PayloadSecret,
  type Signer,
} from '@mirrorhub/shared/mirror/index';
import { identityOf } from '../../status.js';
import { equalIgnoringTime } from '@mirrorhub/shared/kit/controller/patch';
import {
  ANNOTATION_CONTENT_HASH,
  ANNOTATION_SIGNATURE,
  LABEL_ORIGIN_CLUSTER,
  LABEL_PAYLOAD,
} from '@mirrorhub/shared/api/contract';

// ---- input ------------------------------------------------------------------------------------

/** What a delivery should become. */
export type DeliveryOp =
  { op: 'apply'; payload?: PayloadSecret; delivery?: MirrorDelivery } | { op: 'delete' };

/** A payload Secret, by its marks only: the content hash and the hub's signature it carries. */
export interface PayloadObservation {
  contentHash?: string;
  signature?: string;
}

/** What the cluster holds under one name, as plans see it. */
export interface Held {
  delivery?: MirrorDelivery;
  payload?: PayloadObservation;
}

/** What the controller knows of one name in the agent namespace. */
export interface NameState {
  /** The watch caches (payloads: their marks). */
  cached: Held;
  /** Our writes the watch does not show yet. */
  written: Held;
  /** Deleted by us: gone as far as plans go. */
  deleted: { delivery: boolean; payload: boolean };
  /** A delivery read under the name, not shown by the watch and not ours to write. */
  foreign?: (ForeignLook & { delivery: MirrorDelivery }) | undefined;
  /** The last write under the name failed with this. */
  writeError?: string | undefined;
}

// ---- output -----------------------------------------------------------------------------------

/** What the cluster holds for one delivery name, as far as the hub knows. */
export interface DeliveryObservation {
  delivery?: MirrorDelivery;
  payload?: PayloadObservation;
  writeError?: string;
}

/**
 * How long a delivery found under a mirror's name, not ours to write and not shown by the watch,
 * is reported without another look; doubled on each look that finds it again, up to the max.
 */
export const FOREIGN_RECHECK_MS = 30_000;
export const FOREIGN_RECHECK_MAX_MS = 5 * 60_000;

/** One JSON patch operation. */
export interface JsonPatchOp {
  op: string;
  path: string;
  value: unknown;
}

/**
 * One write into the agent namespace. A payload `create` that finds the name taken replaces the
 * Secret only when `payloadRefusal` allows; an `update` that finds it gone creates it. A
 * delivery `create` that finds the name taken patches it only when `deliveryRefusal` allows.
 */
export type PlannedWrite =
  | { kind: 'Secret'; verb: 'create' | 'update'; name: string; payload: PayloadSecret }
  | { kind: 'MirrorDelivery'; verb: 'create'; name: string; delivery: MirrorDelivery }
  | {
      kind: 'MirrorDelivery';
      verb: 'patch';
      name: string;
      delivery: MirrorDelivery;
      patch: JsonPatchOp[];
    }
  | { kind: 'Secret' | 'MirrorDelivery'; verb: 'delete'; name: string };

export interface WritePlan {
  /** In order, unless `together`. */
  writes: PlannedWrite[];
  /**
   * The writes may be sent at once: a new payload into a payload Secret that exists and the new
   * contentHash into a delivery that exists. The agent waits for both whichever lands first
   * (hubMidWrite), so a source change reaches the copies one write sooner. A first delivery
   * is still written after its payload: without one the agent would report it missing.
   */
  together?: boolean;
  /**
   * The delivery under the name is not ours to write (another mirror's, or being deleted):
   * nothing is written, not even the payload; the mirror's plan must see it (noteForeign).
   */
  notOurs?: MirrorDelivery;
}

// ---- what plans see ---------------------------------------------------------------------------

/** A payload Secret's observation from its annotations. */
export function payloadObservation(
  annotations: Record<string, string> | undefined,
): PayloadObservation {
  const contentHash = annotations?.[ANNOTATION_CONTENT_HASH];
  const signature = annotations?.[ANNOTATION_SIGNATURE];
  return {
    ...(contentHash !== undefined ? { contentHash } : {}),
    ...(signature !== undefined ? { signature } : {}),
  };
}

/** What plans see under one name. */
export function heldOf(s: NameState, now: number): Held {
  const out: Held = {};
  const delivery = s.deleted.delivery ? undefined : (s.written.delivery ?? s.cached.delivery);
  const payload = s.deleted.payload ? undefined : (s.written.payload ?? s.cached.payload);
  if (delivery) out.delivery = delivery;
  else if (s.foreign && foreignReported(s.foreign, now)) out.delivery = s.foreign.delivery;
  if (payload) out.payload = payload;
  return out;
}

/** The observation reported to the mirror's plan for one delivery name. */
export function observation(current: NameState, now: number): DeliveryObservation {
  const out: DeliveryObservation = heldOf(current, now);
  if (current.writeError !== undefined) out.writeError = current.writeError;
  return out;
}

// ---- writes -----------------------------------------------------------------------------------

/** A delivery is wanted and the caches show none: read the name before writing anything. */
export function needsLookUp(op: DeliveryOp, held: Held): boolean {
  return op.op === 'apply' && op.delivery !== undefined && held.delivery === undefined;
}

/** The writes that make `held` (under `name`) what `op` says. */
export function planWrites(name: string, op: DeliveryOp, held: Held): WritePlan {
  if (op.op === 'delete') {
    const writes: PlannedWrite[] = [];
    if (held.delivery && !held.delivery.metadata.deletionTimestamp) {
      writes.push({ kind: 'MirrorDelivery', verb: 'delete', name });
    }
    if (held.payload) writes.push({ kind: 'Secret', verb: 'delete', name });
    return { writes };
  }
  const observed = held.delivery;
  if (op.delivery && observed && !mayWrite(observed, op.delivery)) {
    return { writes: [], notOurs: observed };
  }
  const writes: PlannedWrite[] = [];
  if (op.payload && !payloadUpToDate(held.payload, op.payload)) {
    const verb = held.payload ? 'update' : 'create';
    writes.push({ kind: 'Secret', verb, name, payload: op.payload });
  }
  if (op.delivery && !deliveryUpToDate(observed, op.delivery)) {
    writes.push(
      observed
        ? {
            kind: 'MirrorDelivery',
            verb: 'patch',
            name,
            delivery: op.delivery,
            patch: deliveryPatch(observed, op.delivery),
          }
        : { kind: 'MirrorDelivery', verb: 'create', name, delivery: op.delivery },
    );
  }
  const [first, second] = writes;
  if (writes.length === 2 && first?.verb === 'update' && second?.verb === 'patch') {
    return { writes, together: true };
  }
  return { writes };
}

function payloadUpToDate(seen: PayloadObservation | undefined, want: PayloadSecret): boolean {
  const marks = payloadObservation(want.metadata.annotations);
  return seen?.contentHash === marks.contentHash && seen?.signature === marks.signature;
}

/**
 * A JSON patch that sets spec as a whole and our labels and annotations (no resourceVersion
 * needed, so the agent's status updates never conflict; others' labels stay).
 */
export function deliveryPatch(
  observed: MirrorDelivery | undefined,
  desired: MirrorDelivery,
): JsonPatchOp[] {
  return [
    { op: 'add', path: '/spec', value: desired.spec },
    ...mapOps('labels', observed?.metadata.labels, desired.metadata.labels),
    ...mapOps('annotations', observed?.metadata.annotations, desired.metadata.annotations),
  ];
}

/** JSON patch ops that put `want`'s keys into metadata.<field> (creating the map if needed). */
function mapOps(
  field: 'labels' | 'annotations',
  have: Record<string, string> | undefined,
  want: Record<string, string> | undefined,
): JsonPatchOp[] {
  const entries = Object.entries(want ?? {}).filter(([k, v]) => have?.[k] !== v);
  if (entries.length === 0) return [];
  if (!have) return [{ op: 'add', path: `/metadata/${field}`, value: { ...want } }];
  return entries.map(([k, v]) => ({
    op: 'add',
    path: `/metadata/${field}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`,
    value: v,
  }));
}

// ---- whose it is ------------------------------------------------------------------------------

/**
 * Whether `existing` may be written over with `desired`: the same mirror (kind, namespace, name
 * and uid) from the same origin, and not being deleted (a new one waits until it is gone).
 */
export function mayWrite(existing: MirrorDelivery, desired: MirrorDelivery): boolean {
  const have = (existing.spec as Partial<MirrorDelivery['spec']> | undefined) ?? {};
  return (
    !existing.metadata?.deletionTimestamp &&
    have.mirror !== undefined &&
    have.mirror.uid === desired.spec.mirror.uid &&
    mirrorRef(have.mirror) === mirrorRef(desired.spec.mirror) &&
    have.originCluster === desired.spec.originCluster
  );
}

/** Why `existing` (found on create) is not written over with `desired`; undefined: it may be. */
export function deliveryRefusal(
  existing: MirrorDelivery,
  desired: MirrorDelivery,
  namespace: string,
): string | undefined {
  if (mayWrite(existing, desired)) return undefined;
  const name = existing.metadata?.name ?? '';
  if (existing.metadata?.deletionTimestamp) {
    return `MirrorDelivery ${name} (namespace ${namespace}) is being deleted; writing once it is gone`;
  }
  const claimed = (existing.spec as Partial<MirrorDelivery['spec']> | undefined)?.mirror;
  return (
    `MirrorDelivery ${name} (namespace ${namespace}) belongs to another mirror ` +
    `(${claimed ? mirrorRef(claimed) : '?'} uid ${claimed?.uid || '(none)'}), not to this one ` +
    `(uid ${desired.spec.mirror.uid}): nothing is written there; if it is stale, delete it`
  );
}

/** Why the Secret found under a payload's name (on create) is not replaced; undefined: it is. */
export function payloadRefusal(
  existing: { metadata?: { labels?: Record<string, string> } },
  name: string,
  namespace: string,
  originCluster: string,
): string | undefined {
  const labels = existing.metadata?.labels ?? {};
  if (labels[LABEL_PAYLOAD] === 'true' && labels[LABEL_ORIGIN_CLUSTER] === originCluster) {
    return undefined;
  }
  return (
    `Secret ${name} (namespace ${namespace}) exists and is not a payload of this hub ` +
    `(labels ${LABEL_PAYLOAD}=true, ${LABEL_ORIGIN_CLUSTER}=${originCluster}): ` +
    `nothing is written there; if it is stale, delete it`
  );
}

/** Whether a delivery found not ours is still reported to plans (and so not looked at again). */
export function foreignReported(f: ForeignLook, now: number): boolean {
  return now - f.since < f.ttlMs;
}

/** When a delivery was last found not ours under a name, and for how long plans are told so. */
export interface ForeignLook {
  since: number;
  ttlMs: number;
}

/**
 * The look to remember after a plan found a delivery not ours under a name. A plan that saw the
 * remembered one (another reconcile while it is still reported) did not look again: the recheck
 * stays when it was (`previous` is returned as is). Restarting or doubling it there would push
 * it out with every reconcile, and a deleted stale delivery would wait minutes for its mirror.
 */
export function foreignLook(previous: ForeignLook | undefined, now: number): ForeignLook {
  if (previous && foreignReported(previous, now)) return previous;
  return { since: now, ttlMs: foreignRecheckMs(previous?.ttlMs) };
}

/**
 * How long to report a delivery found not ours before looking again: FOREIGN_RECHECK_MS, doubled
 * for each look that found it again (`previousMs`), up to FOREIGN_RECHECK_MAX_MS.
 */
export function foreignRecheckMs(previousMs: number | undefined): number {
  return previousMs === undefined
    ? FOREIGN_RECHECK_MS
    : Math.min(previousMs * 2, FOREIGN_RECHECK_MAX_MS);
}

// ---- requests ---------------------------------------------------------------------------------

/** Identifies an op without its data: the payload is represented by its content hash. */
export function fingerprintOf(op: DeliveryOp): string {
  if (op.op === 'delete') return 'delete';
  return canonicalJson({
    payload: op.payload
      ? {
          hash: op.payload.metadata.annotations?.[ANNOTATION_CONTENT_HASH],
          meta: op.payload.metadata,
        }
      : null,
    delivery: op.delivery ? { meta: op.delivery.metadata, spec: op.delivery.spec } : null,
  });
}

/**
 * True when `observed` already is `desired`: same spec, and our labels and annotations on it.
 * Other labels (someone else's) and the status do not matter.
 */
export function deliveryUpToDate(
  observed: MirrorDelivery | undefined,
  desired: MirrorDelivery,
): boolean {
  if (!observed) return false;
  const has = (o: Record<string, string> | undefined, want: Record<string, string> | undefined) =>
    Object.entries(want ?? {}).every(([k, v]) => o?.[k] === v);
  return (
    has(observed.metadata.labels, desired.metadata.labels) &&
    has(observed.metadata.annotations, desired.metadata.annotations) &&
    equalIgnoringTime(observed.spec, desired.spec, [])
  );
}

// ---- whose it is -----------------------------------------------------------------------------

/** A delivery of another mirror holds the name (never deleted for this one). */
export function namesAnotherMirror(
  delivery: MirrorDelivery | undefined,
  mirror: MirrorIdentity | undefined,
): boolean {
  return (
    delivery !== undefined &&
    mirror !== undefined &&
    mirrorRef(delivery.spec.mirror) !== mirrorRef(mirror)
  );
}

/**
 * Whose the MirrorDelivery a cluster holds under this mirror's delivery name is:
 * - `ours`: this mirror's (spec.mirror.uid is its uid), or nothing there;
 * - `previous`: written by this hub (its signature verifies) for an earlier mirror of the same
 *   kind, namespace and name, deleted since: the uid differs, and only one object can hold the
 *   name at a time. Its cleanup is due, as if the hub had seen it without a mirror: it is deleted
 *   and the agent removes or releases its copies per that mirror's deletePolicy;
 * - `foreign`: anything else (another mirror's, another hub's, or one the hub did not sign):
 *   never written over or deleted; the cluster's status entry says so.
 */
export type DeliveryOwner = 'ours' | 'previous' | 'foreign';

export function deliveryOwner(
  d: MirrorDelivery | undefined,
  where: { cluster: string; namespace: string },
  mirror: AnyMirror,
  originCluster: string,
  signer: Signer,
): DeliveryOwner {
  if (!d) return 'ours';
  const claimed = d.spec.mirror;
  const identity = identityOf(mirror);
  const sameMirror =
    claimed.kind === identity.kind &&
    (claimed.namespace ?? '') === (identity.namespace ?? '') &&
    claimed.name === identity.name &&
    d.spec.originCluster === originCluster;
  if (!sameMirror) return 'foreign';
  if (claimed.uid === (mirror.metadata.uid ?? '')) return 'ours';
  const place = { ...where, name: d.metadata.name ?? '' };
  const signature = d.metadata.annotations?.[ANNOTATION_SIGNATURE];
  return signature !== undefined && signer.sign(deliveryMessage(place, d.spec)) === signature
    ? 'previous'
    : 'foreign';
}

// ---- sequence ---------------------------------------------------------------------------------

/**
 * The sequence (spec.sequence, signed with the rest of the spec) of the delivery `spec` the hub
 * writes over `observed`, what the cluster holds under the name (our last write, else the cache).
 * The agent refuses a delivery whose sequence is older than one it applied under the name, so a
 * signed delivery captured earlier cannot be replayed (agent/src/controllers/delivery/sequence.ts).
 *
 * - The observed spec is the same but for its sequence: that sequence, so an unchanged delivery
 *   signs to the same annotation and nothing is written.
 * - Anything changed (or nothing there, or no sequence: an older hub's delivery): a new one,
 *   above the observed one. Taken from the wall clock (milliseconds), not from a counter: a hub
 *   that remembers nothing (a restart, another replica taking over, a delivery someone deleted)
 *   must still write a sequence above every one it wrote before under the name, or the agent
 *   refuses its delivery as a replay. `observed + 1` keeps it increasing when the clock has not
 *   moved on (two changes in one millisecond) or stepped back while the hub remembers.
 * - The agent reports that it refused the observed delivery as older than what it applied
 *   (status.newestSequence, e.g. a replayed delivery whose spec happens to be what the hub wants
 *   again): a new one above that too, so the agent takes the hub's word again.
 */
export function deliverySequence(
  observed: MirrorDelivery | undefined,
  spec: MirrorDeliverySpec,
  nowMs: number,
): number {
  const seen = observed?.spec.sequence;
  const newest = observed?.status?.newestSequence;
  const refused = newest !== undefined && newest >= (seen ?? 0);
  if (observed && seen !== undefined && seen > 0 && !refused && sameBut(observed.spec, spec)) {
    return seen;
  }
  return Math.max(Math.floor(nowMs), (seen ?? 0) + 1, (newest ?? 0) + 1);
}

/** The two specs are equal but for their sequence. */
function sameBut(a: MirrorDeliverySpec, b: MirrorDeliverySpec): boolean {
  const { sequence: _a, ...restA } = a;
  const { sequence: _b, ...restB } = b;
  return equalIgnoringTime(restA, restB, []);
}
