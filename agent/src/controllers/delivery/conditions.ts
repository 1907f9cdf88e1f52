// The MirrorDelivery's Ready / Reconciling / Stalled conditions (shared REASON_CLASS says which
// reasons are terminal), from the status the plan built and why it stopped, if it did. Pure.
import type { Condition, MirrorDeliveryStatus } from '@mirrorhub/shared/api/types.gen';
import { setCondition, withProgressConditions } from '@mirrorhub/shared/mirror/index';

/** Why a delivery is not (yet) applied as a whole, when it is not. */
export interface DeliveryStop {
  /** Neither signed by the hub nor acceptable: only the hub writing it again helps. */
  signatureInvalid: boolean;
  /** Older than one applied under its name: the hub writes the next one with a higher sequence. */
  replayed: boolean;
  /** The agent cannot hold it in memory now; retried. */
  memory: boolean;
  /** spec.suspend. */
  suspended: boolean;
  /** Its namespace pattern does not compile. */
  invalidSpec: boolean;
  /** The payload Secret is missing (the hub writes it; retried). */
  payloadMissing: boolean;
  /** The follower's policy refuses the delivery as a whole. */
  refused: boolean;
}

/** Ready's reason for a delivery with status `next` stopped (or not) by `stop`. */
export function deliveryReadyReason(next: MirrorDeliveryStatus, stop: DeliveryStop): string {
  if (stop.signatureInvalid) return 'SignatureInvalid';
  if (stop.memory) return 'SyncError';
  if (stop.replayed) return 'Replayed';
  if (stop.suspended) return 'Suspended';
  if (stop.invalidSpec) return 'InvalidSpec';
  if (stop.payloadMissing) return 'PayloadMissing';
  if (stop.refused) return 'PolicyDenied';
  const c = next.counts;
  switch (next.phase) {
    case 'Active':
      return 'Synced';
    case 'Degraded':
      // Every namespace answered: a failed write is retried; refusals and conflicts are not.
      if ((c?.failed ?? 0) > 0) return 'SyncError';
      if ((c?.denied ?? 0) > 0) return 'PolicyDenied';
      return 'Conflict';
    case 'Error':
      return 'SyncError';
    default:
      return 'Progressing';
  }
}

/**
 * `next` with its Ready, Reconciling and Stalled conditions for `generation`, updated from the
 * `previous` ones so a lastTransitionTime moves only when that condition's status does.
 */
export function withDeliveryConditions(
  next: MirrorDeliveryStatus,
  stop: DeliveryStop,
  o: { now: Date; generation: number | undefined; previous: readonly Condition[] | undefined },
): MirrorDeliveryStatus {
  const reason = deliveryReadyReason(next, stop);
  const ready = setCondition(
    o.previous,
    {
      type: 'Ready',
      status: reason === 'Synced' ? 'True' : 'False',
      reason,
      message: (next.message ?? '').slice(0, 1024),
      observedGeneration: o.generation,
    },
    o.now,
  );
  return {
    ...next,
    conditions: withProgressConditions(ready, { now: o.now, generation: o.generation }),
  };
}
