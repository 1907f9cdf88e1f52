// One poll of a Vault source through its connection, as KV pollers (sources.ts) and dynamic
// sources (dynamic.ts) both make it: what the mirrors should see, whether to retry sooner, and
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
}

export async function pollSource(
  deps: PollDeps,
  source: Pick<VaultSourceRef, 'connection' | 'path'>,
  read: () => Promise<SourceObservation>,
  failedMessage: string,
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
      failedMessage,
    );
    return { observation, retry, failed: true };
  }
}
