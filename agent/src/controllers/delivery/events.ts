// Which Events a delivery's status transition deserves: transitions only, so a steady cluster
// records none. Pure; the StatusWriter records them after the status write that carries the
// transition.

import type { MirrorDeliveryStatus } from '@mirrorhub/shared/api/types.gen';
import type { ControllerEvent } from '@mirrorhub/shared/kit/controller/events';

const REASON_BY_PHASE = { Active: 'Synced', Degraded: 'Degraded', Error: 'Error' } as const;

/**
 * The Events for a status going from `before` to `next`: PolicyDenied when the first namespace
 * is refused by this cluster's policy, and one when the phase changes (or an Error's message
 * does). Nothing while Pending.
 */
export function deliveryEvents(
  before: MirrorDeliveryStatus | undefined,
  next: MirrorDeliveryStatus,
): ControllerEvent[] {
  if (!next.phase || next.phase === 'Pending') return [];
  const events: ControllerEvent[] = [];
  const denied = next.counts?.denied ?? 0;
  if (denied > 0 && (before?.counts?.denied ?? 0) === 0) {
    const first = next.namespaces?.find((n) => n.state === 'PolicyDenied');
    events.push({
      type: 'Warning',
      reason: 'PolicyDenied',
      message: `${denied} namespace${denied === 1 ? ' is' : 's are'} refused by this cluster's policy; first: ${first?.name ?? ''}: ${first?.message ?? ''}`,
    });
  }
  if (before?.phase === next.phase && (next.phase !== 'Error' || before.message === next.message)) {
    return events;
  }
  const reason = next.message?.startsWith('SignatureInvalid:')
    ? 'SignatureInvalid'
    : next.message?.startsWith('Replayed:')
      ? 'Replayed'
      : next.message?.startsWith('PolicyDenied')
        ? 'PolicyDenied'
        : REASON_BY_PHASE[next.phase];
  events.push({
    type: next.phase === 'Active' ? 'Normal' : 'Warning',
    reason,
    message: next.message ?? reason,
  });
  return events;
}
