// The delivery controller's decisions, with no I/O: given one MirrorDelivery, its payload, the
// cluster's namespaces and the copies that exist, which writes bring the copies in line, and what
// the delivery's status says afterwards. The clock is an input.
//
// Two steps, both pure:
// - `plan(input)` decides the actions and the status as it would be if every action succeeded;
// - `settle(input, plan, outcomes)` folds in what applying the actions actually did (a create
//   that hit someone else's object, a 403, ...) and gives the status to report.
//
// The trust boundary lives here: a delivery whose signature did not verify is not acted on at
// all, and the cluster owner's policy (agent/src/policy.ts) refuses, per namespace and
// with the rule's name, what the delivery asks beyond it (state PolicyDenied). Nothing is
// written, updated or deleted in a refused namespace.

import { deliveryPolicies } from '@mirrorhub/shared/api/helpers';
import { LIMITS } from '@mirrorhub/shared/api/types.gen';
import type {
  DeliveryNamespaceStatus,
  MirrorDelivery,
  MirrorDeliveryStatus,
  MirrorPhase,
  Predecessor,
  SourceKind,
  TakenOverCopy,
} from '@mirrorhub/shared/api/types.gen';
import {
  compileNamespaceMatcher,
  copyMarks,
  k8sTime,
  mirrorRef,
  namespaceReport,
  originRef,
  phaseFromCounts,
  renderCopy,
  reportedNamespaces,
  type ConfigMapCopy,
  type CopyMarks,
  type NamespaceMatcher,
  type Payload,
  type SecretCopy,
  type SyncCounts,
} from '@mirrorhub/shared/mirror/index';
import { equalIgnoringTime } from '@mirrorhub/shared/kit/controller/patch';
import type { Policy } from '../../policy.js';
import { withDeliveryConditions, type DeliveryStop } from './conditions.js';
import {
  AGENT_FINALIZER,
  ANNOTATION_CONTENT_HASH,
  LABEL_DELIVERY,
  LABEL_MANAGED_BY,
  MANAGED_BY_VALUE,
} from '@mirrorhub/shared/api/contract';

/** Longest status.namespaces[].message and status.message / agentVersion (the CRD's limits). */
export const MAX_ENTRY_MESSAGE = LIMITS.DeliveryNamespaceStatus.message;
export const MAX_STATUS_MESSAGE = LIMITS.MirrorDeliveryStatus.message;
export const MAX_AGENT_VERSION = LIMITS.MirrorDeliveryStatus.agentVersion;

type StringMap = Record<string, string>;

export interface NamespaceView {
  name: string;
  labels?: Readonly<StringMap> | undefined;
  /** deletionTimestamp set (phase Terminating): never written to, not counted. */
  terminating?: boolean | undefined;
}

/** What the agent knows about one copy of this delivery: metadata only, never data. */
export interface CopyView {
  kind: SourceKind;
  namespace: string;
  name: string;
  uid?: string | undefined;
  resourceVersion?: string | undefined;
  labels?: Readonly<StringMap> | undefined;
  annotations?: Readonly<StringMap> | undefined;
  /** Secret type, when known (metadata-only watches do not carry it). */
  type?: string | undefined;
  /**
   * The copy's data is known to equal the current payload at this resourceVersion (we wrote it,
   * or read and compared it). False after anyone else changed the copy.
   */
  verified?: boolean | undefined;
  /**
   * We wrote this copy from the current payload and delivery spec and its watch event has not
   * arrived yet: it is up to date, whatever the cache's older version says.
   */
  echoPending?: boolean | undefined;
}

/** A create that found the target name taken by an object this delivery does not own. */
export interface ConflictInfo {
  message: string;
  /** Unmarked (foreign) objects may be adopted; another delivery's copy never is. */
  adoptable: boolean;
}

export interface PlanInput {
  delivery: MirrorDelivery;
  /** Payload data (readPayload), or null when the payload Secret does not exist. */
  payload: Payload | null;
  /**
   * The cluster's namespaces: at least every one the delivery selects or holds a copy in (any
   * other plans to nothing, so the agent passes only those; see selection.ts).
   */
  namespaces: readonly NamespaceView[];
  /** Every copy labelled with this delivery's name, of any kind and name. */
  copies: readonly CopyView[];
  /** Namespace -> conflict learned when a create hit an object we do not own. */
  conflicts?: ReadonlyMap<string, ConflictInfo> | undefined;
  /** Namespace -> message of the last failed write there. */
  failures?: ReadonlyMap<string, string> | undefined;
  agentVersion: string;
  now: Date;
  /** Compiled matcher for this delivery's spec (a cache); compiled from the spec when absent. */
  matcher?: NamespaceMatcher | undefined;
  /** This cluster's policy (the agent's configuration). */
  policy: Policy;
  /**
   * Whether the delivery and its payload carry a valid hub signature (see signing.ts). When not,
   * nothing is written or deleted: the reason goes into status, and a delivery being deleted
   * just loses the agent's finalizer.
   */
  signature: { ok: true } | { ok: false; reason: string };
  /**
   * Set when the delivery is older than one the agent applied under its name (a replay, see
   * sequence.ts): treated as an invalid signature, and `newest` is reported for the hub.
   */
  replay?: { reason: string; newest: number } | undefined;
  /**
   * The agent could not read or write its memory of applied sequences (memory.ts): it cannot
   * tell a replay, so nothing is written or deleted, and the delivery keeps its finalizer.
   */
  memoryError?: string | undefined;
}

/** Identity and version of an existing object, for conditional writes. */
export interface ObjectRef {
  kind: SourceKind;
  namespace: string;
  name: string;
  uid?: string | undefined;
  resourceVersion?: string | undefined;
}

export type Copy = SecretCopy | ConfigMapCopy;

export type Action =
  /** Nothing there (as far as we know): create. */
  | { op: 'create'; namespace: string; object: Copy }
  /**
   * Our copy is out of date: replace it (conditional on current.resourceVersion). `recreate`:
   * the Secret type changes, which Kubernetes refuses in place: delete and create.
   */
  | { op: 'update'; namespace: string; object: Copy; current: ObjectRef; recreate: boolean }
  /**
   * Our copy carries the right hash and marks, but someone else changed it since we last knew
   * its data: read it, compare with `object`, and update only if it differs.
   */
  | { op: 'verify'; namespace: string; object: Copy; current: ObjectRef }
  /** A foreign object holds the name and conflictPolicy is Adopt: take it over. */
  | { op: 'adopt'; namespace: string; object: Copy }
  /** Remove our copy (deletePolicy Delete). */
  | { op: 'delete'; namespace: string; target: ObjectRef }
  /** Leave the object, remove our marks (deletePolicy Retain). */
  | { op: 'release'; namespace: string; target: ObjectRef };

export type ActionOp = Action['op'];

/** Writes that put a copy in place; the delivery needs its finalizer before any of them. */
export const COPY_WRITES: ReadonlySet<ActionOp> = new Set(['create', 'update', 'verify', 'adopt']);

export interface Plan {
  actions: Action[];
  /** Add AGENT_FINALIZER (before any action). */
  addFinalizer: boolean;
  /** The delivery is being deleted: remove AGENT_FINALIZER once every action succeeded. */
  removeFinalizer: boolean;
  /** Per-namespace states assuming every action succeeds (selected namespaces, and failures). */
  entries: Entry[];
  /** Selected, non-terminating namespaces. */
  selected: number;
  /** Set when nothing can be synced (invalid spec, payload missing, refused). */
  error?: string | undefined;
  /** Refused as a whole (signature, policy); see Draft.refused. */
  refused?: boolean | undefined;
  /** Refused as a replay: status.newestSequence. */
  newestSequence?: number | undefined;
  suspended: boolean;
  deleting: boolean;
  /**
   * The status to report if every action succeeds, and whether it differs from the last report.
   * Built when called (once): the agent reports settle()'s status, so the controller never
   * builds this one (up to 500 entries, sorted and compared with the last report).
   */
  report(): Report;
}

export interface Report {
  status: MirrorDeliveryStatus;
  statusChanged: boolean;
}

/** What applying one action did. */
export type Outcome =
  /** `takenOver`: the object was a predecessor's copy of the source (takeover.ts), now ours. */
  | { namespace: string; op: ActionOp; result: 'ok'; takenOver?: Predecessor | undefined }
  /** A verify found the copy as it should be: nothing written. */
  | { namespace: string; op: ActionOp; result: 'unchanged' }
  | { namespace: string; op: ActionOp; result: 'conflict'; message: string; adoptable: boolean }
  | { namespace: string; op: ActionOp; result: 'failed'; message: string }
  /** Lost a race (409 on a stale resourceVersion, object vanished): the queue retries soon. */
  | { namespace: string; op: ActionOp; result: 'retry'; message: string };

export interface Settled extends Report {
  /** Every action succeeded (no failure, conflict or retry). */
  clean: boolean;
}

/** The namespace matcher of a delivery spec (errors name `spec.<field>`). */
export function compileDeliveryMatcher(delivery: MirrorDelivery): NamespaceMatcher {
  const spec = delivery.spec;
  return compileNamespaceMatcher(
    {
      namespaces: spec.namespaces,
      namespaceSelector: spec.namespaceSelector,
      excludeNamespaces: spec.excludeNamespaces,
      // Set by the hub only when target.name equals the source name: skip that namespace.
      sourceNamespace: spec.sourceNamespace,
    },
    { fieldPath: 'spec' },
  );
}

/**
 * The marks every copy of this delivery carries, from the (signed) spec only: spec.origin names
 * the source; a delivery of an older hub without it gets an origin derived from the rest.
 */
export function deliveryMarks(delivery: MirrorDelivery): CopyMarks {
  const spec = delivery.spec;
  const origin =
    spec.origin ??
    originRef(
      spec.originCluster,
      spec.sourceNamespace ?? spec.mirror.namespace ?? '',
      spec.target.name,
    );
  return copyMarks({
    deliveryName: delivery.metadata.name ?? '',
    origin,
    mirror: mirrorRef(spec.mirror),
    contentHash: spec.contentHash,
  });
}

export function hasFinalizer(delivery: MirrorDelivery): boolean {
  return (delivery.metadata.finalizers ?? []).includes(AGENT_FINALIZER);
}

function refOf(c: CopyView): ObjectRef {
  return {
    kind: c.kind,
    namespace: c.namespace,
    name: c.name,
    uid: c.uid,
    resourceVersion: c.resourceVersion,
  };
}

/**
 * The hub has written one of the payload Secret and the delivery's contentHash and not yet the
 * other (a first delivery after its payload, a change to both at once): wait for the second
 * event before planning, unless the delivery is going away. A payload without the hash
 * annotation (an older hub) never waits.
 */
export function hubMidWrite(
  delivery: MirrorDelivery,
  payload: { metadata?: { annotations?: Record<string, string> | undefined } } | undefined,
): boolean {
  const payloadHash = payload?.metadata?.annotations?.[ANNOTATION_CONTENT_HASH];
  return (
    !!payloadHash &&
    payloadHash !== delivery.spec.contentHash &&
    !delivery.metadata.deletionTimestamp
  );
}

/** Labels and annotations under our marks carry exactly the values `marks` says. */
export function marksMatch(copy: CopyView, marks: CopyMarks): boolean {
  // Runs for every copy of every plan: no arrays made per call.
  const labels = copy.labels ?? {};
  const annotations = copy.annotations ?? {};
  for (const k in marks.labels) if (labels[k] !== marks.labels[k]) return false;
  for (const k in marks.annotations) if (annotations[k] !== marks.annotations[k]) return false;
  return true;
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

export function plan(input: PlanInput): Plan {
  const { delivery } = input;
  const spec = delivery.spec;
  const name = delivery.metadata.name ?? '';
  const policies = deliveryPolicies(spec);
  const deleting = Boolean(delivery.metadata.deletionTimestamp);
  const finalizerPresent = hasFinalizer(delivery);
  const failures = input.failures ?? new Map<string, string>();
  const conflicts = input.conflicts ?? new Map<string, ConflictInfo>();
  const ours = input.copies.filter(
    (c) => c.labels?.[LABEL_MANAGED_BY] === MANAGED_BY_VALUE && c.labels?.[LABEL_DELIVERY] === name,
  );
  const remove = (c: CopyView): Action =>
    policies.deletePolicy === 'Retain'
      ? { op: 'release', namespace: c.namespace, target: refOf(c) }
      : { op: 'delete', namespace: c.namespace, target: refOf(c) };
  /** A namespace we only remove from: worth an entry while the last removal there failed. */
  const removalEntry = (ns: string): Entry[] => {
    const message = failures.get(ns);
    return message === undefined
      ? []
      : [{ name: ns, state: 'Failed', message: clip(message, MAX_ENTRY_MESSAGE), selected: false }];
  };
  const draft: Draft = {
    actions: [],
    addFinalizer: false,
    removeFinalizer: false,
    entries: [],
    selected: 0,
    suspended: false,
    deleting,
  };

  // Being deleted: take every copy away (or release it), then let the delivery go. A suspended
  // delivery writes nothing, not even then (as Flux does): its finalizer just goes. So does an
  // unsigned, tampered or replayed one: its spec (deletePolicy included) is not the hub's word,
  // or no longer is.
  if (deleting) {
    if (!finalizerPresent) return finish(input, draft, { wrote: false, keepStatus: true });
    if (input.memoryError !== undefined)
      return finish(input, draft, { wrote: false, keepStatus: true });
    draft.removeFinalizer = true;
    draft.suspended = policies.suspend;
    if (!policies.suspend && input.signature.ok && !input.replay) {
      draft.actions = ours.map(remove);
      draft.entries = [...new Set(ours.map((c) => c.namespace))].flatMap(removalEntry);
    }
    return finish(input, draft, { wrote: draft.actions.length > 0, keepStatus: true });
  }

  if (!input.signature.ok) {
    draft.error = `SignatureInvalid: nothing is written for this delivery: ${input.signature.reason}`;
    draft.refused = true;
    return finish(input, draft, { wrote: false });
  }

  if (input.memoryError !== undefined) {
    draft.error = `nothing is written for this delivery: ${input.memoryError}`;
    return finish(input, draft, { wrote: false });
  }

  if (input.replay) {
    draft.error = input.replay.reason;
    draft.refused = true;
    draft.newestSequence = input.replay.newest;
    return finish(input, draft, { wrote: false });
  }

  if (policies.suspend) {
    draft.suspended = true;
    return finish(input, draft, { wrote: false, keepStatus: true });
  }

  const matcher = input.matcher ?? compileDeliveryMatcher(delivery);
  if (!matcher.ok) {
    draft.error = matcher.error;
    return finish(input, draft, { wrote: false });
  }
  const payload = input.payload;
  if (!payload) {
    draft.error = `payload Secret "${spec.payloadSecretName}" not found in namespace "${delivery.metadata.namespace ?? ''}"`;
    return finish(input, draft, { wrote: false });
  }

  const marks = deliveryMarks(delivery);
  const { kind, name: targetName } = spec.target;
  const render = (namespace: string): Copy =>
    renderCopy({ kind, name: targetName, namespace, payload, template: spec.template, marks });
  const desiredType = spec.template?.type ?? 'Opaque';
  const { policy } = input;
  // Rules about the copy itself (its type, its metadata keys) refuse it everywhere.
  const refused = policy.checkDelivery({
    kind,
    type: desiredType,
    labels: spec.template?.labels,
    annotations: spec.template?.annotations,
  });
  const acceptLabel = spec.acceptLabel;

  const copiesByNs = new Map<string, CopyView[]>();
  for (const c of ours) {
    const list = copiesByNs.get(c.namespace);
    if (list) list.push(c);
    else copiesByNs.set(c.namespace, [c]);
  }

  const wasTakenOver = new Map(
    (delivery.status?.takenOver ?? []).map((t) => [t.namespace, t.from] as const),
  );
  const { actions, entries } = draft;
  for (const ns of input.namespaces) {
    // A terminating namespace takes its copies with it; writing there only fails.
    if (ns.terminating) continue;
    const here = copiesByNs.get(ns.name) ?? [];
    const isSelected =
      matcher.matches({ name: ns.name, labels: ns.labels }) &&
      (acceptLabel === undefined || ns.labels?.[acceptLabel] === 'true');
    if (isSelected || here.length > 0) {
      // Refused here: nothing is created, updated or removed in this namespace.
      const denial = policy.checkNamespace(ns) ?? refused;
      if (denial) {
        if (isSelected) {
          draft.selected++;
          entries.push({
            name: ns.name,
            state: 'PolicyDenied',
            message: clip(denial.message, MAX_ENTRY_MESSAGE),
            selected: true,
          });
        }
        continue;
      }
    }
    const current = isSelected
      ? here.find((c) => c.kind === kind && c.name === targetName)
      : undefined;
    // Copies that are not (or no longer) the target here: the namespace is not selected, or the
    // target's kind or name changed.
    const stale = here.filter((c) => c !== current);
    for (const c of stale) actions.push(remove(c));
    if (!isSelected) {
      if (stale.length > 0) entries.push(...removalEntry(ns.name));
      continue;
    }

    draft.selected++;
    const failure = failures.get(ns.name);
    // A copy taken over from another tool stays reported as such while it is there.
    const takenOver = wasTakenOver.get(ns.name);
    const synced: Entry =
      failure === undefined
        ? { name: ns.name, state: 'Synced', selected: true, takenOver }
        : {
            name: ns.name,
            state: 'Failed',
            message: clip(failure, MAX_ENTRY_MESSAGE),
            selected: true,
            takenOver,
          };

    if (current) {
      const upToDate =
        current.echoPending === true ||
        (current.annotations?.[ANNOTATION_CONTENT_HASH] === spec.contentHash &&
          marksMatch(current, marks));
      if (!upToDate) {
        const recreate =
          kind === 'Secret' && current.type !== undefined && current.type !== desiredType;
        actions.push({
          op: 'update',
          namespace: ns.name,
          object: render(ns.name),
          current: refOf(current),
          recreate,
        });
        entries.push(synced);
      } else if (!current.verified) {
        actions.push({
          op: 'verify',
          namespace: ns.name,
          object: render(ns.name),
          current: refOf(current),
        });
        entries.push(synced);
      } else {
        entries.push({ name: ns.name, state: 'Synced', selected: true, takenOver });
      }
      continue;
    }

    const conflict = conflicts.get(ns.name);
    const wantsAdopt = conflict?.adoptable === true && policies.conflictPolicy === 'Adopt';
    if (conflict && wantsAdopt && !policy.allowAdopt) {
      entries.push({
        name: ns.name,
        state: 'PolicyDenied',
        message: clip(policy.adoptDenied().message, MAX_ENTRY_MESSAGE),
        selected: true,
      });
      continue;
    }
    if (conflict && !wantsAdopt) {
      entries.push({
        name: ns.name,
        state: 'Conflict',
        message: clip(conflict.message, MAX_ENTRY_MESSAGE),
        selected: true,
      });
      continue;
    }
    actions.push({
      op: conflict ? 'adopt' : 'create',
      namespace: ns.name,
      object: render(ns.name),
    });
    entries.push(synced);
  }

  draft.addFinalizer =
    !finalizerPresent && (ours.length > 0 || actions.some((a) => COPY_WRITES.has(a.op)));
  if (refused) {
    draft.error = refused.message;
    draft.refused = true;
  }
  return finish(input, draft, { wrote: actions.some((a) => a.op !== 'verify') });
}

/** A namespace's state; `selected` is false for entries that only report a failed removal. */
export interface Entry extends DeliveryNamespaceStatus {
  selected: boolean;
  /** The copy there was taken over from this tool (status.takenOver). */
  takenOver?: Predecessor | undefined;
}

interface Draft {
  actions: Action[];
  addFinalizer: boolean;
  removeFinalizer: boolean;
  entries: Entry[];
  selected: number;
  error?: string | undefined;
  /**
   * The delivery was read and refused as a whole (signature, policy): the report describes this
   * contentHash, so observedHash moves and the hub shows the refusal instead of waiting.
   */
  refused?: boolean | undefined;
  /** Refused as a replay: the newest sequence applied under the name (status.newestSequence). */
  newestSequence?: number | undefined;
  suspended: boolean;
  deleting: boolean;
}

function finish(
  input: PlanInput,
  draft: Draft,
  opts: { wrote: boolean; keepStatus?: boolean },
): Plan {
  let report: Report | undefined;
  return {
    ...draft,
    report() {
      if (!report) {
        const status = buildStatus(input, draft, opts);
        report = {
          status,
          statusChanged: statusDiffers(input.delivery.status, status, opts.wrote),
        };
      }
      return report;
    },
  };
}

/** A status patch is due when anything but timestamps changed, or copies were written. */
function statusDiffers(
  previous: MirrorDeliveryStatus | undefined,
  next: MirrorDeliveryStatus,
  wrote: boolean,
): boolean {
  // A status without syncedNamespaces was written by an earlier agent, or the cluster's
  // MirrorDelivery CRD predates the field and the API server drops it: then the field alone
  // is no reason to write (that would be a write on every reconcile, each dropped again).
  let compared =
    previous?.syncedNamespaces === undefined ? { ...next, syncedNamespaces: undefined } : next;
  // Likewise conditions, which the CRD gained later.
  if (previous?.conditions === undefined) compared = { ...compared, conditions: undefined };
  return (
    !equalIgnoringTime(previous ?? {}, compared) ||
    (wrote && previous?.lastSyncTime !== next.lastSyncTime)
  );
}

function buildStatus(
  input: PlanInput,
  draft: Draft,
  opts: { wrote: boolean; keepStatus?: boolean | undefined },
): MirrorDeliveryStatus {
  const { delivery, now } = input;
  const previous = delivery.status ?? {};
  const generation = delivery.metadata.generation;
  const agentVersion = clip(input.agentVersion, MAX_AGENT_VERSION);

  // Suspended or being deleted: keep what was reported, say why nothing happens, and show a
  // failure to remove copies.
  if (opts.keepStatus) {
    const next: MirrorDeliveryStatus = { ...previous, agentVersion };
    if (generation !== undefined) next.observedGeneration = generation;
    if (draft.suspended) {
      next.phase = previous.phase ?? 'Pending';
      next.message = 'Suspended: no copies are written or removed until spec.suspend is false';
    } else if (draft.deleting && draft.entries.length > 0) {
      next.phase = 'Degraded';
      next.message = clip(
        `Removing copies: ${describeProblems(draft.entries)}`,
        MAX_STATUS_MESSAGE,
      );
      const report = namespaceReport(draft.entries.map(toStatusEntry));
      next.namespaces = report.namespaces;
      next.syncedNamespaces = report.syncedNamespaces;
    }
    if (!draft.suspended) return next;
    return withDeliveryConditions(next, stopOf(input, draft), {
      now,
      generation,
      previous: previous.conditions,
    });
  }

  const counts: SyncCounts = { namespaces: draft.selected, synced: 0, failed: 0, conflicts: 0 };
  let denied = 0;
  for (const e of draft.entries) {
    if (e.state === 'Synced') counts.synced++;
    else if (e.state === 'Failed') counts.failed++;
    else if (e.state === 'PolicyDenied') denied++;
    else counts.conflicts++;
  }
  // Reported only when there are any: a status without refusals reads as it always did.
  if (denied > 0) counts.denied = denied;
  const phase: MirrorPhase = phaseFromCounts(counts, draft.error);
  const { namespaces, syncedNamespaces, truncated } = namespaceReport(
    draft.entries.map(toStatusEntry),
  );
  const observedHash =
    draft.error && !draft.refused ? previous.observedHash : delivery.spec.contentHash;
  const lastSyncTime =
    opts.wrote ||
    (!draft.error && observedHash !== previous.observedHash) ||
    (phase === 'Active' && previous.lastSyncTime === undefined)
      ? k8sTime(now)
      : previous.lastSyncTime;

  const next: MirrorDeliveryStatus = {
    phase,
    message: clip(draft.error ?? summary(phase, counts, draft.entries), MAX_STATUS_MESSAGE),
    agentVersion,
    counts,
    namespaces,
    syncedNamespaces,
    truncated,
  };
  if (generation !== undefined) next.observedGeneration = generation;
  if (observedHash !== undefined) next.observedHash = observedHash;
  if (lastSyncTime !== undefined) next.lastSyncTime = lastSyncTime;
  if (draft.newestSequence !== undefined) next.newestSequence = draft.newestSequence;
  // Nothing could be planned (payload missing, invalid spec, refused): the copies are as they
  // were, and so is what was taken over. Otherwise, what the entries say.
  const takenOver =
    draft.error !== undefined && draft.entries.length === 0
      ? (previous.takenOver ?? [])
      : takenOverReport(draft.entries);
  // Only when there are any: a status without takeovers reads as it always did.
  if (takenOver.length > 0) next.takenOver = takenOver;
  return withDeliveryConditions(next, stopOf(input, draft), {
    now,
    generation,
    previous: previous.conditions,
  });
}

/** Why the plan stopped short of applying the delivery, for its Ready reason. */
function stopOf(input: PlanInput, draft: Draft): DeliveryStop {
  const stopped = draft.error !== undefined;
  return {
    signatureInvalid: !input.signature.ok,
    replayed: input.replay !== undefined,
    memory: input.memoryError !== undefined,
    suspended: draft.suspended,
    invalidSpec: stopped && !(input.matcher ?? compileDeliveryMatcher(input.delivery)).ok,
    payloadMissing: stopped && !input.payload,
    refused: draft.refused === true,
  };
}

/** Most namespaces status.takenOver lists (the CRD's maxItems). */
export const MAX_TAKEN_OVER = LIMITS.MirrorDeliveryStatus.takenOver;

/** The namespaces whose copy was taken over from another tool, by name. */
function takenOverReport(entries: readonly Entry[]): TakenOverCopy[] {
  return entries
    .flatMap((e) => (e.takenOver ? [{ namespace: e.name, from: e.takenOver }] : []))
    .sort((a, b) => (a.namespace < b.namespace ? -1 : a.namespace > b.namespace ? 1 : 0))
    .slice(0, MAX_TAKEN_OVER);
}

function toStatusEntry(e: Entry): DeliveryNamespaceStatus {
  return e.message === undefined
    ? { name: e.name, state: e.state }
    : { name: e.name, state: e.state, message: e.message };
}

function summary(phase: MirrorPhase, counts: SyncCounts, entries: readonly Entry[]): string {
  const synced = `${counts.synced}/${counts.namespaces} namespaces synced`;
  return phase === 'Degraded' ? `${synced}; ${describeProblems(entries)}` : synced;
}

/** "2 failed, 1 conflict; first: team-a: 403 Forbidden: ..." */
function describeProblems(entries: readonly Entry[]): string {
  const failed = entries.filter((e) => e.state === 'Failed');
  const conflicts = entries.filter((e) => e.state === 'Conflict');
  const denied = entries.filter((e) => e.state === 'PolicyDenied');
  const parts: string[] = [];
  if (failed.length > 0) parts.push(`${failed.length} failed`);
  if (conflicts.length > 0) {
    parts.push(`${conflicts.length} ${conflicts.length === 1 ? 'conflict' : 'conflicts'}`);
  }
  if (denied.length > 0) parts.push(`${denied.length} denied by policy`);
  const byName = (a: Entry, b: Entry) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  const first = [...failed.sort(byName), ...conflicts.sort(byName), ...denied.sort(byName)][0];
  return first
    ? `${parts.join(', ')}; first: ${first.name}: ${first.message ?? first.state}`
    : parts.join(', ');
}

/**
 * The status after applying the plan's actions: outcomes override the per-namespace states the
 * plan assumed (the outcome of this round is the newest knowledge).
 */
export function settle(input: PlanInput, p: Plan, outcomes: readonly Outcome[]): Settled {
  const byNs = new Map<string, Outcome[]>();
  for (const o of outcomes) {
    const list = byNs.get(o.namespace);
    if (list) list.push(o);
    else byNs.set(o.namespace, [o]);
  }
  const clean = outcomes.every((o) => o.result === 'ok' || o.result === 'unchanged');
  const wrote = outcomes.some((o) => o.result === 'ok');
  const previousEntries = new Map(
    reportedNamespaces(input.delivery.status).map((e) => [e.name, e]),
  );
  const worst = (list: readonly Outcome[] | undefined): Outcome | undefined =>
    list?.find((o) => o.result === 'failed') ??
    list?.find((o) => o.result === 'conflict') ??
    list?.find((o) => o.result === 'retry');

  // A foreign object found by a create that Adopt would take, where policy forbids Adopt.
  const adoptRefusal =
    deliveryPolicies(input.delivery.spec).conflictPolicy === 'Adopt' && !input.policy.allowAdopt
      ? input.policy.adoptDenied().message
      : undefined;
  const entries: Entry[] = [];
  for (const e of p.entries) {
    const list = byNs.get(e.name);
    byNs.delete(e.name);
    if (!list) {
      entries.push(e);
      continue;
    }
    const bad = worst(list);
    if (!bad) {
      // Every write here worked: a selected namespace is synced, an unselected one (whose
      // entry only showed a failed removal) drops out.
      const takenOver =
        list.flatMap((o) => (o.result === 'ok' && o.takenOver ? [o.takenOver] : []))[0] ??
        e.takenOver;
      if (e.selected) entries.push({ name: e.name, state: 'Synced', selected: true, takenOver });
      continue;
    }
    const entry = entryFor(bad, e, previousEntries.get(e.name), adoptRefusal);
    // A failed or lost write leaves the copy taken over as it was; a conflict means it is not
    // ours (any more).
    entries.push(bad.result === 'conflict' ? entry : { ...entry, takenOver: e.takenOver });
  }
  // Outcomes in namespaces without an entry: removals from unselected namespaces.
  for (const [ns, list] of byNs) {
    const bad = worst(list);
    if (bad && bad.result !== 'retry') {
      entries.push(
        entryFor(bad, { name: ns, state: 'Failed', selected: false }, undefined, adoptRefusal),
      );
    }
  }

  const draft: Draft = { ...p, entries };
  const status = buildStatus(input, draft, { wrote, keepStatus: p.deleting || p.suspended });
  return { status, statusChanged: statusDiffers(input.delivery.status, status, wrote), clean };
}

function entryFor(
  bad: Outcome,
  planned: Entry,
  previous: DeliveryNamespaceStatus | undefined,
  adoptRefusal: string | undefined,
): Entry {
  const { name, selected } = planned;
  switch (bad.result) {
    case 'failed':
      return { name, selected, state: 'Failed', message: clip(bad.message, MAX_ENTRY_MESSAGE) };
    case 'conflict':
      if (bad.adoptable && adoptRefusal !== undefined) {
        return {
          name,
          selected,
          state: 'PolicyDenied',
          message: clip(adoptRefusal, MAX_ENTRY_MESSAGE),
        };
      }
      return { name, selected, state: 'Conflict', message: clip(bad.message, MAX_ENTRY_MESSAGE) };
    default:
      // Lost a race (the queue retries at once): keep reporting what we reported before.
      return previous ? { ...previous, selected } : planned;
  }
}
