// One poll of a Vault source through its connection, as the KV poller (poller.ts) and the
// dynamic sources (../vault-dynamic/leases.ts) both make it: what the mirrors should see, whether to retry sooner, and
// the connection told what Vault did (its Ready condition follows; a failed login re-reads its
// credentials).
import type { VaultSourceRef } from '@mirrorhub/shared/api/index';
import type { Logger } from '@mirrorhub/shared/kit/runtime/index';
import { isVaultError } from '../../../vault/index.js';
import type { SourceObservation } from '../../status.js';
import type { VaultConnections } from '../../../vault/connections.js';
import { connectionKey } from '../../../vault/decide.js';
import { failedObservation } from './observation.js';

export interface PollDeps {
  connections: Pick<VaultConnections, 'loginFailed' | 'observed'>;
  logger: Logger;
  /** Logged (at info, with the path and the error) when a poll fails. */
  failedMessage: string;
}

export async function pollSource(
  deps: PollDeps,
  source: Pick<VaultSourceRef, 'connection' | 'path'>,
  read: () => Promise<SourceObservation>,
): Promise<{ observation: SourceObservation; retry: boolean; failed: boolean }> {
  try {
    const observation = await read();
    deps.connections.observed(source.connection, undefined);
    return { observation, retry: false, failed: false };
  } catch (err) {
    deps.connections.observed(source.connection, err);
    if (isVaultError(err, 'login-failed')) deps.connections.loginFailed(source.connection);
    const { observation, retry } = failedObservation(err, source.connection);
    deps.logger.info(
      {
        source: source.path,
        connection: connectionKey(source.connection),
        err: observation.state === 'unreadable' ? observation.error : '',
      },
      deps.failedMessage,
    );
    return { observation, retry, failed: true };
  }
}

/** A poller's entry, as one poll sees and updates it. */
export interface PollState {
  stopped: boolean;
  polling: boolean;
  /** Consecutive failed polls (the retry delay grows with them). */
  failures: number;
  observation?: SourceObservation;
}

/**
 * One poll of `state`'s source, unless it is stopped (undefined) or a poll of it is still running
 * (undefined, after asking `again` for another shortly). Keeps the entry's failure count and its
 * observation.
 */
export async function pollOnce(
  deps: PollDeps,
  state: PollState,
  source: Pick<VaultSourceRef, 'connection' | 'path'>,
  read: () => Promise<SourceObservation>,
  again: (delayMs: number) => void,
): Promise<{ observation: SourceObservation; retry: boolean } | undefined> {
  if (state.stopped) return undefined;
  if (state.polling) {
    again(100);
    return undefined;
  }
  state.polling = true;
  let result;
  try {
    result = await pollSource(deps, source, read);
  } finally {
    state.polling = false;
  }
  state.failures = result.failed ? state.failures + 1 : 0;
  if (state.stopped) return undefined;
  state.observation = result.observation;
  return result;
}
