// A Vault (OpenBao) KV secret as a mirror's source: polled per distinct path (poller.ts), shared
// by the mirrors that read it, once the mirror may read it through its connection.
import { mirrorPolicies, type ResolvedSource } from '@mirrorhub/shared/api/index';
import type { Counter, Logger } from '@mirrorhub/shared/kit/runtime/index';
import type { VaultConnections } from '../../../vault/connections.js';
import type {
  CleanupContext,
  MirrorContext,
  Report,
  SourceKind,
  SourceReading,
} from '../../kinds.js';
import { VaultSources, type KvSourceRef } from './poller.js';

export interface VaultKvSourcesOptions {
  connections: VaultConnections;
  requests: Counter<'operation' | 'outcome'>;
  logger: Logger;
  retryInitialMs?: number | undefined;
  /** Which mirrors to reconcile: their source changed. */
  onChange(mirrorKeys: readonly string[]): void;
}

export class VaultKvSources implements SourceKind {
  private readonly poller: VaultSources;

  constructor(private readonly opts: VaultKvSourcesOptions) {
    this.poller = new VaultSources({
      connections: opts.connections,
      requests: opts.requests,
      logger: opts.logger,
      retryInitialMs: opts.retryInitialMs,
      onChange: opts.onChange,
    });
  }

  async observe(ctx: MirrorContext, source: ResolvedSource | undefined): Promise<SourceReading> {
    const vault = source?.kind === 'Vault' && !source.dynamic ? source : undefined;
    if (!vault) {
      this.poller.set(ctx.key, undefined);
      return { state: 'other' };
    }
    const refusal = await this.opts.connections.refusal(vault.connection, ctx.id.namespace, {
      path: vault.path,
      use: 'read',
    });
    if (refusal !== undefined) {
      this.poller.set(ctx.key, undefined);
      return { state: 'observed', observation: { state: 'missing' }, refusal };
    }
    const policies = mirrorPolicies(ctx.mirror.spec);
    const kv: KvSourceRef = { ...vault, encoding: ctx.mirror.spec.source.vault?.encoding };
    this.poller.set(ctx.key, policies.suspend ? undefined : kv, policies.pollPeriodSeconds * 1000);
    const seen = this.poller.get(kv);
    // Not polled yet: the first poll enqueues this mirror again (suspended: planned as missing).
    if (seen.state === 'unknown') {
      return policies.suspend
        ? { state: 'observed', observation: { state: 'missing' } }
        : { state: 'unknown' };
    }
    return { state: 'observed', observation: seen };
  }

  release(ctx: CleanupContext): Promise<Report> {
    this.poller.set(ctx.key, undefined);
    return Promise.resolve({});
  }

  /** A connection changed: its pollers read afresh. */
  connectionChanged(connKey: string): void {
    this.poller.connectionChanged(connKey);
  }

  stop(): Promise<void> {
    return this.poller.stop();
  }
}
