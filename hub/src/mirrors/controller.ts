// The mirror controller: one source, its destinations. A reconcile gathers the mirror's source
// from the kind that follows it, asks every destination for its plan, applies the plans, and
// writes the mirror's status once (kinds.ts says what a kind is; registry.ts lists them). It
// talks only to the hub's own cluster itself (finalizer, status, Events); each kind does its own
// I/O, and deliveries to clusters are written asynchronously, so no reconcile waits on a
// follower cluster.
//
// Watches: SecretMirrors and ClusterSecretMirrors (all namespaces); each kind watches or polls
// what it needs and enqueues the mirror's key (`SecretMirror/<ns>/<name>`) when it changes; the
// reconcile re-reads everything from the caches.
//
// Several hub replicas (hub/src/shards/ownership.ts): every replica runs this controller with
// warm caches and plans every mirror. Only the leader writes a mirror's status, finalizer and
// Events, Vault destinations and dynamic leases. A replica that does not lead applies the plans
// for the followers it owns (once the mirror holds the finalizer) and reports what it holds
// there for the leader (clusters/reports.ts). Kubernetes sources come from each replica's own
// caches; Vault KV sources are polled by each replica (N replicas read Vault N times: the
// price of a follower's owner not waiting on the leader for content).
import {
  CLUSTER_SECRET_MIRROR,
  DEFAULT_POLL_PERIOD_MS,
  GROUP,
  mirrorPolicies,
  resolveSource,
  SECRET_MIRROR,
  VERSION,
  type AnyMirror,
  type ClusterSecretMirror,
  type MirrorDelivery,
  type MirrorPhase,
  type MirrorStatus,
  type SecretMirror,
  objectPath,
} from '@mirrorhub/shared/api/index';
import type { MirrorIdentity } from '@mirrorhub/shared/mirror/index';
import { equalIgnoringTime } from '@mirrorhub/shared/kit/controller/patch';
import {
  childLogger,
  realClock,
  type Clock,
  type ControllerMetrics,
  type Gauge,
  type Logger,
} from '@mirrorhub/shared/kit/runtime/index';
import { createWatcher, watchTuning, type Watcher } from '@mirrorhub/shared/kit/k8s/watcher';
import type { ProcessResult } from '@mirrorhub/shared/kit/k8s/workqueue';
import {
  Reconciler,
  ShortestPeriod,
  StatusWriter,
  type ControllerEvent,
} from '@mirrorhub/shared/kit/controller/index';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import type { Signer } from '@mirrorhub/shared/mirror/signing';
import { FIELD_MANAGER, USER_AGENT } from '@mirrorhub/shared/api/contract';
import type { ClusterRegistry } from '../clusters/registry.js';
import { HUB_FINALIZER, mirrorKey, parseMirrorKey } from '../names.js';
import type { DeliveryReportStore } from '../clusters/reports.js';
import { ALWAYS_LEADING, OWN_EVERYTHING, type Ownership, type Role } from '../shards/ownership.js';
import type { VaultConnections } from '../vault/connections.js';
import type { Tenancy } from './destinations/clusters/plan.js';
import type {
  CleanupContext,
  CleanupReport,
  DestinationKind,
  GatheredSource,
  MirrorContext,
  Report,
  SourceKind,
} from './kinds.js';
import { createKinds, type Kinds, type VaultOptions } from './registry.js';
import { identityOf, statusCoalesceMs, statusWriteDelay, withMirrorProgress } from './status.js';

const CONTROLLER = 'mirror';

export interface MirrorControllerOptions {
  /** The hub's own cluster: mirrors, sources, status, Events. */
  kubeConfig: KubeAccess;
  /** See HubConfig.watchProgressDeadlineMs (mirror, source, Vault connection and cluster watches). */
  watchProgressDeadlineMs?: number | undefined;
  registry: ClusterRegistry;
  /** The hub's cluster name (MirrorDelivery.spec.originCluster, delivery names). */
  originCluster: string;
  /** Key material for content hashes (Secret mirrorhub-hash-key). */
  hubSecret: Uint8Array;
  /** Signs every delivery and payload (the hub's Ed25519 key). */
  signer: Signer;
  /** What SecretMirrors may do (namespaced mirrors belong to tenants). */
  tenancy?: Tenancy | undefined;
  /** Reporting instance of Events. */
  identity: string;
  logger: Logger;
  metrics: ControllerMetrics;
  /** Mirrors reconciled at once (default 4). */
  concurrency?: number;
  /** Writes in flight at once per cluster (default 4). */
  deliveryConcurrency?: number;
  /** A cluster failing for this long is reported unreachable (default 30 s). */
  unreachableAfterMs?: number;
  /** Deadline of every request to a delivery cluster (default 10 s). */
  requestTimeoutMs?: number;
  /**
   * A mirror being deleted waits this long for clusters it cannot clean up (unreachable, or
   * their deletes failing), then its finalizer is released anyway (default 2 minutes). What
   * those clusters hold is deleted when they are reachable again.
   */
  cleanupGraceMs?: number;
  /**
   * Progress in a mirror's status (counts, per-cluster sync times) is written at most this often;
   * phase changes and Events at once (default 1 s, one more per 20 selected clusters; see
   * statusWriteDelay and statusCoalesceMs).
   */
  statusCoalesceMs?: number;
  /** The Vault connections (a controller of its own, started beside this one). */
  vaultConnections: VaultConnections;
  /** Vault sources: retries, and where dynamic sources' leases are kept. */
  vault?: VaultOptions | undefined;
  /** A mirror's finalizer was released while `cluster` may still hold delivery `name`. */
  onCleanupAbandoned?(cluster: string, name: string, mirrorKey: string, reason: string): void;
  /** A mirror or a delivery changed in the caches (the dashboard's live feed). */
  onObserved?(): void;
  /** An Event was recorded about the mirror with this key (the dashboard's recent Events). */
  onEvent?(mirrorKey: string, event: ControllerEvent): void;
  clock?: Clock;
  /** Which followers this replica writes deliveries to (default: every one). */
  ownership?: Ownership | undefined;
  /**
   * Whether this replica leads (default: always). Only the leader writes mirrors' status,
   * finalizers and Events, the hub's own cluster's deliveries, Vault destinations and leases.
   */
  role?: Role | undefined;
  /**
   * Where this replica, when it does not lead, reports the deliveries in the followers it owns
   * (the same store goes to the MirrorCluster controller, which writes it to their status).
   * Default: none (one replica).
   */
  reports?: DeliveryReportStore | undefined;
}

export const DEFAULT_CLEANUP_GRACE_MS = 2 * 60_000;
export const DEFAULT_STATUS_COALESCE_MS = 1000;

type MirrorObject = SecretMirror | ClusterSecretMirror;

export class MirrorController {
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly rest: RestClient;
  private readonly reconciler: Reconciler;
  /** Status and finalizer writes, remembering each until its watch shows it. */
  private readonly writer: StatusWriter<AnyMirror>;
  private readonly kinds: Kinds;
  private readonly sources: readonly SourceKind[];
  private readonly destinations: readonly DestinationKind[];
  private readonly secretMirrors: Watcher<SecretMirror>;
  private readonly clusterMirrors: Watcher<ClusterSecretMirror>;
  /**
   * The shortest pollPeriodSeconds of the mirrors: how often the mirror caches and every kind's
   * caches take a fresh look (each source's cache follows its own mirrors).
   */
  private readonly freshness: ShortestPeriod;
  private readonly phases = new Map<string, MirrorPhase>();
  private readonly phaseGauge: Gauge<'phase'>;
  private stopped = false;
  private stopping: Promise<void> | undefined;
  private started = false;
  private readonly role: Role;
  private unsubscribeRole: (() => void) | undefined;

  constructor(private readonly opts: MirrorControllerOptions) {
    this.log = childLogger(opts.logger, { controller: CONTROLLER });
    this.clock = opts.clock ?? realClock;
    this.role = opts.role ?? ALWAYS_LEADING;
    const kc = opts.kubeConfig;
    this.rest = new RestClient(kc, { userAgent: USER_AGENT.hub });
    const m = opts.metrics;
    this.phaseGauge = m.gauge('mirrors', 'Mirrors by phase (as last reconciled).', ['phase']);
    this.writer = new StatusWriter<AnyMirror>({
      rest: this.rest,
      pathOf: mirrorPath,
      keyOf: (mirror) => mirrorKey(identityOf(mirror)),
      fieldManager: FIELD_MANAGER.hub,
      reportingInstance: opts.identity,
      metrics: m,
      logger: this.log,
      summary: (status) => ({ phase: status?.phase }),
      detail: (status) => ({ message: status?.message }),
      clock: this.clock,
      onEvent: (mirror, e) => opts.onEvent?.(mirrorKey(identityOf(mirror)), e),
    });
    this.reconciler = new Reconciler({
      name: CONTROLLER,
      concurrency: opts.concurrency,
      reconcile: (key) => this.reconcile(key),
      logger: this.log,
      metrics: m,
      shutdownTimeoutMs: 10_000,
      // A transient failure a kind reports (Vault down) is retried from here: 1 s doubling,
      // never later than the mirror's poll period (ProcessResult.retryWithinMs).
      backoff: { initialMs: opts.vault?.retryInitialMs ?? 1000 },
      clock: this.clock,
    });
    const enqueue = (key: string, afterMs?: number) =>
      afterMs ? this.reconciler.addAfter(key, afterMs) : this.reconciler.add(key);
    this.kinds = createKinds({
      kubeConfig: kc,
      rest: this.rest,
      watchProgressDeadlineMs: opts.watchProgressDeadlineMs,
      vaultConnections: opts.vaultConnections,
      logger: this.log,
      rootLogger: opts.logger,
      metrics: m,
      clock: this.clock,
      vault: opts.vault,
      clusters: {
        registry: opts.registry,
        originCluster: opts.originCluster,
        hubSecret: opts.hubSecret,
        signer: opts.signer,
        tenancy: opts.tenancy,
        deliveryConcurrency: opts.deliveryConcurrency,
        unreachableAfterMs: opts.unreachableAfterMs,
        requestTimeoutMs: opts.requestTimeoutMs,
        onCleanupAbandoned: opts.onCleanupAbandoned,
        onObserved: opts.onObserved,
        ownership: opts.ownership ?? OWN_EVERYTHING,
        role: this.role,
        reports: opts.reports,
      },
      enqueue,
      enqueueAll: (afterMs) => {
        for (const mirror of this.mirrors()) enqueue(mirrorKey(identityOf(mirror)), afterMs);
      },
      mirrors: () => this.mirrors(),
      keyOf: (mirror) => mirrorKey(identityOf(mirror)),
    });
    this.sources = this.kinds.sources;
    this.destinations = this.kinds.destinations;
    const fresh = {
      resyncPeriodMs: DEFAULT_POLL_PERIOD_MS,
      ...watchTuning(opts.watchProgressDeadlineMs),
    };
    this.secretMirrors = createWatcher<SecretMirror>(
      kc,
      { group: GROUP, version: VERSION, plural: SECRET_MIRROR.plural },
      fresh,
    );
    this.clusterMirrors = createWatcher<ClusterSecretMirror>(
      kc,
      { group: GROUP, version: VERSION, plural: CLUSTER_SECRET_MIRROR.plural },
      fresh,
    );
    this.freshness = new ShortestPeriod(DEFAULT_POLL_PERIOD_MS, (ms) => {
      this.secretMirrors.setResyncPeriod(ms);
      this.clusterMirrors.setResyncPeriod(ms);
      for (const kind of [...this.sources, ...this.destinations]) kind.setResyncPeriod?.(ms);
    });
  }

  /** Start watching; resolves once the mirror caches and the local cluster's caches are synced. */
  async start(): Promise<void> {
    if (this.started || this.stopped) return;
    this.started = true;
    for (const w of [this.secretMirrors, this.clusterMirrors] as Watcher<MirrorObject>[]) {
      this.reconciler.watch(w, {
        onAdd: (obj) => this.mirrorChanged(obj),
        onUpdate: (obj) => this.mirrorChanged(obj),
        onDelete: (obj) => this.mirrorChanged(obj, true),
        onListed: () => this.writer.relisted(),
      });
    }
    this.kinds.clusters.setResyncPeriod(this.freshness.ms);
    this.unsubscribeRole = this.role.onChange((leading) => {
      // A new leader writes every mirror's status from its warm caches.
      if (leading) for (const m of this.mirrors()) this.reconciler.add(mirrorKey(identityOf(m)));
    });
    await Promise.all([...this.sources, ...this.destinations].map((k) => k.start?.()));
    await this.reconciler.synced();
    if (this.stopped) return;
    this.reconciler.start();
    this.log.info(
      {
        secretMirrors: this.secretMirrors.size,
        clusterSecretMirrors: this.clusterMirrors.size,
        clusters: this.kinds.clusters.size,
      },
      'mirror controller started',
    );
  }

  /** Idempotent: every call resolves once the one stop is done. */
  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    this.stopped = true;
    this.unsubscribeRole?.();
    await this.reconciler.stop(); // and the mirror watches
    await Promise.all([...this.sources, ...this.destinations].map((k) => k.stop()));
    this.rest.close();
  }

  /** Every mirror in the caches (read-only: the dashboard's views). */
  mirrors(): AnyMirror[] {
    return [...this.secretMirrors.list(), ...this.clusterMirrors.list()];
  }

  /** Per cluster: this hub's deliveries there, as the cluster's cache holds them (read-only). */
  deliveries(): Map<string, MirrorDelivery[]> {
    return this.kinds.clusters.deliveries();
  }

  /** Mirror caches synced (readiness). */
  hasSynced(): boolean {
    return this.secretMirrors.hasSynced() && this.clusterMirrors.hasSynced();
  }

  /**
   * Whether `cluster` holds a delivery or payload named `name` (undefined: unknown, the cluster
   * is not registered or its caches are not synced).
   */
  clusterHolds(cluster: string, name: string): boolean | undefined {
    return this.kinds.clusters.holds(cluster, name);
  }

  /** A Vault connection changed: its pollers read afresh; the mirrors using it are reconciled. */
  vaultConnectionChanged(connKey: string): void {
    if (!this.stopped) this.kinds.vaultConnectionChanged(connKey);
  }

  /** Wait until nothing is queued or in flight (tests). */
  idle(): Promise<void> {
    return this.reconciler.idle();
  }

  private mirrorChanged(obj: MirrorObject, deleted = false): void {
    this.opts.onObserved?.();
    const key = mirrorKey(identityOf(obj));
    if (deleted) {
      this.writer.deleted(key);
    } else if (this.writer.observed(obj)) {
      return; // the echo of our own write: nothing new to look at
    }
    this.reconciler.add(key);
  }

  private setPhase(key: string, phase: MirrorPhase | undefined): void {
    if (phase === undefined) this.phases.delete(key);
    else this.phases.set(key, phase);
    const counts: Record<MirrorPhase, number> = { Pending: 0, Active: 0, Degraded: 0, Error: 0 };
    for (const p of this.phases.values()) counts[p]++;
    for (const [phase, n] of Object.entries(counts)) this.phaseGauge.set({ phase }, n);
  }

  // ---- reconcile --------------------------------------------------------------------------------

  private current(id: MirrorIdentity, key: string): AnyMirror | undefined {
    const cached =
      id.kind === 'SecretMirror'
        ? this.secretMirrors.get(id.name, id.namespace)
        : this.clusterMirrors.get(id.name);
    return this.writer.current(key, cached);
  }

  /** Gather the source, plan every destination, apply, write the status once. */
  private async reconcile(key: string): Promise<ProcessResult | void> {
    const id = parseMirrorKey(key);
    if (!id) return;
    const mirror = this.current(id, key);
    const now = new Date(this.clock.now());
    if (!mirror || mirror.metadata.deletionTimestamp) {
      return this.cleanUp({
        key,
        id,
        mirror,
        held: mirror?.metadata.finalizers?.includes(HUB_FINALIZER) ?? false,
        deletingSince: mirror?.metadata.deletionTimestamp
          ? new Date(mirror.metadata.deletionTimestamp)
          : undefined,
        graceMs: this.opts.cleanupGraceMs ?? DEFAULT_CLEANUP_GRACE_MS,
        now,
      });
    }
    const ctx: MirrorContext = { key, id, mirror, now };
    const pollMs = mirrorPolicies(mirror.spec).pollPeriodSeconds * 1000;
    this.freshness.set(key, pollMs);
    const gathered = await this.gather(ctx);
    if (!gathered) return; // not observed yet: its watch or poll enqueues the mirror again
    if (!this.role.leading()) return this.follow(ctx, gathered, pollMs);
    const plans = await Promise.all(this.destinations.map((d) => d.plan(ctx, gathered.source)));
    let current = mirror;
    if (plans.some((p) => p.writes)) {
      const updated = await this.writer.setFinalizer(current, HUB_FINALIZER, true);
      if (!updated) return; // deleted meanwhile: its watch event enqueues it
      current = updated;
    }
    const applied = { ...ctx, mirror: current };
    const reports = await Promise.all(this.destinations.map((d, i) => d.apply(applied, plans[i]!)));
    const named = reports.find((r) => r.mirrorStatus !== undefined);
    const status = withMirrorProgress(named?.mirrorStatus ?? current.status ?? {}, {
      source: gathered.source.observation,
      generation: current.metadata.generation,
      now,
    });
    const events = [...reports, ...gathered.reports].flatMap((r) => r.events ?? []);
    const hold = statusWriteDelay({
      prev: current.status ?? {},
      next: status,
      events: events.length,
      lastWriteAt: this.writer.lastWriteAt(key),
      now: this.clock.now(),
      coalesceMs: statusCoalesceMs(
        status.clusters?.length ?? 0,
        this.opts.statusCoalesceMs ?? DEFAULT_STATUS_COALESCE_MS,
      ),
    });
    if (hold > 0 && !equalIgnoringTime(current.status ?? {}, status, [])) {
      return { requeueAfterMs: hold };
    }
    const all = [...gathered.reports, ...reports];
    // Gone meanwhile: its watch event enqueues it for clean-up.
    if (!(await this.writer.writeStatus(current, withReports(status, all), events))) return;
    this.setPhase(key, status.phase);
    if (all.some((r) => r.retry)) return { retryWithinMs: pollMs };
    if (named?.invalid) return; // only a spec change can help; it enqueues the mirror
    // Every kind enqueues the mirror when it sees a change; the requeue is the safety net.
    return { requeueAfterMs: pollMs };
  }

  /**
   * A replica that does not lead: apply the cluster destinations' plan (their connections are
   * the followers this replica owns; writes wait for the finalizer the leader sets), which
   * reports what it holds there. No status, finalizer, Event or Vault destination.
   */
  private async follow(
    ctx: MirrorContext,
    gathered: { source: GatheredSource; reports: Report[] },
    pollMs: number,
  ): Promise<ProcessResult | void> {
    const clusters = this.kinds.clusters;
    const plan = await clusters.plan(ctx, gathered.source);
    const report = await clusters.apply(ctx, plan);
    if (gathered.reports.some((r) => r.retry)) return { retryWithinMs: pollMs };
    if (report.invalid) return;
    return { requeueAfterMs: pollMs };
  }

  /**
   * The mirror's source, from the kind that follows it (every other kind lets go of it).
   * Undefined: not observed yet.
   */
  private async gather(
    ctx: MirrorContext,
  ): Promise<{ source: GatheredSource; reports: Report[] } | undefined> {
    const resolved = resolveSource(ctx.mirror);
    const source = resolved.ok ? resolved.source : undefined;
    const readings = await Promise.all(this.sources.map((s) => s.observe(ctx, source)));
    if (readings.some((r) => r.state === 'unknown')) return undefined;
    const reports = readings.flatMap((r) => (r.state !== 'unknown' && r.report ? [r.report] : []));
    const found = readings.find((r) => r.state === 'observed');
    return {
      source:
        found?.state === 'observed'
          ? { observation: found.observation, refusal: found.refusal }
          : { observation: { state: 'missing' } },
      reports,
    };
  }

  /** The mirror is gone or being deleted: every kind removes what it holds, then the finalizer. */
  private async cleanUp(ctx: CleanupContext): Promise<ProcessResult | void> {
    const { key, mirror } = ctx;
    this.freshness.set(key, undefined);
    this.setPhase(key, undefined);
    const leading = this.role.leading();
    // A replica that does not lead removes only what it wrote: the deliveries in its followers.
    const destinations = leading ? this.destinations : [this.kinds.clusters];
    const reports: CleanupReport[] = await Promise.all([
      ...destinations.map((d) => d.cleanUp(ctx)),
      ...this.sources.map((s) => s.release(ctx)),
    ]);
    if (!mirror || !ctx.held) return;
    if (!leading) {
      // The leader releases the finalizer once every report says nothing is left.
      const waits = reports.flatMap((r) => (r.waitMs !== undefined ? [r.waitMs] : []));
      return waits.length > 0 ? { requeueAfterMs: Math.min(...waits) } : undefined;
    }
    const named = reports.find((r) => r.mirrorStatus !== undefined);
    const status = withReports(named?.mirrorStatus ?? mirror.status ?? {}, reports);
    const current = await this.writer.writeStatus(
      mirror,
      status,
      reports.flatMap((r) => r.events ?? []),
    );
    if (!current) return; // gone: nothing holds it any more
    if (reports.some((r) => r.retry)) {
      return { retryWithinMs: mirrorPolicies(mirror.spec).pollPeriodSeconds * 1000 };
    }
    const waits = reports.flatMap((r) => (r.waitMs !== undefined ? [r.waitMs] : []));
    if (waits.length > 0) return { requeueAfterMs: Math.min(...waits) };
    await this.writer.setFinalizer(current, HUB_FINALIZER, false);
    this.log.info({ key }, 'everything the mirror wrote is removed; finalizer released');
  }
}

/** The named destination's status with what the other kinds add: their fields, then notes. */
function withReports(status: MirrorStatus, reports: readonly Report[]): MirrorStatus {
  let out = status;
  for (const r of reports) {
    if (r.status) out = { ...out, ...r.status };
    if (r.note) out = { ...out, message: `${out.message ?? ''}; ${r.note}` };
  }
  return out;
}

/** A mirror's API path (its status is under /status). */
function mirrorPath(mirror: AnyMirror): string {
  return objectPath(mirror, {
    namespaced: SECRET_MIRROR.plural,
    cluster: CLUSTER_SECRET_MIRROR.plural,
  });
}
