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
