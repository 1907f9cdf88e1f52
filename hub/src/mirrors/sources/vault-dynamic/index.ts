// Vault dynamic credentials (a database role, an AWS role...) as a mirror's source: one lease
// per mirror (leases.ts), renewed at every poll, rotated ahead of its max TTL, and revoked when
// the mirror stops reading it (deletePolicy Delete) or forgotten to expire (Retain).
import { mirrorPolicies, type ResolvedSource } from '@mirrorhub/shared/api/index';
import type { Clock, Counter, Logger } from '@mirrorhub/shared/kit/runtime/index';
import type { RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import type { VaultConnections } from '../../../vault/connections.js';
import { cleanupFailureReport } from '../../cleanup.js';
import { REASON } from '../../status.js';
import type {
  CleanupContext,
  MirrorContext,
  Report,
  SourceKind,
  SourceReading,
} from '../../kinds.js';
import { DynamicSources } from './leases.js';
import { LeaseStore } from './store.js';

export interface VaultDynamicSourcesOptions {
  connections: VaultConnections;
  /** The hub's own cluster: where the leases are kept (Secret mirrorhub-leases). */
  rest: RestClient;
  leaseNamespace: string;
  requests: Counter<'operation' | 'outcome'>;
  logger: Logger;
  clock: Clock;
  retryInitialMs?: number | undefined;
  enqueue(mirrorKey: string): void;
}

export class VaultDynamicSources implements SourceKind {
  private readonly leases: DynamicSources;

  constructor(private readonly opts: VaultDynamicSourcesOptions) {
    this.leases = new DynamicSources({
      connections: opts.connections,
      store: new LeaseStore(opts.rest, opts.leaseNamespace),
      requests: opts.requests,
      logger: opts.logger,
      clock: opts.clock,
      retryInitialMs: opts.retryInitialMs,
      onChange: (k) => opts.enqueue(k),
    });
  }

  async observe(ctx: MirrorContext, source: ResolvedSource | undefined): Promise<SourceReading> {
    const dynamic = source?.kind === 'Vault' && source.dynamic ? source : undefined;
    const policies = mirrorPolicies(ctx.mirror.spec);
    if (!dynamic) {
      // No longer a dynamic source: its lease goes as deletePolicy says.
      if (!this.leases.has(ctx.key) && !ctx.mirror.status?.lease) return { state: 'other' };
      return { state: 'other', report: await this.releaseNow(ctx.key, policies.deletePolicy) };
    }
    const refusal = await this.opts.connections.refusal(dynamic.connection, ctx.id.namespace, {
      path: dynamic.path,
      use: 'dynamic',
    });
    if (refusal !== undefined) {
      // No longer allowed to read it: stop renewing; its lease goes as deletePolicy says.
      const report = await this.releaseNow(ctx.key, policies.deletePolicy);
      return { state: 'observed', observation: { state: 'missing' }, refusal, report };
    }
    // Renewed even while suspended: the copies' credentials must not expire under them.
    this.leases.set(
      ctx.key,
      dynamic,
      policies.pollPeriodSeconds * 1000,
      // A tenant through a shared identity: only a credential endpoint of an issuing engine.
      ctx.id.namespace !== undefined && dynamic.connection.kind === 'ClusterVaultConnection',
    );
    const seen = this.leases.get(ctx.key);
    if (seen.state === 'unknown') return { state: 'unknown' }; // its first poll enqueues the mirror
    const lease = this.leases.leaseStatus(ctx.key);
    return {
      state: 'observed',
      observation: seen,
      report: { ...(lease ? { status: { lease } } : {}), events: this.leases.takeEvents(ctx.key) },
    };
  }

  async release(ctx: CleanupContext): Promise<Report> {
    if (!ctx.mirror || !ctx.held) {
      // Gone before it delivered anything: a lease it read is still revoked (best effort).
      if (this.leases.has(ctx.key)) await this.leases.release(ctx.key, true);
      return {};
    }
    if (!this.leases.has(ctx.key) && !ctx.mirror.status?.lease) return {};
    const remove = mirrorPolicies(ctx.mirror.spec).deletePolicy === 'Delete';
    const error = await this.leases.release(ctx.key, remove);
    const failure =
      error === undefined
        ? undefined
        : {
            what: `Vault ${ctx.mirror.spec.source.vault?.path ?? ''}`,
            error,
            reason: REASON.vaultCleanupAbandoned,
          };
    return cleanupFailureReport(failure, ctx, this.opts.logger);
  }

  stop(): Promise<void> {
    return this.leases.stop();
  }

  private async releaseNow(key: string, deletePolicy: string): Promise<Report> {
    const error = await this.leases.release(key, deletePolicy === 'Delete');
    return error === undefined ? {} : { note: error, retry: true };
  }
}
