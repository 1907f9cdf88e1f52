// What a deleted mirror could not remove from Vault yet (the secret it wrote, its dynamic
// leases): retried until the cleanup grace ends, then given up with a Warning Event naming the
// path, so a dead Vault cannot hold the mirror forever.
import type { Logger } from '@mirrorhub/shared/kit/runtime/index';
import type { CleanupContext, Report } from '../mirrors/kinds.js';
import { truncate } from '../mirrors/status.js';

export function vaultCleanupReport(
  failure: { path: string; error: string } | undefined,
  ctx: CleanupContext,
  log: Logger,
): Report {
  if (!failure) return {};
  if (ctx.deletingSince && ctx.now.getTime() - ctx.deletingSince.getTime() < ctx.graceMs) {
    return { note: `cannot clean up Vault ${failure.path} yet: ${failure.error}`, retry: true };
  }
  log.warn(
    { key: ctx.key, path: failure.path, err: failure.error },
    'gave up cleaning up in Vault',
  );
  return {
    events: [
      {
        type: 'Warning',
        reason: 'VaultCleanupAbandoned',
        message: truncate(
          `gave up cleaning up Vault ${failure.path} after ${Math.round(ctx.graceMs / 1000)} s: ${failure.error}; remove or revoke it by hand`,
          1024,
        ),
      },
    ],
  };
}
