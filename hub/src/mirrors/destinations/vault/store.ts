// Vault destinations: the reads, writes and removals of the Vault secrets mirrors write
// (destination.vault), through the mirrors' connections. destination.ts decides; this only does
// the I/O and turns every failure into a message that names the path and the Vault error, never
// a token or a value, and says whether a retry can fix it.
import type { VaultSourceRef } from '@mirrorhub/shared/api/index';
import type { Counter } from '@mirrorhub/shared/kit/runtime/index';
import { isVaultError, VaultKv, type VaultClient } from '../../../vault/index.js';
import type { VaultConnections } from '../../../vault/connections.js';
import {
  ConnectionConfigError,
  connectionKey,
  isTransient,
  outcomeOf,
} from '../../../vault/decide.js';
import type { VaultTarget, WriteOutcome } from './plan.js';

export interface VaultDestinationsOptions {
  connections: Pick<VaultConnections, 'client' | 'loginFailed' | 'observed'>;
  requests: Counter<'operation' | 'outcome'>;
}

export type RemoveOutcome =
  | { ok: true; removed: boolean; reason?: string }
  | { ok: false; error: string; transient: boolean };

export class VaultDestinations {
  /** One KV client per (connection client, stated KV version), rebuilt with the client. */
  private readonly kvs = new Map<string, { client: VaultClient; kv: VaultKv }>();

  constructor(private readonly opts: VaultDestinationsOptions) {}

  /** What Vault holds at `ref`, and whose it is. */
  async read(ref: VaultSourceRef): Promise<VaultTarget> {
    try {
      const kv = await this.kv(ref);
      const seen = await kv.inspect(ref.path);
      this.count('inspect', 'ok');
      this.opts.connections.observed(ref.connection, undefined);
      if (!seen.secret) {
        return {
          state: 'absent',
          owner: seen.owner,
          version: seen.currentVersion,
          kvVersion: seen.kvVersion,
        };
      }
      return {
        state: 'found',
        data: seen.secret.data,
        jsonKeys: seen.secret.jsonKeys,
        owner: seen.owner,
        version: seen.currentVersion,
        kvVersion: seen.kvVersion,
      };
    } catch (err) {
      this.count('inspect', outcomeOf(err));
      return { state: 'error', ...this.failure(ref, err) };
    }
  }

  /** Writes `data` marked with `owner` (KV v2: check-and-set on `cas`). */
  async write(
    ref: VaultSourceRef,
    data: Record<string, string>,
    owner: string,
    cas: number | undefined,
  ): Promise<WriteOutcome> {
    try {
      const kv = await this.kv(ref);
      const r = await kv.write(ref.path, data, { owner, ...(cas !== undefined ? { cas } : {}) });
      this.count('write', 'ok');
      return { ok: true, wrote: r.wrote || r.metadataWritten, version: r.version };
    } catch (err) {
      this.count('write', isVaultError(err, 'cas-mismatch') ? 'conflict' : outcomeOf(err));
      const f = this.failure(ref, err);
      // Another writer got in between: read again and decide again.
      return { ok: false, ...f, transient: f.transient || isVaultError(err, 'cas-mismatch') };
    }
  }

  /** Removes `ref` (KV v2: every version and the metadata) if it still carries `owner`. */
  async remove(ref: VaultSourceRef, owner: string): Promise<RemoveOutcome> {
    try {
      const kv = await this.kv(ref);
      const seen = await kv.inspect(ref.path);
      if (seen.owner !== owner) {
        this.count('remove', 'skipped');
        const gone = !seen.secret && seen.currentVersion === 0;
        return {
          ok: true,
          removed: false,
          reason: gone
            ? 'it is gone already'
            : `it no longer carries this mirror's owner mark${seen.owner ? ` (owner: ${seen.owner})` : ''}; left alone`,
        };
      }
      await kv.remove(ref.path);
      this.count('remove', 'ok');
      return { ok: true, removed: true };
    } catch (err) {
      this.count('remove', outcomeOf(err));
      return { ok: false, ...this.failure(ref, err) };
    }
  }

  // ---- internals --------------------------------------------------------------------------------

  private async kv(ref: VaultSourceRef): Promise<VaultKv> {
    const client = await this.opts.connections.client(ref.connection);
    const mount = ref.path.split('/')[0] ?? '';
    const key = `${connectionKey(ref.connection)}|${ref.kvVersion ? `${mount}=${ref.kvVersion}` : ''}`;
    const have = this.kvs.get(key);
    if (have?.client === client) return have.kv;
    const kv = new VaultKv(client, ref.kvVersion ? { mounts: { [mount]: ref.kvVersion } } : {});
    this.kvs.set(key, { client, kv });
    return kv;
  }

  private failure(ref: VaultSourceRef, err: unknown): { error: string; transient: boolean } {
    this.opts.connections.observed(ref.connection, err);
    if (isVaultError(err, 'login-failed')) this.opts.connections.loginFailed(ref.connection);
    const c = ref.connection;
    const error =
      err instanceof ConnectionConfigError
        ? `${c.kind} ${c.namespace ? `${c.namespace}/` : ''}${c.name}: ${err.message}`
        : `Vault: ${err instanceof Error ? err.message : String(err)}`;
    return { error, transient: isTransient(err) };
  }

  private count(operation: string, outcome: string): void {
    this.opts.requests.inc({ operation, outcome });
  }
}
