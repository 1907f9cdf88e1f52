// The namespaces of the selected clusters as a mirror's destination: per cluster, one payload
// Secret + one MirrorDelivery in the agent namespace (plan.ts decides, with no I/O), written by
// that cluster's connection (connection.ts) without ever waiting on the cluster; the agent there
// makes the copies and reports back in the delivery's status.
import { deliveryName } from '@mirrorhub/shared/mirror/index';
import type { Signer } from '@mirrorhub/shared/mirror/signing';
import {
  childLogger,
  type Clock,
  type ControllerMetrics,
  type Gauge,
  type Logger,
} from '@mirrorhub/shared/kit/runtime/index';
import type { MirrorDelivery } from '@mirrorhub/shared/api/index';
import type { ClusterRegistry } from '../../../clusters/registry.js';
import type { ClusterTarget } from '../../../clusters/target.js';
import type {
  CleanupContext,
  CleanupReport,
  DestinationKind,
  DestinationPlan,
  DestinationReport,
  GatheredSource,
  MirrorContext,
} from '../../kinds.js';
import { ClusterConnection } from './connection.js';
import {
  planCleanup,
  planDeletionStatus,
  planMirror,
  type ClusterObservation,
  type MirrorPlan,
  type Tenancy,
} from './plan.js';

export interface ClusterDestinationsOptions {
  registry: ClusterRegistry;
  originCluster: string;
  hubSecret: Uint8Array;
  signer: Signer;
  tenancy?: Tenancy | undefined;
  logger: Logger;
  metrics: ControllerMetrics;
  clock: Clock;
  deliveryConcurrency?: number | undefined;
  unreachableAfterMs?: number | undefined;
  requestTimeoutMs?: number | undefined;
  watchProgressDeadlineMs?: number | undefined;
  /** A delivery of this mirror changed. */
  enqueue(mirrorKey: string): void;
  /** Clusters came, went or changed health: every mirror is looked at again. */
  enqueueAll(): void;
  onCleanupAbandoned?(cluster: string, name: string, mirrorKey: string, reason: string): void;
  /** A delivery changed in the caches (the dashboard's live feed). */
  onObserved?(): void;
}

export interface ClustersPlan extends DestinationPlan {
  name: string;
  conns: ClusterConnection[];
  /** The copies, when the spec names these clusters' namespaces (else only `deletes`). */
  mirror?: MirrorPlan;
  deletes: readonly string[];
}

export class ClusterDestinations implements DestinationKind<ClustersPlan> {
  private readonly log: Logger;
  private readonly connections = new Map<string, ClusterConnection>();
  private readonly gauge: Gauge<'state'>;
  private unsubscribe: (() => void) | undefined;
  private resyncMs: number | undefined;
  private stopped = false;

  constructor(private readonly opts: ClusterDestinationsOptions) {
    this.log = childLogger(opts.logger, { controller: 'mirror' });
    this.gauge = opts.metrics.gauge('clusters', 'Clusters the hub delivers to, by state.', [
      'state',
    ]);
  }

  /** Connects to every registered cluster; resolves once the local cluster's caches are synced. */
  async start(): Promise<void> {
    this.unsubscribe = this.opts.registry.onChange(() => this.syncConnections());
    this.syncConnections();
    const local = [...this.connections.values()].find((c) => c.target.local);
    if (local) await local.waitSynced();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    await Promise.all([...this.connections.values()].map((c) => c.stop()));
    this.connections.clear();
  }

  get size(): number {
    return this.connections.size;
  }

  setResyncPeriod(ms: number): void {
    this.resyncMs = ms;
    for (const conn of this.connections.values()) conn.setResyncPeriod(ms);
  }

  /** Per cluster: this hub's deliveries there, as the cluster's cache holds them. */
  deliveries(): Map<string, MirrorDelivery[]> {
    const out = new Map<string, MirrorDelivery[]>();
    for (const [name, conn] of this.connections) out.set(name, conn.deliveryList());
    return out;
  }

  /** Whether `cluster` holds a delivery or payload named `name` (undefined: unknown). */
  holds(cluster: string, name: string): boolean | undefined {
    return this.connections.get(cluster)?.holds(name);
  }

  /** Keys of the mirrors whose deliveries the clusters hold (a gone mirror's are deleted). */
  mirrorKeys(): string[] {
    return [...this.connections.values()].flatMap((c) => c.mirrorKeys());
  }

  // ---- DestinationKind ------------------------------------------------------------------------

  plan(ctx: MirrorContext, source: GatheredSource): Promise<ClustersPlan> {
    const name = deliveryName(ctx.id, this.opts.originCluster);
    const conns = [...this.connections.values()];
    const clusters = conns.map((c) => observe(c, name));
    if (ctx.mirror.spec.destination.vault !== undefined) {
      // Written to Vault instead: deliveries from an earlier spec go.
      const cleanup = planCleanup(clusters, { mirror: ctx.id });
      return Promise.resolve({ writes: false, name, conns, deletes: cleanup.deletes });
    }
    const mirror = planMirror({
      mirror: ctx.mirror,
      source: source.observation,
      sourceError: source.refusal,
      clusters,
      hubSecret: this.opts.hubSecret,
      originCluster: this.opts.originCluster,
      signer: this.opts.signer,
      tenancy: this.opts.tenancy,
      now: ctx.now,
    });
    return Promise.resolve({
      writes: mirror.writes.length > 0,
      name,
      conns,
      mirror,
      deletes: mirror.deletes,
    });
  }

  apply(ctx: MirrorContext, p: ClustersPlan): Promise<DestinationReport> {
    const writes = new Map((p.mirror?.writes ?? []).map((w) => [w.cluster, w]));
    const deletes = new Set(p.deletes);
    for (const conn of p.conns) {
      const w = writes.get(conn.name);
      conn.request(
        p.name,
        ctx.key,
        w
          ? {
              op: 'apply',
              ...(w.payload ? { payload: w.payload } : {}),
              ...(w.delivery ? { delivery: w.delivery } : {}),
            }
          : deletes.has(conn.name)
            ? { op: 'delete' }
            : undefined,
      );
    }
    if (writes.size > 0 || deletes.size > 0) {
      this.log.debug(
        { key: ctx.key, writes: [...writes.keys()], deletes: p.deletes },
        'deliveries requested',
      );
    }
    if (!p.mirror) return Promise.resolve({});
    return Promise.resolve({
      mirrorStatus: p.mirror.status,
      events: p.mirror.events,
      invalid: p.mirror.invalid !== undefined,
    });
  }

  cleanUp(ctx: CleanupContext): Promise<CleanupReport> {
    const name = deliveryName(ctx.id, this.opts.originCluster);
    const conns = [...this.connections.values()];
    if (ctx.mirror && !ctx.held) {
      // Never delivered (or already cleaned up): nothing of ours to remove.
      for (const conn of conns) conn.request(name, ctx.key, undefined);
      return Promise.resolve({});
    }
    const plan = planCleanup(
      conns.map((c) => observe(c, name)),
      {
        deletingSince: ctx.deletingSince,
        now: ctx.now,
        graceMs: ctx.graceMs,
        mirror: ctx.id,
      },
    );
    const deletes = new Set(plan.deletes);
    for (const conn of conns) {
      conn.request(name, ctx.key, deletes.has(conn.name) ? { op: 'delete' } : undefined);
    }
    if (!ctx.mirror) {
      if (plan.deletes.length > 0) {
        this.log.info({ key: ctx.key, clusters: plan.deletes }, 'removing orphaned deliveries');
      }
      return Promise.resolve({});
    }
    const next = planDeletionStatus(ctx.mirror.status ?? {}, plan, name, ctx.now);
    if (!plan.done) {
      this.log.debug(
        { key: ctx.key, deleting: plan.deletes, waitingFor: plan.waitingFor },
        'cleaning up',
      );
      // Progress arrives as watch events; the requeue is the safety net, and the grace deadline.
      const untilDeadline = plan.deadline
        ? plan.deadline.getTime() - ctx.now.getTime() + 100
        : 30_000;
      return Promise.resolve({
        mirrorStatus: next.status,
        events: next.events,
        waitMs: Math.max(100, Math.min(30_000, untilDeadline)),
      });
    }
    for (const a of plan.abandoned) {
      this.opts.onCleanupAbandoned?.(a.cluster, name, ctx.key, a.reason);
    }
    if (plan.abandoned.length > 0) {
      this.log.warn(
        { key: ctx.key, clusters: plan.abandoned.map((a) => a.cluster) },
        'cleanup left pending in unreachable clusters',
      );
    }
    return Promise.resolve({ mirrorStatus: next.status, events: next.events });
  }

  // ---- connections ----------------------------------------------------------------------------

  private syncConnections(): void {
    if (this.stopped) return;
    const targets = this.opts.registry.list();
    const names = new Set(targets.map((t) => t.name));
    for (const [name, conn] of this.connections) {
      if (!names.has(name)) {
        this.connections.delete(name);
        void conn.stop();
      }
    }
    for (const target of targets) {
      const conn = this.connections.get(target.name);
      if (conn?.target === target) continue;
      if (conn && sameAccess(conn.target, target)) {
        conn.retarget(target); // labels changed: the caches and writers stay
        continue;
      }
      if (conn) void conn.stop();
      this.connections.set(target.name, this.connect(target));
    }
    this.updateGauge();
    this.changed();
  }

  private connect(target: ClusterTarget): ClusterConnection {
    const o = this.opts;
    const conn = new ClusterConnection({
      target,
      originCluster: o.originCluster,
      logger: childLogger(o.logger, { controller: 'delivery', cluster: target.name }),
      metrics: o.metrics,
      ...(o.deliveryConcurrency ? { concurrency: o.deliveryConcurrency } : {}),
      ...(o.unreachableAfterMs !== undefined ? { unreachableAfterMs: o.unreachableAfterMs } : {}),
      ...(o.requestTimeoutMs !== undefined ? { requestTimeoutMs: o.requestTimeoutMs } : {}),
      watchProgressDeadlineMs: o.watchProgressDeadlineMs,
      clock: o.clock,
      onMirror: (key) => {
        o.onObserved?.();
        o.enqueue(key);
      },
      onHealth: () => {
        o.onObserved?.();
        this.updateGauge();
        this.changed();
      },
    });
    if (this.resyncMs !== undefined) conn.setResyncPeriod(this.resyncMs);
    conn.start();
    return conn;
  }

  /** Every mirror is looked at again, and so are deliveries whose mirror is gone. */
  private changed(): void {
    this.opts.enqueueAll();
    for (const k of this.mirrorKeys()) this.opts.enqueue(k);
  }

  private updateGauge(): void {
    const counts = { ready: 0, connecting: 0, unreachable: 0 };
    for (const c of this.connections.values()) {
      const h = c.health();
      if (h.error !== undefined) counts.unreachable++;
      else if (h.synced) counts.ready++;
      else counts.connecting++;
    }
    for (const [state, n] of Object.entries(counts)) this.gauge.set({ state }, n);
  }
}

function observe(conn: ClusterConnection, name: string): ClusterObservation {
  const t = conn.target;
  const h = conn.health();
  return {
    name: t.name,
    agentNamespace: t.agentNamespace,
    labels: t.labels,
    local: t.local,
    synced: h.synced,
    error: h.error,
    ...conn.observe(name),
  };
}

/** Same cluster reached the same way: only metadata (labels) differs. */
function sameAccess(a: ClusterTarget, b: ClusterTarget): boolean {
  return (
    a.name === b.name &&
    a.agentNamespace === b.agentNamespace &&
    a.local === b.local &&
    a.type === b.type &&
    a.kubeConfig === b.kubeConfig
  );
}
