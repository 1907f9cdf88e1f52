// The namespaces of the selected clusters as a mirror's destination: per cluster, one payload
// Secret + one MirrorDelivery in the agent namespace (plan.ts decides, with no I/O), written by
// that cluster's connection (connection.ts) without ever waiting on the cluster; the agent there
// makes the copies and reports back in the delivery's status.
//
// Several hub replicas (hub/src/shards/ownership.ts): connections (watches and writes) only to
// the followers this replica owns, and to the hub's own cluster only while it leads. Every
// other cluster is planned from its owner's report (plan.ts RemoteObservation). A replica that
// does not lead reports what it holds in its followers (DeliveryReportStore) and writes a
// delivery only once the mirror holds the hub's finalizer (the leader sets it before anything
// is written anywhere, so a deletion always cleans up).
import { deliveryName } from '@mirrorhub/shared/mirror/index';
import type { Signer } from '@mirrorhub/shared/mirror/signing';
import {
  childLogger,
  type Clock,
  type ControllerMetrics,
  type Gauge,
  type Logger,
} from '@mirrorhub/shared/kit/runtime/index';
import type { DeliveryReport, MirrorDelivery } from '@mirrorhub/shared/api/index';
import { HUB_FINALIZER } from '../../../names.js';
import type { DeliveryReportStore } from '../../../clusters/reports.js';
import {
  ALWAYS_LEADING,
  OWN_EVERYTHING,
  type Ownership,
  type Role,
} from '../../../shards/ownership.js';
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
  cleanupReportOf,
  deliveryReportOf,
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
  /**
   * A delivery of this mirror changed: look at it again, after `afterMs` when given (the
   * earliest pending time wins, so the events of that window make one plan).
   */
  enqueue(mirrorKey: string, afterMs?: number): void;
  /** Clusters came, went or changed health: every mirror is looked at again. */
  enqueueAll(afterMs?: number): void;
  onCleanupAbandoned?(cluster: string, name: string, mirrorKey: string, reason: string): void;
  /** A delivery changed in the caches (the dashboard's live feed). */
  onObserved?(): void;
  /** Which followers this replica writes to (default: every one). */
  ownership?: Ownership | undefined;
  /** Whether this replica leads (default: always): the hub's own cluster is the leader's. */
  role?: Role | undefined;
  /** Where a replica that does not lead reports its deliveries (default: nowhere). */
  reports?: DeliveryReportStore | undefined;
}

export interface ClustersPlan extends DestinationPlan {
  name: string;
  conns: ClusterConnection[];
  /** What was observed per cluster (this replica's report is made from it). */
  observed: ClusterObservation[];
  /** The copies, when the spec names these clusters' namespaces (else only `deletes`). */
  mirror?: MirrorPlan;
  deletes: readonly string[];
}

export class ClusterDestinations implements DestinationKind<ClustersPlan> {
  private readonly log: Logger;
  private readonly connections = new Map<string, ClusterConnection>();
  /** Connections being stopped: an ownership listener waits for their writes to end. */
  private readonly closing = new Map<string, Promise<void>>();
  private readonly gauge: Gauge<'state'>;
  private readonly unsubscribe: (() => void)[] = [];
  private resyncMs: number | undefined;
  private stopped = false;
  private readonly ownership: Ownership;
  private readonly role: Role;

  constructor(private readonly opts: ClusterDestinationsOptions) {
    this.log = childLogger(opts.logger, { controller: 'mirror' });
    this.ownership = opts.ownership ?? OWN_EVERYTHING;
    this.role = opts.role ?? ALWAYS_LEADING;
    this.gauge = opts.metrics.gauge('clusters', 'Clusters the hub delivers to, by state.', [
      'state',
    ]);
  }

  /** Connects to every registered cluster; resolves once the local cluster's caches are synced. */
  async start(): Promise<void> {
    this.unsubscribe.push(
      this.opts.registry.onChange((c) => {
        if (c.type === 'updated' && reportOnly(c.previous, c.target)) {
          // Only the owner's report changed: the mirrors it names are looked at again.
          const after = this.replanDelayMs();
          for (const k of reportedMirrors(c.previous, c.target)) this.opts.enqueue(k, after);
          return;
        }
        this.syncConnections();
      }),
      this.ownership.onChange((name, owned) => this.ownershipChanged(name, owned)),
      this.role.onChange((leading) => {
        // A leader writes the mirrors' status itself and reports nothing.
        if (leading) this.opts.reports?.clear();
        this.syncConnections();
      }),
    );
    this.syncConnections();
    const local = [...this.connections.values()].find((c) => c.target.local);
    if (local) await local.waitSynced();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const u of this.unsubscribe.splice(0)) u();
    await Promise.all([...this.connections.values()].map((c) => c.stop()));
    this.connections.clear();
    await Promise.all(this.closing.values());
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
    const clusters = this.observeAll(name);
    if (ctx.mirror.spec.destination.vault !== undefined) {
      // Written to Vault instead: deliveries from an earlier spec go.
      const cleanup = planCleanup(clusters, { mirror: ctx.id });
      return Promise.resolve({
        writes: false,
        name,
        conns,
        observed: clusters,
        deletes: cleanup.deletes,
      });
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
      writes: mirror.writes.length > 0 || mirror.remoteWrites === true,
      name,
      conns,
      observed: clusters,
      mirror,
      deletes: mirror.deletes,
    });
  }

  apply(ctx: MirrorContext, p: ClustersPlan): Promise<DestinationReport> {
    // A replica that does not lead writes only once the leader made the mirror hold the
    // finalizer (it is set before anything is written anywhere); deletes need no finalizer.
    const mayWrite =
      this.role.leading() || (ctx.mirror.metadata.finalizers?.includes(HUB_FINALIZER) ?? false);
    const writes = new Map((mayWrite ? (p.mirror?.writes ?? []) : []).map((w) => [w.cluster, w]));
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
    this.report(p.name, p.observed, (obs) =>
      p.mirror ? deliveryReportOf(ctx.mirror, p.mirror, obs) : cleanupReportOf(ctx.id, p.name, obs),
    );
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
    const observed = this.observeAll(name);
    if (ctx.mirror && !ctx.held) {
      // Never delivered (or already cleaned up): nothing of ours to remove.
      for (const conn of conns) conn.request(name, ctx.key, undefined);
      this.report(name, observed, (obs) => cleanupReportOf(ctx.id, name, obs));
      return Promise.resolve({});
    }
    const plan = planCleanup(observed, {
      deletingSince: ctx.deletingSince,
      now: ctx.now,
      graceMs: ctx.graceMs,
      mirror: ctx.id,
    });
    const deletes = new Set(plan.deletes);
    for (const conn of conns) {
      conn.request(name, ctx.key, deletes.has(conn.name) ? { op: 'delete' } : undefined);
    }
    this.report(name, observed, (obs) => cleanupReportOf(ctx.id, name, obs));
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

  /**
   * Every registered cluster as this replica sees it for delivery `name`: through its
   * connection, or, when another replica writes there, from its owner's report.
   */
  private observeAll(name: string): ClusterObservation[] {
    return this.opts.registry.list().map((t) => {
      const conn = this.connections.get(t.name);
      if (conn) return observe(conn, name);
      const report = t.remote?.report;
      return {
        name: t.name,
        agentNamespace: t.agentNamespace,
        labels: t.labels,
        local: t.local,
        synced: true,
        remote: {
          owner: t.remote?.owner ?? this.ownership.ownerOf(t.name),
          report: report?.items?.find((i) => i.delivery === name),
        },
      };
    });
  }

  /**
   * A replica that does not lead reports, per follower it writes to, what it holds there of
   * the mirror (`of` undefined: nothing). The leader reports nothing: it writes the mirrors'
   * status itself, so one replica adds no write.
   */
  private report(
    name: string,
    observed: readonly ClusterObservation[],
    of: (obs: ClusterObservation) => DeliveryReport | undefined,
  ): void {
    const store = this.opts.reports;
    if (!store || this.role.leading()) return;
    for (const obs of observed) {
      if (obs.remote || obs.local) continue;
      const r = of(obs);
      if (r) store.set(obs.name, r);
      else store.remove(obs.name, name);
    }
  }

  /** This replica connects to `target`: a follower it owns, or the hub's own while leading. */
  private connects(target: ClusterTarget): boolean {
    if (target.remote) return false;
    return target.local ? this.role.leading() : this.ownership.owns(target.name);
  }

  /**
   * `name` changed hands. Lost: its connection stops, and the promise resolves only once its
   * in-flight writes ended (the claim is given up after that). Gained: it is connected.
   */
  private async ownershipChanged(name: string, owned: boolean): Promise<void> {
    if (!owned) {
      this.opts.reports?.clear(name);
      const conn = this.connections.get(name);
      if (conn && !conn.target.local) {
        this.connections.delete(name);
        this.close(conn);
        this.updateGauge();
        this.changed();
      }
      // Stopped here or by a registry change a moment ago: either way, its writes end first.
      await this.closing.get(name);
      return;
    }
    this.syncConnections();
  }

  private syncConnections(): void {
    if (this.stopped) return;
    const targets = this.opts.registry.list().filter((t) => this.connects(t));
    const names = new Set(targets.map((t) => t.name));
    for (const [name, conn] of this.connections) {
      if (!names.has(name)) {
        this.connections.delete(name);
        this.close(conn);
      }
    }
    for (const target of targets) {
      const conn = this.connections.get(target.name);
      if (conn?.target === target) continue;
      if (conn && sameAccess(conn.target, target)) {
        conn.retarget(target); // labels changed: the caches and writers stay
        continue;
      }
      if (conn) this.close(conn);
      this.connections.set(target.name, this.connect(target));
    }
    this.updateGauge();
    this.changed();
  }

  /** Stop `conn`, remembering the stop until it is done (see ownershipChanged). */
  private close(conn: ClusterConnection): void {
    const name = conn.name;
    const before = this.closing.get(name) ?? Promise.resolve();
    const done: Promise<void> = Promise.all([before, conn.stop().catch(() => undefined)]).then(
      () => {
        if (this.closing.get(name) === done) this.closing.delete(name);
      },
    );
    this.closing.set(name, done);
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
        o.enqueue(key, this.replanDelayMs());
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
    const after = this.replanDelayMs();
    this.opts.enqueueAll(after);
    for (const k of this.mirrorKeys()) this.opts.enqueue(k, after);
  }

  /** How long the events of the clusters wait to be planned together (replanDelayMs). */
  private replanDelayMs(): number {
    return replanDelayMs(this.opts.registry.size);
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

/** Clusters per 100 ms that their events wait to be planned together. */
export const CLUSTERS_PER_REPLAN_STEP = 20;
/** The longest an event of the clusters waits to be planned. */
export const MAX_REPLAN_DELAY_MS = 1_000;

/**
 * How long a change seen in the clusters (an agent's report, a write done, a cluster's health)
 * waits before its mirror is planned again, so that the events of that window make one plan: 100
 * ms up to 20 clusters, 100 ms more per 20, at most 1 s. A plan costs in proportion to the
 * clusters (each delivery is signed), and every cluster reports each change, so planning on
 * every event cost the hub in proportion to the square of the fleet (docs/BENCHMARKS.md,
 * "Fleet"). A source or spec change is planned at once: this delays only the status that follows.
 */
export function replanDelayMs(clusters: number): number {
  return Math.min(
    MAX_REPLAN_DELAY_MS,
    100 * Math.max(1, Math.ceil(clusters / CLUSTERS_PER_REPLAN_STEP)),
  );
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

/** Only a remote target's report changed (same owner, labels and agent namespace). */
function reportOnly(a: ClusterTarget, b: ClusterTarget): boolean {
  return (
    a.remote !== undefined &&
    b.remote !== undefined &&
    a.remote.owner === b.remote.owner &&
    a.agentNamespace === b.agentNamespace &&
    JSON.stringify(a.labels) === JSON.stringify(b.labels)
  );
}

/** Keys of the mirrors whose report items differ between two reports of one cluster. */
function reportedMirrors(a: ClusterTarget, b: ClusterTarget): string[] {
  const before = new Map((a.remote?.report?.items ?? []).map((i) => [i.delivery, i]));
  const keys = new Set<string>();
  for (const i of b.remote?.report?.items ?? []) {
    const old = before.get(i.delivery);
    before.delete(i.delivery);
    if (!old || JSON.stringify(old) !== JSON.stringify(i)) keys.add(i.mirror);
  }
  for (const i of before.values()) keys.add(i.mirror);
  return [...keys];
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
