// Vault dynamic credentials (a database role, an AWS role...) as a mirror's source: one lease
// per mirror (leases.ts), renewed at every poll, rotated ahead of its max TTL, and revoked when
// the mirror stops reading it (deletePolicy Delete) or forgotten to expire (Retain).
//
// Several hub replicas: only the leader issues, renews, rotates and revokes leases. A replica
// that does not lead never calls Vault for a lease: it reads the credentials the leader recorded
// in the mirrorhub-leases Secret (reader.ts), and waits while there are none.
import { mirrorPolicies, type ResolvedSource } from '@mirrorhub/shared/api/index';
import type { Clock, Counter, Logger } from '@mirrorhub/shared/kit/runtime/index';
import type { RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { ALWAYS_LEADING, type Role } from '../../../shards/ownership.js';
import { secretOf } from '../vault/observation.js';
import { LeaseReader } from './reader.js';
import { leaseSource } from './rules.js';
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
  /** Whether this replica leads (default: always): only the leader holds leases. */
  role?: Role | undefined;
  /** The hub's own cluster: a replica that does not lead watches the leases Secret there. */
  kubeConfig?: KubeAccess | undefined;
  watchProgressDeadlineMs?: number | undefined;
}

export class VaultDynamicSources implements SourceKind {
  /** The leader's leases; undefined while this replica does not lead. */
  private leases: DynamicSources | undefined;
  private reader: LeaseReader | undefined;
  private readonly role: Role;
  private readonly unsubscribe: () => void;
  /** Stopping the previous term's leases (renewals end; nothing is revoked). */
  private retiring: Promise<void> = Promise.resolve();

  constructor(private readonly opts: VaultDynamicSourcesOptions) {
    this.role = opts.role ?? ALWAYS_LEADING;
    if (this.role.leading()) this.leases = this.newLeases();
    this.unsubscribe = this.role.onChange((leading) => {
      if (leading) {
        // A new term reads the Secret afresh: the previous leader may have rotated since.
        this.leases ??= this.newLeases();
      } else if (this.leases) {
        const old = this.leases;
        this.leases = undefined;
        this.retiring = this.retiring.then(() => old.stop());
      }
    });
  }

  private newLeases(): DynamicSources {
    const opts = this.opts;
    return new DynamicSources({
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
    // This term's leases, even if leadership ends while this reconcile waits.
    const leases = this.leases;
    if (!leases) return this.observeRecorded(ctx, source);
    const dynamic = source?.kind === 'Vault' && source.dynamic ? source : undefined;
    const policies = mirrorPolicies(ctx.mirror.spec);
    if (!dynamic) {
      // No longer a dynamic source: its lease goes as deletePolicy says.
      if (!leases.has(ctx.key) && !ctx.mirror.status?.lease) return { state: 'other' };
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
    leases.set(
      ctx.key,
      dynamic,
      policies.pollPeriodSeconds * 1000,
      // A tenant through a shared identity: only a credential endpoint of an issuing engine.
      ctx.id.namespace !== undefined && dynamic.connection.kind === 'ClusterVaultConnection',
    );
    const seen = leases.get(ctx.key);
    if (seen.state === 'unknown') return { state: 'unknown' }; // its first poll enqueues the mirror
    const lease = leases.leaseStatus(ctx.key);
    return {
      state: 'observed',
      observation: seen,
      report: { ...(lease ? { status: { lease } } : {}), events: leases.takeEvents(ctx.key) },
    };
  }

  /**
   * A replica that does not lead: the credentials the leader recorded, or unknown until it has
   * (the Secret's change enqueues the mirror). Nothing is released here: leases are the
   * leader's.
   */
  private async observeRecorded(
    ctx: MirrorContext,
    source: ResolvedSource | undefined,
  ): Promise<SourceReading> {
    const dynamic = source?.kind === 'Vault' && source.dynamic ? source : undefined;
    if (!dynamic) {
      this.reader?.forget(ctx.key);
      return { state: 'other' };
    }
    const refusal = await this.opts.connections.refusal(dynamic.connection, ctx.id.namespace, {
      path: dynamic.path,
      use: 'dynamic',
    });
    if (refusal !== undefined) {
      return { state: 'observed', observation: { state: 'missing' }, refusal };
    }
    const kubeConfig = this.opts.kubeConfig;
    if (!kubeConfig) return { state: 'unknown' };
    this.reader ??= new LeaseReader({
      kubeConfig,
      namespace: this.opts.leaseNamespace,
      watchProgressDeadlineMs: this.opts.watchProgressDeadlineMs,
      enqueue: this.opts.enqueue,
    });
    const record = this.reader.get(ctx.key);
    if (record === 'unknown' || !record || record.source !== leaseSource(dynamic)) {
      return { state: 'unknown' };
    }
    return { state: 'observed', observation: { state: 'found', object: secretOf(record.data) } };
  }

  async release(ctx: CleanupContext): Promise<Report> {
    const leases = this.leases;
    if (!leases) {
      this.reader?.forget(ctx.key);
      return {};
    }
    if (!ctx.mirror || !ctx.held) {
      // Gone before it delivered anything: a lease it read is still revoked (best effort).
      if (leases.has(ctx.key)) await leases.release(ctx.key, true);
      return {};
    }
    if (!leases.has(ctx.key) && !ctx.mirror.status?.lease) return {};
    const remove = mirrorPolicies(ctx.mirror.spec).deletePolicy === 'Delete';
    const error = await leases.release(ctx.key, remove);
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

  async stop(): Promise<void> {
    this.unsubscribe();
    await Promise.all([this.leases?.stop(), this.retiring, this.reader?.stop()]);
  }

  private async releaseNow(key: string, deletePolicy: string): Promise<Report> {
    if (!this.leases) return {};
    const error = await this.leases.release(key, deletePolicy === 'Delete');
    return error === undefined ? {} : { note: error, retry: true };
  }
}
