// Status helpers shared by hub and agent: conditions with honest transition times, a comparison
// that lets a controller skip the status patch when nothing but timestamps would change, and the
// small summaries both sides write (phase, "synced/selected", bounded lists).

import type {
  Condition,
  ConditionStatus,
  DeliveryNamespaceStatus,
  MirrorPhase,
  MirrorProblem,
} from '../api/types.gen.js';
import { LIMITS } from '../api/types.gen.js';

/** metav1.Time as the API server writes it (RFC 3339, whole seconds, UTC). */
export function k8sTime(date: Date): string {
  return date.toISOString().replace(/\.\d+Z$/, 'Z');
}

export interface ConditionUpdate {
  type: string;
  status: ConditionStatus;
  reason: string;
  message?: string | undefined;
  observedGeneration?: number | undefined;
}

export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

export function isConditionTrue(
  conditions: readonly Condition[] | undefined,
  type: string,
): boolean {
  return findCondition(conditions, type)?.status === 'True';
}

/**
 * Returns the conditions with `update` applied (a new array; the input is not modified).
 * lastTransitionTime moves to `now` only when the status changes (or the condition is new), as
 * metav1.Condition requires; reason, message and observedGeneration are always updated. Order is
 * kept, a new condition is appended.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  update: ConditionUpdate,
  now: Date,
): Condition[] {
  const list = [...(conditions ?? [])];
  const index = list.findIndex((c) => c.type === update.type);
  const previous = index >= 0 ? list[index] : undefined;
  const next: Condition = {
    type: update.type,
    status: update.status,
    reason: update.reason,
    message: update.message ?? '',
    lastTransitionTime:
      previous && previous.status === update.status ? previous.lastTransitionTime : k8sTime(now),
    ...(update.observedGeneration !== undefined
      ? { observedGeneration: update.observedGeneration }
      : {}),
  };
  if (index >= 0) list[index] = next;
  else list.push(next);
  return list;
}

export function removeCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition[] {
  return (conditions ?? []).filter((c) => c.type !== type);
}

export interface SyncCounts {
  namespaces: number;
  synced: number;
  failed: number;
  conflicts: number;
  /** Selected namespaces the cluster's policy refuses (absent = 0). */
  denied?: number | undefined;
}

/**
 * Phase from counts: Error when `error` is set (nothing could be synced), Degraded when any copy
 * failed, conflicts or is refused by the cluster's policy, Active when every selected namespace is synced (also when none is
 * selected: there is nothing left to do), Pending otherwise.
 */
export function phaseFromCounts(counts: SyncCounts, error?: string): MirrorPhase {
  if (error) return 'Error';
  if (counts.failed > 0 || counts.conflicts > 0 || (counts.denied ?? 0) > 0) return 'Degraded';
  if (counts.synced >= counts.namespaces) return 'Active';
  return 'Pending';
}

/** status.synced for kubectl: "synced/selected", e.g. "12/12". */
export function syncedSummary(counts: Pick<SyncCounts, 'namespaces' | 'synced'>): string {
  return `${counts.synced}/${counts.namespaces}`;
}

/** Most namespaces a MirrorDelivery status lists (namespaces and syncedNamespaces together). */
export const MAX_NAMESPACE_ENTRIES = LIMITS.MirrorDeliveryStatus.namespaces;
/** Most entries in a mirror's status.problems. */
export const MAX_PROBLEMS = LIMITS.SecretMirrorStatus.problems;

const STATE_ORDER: Record<DeliveryNamespaceStatus['state'], number> = {
  Failed: 0,
  Conflict: 1,
  PolicyDenied: 2,
  Synced: 3,
};

/** What a MirrorDelivery status lists of its namespaces. */
export interface NamespaceReport {
  /** The problems (Failed, Conflict, PolicyDenied), with what went wrong. */
  namespaces: DeliveryNamespaceStatus[];
  /** The namespaces holding an up-to-date copy, by name. */
  syncedNamespaces: string[];
  /** More namespaces than listed. */
  truncated: boolean;
}

/**
 * The problems first (Failed, Conflict, PolicyDenied, by name within each), then the synced
 * namespaces' names, at most `max` in all.
 */
export function namespaceReport(
  entries: readonly DeliveryNamespaceStatus[],
  max: number = MAX_NAMESPACE_ENTRIES,
): NamespaceReport {
  const sorted = [...entries].sort(
    (x, y) => STATE_ORDER[x.state] - STATE_ORDER[y.state] || compare(x.name, y.name),
  );
  const listed = sorted.slice(0, max);
  const synced = listed.findIndex((e) => e.state === 'Synced');
  const problems = synced < 0 ? listed : listed.slice(0, synced);
  return {
    namespaces: problems,
    syncedNamespaces: listed.slice(problems.length).map((e) => e.name),
    truncated: sorted.length > max,
  };
}

/**
 * A delivery's namespaces as one list, as `namespaceReport` took them apart: the problems, then
 * the synced ones. Earlier agents listed synced namespaces in `namespaces` too, as Synced.
 */
export function reportedNamespaces(
  status: { namespaces?: DeliveryNamespaceStatus[]; syncedNamespaces?: string[] } | undefined,
): DeliveryNamespaceStatus[] {
  const synced = (status?.syncedNamespaces ?? []).map((name): DeliveryNamespaceStatus => ({
    name,
    state: 'Synced',
  }));
  return [...(status?.namespaces ?? []), ...synced];
}

/** Failed, Conflict, PolicyDenied, then by cluster and namespace, at most `max`. */
export function limitProblems(
  problems: readonly MirrorProblem[],
  max: number = MAX_PROBLEMS,
): MirrorProblem[] {
  return [...problems]
    .sort(
      (x, y) =>
        STATE_ORDER[x.state] - STATE_ORDER[y.state] ||
        compare(x.cluster, y.cluster) ||
        compare(x.namespace, y.namespace),
    )
    .slice(0, max);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// ---- Ready / Reconciling / Stalled (Kubernetes and Flux conventions) ---------------------------

export const CONDITION_RECONCILING = 'Reconciling';
export const CONDITION_STALLED = 'Stalled';

/**
 * Every reason a mirrorhub kind writes on its Ready condition (or Events), classified: `terminal`
 * reasons need a change to the spec, to a policy or to permissions before a retry can succeed
 * (Stalled=True, kstatus Failed, `kubectl wait --for=condition=Stalled`); the others are either
 * healthy or expected to clear on their own by retrying (Reconciling=True, kstatus InProgress).
 * `Suspended` is neither: nothing is attempted until spec.suspend is cleared. The ONE list of
 * terminal reasons; docs/gitops.md ("Conditions") repeats it. A reason missing here fails the
 * unit tests of the package that emits it.
 */
export const REASON_CLASS = {
  // mirrors (SecretMirror, ClusterSecretMirror)
  Synced: 'ready',
  Progressing: 'retrying',
  Degraded: 'retrying',
  SyncError: 'retrying',
  SyncFailed: 'retrying',
  SourceFound: 'ready',
  SourceNotFound: 'retrying',
  SourceUnreadable: 'retrying',
  Resumed: 'retrying',
  Suspended: 'suspended',
  InvalidSpec: 'terminal',
  Conflict: 'terminal',
  PolicyDenied: 'terminal',
  VaultPermissionDenied: 'terminal',
  VaultCleanupAbandoned: 'retrying',
  TakenOver: 'ready',
  Deleting: 'retrying',
  // MirrorCluster
  Ready: 'ready',
  Probing: 'retrying',
  AccessFailed: 'retrying',
  Reachable: 'ready',
  Unreachable: 'retrying',
  ProbeFailed: 'retrying',
  Authenticated: 'ready',
  Unauthorized: 'terminal',
  Forbidden: 'terminal',
  Heartbeating: 'ready',
  AgentMissing: 'retrying',
  HeartbeatStale: 'retrying',
  LeaseUnreadable: 'retrying',
  CleanupPending: 'retrying',
  CleanupDone: 'ready',
  // VaultConnection, ClusterVaultConnection
  InvalidConfig: 'terminal',
  TLSError: 'terminal',
  LoginFailed: 'terminal',
  Unavailable: 'retrying',
  // MirrorDelivery (agent)
  PayloadMissing: 'retrying',
  Replayed: 'retrying',
  SignatureInvalid: 'terminal',
} as const satisfies Record<string, ReasonClass>;

export type ReasonClass = 'ready' | 'retrying' | 'terminal' | 'suspended';

/** The terminal reasons (see REASON_CLASS), sorted. */
export const TERMINAL_REASONS: readonly string[] = Object.entries(REASON_CLASS)
  .filter(([, c]) => c === 'terminal')
  .map(([r]) => r)
  .sort();

/** How `reason` is classified; undefined for a reason nobody classified (a bug: see REASON_CLASS). */
export function reasonClass(reason: string): ReasonClass | undefined {
  return Object.hasOwn(REASON_CLASS, reason)
    ? REASON_CLASS[reason as keyof typeof REASON_CLASS]
    : undefined;
}

export function isTerminalReason(reason: string): boolean {
  return reasonClass(reason) === 'terminal';
}

/**
 * `conditions` with Reconciling and Stalled derived from their Ready condition, as kstatus, Flux
 * and `kubectl wait` read them: Ready True or a suspended object -> neither; a terminal reason
 * (or `stalled`, when the caller knows better than Ready's reason) -> Stalled True with that
 * reason and message; anything else not Ready -> Reconciling True with Ready's reason and
 * message (what it waits for). The two are removed, never set False, when they do not apply, so
 * a healthy object's status reads as before; setCondition keeps lastTransitionTime while a
 * condition's status stays, so a steady object gets no new status write.
 */
export function withProgressConditions(
  conditions: readonly Condition[] | undefined,
  o: {
    now: Date;
    generation?: number | undefined;
    stalled?: { reason: string; message: string } | undefined;
  },
): Condition[] {
  let list = [...(conditions ?? [])];
  const ready = findCondition(list, 'Ready');
  const generation = o.generation ?? ready?.observedGeneration;
  const stalled =
    o.stalled ??
    (ready && ready.status !== 'True' && isTerminalReason(ready.reason)
      ? { reason: ready.reason, message: ready.message }
      : undefined);
  const reconciling =
    !stalled && ready?.status !== 'True' && reasonClass(ready?.reason ?? '') !== 'suspended'
      ? {
          reason: ready?.reason || 'Progressing',
          message: ready?.message || 'waiting for the first reconcile',
        }
      : undefined;
  list = removeCondition(list, CONDITION_STALLED);
  list = removeCondition(list, CONDITION_RECONCILING);
  const keep = (type: string) => findCondition(conditions, type);
  for (const [type, value] of [
    [CONDITION_RECONCILING, reconciling],
    [CONDITION_STALLED, stalled],
  ] as const) {
    if (!value) continue;
    // Re-added from the previous list, so its lastTransitionTime survives.
    const before = keep(type);
    list = setCondition(
      before ? [...list, before] : list,
      {
        type,
        status: 'True',
        reason: value.reason,
        message: value.message,
        observedGeneration: generation,
      },
      o.now,
    );
  }
  return list;
}
