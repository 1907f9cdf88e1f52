// A Vault (OpenBao) KV secret as a mirror's destination (destination.vault): read what Vault
// holds, decide with no I/O (plan.ts), write with check-and-set (store.ts), and report what the
// write did. A secret an earlier spec wrote and the spec no longer names goes (deletePolicy
// Delete), only while it carries the mirror's owner mark.
import {
  mirrorPolicies,
  resolveSource,
  resolveVaultDestination,
  type VaultWritten,
} from '@mirrorhub/shared/api/index';
import type { Counter, Logger } from '@mirrorhub/shared/kit/runtime/index';
import type { VaultConnections } from '../../../vault/connections.js';
import { cleanupFailureReport } from '../../cleanup.js';
import { REASON } from '../../status.js';
import type {
  CleanupContext,
  CleanupReport,
  DestinationKind,
  DestinationPlan,
  DestinationReport,
  GatheredSource,
  MirrorContext,
} from '../../kinds.js';
import {
  ownerMark,
  planVaultDestination,
  recordRef,
  REASON_VAULT_REMOVED,
  staleWrite,
  type VaultDestinationInput,
  type VaultDestinationPlan,
  type VaultTarget,
} from './plan.js';
import { VaultDestinations } from './store.js';

export interface VaultDestinationOptions {
  connections: VaultConnections;
  requests: Counter<'operation' | 'outcome'>;
  originCluster: string;
  logger: Logger;
}

export interface VaultPlan extends DestinationPlan {
  /** The Vault secret an earlier spec wrote, to remove first. */
  stale?: VaultWritten | undefined;
  /** When the spec names a Vault secret: what was decided, from what Vault holds. */
  input?: VaultDestinationInput;
  target?: VaultTarget | undefined;
  decided?: VaultDestinationPlan;
}

export class VaultDestination implements DestinationKind<VaultPlan> {
  private readonly store: VaultDestinations;

  constructor(private readonly opts: VaultDestinationOptions) {
    this.store = new VaultDestinations({ connections: opts.connections, requests: opts.requests });
  }

  async plan(ctx: MirrorContext, source: GatheredSource): Promise<VaultPlan> {
    const { mirror } = ctx;
    const destination = resolveVaultDestination(mirror);
    const current = destination?.ok ? destination.ref : undefined;
    const stale = staleWrite(mirror, current);
    if (destination === undefined) return { writes: false, stale };
    const resolved = resolveSource(mirror);
    const input: VaultDestinationInput = {
      mirror,
      ...(resolved.ok && source.refusal === undefined ? { source: resolved.source } : {}),
      ...(current ? { destination: current } : {}),
      errors: [
        ...(resolved.ok ? [] : [resolved.error]),
        ...(source.refusal !== undefined ? [source.refusal] : []),
        ...(destination.ok ? [] : [destination.error]),
      ],
      observation: source.observation,
      owner: ownerMark(this.opts.originCluster, ctx.id),
      now: ctx.now,
    };
    // What Vault holds matters only once the source is there to be written.
    const look = planVaultDestination(input);
    if (!look.needsTarget || !current) return { writes: false, input, decided: look };
    const target = await this.store.read(current);
    const decided = planVaultDestination({ ...input, target });
    return { writes: decided.write !== undefined, stale, input, target, decided };
  }

  async apply(ctx: MirrorContext, p: VaultPlan): Promise<DestinationReport> {
    const removal = p.stale ? await this.removeStale(ctx, p.stale) : undefined;
    const { input, decided } = p;
    if (!input || !decided) {
      // The spec names no Vault secret: only what an earlier spec wrote was to go.
      return removal ? { status: { vault: removal.record }, note: removal.error, retry: true } : {};
    }
    let result = decided;
    if (removal) {
      // The old secret first: the new one is not written while the old one stays.
      const target = {
        state: 'error' as const,
        error: removal.error,
        transient: removal.transient,
      };
      result = planVaultDestination({ ...input, target });
    } else if (decided.write && input.destination) {
      const outcome = await this.store.write(
        input.destination,
        decided.write.data,
        input.owner,
        decided.write.cas,
      );
      result = planVaultDestination({ ...input, mirror: ctx.mirror, target: p.target, outcome });
    }
    return {
      mirrorStatus: result.status,
      events: result.events,
      retry: result.retry,
      invalid: result.invalid !== undefined,
    };
  }

  async cleanUp(ctx: CleanupContext): Promise<CleanupReport> {
    const record = ctx.mirror?.status?.vault;
    if (!ctx.mirror || !ctx.held || !record) return {};
    if (mirrorPolicies(ctx.mirror.spec).deletePolicy !== 'Delete') return {};
    const r = await this.store.remove(
      recordRef(record, ctx.id.namespace),
      ownerMark(this.opts.originCluster, ctx.id),
    );
    if (!r.ok) {
      const what = `Vault ${record.path}`;
      return cleanupFailureReport(
        { what, error: r.error, reason: REASON.vaultCleanupAbandoned },
        ctx,
        this.opts.logger,
      );
    }
    if (!r.removed) return {};
    this.opts.logger.info(
      { key: ctx.key, path: record.path },
      'removed the Vault secret the mirror wrote',
    );
    return {
      events: [
        { type: 'Normal', reason: REASON_VAULT_REMOVED, message: `removed Vault ${record.path}` },
      ],
    };
  }

  stop(): Promise<void> {
    return Promise.resolve();
  }

  /** Undefined: removed (or left alone: not the mirror's); otherwise why not yet. */
  private async removeStale(
    ctx: MirrorContext,
    record: VaultWritten,
  ): Promise<{ record: VaultWritten; error: string; transient: boolean } | undefined> {
    const r = await this.store.remove(
      recordRef(record, ctx.id.namespace),
      ownerMark(this.opts.originCluster, ctx.id),
    );
    if (r.ok) {
      this.opts.logger.info(
        {
          key: ctx.key,
          path: record.path,
          removed: r.removed,
          ...(r.reason ? { reason: r.reason } : {}),
        },
        r.removed
          ? 'removed the Vault secret an earlier spec wrote'
          : 'left the Vault secret alone',
      );
      return undefined;
    }
    return {
      record,
      error: `cannot remove Vault ${record.path}, which an earlier spec wrote: ${r.error}`,
      transient: r.transient,
    };
  }
}
