// What a deleted mirror could not remove yet from a place no watch reports on (a Vault secret it
// wrote, its dynamic leases): retried until the cleanup grace ends, then given up with a Warning
// Event naming it, so that nothing unreachable can hold a mirror forever.
import type { Logger } from '@mirrorhub/shared/kit/runtime/index';
import type { CleanupContext, Report } from './kinds.js';
import { truncate } from './status.js';

export interface CleanupFailure {
  /** What could not be removed, as the status and the Event name it (`Vault <path>`). */
  what: string;
  error: string;
  /** The Event's reason when given up. */
  reason: string;
}

export function cleanupFailureReport(
  failure: CleanupFailure | undefined,
  ctx: CleanupContext,
  log: Logger,
): Report {
  if (!failure) return {};
  if (ctx.deletingSince && ctx.now.getTime() - ctx.deletingSince.getTime() < ctx.graceMs) {
    return { note: `cannot clean up ${failure.what} yet: ${failure.error}`, retry: true };
  }
  log.warn({ key: ctx.key, what: failure.what, err: failure.error }, 'gave up cleaning up');
  return {
    events: [
      {
        type: 'Warning',
        reason: failure.reason,
        message: truncate(
          `gave up cleaning up ${failure.what} after ${Math.round(ctx.graceMs / 1000)} s: ${failure.error}; remove or revoke it by hand`,
          1024,
        ),
      },
    ],
  };
}
