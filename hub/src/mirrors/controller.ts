// The mirror controller: gathers each mirror's input from caches, lets plan.ts decide, and
// applies the result. It talks only to the hub's own cluster itself (finalizer, status, Events);
// deliveries go through each cluster's ClusterConnection, which writes asynchronously, so no
// reconcile ever waits on a follower cluster.
//
// Watches: SecretMirrors and ClusterSecretMirrors (all namespaces), each mirror's source object
// only (SourceWatches), and per cluster the MirrorDeliveries + payload Secrets this hub wrote.
// Any of them enqueues the mirror's key (`SecretMirror/<ns>/<name>`); the reconcile re-reads
// everything from the caches.
import {
  CLUSTER_SECRET_MIRROR,
  DEFAULT_POLL_PERIOD_MS,
  GROUP,
  mirrorPolicies,
  resolveSource,
  resolveVaultDestination,
  SECRET_MIRROR,
  VERSION,
  type AnyMirror,
  type ClusterSecretMirror,
  type MirrorDelivery,
  type MirrorPhase,
  type SecretMirror,
  type VaultSourceRef,
  type VaultWritten,
} from '@mirrorhub/shared/api/index';
import { deliveryName, type MirrorIdentity } from '@mirrorhub/shared/mirror/index';
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
import { customObjectPath, RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import { ClusterConnection } from './destinations/clusters/connection.js';
import type { ClusterRegistry } from '../clusters/registry.js';
import type { ClusterTarget } from '../clusters/target.js';
import { HUB_FINALIZER, mirrorKey, parseMirrorKey } from '../names.js';
import {
  identityOf,
  planCleanup,
  planDeletionStatus,
  planMirror,
  statusCoalesceMs,
  statusWriteDelay,
  truncate,
  type ClusterObservation,
  type PlannedEvent,
  type SourceObservation,
  type Tenancy,
} from './destinations/clusters/plan.js';
import type { Signer } from '@mirrorhub/shared/mirror/signing';
import { SourceWatches } from './sources/kubernetes/watches.js';
import { VaultConnections, type ServiceAccountRef } from '../vault/connections.js';
import { VaultSources } from './sources/vault/poller.js';
import { VaultDestinations } from './destinations/vault/store.js';
import { DynamicSources } from './sources/vault-dynamic/leases.js';
import { LeaseStore } from './sources/vault-dynamic/store.js';
import { retryDelay } from '../vault/decide.js';
import {
  ownerMark,
  planVaultDestination,
  recordRef,
  REASON_VAULT_REMOVED,
  staleWrite,
  type VaultDestinationInput,
} from './destinations/vault/plan.js';
import { FIELD_MANAGER, USER_AGENT } from '@mirrorhub/shared/api/contract';

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
  /** Vault sources: the hub's own ServiceAccount, whether it may request tenants' tokens. */
  vault?:
    | {
        serviceAccount?: ServiceAccountRef | undefined;
        tenantServiceAccountTokens?: boolean | undefined;
        /** The namespaces of mirrorhub's own ServiceAccounts (VaultConnectionsOptions). */
        ownNamespaces?: readonly string[] | undefined;
        requestTimeoutMs?: number | undefined;
        /** First retry of a failed Vault poll (default 1 s). */
        retryInitialMs?: number | undefined;
        /** Where dynamic sources' leases are kept (Secret mirrorhub-leases): the hub's namespace. */
        leaseNamespace?: string | undefined;
      }
    | undefined;
  /** A mirror's finalizer was released while `cluster` may still hold delivery `name`. */
  onCleanupAbandoned?(cluster: string, name: string, mirrorKey: string, reason: string): void;
  /** A mirror or a delivery changed in the caches (the dashboard's live feed). */
  onObserved?(): void;
  /** An Event was recorded about the mirror with this key (the dashboard's recent Events). */
  onEvent?(mirrorKey: string, event: ControllerEvent): void;
  clock?: Clock;
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
  private readonly sources: SourceWatches;
  private readonly vaultConnections: VaultConnections;
  private readonly vaultSources: VaultSources;
  private readonly vaultDestinations: VaultDestinations;
  private readonly dynamicSources: DynamicSources;
  /** Consecutive transient failures of a mirror's Vault destination (retry backoff). */
  private readonly vaultFailures = new Map<string, number>();
  private readonly secretMirrors: Watcher<SecretMirror>;
  private readonly clusterMirrors: Watcher<ClusterSecretMirror>;
  private readonly connections = new Map<string, ClusterConnection>();
  /**
   * The shortest pollPeriodSeconds of the mirrors: how often the mirror caches and every
   * cluster's delivery caches take a fresh look (each source's cache follows its own mirrors).
   */
  private readonly freshness: ShortestPeriod;
  private readonly phases = new Map<string, MirrorPhase>();
  private readonly unsubscribe: (() => void)[] = [];
  private readonly phaseGauge: Gauge<'phase'>;
  private readonly clusterGauge: Gauge<'state'>;
  private readonly sourceGauge: Gauge;
  private stopped = false;
  private stopping: Promise<void> | undefined;
  private started = false;

  constructor(private readonly opts: MirrorControllerOptions) {
    this.log = childLogger(opts.logger, { controller: CONTROLLER });
    this.clock = opts.clock ?? realClock;
    const kc = opts.kubeConfig;
    this.rest = new RestClient(kc, { userAgent: USER_AGENT.hub });
    const m = opts.metrics;
    this.phaseGauge = m.gauge('mirrors', 'Mirrors by phase (as last reconciled).', ['phase']);
    this.clusterGauge = m.gauge('clusters', 'Clusters the hub delivers to, by state.', ['state']);
    this.sourceGauge = m.gauge('source_watches', 'Distinct mirror sources being watched.');
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
      clock: this.clock,
    });
    this.sources = new SourceWatches({
      kubeConfig: kc,
      watchProgressDeadlineMs: opts.watchProgressDeadlineMs,
      logger: this.log,
      metrics: m,
      onChange: (keys) => {
        for (const k of keys) this.reconciler.add(k);
      },
    });
    const vaultRequests = m.counter(
      'vault_requests_total',
      'Requests to Vault / OpenBao by operation (login, detect, metadata, read; inspect, write, ' +
        'remove for Vault destinations; issue, renew, revoke for dynamic sources) and outcome.',
      ['operation', 'outcome'],
    );
    this.vaultConnections = new VaultConnections({
      kubeConfig: kc,
      watchProgressDeadlineMs: opts.watchProgressDeadlineMs,
      serviceAccount: opts.vault?.serviceAccount,
      tenantServiceAccountTokens: opts.vault?.tenantServiceAccountTokens,
      ownNamespaces: opts.vault?.ownNamespaces,
      requestTimeoutMs: opts.vault?.requestTimeoutMs,
      identity: opts.identity,
      logger: opts.logger,
      metrics: m,
      requests: vaultRequests,
      clock: this.clock,
      onChange: (connKey) => this.vaultConnectionChanged(connKey),
    });
    this.vaultSources = new VaultSources({
      connections: this.vaultConnections,
      requests: vaultRequests,
      logger: this.log,
      retryInitialMs: opts.vault?.retryInitialMs,
      onChange: (keys) => {
        for (const k of keys) this.reconciler.add(k);
      },
    });
    this.dynamicSources = new DynamicSources({
      connections: this.vaultConnections,
      store: new LeaseStore(this.rest, opts.vault?.leaseNamespace ?? 'mirrorhub-system'),
      requests: vaultRequests,
      logger: this.log,
      clock: this.clock,
      retryInitialMs: opts.vault?.retryInitialMs,
      onChange: (k) => this.reconciler.add(k),
    });
    this.vaultDestinations = new VaultDestinations({
      connections: this.vaultConnections,
      requests: vaultRequests,
    });
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
      for (const conn of this.connections.values()) conn.setResyncPeriod(ms);
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
    this.unsubscribe.push(this.opts.registry.onChange(() => this.syncConnections()));
    this.syncConnections();
    await this.vaultConnections.start();
    await this.reconciler.synced();
    const local = [...this.connections.values()].find((c) => c.target.local);
    if (local) await local.waitSynced();
    if (this.stopped) return;
    this.reconciler.start();
    this.log.info(
      {
        secretMirrors: this.secretMirrors.size,
        clusterSecretMirrors: this.clusterMirrors.size,
        clusters: this.connections.size,
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
    for (const u of this.unsubscribe.splice(0)) u();
    await this.reconciler.stop(); // and the mirror watches
    await Promise.all([
      this.sources.stop(),
      this.vaultSources.stop(),
      this.dynamicSources.stop(),
      this.vaultConnections.stop(),
      ...[...this.connections.values()].map((c) => c.stop()),
    ]);
    this.connections.clear();
    this.rest.close();
  }

  /** Every mirror in the caches (read-only: the dashboard's views). */
  mirrors(): AnyMirror[] {
    return [...this.secretMirrors.list(), ...this.clusterMirrors.list()];
  }

  /** Per cluster: this hub's deliveries there, as the cluster's cache holds them (read-only). */
  deliveries(): Map<string, MirrorDelivery[]> {
    const out = new Map<string, MirrorDelivery[]>();
    for (const [name, conn] of this.connections) out.set(name, conn.deliveryList());
    return out;
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
    return this.connections.get(cluster)?.holds(name);
  }

  /** Wait until nothing is queued or in flight (tests). */
  idle(): Promise<void> {
    return this.reconciler.idle();
  }

  // ---- events -> keys ---------------------------------------------------------------------------

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

  /** A Vault connection changed: its pollers read afresh; mirrors using it are reconciled. */
  private vaultConnectionChanged(connKey: string): void {
    if (this.stopped) return;
    this.vaultSources.connectionChanged(connKey);
    for (const m of [...this.secretMirrors.list(), ...this.clusterMirrors.list()]) {
      if (m.spec.source.kind === 'Vault' || m.spec.destination.vault || m.status?.vault) {
        this.reconciler.add(mirrorKey(identityOf(m)));
      }
    }
  }

  private enqueueAll(): void {
    const add = (key: string) => this.reconciler.add(key);
    for (const m of this.secretMirrors.list()) add(mirrorKey(identityOf(m)));
    for (const m of this.clusterMirrors.list()) add(mirrorKey(identityOf(m)));
    // Deliveries whose mirror is gone: their reconcile deletes them.
    for (const c of this.connections.values()) for (const k of c.mirrorKeys()) add(k);
  }

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
    this.updateClusterGauge();
    this.enqueueAll();
  }

  private connect(target: ClusterTarget): ClusterConnection {
    const conn = new ClusterConnection({
      target,
      originCluster: this.opts.originCluster,
      logger: childLogger(this.opts.logger, { controller: 'delivery', cluster: target.name }),
      metrics: this.opts.metrics,
      ...(this.opts.deliveryConcurrency ? { concurrency: this.opts.deliveryConcurrency } : {}),
      ...(this.opts.unreachableAfterMs !== undefined
        ? { unreachableAfterMs: this.opts.unreachableAfterMs }
        : {}),
      ...(this.opts.requestTimeoutMs !== undefined
        ? { requestTimeoutMs: this.opts.requestTimeoutMs }
        : {}),
      watchProgressDeadlineMs: this.opts.watchProgressDeadlineMs,
      clock: this.clock,
      onMirror: (key) => {
        this.opts.onObserved?.();
        this.reconciler.add(key);
      },
      onHealth: () => {
        this.opts.onObserved?.();
        this.updateClusterGauge();
        this.enqueueAll();
      },
    });
    conn.setResyncPeriod(this.freshness.ms);
    conn.start();
    return conn;
  }

  private updateClusterGauge(): void {
    const counts = { ready: 0, connecting: 0, unreachable: 0 };
    for (const c of this.connections.values()) {
      const h = c.health();
      if (h.error !== undefined) counts.unreachable++;
      else if (h.synced) counts.ready++;
      else counts.connecting++;
    }
    for (const [state, n] of Object.entries(counts)) this.clusterGauge.set({ state }, n);
  }

  private setPhase(key: string, phase: MirrorPhase | undefined): void {
    if (phase === undefined) this.phases.delete(key);
    else this.phases.set(key, phase);
    const counts: Record<MirrorPhase, number> = { Pending: 0, Active: 0, Degraded: 0, Error: 0 };
    for (const p of this.phases.values()) counts[p]++;
    for (const [phase, n] of Object.entries(counts)) this.phaseGauge.set({ phase }, n);
    this.sourceGauge.set(this.sources.size);
  }

  // ---- reconcile --------------------------------------------------------------------------------

  private current(id: MirrorIdentity, key: string): AnyMirror | undefined {
    const cached =
      id.kind === 'SecretMirror'
        ? this.secretMirrors.get(id.name, id.namespace)
        : this.clusterMirrors.get(id.name);
    return this.writer.current(key, cached);
  }

  private observe(conn: ClusterConnection, name: string): ClusterObservation {
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

  private async reconcile(key: string): Promise<ProcessResult | void> {
    const id = parseMirrorKey(key);
    if (!id) return;
    const name = deliveryName(id, this.opts.originCluster);
    const conns = [...this.connections.values()];
    const mirror = this.current(id, key);
    if (!mirror || mirror.metadata.deletionTimestamp) {
      return this.cleanUp(key, name, conns, mirror);
    }
    const resolved = resolveSource(mirror);
    const kube = resolved.ok && resolved.source.kind !== 'Vault' ? resolved.source : undefined;
    const vault = resolved.ok && resolved.source.kind === 'Vault' ? resolved.source : undefined;
    const pollMs = mirrorPolicies(mirror.spec).pollPeriodSeconds * 1000;
    this.freshness.set(key, pollMs);
    this.sources.set(key, kube, pollMs);
    let source: SourceObservation = { state: 'missing' };
    let sourceError: string | undefined;
    if (kube) {
      const seen = this.sources.get(kube);
      // Not listed yet: the watch's first list enqueues this mirror again.
      if (seen.state === 'unknown') return;
      source = seen;
    }
    const dynamic = vault?.dynamic ? vault : undefined;
    let released: string | undefined;
    if (dynamic) {
      this.vaultSources.set(key, undefined);
      sourceError = await this.vaultConnections.refusal(dynamic.connection, id.namespace, {
        path: dynamic.path,
        use: 'dynamic',
      });
      if (sourceError === undefined) {
        // Renewed even while suspended: the copies' credentials must not expire under them.
        this.dynamicSources.set(
          key,
          dynamic,
          mirrorPolicies(mirror.spec).pollPeriodSeconds * 1000,
          // A tenant through a shared identity: only a credential endpoint of an issuing engine.
          id.namespace !== undefined && dynamic.connection.kind === 'ClusterVaultConnection',
        );
        const seen = this.dynamicSources.get(key);
        if (seen.state === 'unknown') return; // its first poll enqueues the mirror again
        source = seen;
      } else {
        // No longer allowed to read it: stop renewing; its lease goes as deletePolicy says.
        released = await this.dynamicSources.release(
          key,
          mirrorPolicies(mirror.spec).deletePolicy === 'Delete',
        );
      }
    } else if (this.dynamicSources.has(key) || mirror.status?.lease) {
      // No longer a dynamic source: its lease goes as deletePolicy says.
      released = await this.dynamicSources.release(
        key,
        mirrorPolicies(mirror.spec).deletePolicy === 'Delete',
      );
    }
    if (vault && !dynamic) {
      sourceError = await this.vaultConnections.refusal(vault.connection, id.namespace, {
        path: vault.path,
        use: 'read',
      });
      if (sourceError !== undefined) {
        this.vaultSources.set(key, undefined);
      } else {
        const periodMs = mirrorPolicies(mirror.spec).pollPeriodSeconds * 1000;
        this.vaultSources.set(
          key,
          mirrorPolicies(mirror.spec).suspend ? undefined : vault,
          periodMs,
        );
        const seen = this.vaultSources.get(vault);
        // Not polled yet: the first poll enqueues this mirror again (suspended: plan as missing).
        if (seen.state === 'unknown' && !mirrorPolicies(mirror.spec).suspend) return;
        if (seen.state !== 'unknown') source = seen;
      }
    } else if (!vault) {
      this.vaultSources.set(key, undefined);
    }
    const destination = resolveVaultDestination(mirror);
    if (destination !== undefined) {
      return this.reconcileToVault(key, name, conns, mirror, {
        mirror,
        ...(resolved.ok && sourceError === undefined ? { source: resolved.source } : {}),
        ...(destination.ok ? { destination: destination.ref } : {}),
        errors: [
          ...(resolved.ok ? [] : [resolved.error]),
          ...(sourceError !== undefined ? [sourceError] : []),
          ...(destination.ok ? [] : [destination.error]),
        ],
        observation: source,
        owner: ownerMark(this.opts.originCluster, id),
        now: new Date(this.clock.now()),
      });
    }
    // A Vault secret an earlier spec wrote (destination.vault): removed before anything else.
    const stale = await this.removeStaleVaultWrite(key, mirror, undefined);
    const plan = planMirror({
      mirror,
      source,
      sourceError,
      clusters: conns.map((c) => this.observe(c, name)),
      hubSecret: this.opts.hubSecret,
      originCluster: this.opts.originCluster,
      signer: this.opts.signer,
      tenancy: this.opts.tenancy,
      now: new Date(this.clock.now()),
    });

    let current = mirror;
    if (plan.writes.length > 0) {
      const updated = await this.writer.setFinalizer(current, HUB_FINALIZER, true);
      if (!updated) return; // deleted meanwhile: its watch event enqueues it
      current = updated;
    }
    const writes = new Map(plan.writes.map((w) => [w.cluster, w]));
    const deletes = new Set(plan.deletes);
    for (const conn of conns) {
      const w = writes.get(conn.name);
      conn.request(
        name,
        key,
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
    if (plan.writes.length > 0 || plan.deletes.length > 0) {
      this.log.debug(
        { key, writes: plan.writes.map((w) => w.cluster), deletes: plan.deletes },
        'deliveries requested',
      );
    }
    const hold = statusWriteDelay({
      prev: current.status ?? {},
      next: plan.status,
      events: plan.events.length,
      lastWriteAt: this.writer.lastWriteAt(key),
      now: this.clock.now(),
      coalesceMs: statusCoalesceMs(
        plan.status.clusters?.length ?? 0,
        this.opts.statusCoalesceMs ?? DEFAULT_STATUS_COALESCE_MS,
      ),
    });
    if (hold > 0 && !equalIgnoringTime(current.status ?? {}, plan.status, [])) {
      return { requeueAfterMs: hold };
    }
    if (dynamic) {
      const lease = this.dynamicSources.leaseStatus(key);
      if (lease) plan.status = { ...plan.status, lease };
    }
    if (released) {
      plan.status = { ...plan.status, message: `${plan.status.message ?? ''}; ${released}` };
    }
    if (stale) {
      // Not removed yet: keep the record (what to remove) and say why.
      plan.status = {
        ...plan.status,
        vault: stale.record,
        message: `${plan.status.message ?? ''}; ${stale.error}`,
      };
    }
    // Gone meanwhile: its watch event enqueues it for clean-up.
    const events = [...plan.events, ...this.dynamicSources.takeEvents(key)];
    if (!(await this.writer.writeStatus(current, plan.status, events))) return;
    this.setPhase(key, plan.status.phase);
    if (stale || released) return { requeueAfterMs: this.vaultRetry(key, mirror) };
    if (plan.invalid) return; // only a spec change can help; it enqueues the mirror
    // A Vault source's poller enqueues the mirror when it sees a change; the requeue is the
    // safety net for the deliveries, as for Kubernetes sources.
    return { requeueAfterMs: mirrorPolicies(mirror.spec).pollPeriodSeconds * 1000 };
  }

  /**
   * A mirror whose destination is a Vault secret: its deliveries (from an earlier spec) go, the
   * Vault secret an earlier destination.vault wrote goes (deletePolicy Delete), then Vault is
   * read, written when the source differs, and the status says what happened.
   */
  private async reconcileToVault(
    key: string,
    name: string,
    conns: ClusterConnection[],
    mirror: AnyMirror,
    input: VaultDestinationInput,
  ): Promise<ProcessResult | void> {
    const cleanup = planCleanup(
      conns.map((c) => this.observe(c, name)),
      { mirror: parseMirrorKey(key) },
    );
    const deletes = new Set(cleanup.deletes);
    for (const conn of conns) {
      conn.request(name, key, deletes.has(conn.name) ? { op: 'delete' } : undefined);
    }
    let current = mirror;
    let plan = planVaultDestination(input);
    if (plan.needsTarget && input.destination) {
      const stale = await this.removeStaleVaultWrite(key, mirror, input.destination);
      const target = stale
        ? { state: 'error' as const, error: stale.error, transient: stale.transient }
        : await this.vaultDestinations.read(input.destination);
      plan = planVaultDestination({ ...input, target });
      if (plan.write) {
        const updated = await this.writer.setFinalizer(current, HUB_FINALIZER, true);
        if (!updated) return; // deleted meanwhile: its watch event enqueues it
        current = updated;
        const outcome = await this.vaultDestinations.write(
          input.destination,
          plan.write.data,
          input.owner,
          plan.write.cas,
        );
        plan = planVaultDestination({ ...input, mirror: current, target, outcome });
      }
    }
    if (!(await this.writer.writeStatus(current, plan.status, plan.events))) return;
    this.setPhase(key, plan.status.phase);
    if (plan.retry) return { requeueAfterMs: this.vaultRetry(key, mirror) };
    this.vaultFailures.delete(key);
    if (plan.invalid) return;
    return { requeueAfterMs: mirrorPolicies(mirror.spec).pollPeriodSeconds * 1000 };
  }

  /** After a transient Vault failure: 1 s doubling, never later than the poll period. */
  private vaultRetry(key: string, mirror: AnyMirror): number {
    const failures = (this.vaultFailures.get(key) ?? 0) + 1;
    this.vaultFailures.set(key, failures);
    const period = mirrorPolicies(mirror.spec).pollPeriodSeconds * 1000;
    return retryDelay(failures, this.opts.vault?.retryInitialMs ?? 1000, period);
  }

  /**
   * Removes the Vault secret status.vault records when the spec no longer names it and
   * deletePolicy is Delete (only while it carries the mirror's owner mark). Undefined: nothing
   * is left to remove; otherwise why it could not be removed yet.
   */
  private async removeStaleVaultWrite(
    key: string,
    mirror: AnyMirror,
    current: VaultSourceRef | undefined,
  ): Promise<{ record: VaultWritten; error: string; transient: boolean } | undefined> {
    const record = staleWrite(mirror, current);
    if (!record) return undefined;
    const id = identityOf(mirror);
    const r = await this.vaultDestinations.remove(
      recordRef(record, id.namespace),
      ownerMark(this.opts.originCluster, id),
    );
    if (r.ok) {
      this.log.info(
        { key, path: record.path, removed: r.removed, ...(r.reason ? { reason: r.reason } : {}) },
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

  /**
   * On deletion, what the mirror holds in Vault: with deletePolicy Delete, the secret status.vault
   * records is removed and a dynamic source's leases are revoked (Retain: the leases are only
   * forgotten, to expire on their own). Pending: why not yet; retried until the cleanup grace
   * ends, then given up with a Warning Event naming the path, so a dead Vault cannot hold the
   * mirror forever.
   */
  private async releaseVault(
    key: string,
    mirror: AnyMirror,
    deletingSince: Date | undefined,
    now: Date,
  ): Promise<{ pending?: string; events: PlannedEvent[] }> {
    const remove = mirrorPolicies(mirror.spec).deletePolicy === 'Delete';
    const events: PlannedEvent[] = [];
    const failures: { path: string; error: string }[] = [];
    const record = mirror.status?.vault;
    if (record && remove) {
      const id = identityOf(mirror);
      const r = await this.vaultDestinations.remove(
        recordRef(record, id.namespace),
        ownerMark(this.opts.originCluster, id),
      );
      if (!r.ok) failures.push({ path: record.path, error: r.error });
      else if (r.removed) {
        this.log.info({ key, path: record.path }, 'removed the Vault secret the mirror wrote');
        events.push({
          type: 'Normal',
          reason: REASON_VAULT_REMOVED,
          message: `removed Vault ${record.path}`,
        });
      }
    }
    if (this.dynamicSources.has(key) || mirror.status?.lease) {
      const error = await this.dynamicSources.release(key, remove);
      if (error) failures.push({ path: mirror.spec.source.vault?.path ?? '', error });
    }
    if (failures.length === 0) {
      this.vaultFailures.delete(key);
      return { events };
    }
    const graceMs = this.opts.cleanupGraceMs ?? DEFAULT_CLEANUP_GRACE_MS;
    const pending = failures
      .map((f) => `cannot clean up Vault ${f.path} yet: ${f.error}`)
      .join('; ');
    if (deletingSince && now.getTime() - deletingSince.getTime() < graceMs) {
      return { pending, events };
    }
    for (const f of failures) {
      this.log.warn({ key, path: f.path, err: f.error }, 'gave up cleaning up in Vault');
      events.push({
        type: 'Warning',
        reason: 'VaultCleanupAbandoned',
        message: truncate(
          `gave up cleaning up Vault ${f.path} after ${Math.round(graceMs / 1000)} s: ${f.error}; remove or revoke it by hand`,
          1024,
        ),
      });
    }
    return { events };
  }

  /** The mirror is gone or being deleted: remove its deliveries everywhere, then the finalizer. */
  private async cleanUp(
    key: string,
    name: string,
    conns: ClusterConnection[],
    mirror: AnyMirror | undefined,
  ): Promise<ProcessResult | void> {
    this.sources.set(key, undefined);
    this.vaultSources.set(key, undefined);
    this.freshness.set(key, undefined);
    this.setPhase(key, undefined);
    if (!mirror || !mirror.metadata.finalizers?.includes(HUB_FINALIZER)) {
      // Gone before it delivered anything: a lease it read is still revoked (best effort).
      if (this.dynamicSources.has(key)) await this.dynamicSources.release(key, true);
    }
    if (mirror && !mirror.metadata.finalizers?.includes(HUB_FINALIZER)) {
      // Never delivered (or already cleaned up): nothing of ours to remove.
      for (const conn of conns) conn.request(name, key, undefined);
      return;
    }
    const deletingSince = mirror?.metadata.deletionTimestamp
      ? new Date(mirror.metadata.deletionTimestamp)
      : undefined;
    const now = new Date(this.clock.now());
    const plan = planCleanup(
      conns.map((c) => this.observe(c, name)),
      {
        deletingSince,
        now,
        graceMs: this.opts.cleanupGraceMs ?? DEFAULT_CLEANUP_GRACE_MS,
        mirror: parseMirrorKey(key),
      },
    );
    const deletes = new Set(plan.deletes);
    for (const conn of conns) {
      conn.request(name, key, deletes.has(conn.name) ? { op: 'delete' } : undefined);
    }
    if (!mirror) {
      if (plan.deletes.length > 0)
        this.log.info({ key, clusters: plan.deletes }, 'removing orphaned deliveries');
      return;
    }
    // The Vault secret it wrote (deletePolicy Delete): removed while it carries the owner mark.
    const vault = await this.releaseVault(key, mirror, deletingSince, now);
    const next = planDeletionStatus(mirror.status ?? {}, plan, name, now);
    if (vault.pending) {
      next.status = { ...next.status, message: `${next.status.message ?? ''}; ${vault.pending}` };
    }
    const current = await this.writer.writeStatus(mirror, next.status, [
      ...next.events,
      ...vault.events,
    ]);
    if (!current) return; // gone: nothing holds it any more
    if (vault.pending) return { requeueAfterMs: this.vaultRetry(key, mirror) };
    if (!plan.done) {
      this.log.debug({ key, deleting: plan.deletes, waitingFor: plan.waitingFor }, 'cleaning up');
      // Progress arrives as watch events; the requeue is the safety net, and the grace deadline.
      const untilDeadline = plan.deadline ? plan.deadline.getTime() - now.getTime() + 100 : 30_000;
      return { requeueAfterMs: Math.max(100, Math.min(30_000, untilDeadline)) };
    }
    for (const a of plan.abandoned) {
      this.opts.onCleanupAbandoned?.(a.cluster, name, key, a.reason);
    }
    await this.writer.setFinalizer(current, HUB_FINALIZER, false);
    if (plan.abandoned.length > 0) {
      this.log.warn(
        { key, clusters: plan.abandoned.map((a) => a.cluster) },
        'finalizer released with cleanup pending in unreachable clusters',
      );
    } else {
      this.log.info({ key }, 'deliveries removed; finalizer released');
    }
  }
}

/** A mirror's API path (its status is under /status). */
function mirrorPath(mirror: AnyMirror): string {
  const ns = mirror.metadata.namespace;
  return customObjectPath({
    group: GROUP,
    version: VERSION,
    name: mirror.metadata.name ?? '',
    plural: ns ? SECRET_MIRROR.plural : CLUSTER_SECRET_MIRROR.plural,
    ...(ns ? { namespace: ns } : {}),
  });
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
