// The mirror's status vocabulary, shared by every kind of source and destination: what a
// source observation is, the conditions and reasons a mirror reports, the Events its
// transitions record, and when a status write may wait. Pure: no I/O.
import {
  isClusterSecretMirror,
  LIMITS,
  type AnyMirror,
  type MirrorProblem,
  type MirrorStatus,
} from '@mirrorhub/shared/api/index';
import {
  findCondition,
  withProgressConditions,
  type MirrorIdentity,
  type SourceObject,
} from '@mirrorhub/shared/mirror/index';

export type SourceObservation =
  | { state: 'found'; object: SourceObject }
  | { state: 'missing' }
  /**
   * The source cannot be read (e.g. 403, Vault unreachable): its existence is unknown. `denied`:
   * a permission refusal (Vault policy), which only a change of policy or spec fixes: phase Error
   * even when copies exist (they are kept).
   */
  | { state: 'unreadable'; error: string; denied?: boolean };

export interface PlannedEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

export const CONDITION_READY = 'Ready';
export const CONDITION_SOURCE_FOUND = 'SourceFound';

export const REASON = {
  synced: 'Synced',
  progressing: 'Progressing',
  degraded: 'Degraded',
  syncError: 'SyncError',
  invalidSpec: 'InvalidSpec',
  suspended: 'Suspended',
  resumed: 'Resumed',
  sourceFound: 'SourceFound',
  sourceNotFound: 'SourceNotFound',
  sourceUnreadable: 'SourceUnreadable',
  conflict: 'Conflict',
  syncFailed: 'SyncFailed',
  policyDenied: 'PolicyDenied',
  /** Copies another tool made from the source are now mirrorhub's (issue 38, migration). */
  takenOver: 'TakenOver',
  /** Stalled: Vault refuses the source path to the mirror's credentials (its policy). */
  vaultPermissionDenied: 'VaultPermissionDenied',
  /** A deleted mirror's Vault secret or lease could not be removed within the cleanup grace. */
  vaultCleanupAbandoned: 'VaultCleanupAbandoned',
} as const;

/** Longest status.message and clusters[].message (the CRD's maxLength). */
export const MAX_MESSAGE = LIMITS.SecretMirrorStatus.message;
/** Longest problems[].message, condition message and Event message. */
export const MAX_SHORT_MESSAGE = LIMITS.MirrorProblem.message;

/**
 * How long to hold back a status write (ms; 0: write now). When a source changes, each selected
 * cluster's agent reports back on its own, and every report moves the mirror's counts and
 * per-cluster lastSyncTime: written one by one, ten clusters make ten status writes per change.
 * Progress is therefore written at most once per `coalesceMs` (the held write goes out when that
 * time is up, with everything that arrived meanwhile). Transitions are never held: a phase or
 * condition change, or an Event to record, is written at once.
 */
export function statusWriteDelay(o: {
  prev: MirrorStatus;
  next: MirrorStatus;
  events: number;
  /** When this mirror's status was last written (ms), if ever. */
  lastWriteAt: number | undefined;
  now: number;
  coalesceMs: number;
}): number {
  if (o.events > 0 || o.prev.phase !== o.next.phase) return 0;
  const conditions = (s: MirrorStatus) =>
    (s.conditions ?? [])
      .map((c) => `${c.type}=${c.status}`)
      .sort()
      .join(',');
  if (conditions(o.prev) !== conditions(o.next)) return 0;
  if (o.lastWriteAt === undefined) return 0;
  return Math.max(0, o.lastWriteAt + o.coalesceMs - o.now);
}

/** Clusters per base coalescing period: beyond it, a mirror's progress is written less often. */
export const CLUSTERS_PER_COALESCE_PERIOD = 20;

/**
 * The progress-coalescing period for a mirror selecting `clusters` clusters: `baseMs` up to 20
 * clusters, then one more `baseMs` per 20 (100 clusters: 5 s). A mirror's status carries one
 * entry per cluster, so each write costs the API server in proportion (its bytes, its
 * managedFields and a watch event to every watcher), while a change reaches many clusters over
 * several seconds, each agent reporting on its own: written every second, a large fleet would
 * write the status several times per change. This keeps the status bytes written per second
 * about the same at any fleet size (docs/BENCHMARKS.md, "Status writes"); transitions and Events
 * are still written at once (statusWriteDelay).
 */
export function statusCoalesceMs(clusters: number, baseMs: number): number {
  return baseMs * Math.max(1, Math.ceil(clusters / CLUSTERS_PER_COALESCE_PERIOD));
}

export function identityOf(mirror: AnyMirror): MirrorIdentity {
  return isClusterSecretMirror(mirror)
    ? { kind: 'ClusterSecretMirror', name: mirror.metadata.name ?? '' }
    : {
        kind: 'SecretMirror',
        namespace: mirror.metadata.namespace ?? '',
        name: mirror.metadata.name ?? '',
      };
}

/**
 * Events from the transition prev -> next (derived from the statuses only, so they fire on
 * transitions and never twice for one). Every destination kind derives its Events with it.
 */
export function transitionEvents(prev: MirrorStatus, next: MirrorStatus): PlannedEvent[] {
  const events: PlannedEvent[] = [];
  const ready = findCondition(next.conditions, CONDITION_READY);
  const prevReady = findCondition(prev.conditions, CONDITION_READY);
  const found = findCondition(next.conditions, CONDITION_SOURCE_FOUND);
  const prevFound = findCondition(prev.conditions, CONDITION_SOURCE_FOUND);
  const msg = (s: string) => truncate(s, MAX_SHORT_MESSAGE);

  if (ready?.reason === REASON.invalidSpec) {
    if (prevReady?.reason !== REASON.invalidSpec || prev.message !== next.message) {
      events.push({
        type: 'Warning',
        reason: REASON.invalidSpec,
        message: msg(next.message ?? ''),
      });
    }
    return events;
  }
  if (ready?.reason === REASON.suspended) {
    if (prevReady?.reason !== REASON.suspended) {
      events.push({ type: 'Normal', reason: REASON.suspended, message: msg(next.message ?? '') });
    }
    return events;
  }
  if (prevReady?.reason === REASON.suspended) {
    events.push({ type: 'Normal', reason: REASON.resumed, message: 'syncing again' });
  }
  if (found?.status === 'False' && prevFound?.status !== 'False') {
    events.push({
      type: 'Warning',
      reason: REASON.sourceNotFound,
      message: msg(next.message ?? ''),
    });
  }
  if (found?.status === 'True' && prevFound?.status === 'False') {
    events.push({ type: 'Normal', reason: REASON.sourceFound, message: msg(found.message) });
  }
  if (found?.status === 'Unknown' && found.reason === REASON.sourceUnreadable) {
    if (prevFound?.reason !== REASON.sourceUnreadable) {
      events.push({
        type: 'Warning',
        reason: REASON.sourceUnreadable,
        message: msg(found.message),
      });
    }
  }
  if (next.phase === 'Active' && prev.phase !== 'Active') {
    events.push({ type: 'Normal', reason: REASON.synced, message: msg(next.message ?? '') });
  }
  if (
    (ready?.reason === REASON.degraded || ready?.reason === REASON.syncError) &&
    (prev.phase !== next.phase || prevReady?.reason !== ready.reason)
  ) {
    events.push({ type: 'Warning', reason: ready.reason, message: msg(next.message ?? '') });
  }
  const problemList = (state: MirrorProblem['state']) =>
    (next.problems ?? [])
      .filter((p) => p.state === state)
      .slice(0, 5)
      .map((p) => `${p.cluster}/${p.namespace}${p.message ? ` (${p.message})` : ''}`)
      .join(', ');
  const conflicts = next.counts?.conflicts ?? 0;
  if (conflicts > 0 && (prev.counts?.conflicts ?? 0) === 0) {
    events.push({
      type: 'Warning',
      reason: REASON.conflict,
      message: msg(
        `${conflicts} namespace${conflicts === 1 ? ' has' : 's have'} an object with the target name that mirrorhub does not own: ${problemList('Conflict')}`,
      ),
    });
  }
  const denied = next.counts?.denied ?? 0;
  if (denied > 0 && (prev.counts?.denied ?? 0) === 0) {
    events.push({
      type: 'Warning',
      reason: REASON.policyDenied,
      message: msg(
        `${denied} namespace${denied === 1 ? ' is' : 's are'} refused by the target cluster's policy: ${problemList('PolicyDenied')}`,
      ),
    });
  }
  const failed = next.counts?.failed ?? 0;
  if (failed > 0 && (prev.counts?.failed ?? 0) === 0) {
    events.push({
      type: 'Warning',
      reason: REASON.syncFailed,
      message: msg(`${failed} cop${failed === 1 ? 'y' : 'ies'} failed: ${problemList('Failed')}`),
    });
  }
  // One per tool when more of its copies were taken over: the count so far, never per copy.
  const before = new Map((prev.takenOver ?? []).map((t) => [t.from, t.copies] as const));
  for (const t of next.takenOver ?? []) {
    if (t.copies <= (before.get(t.from) ?? 0)) continue;
    events.push({
      type: 'Normal',
      reason: REASON.takenOver,
      message: msg(
        `${t.copies} cop${t.copies === 1 ? 'y' : 'ies'} made by ${t.from} from this mirror's source taken over in place (their ${t.from} marks and ownerReferences removed)`,
      ),
    });
  }
  return events;
}

/**
 * The mirror's status with Reconciling and Stalled (shared/src/mirror/status.ts,
 * withProgressConditions) derived from its Ready condition and from what only the whole mirror
 * knows: a source Vault refuses to read (`denied`) and, once the source is found, a rollout
 * whose every remaining namespace is refused by policy or taken by an object mirrorhub does not
 * own (no retry copies there until a policy or that object changes) are terminal; a missing
 * source, an unreachable cluster or a failed write is retried.
 */
export function withMirrorProgress(
  status: MirrorStatus,
  o: { source: SourceObservation; generation: number | undefined; now: Date },
): MirrorStatus {
  const ready = findCondition(status.conditions, CONDITION_READY);
  if (!ready) return status;
  const stalled =
    ready.status === 'True' || ready.reason === REASON.suspended
      ? undefined
      : o.source.state === 'unreadable' && o.source.denied
        ? { reason: REASON.vaultPermissionDenied, message: ready.message }
        : o.source.state === 'found'
          ? stuckOnRefusals(status, ready.message)
          : undefined;
  return {
    ...status,
    conditions: withProgressConditions(status.conditions, {
      now: o.now,
      generation: o.generation,
      stalled,
    }),
  };
}

/**
 * Stalled when every selected cluster answered and each namespace not yet synced is refused by
 * policy or in conflict (none failed, none waiting): PolicyDenied if any is refused, else Conflict.
 */
function stuckOnRefusals(
  status: MirrorStatus,
  message: string,
): { reason: string; message: string } | undefined {
  const entries = status.clusters ?? [];
  const counts = status.counts;
  if (!counts || entries.length === 0) return undefined;
  const denied = counts.denied ?? 0;
  const conflicts = counts.conflicts ?? 0;
  if (denied + conflicts === 0) return undefined;
  const settled = entries.every(
    (e) =>
      e.phase === 'Active' ||
      ((e.phase === 'Error' || e.phase === 'Degraded') &&
        (e.failed ?? 0) === 0 &&
        (e.namespaces ?? 0) > 0 &&
        (e.synced ?? 0) + (e.denied ?? 0) + (e.conflicts ?? 0) >= (e.namespaces ?? 0)),
  );
  if (!settled) return undefined;
  return { reason: denied > 0 ? REASON.policyDenied : REASON.conflict, message };
}

/** Drop undefined members so equality and patches see only real fields. */
export function clean(status: MirrorStatus): MirrorStatus {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(status)) if (v !== undefined) out[k] = v;
  return out as MirrorStatus;
}

export function truncate(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}
