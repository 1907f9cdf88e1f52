// The delivery controller: the hub's writes into the clusters it delivers to. One
// ClusterConnection per cluster watches the MirrorDeliveries and payload Secrets this hub wrote
// into the cluster's agent namespace (label-selected, payloads metadata-only) and runs its own
// Reconciler (controller `delivery`, the cluster as a logger field), so a slow or dead cluster
// only delays its own writes; the mirror controller never waits on a cluster. Every request has a
// deadline (`requestTimeoutMs`, lists included), so a cluster that accepts connections and never
// answers fails like a dead one instead of holding its writers forever.
//
// The mirror controller says what each delivery name should be (`request`) and reads back what
// the cluster holds (`observe`), its health (`health`: synced, unreachable after
// `unreachableAfterMs` of failures) and whether a name is taken (`holds`). Each request is a key
// in the queue; its reconcile gathers what the watches show (with our writes overlaid until the
// watch shows them, WriteOverlay), lets plan.ts decide the writes and apply.ts perform them,
// converging with backoff. Asking for what is already pending changes nothing, so a failing write
// keeps its backoff however often the mirror is reconciled.
//
// Watch events also drive one thing of this controller's own: a delivery of another mirror
// holding a name tells the mirror that wants the name when it changes or goes (`interest`).
import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { GROUP, MIRROR_DELIVERY, VERSION, type MirrorDelivery } from '@mirrorhub/shared/api/index';
import {
  Backoff,
  errorMessage,
  realClock,
  sleep,
  type Clock,
  type ControllerMetrics,
  type Logger,
  type Timer,
} from '@mirrorhub/shared/kit/runtime/index';
import type { RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import {
  createWatcher,
  watchTuning,
  type Watcher,
  type WatcherEvent,
} from '@mirrorhub/shared/kit/k8s/watcher';
import { Reconciler, WriteOverlay } from '@mirrorhub/shared/kit/controller/index';
import {
  ANNOTATION_MIRROR,
  LABEL_ORIGIN_CLUSTER,
  LABEL_PAYLOAD,
} from '@mirrorhub/shared/api/contract';
import { DEFAULT_REQUEST_TIMEOUT_MS, timedRestClient } from '../../../clusters/client.js';
import type { ClusterTarget } from '../../../clusters/target.js';
import { applyWrite, OwnershipConflictError, readDelivery, type ApplyTarget } from './apply.js';
import {
  fingerprintOf,
  foreignLook,
  heldOf,
  mayWrite,
  needsLookUp,
  observation,
  payloadObservation,
  planWrites,
  type DeliveryObservation,
  type DeliveryOp,
  type ForeignLook,
  type Held,
  type NameState,
  type PayloadObservation,
  type PlannedWrite,
} from './delivery.js';

export {
  FOREIGN_RECHECK_MAX_MS,
  FOREIGN_RECHECK_MS,
  type DeliveryObservation,
  type DeliveryOp,
  type PayloadObservation,
} from './delivery.js';
export { OwnershipConflictError } from './apply.js';

const CONTROLLER = 'delivery';

export interface ClusterHealth {
  /** Both caches hold a full list. */
  synced: boolean;
  /** Set when the cluster has been failing for longer than `unreachableAfterMs`. */
  error?: string;
}

export interface ClusterConnectionOptions {
  target: ClusterTarget;
  originCluster: string;
  logger: Logger;
  metrics: ControllerMetrics;
  /** A delivery of this mirror changed (watch event, write finished or failed). */
  onMirror(mirrorKey: string): void;
  /** The cluster's health changed (synced, unreachable, reachable again). */
  onHealth(): void;
  /** Writes in flight at once for this cluster (default 4). */
  concurrency?: number;
  /** Failures shorter than this are not reported as unreachable (default 30 s). */
  unreachableAfterMs?: number;
  /** Deadline of every request to the cluster, list pages included (default 10 s). */
  requestTimeoutMs?: number;
  /** See HubConfig.watchProgressDeadlineMs. */
  watchProgressDeadlineMs?: number | undefined;
  clock?: Clock;
}

interface Wanted {
  mirrorKey: string;
  op: DeliveryOp;
  fingerprint: string;
}

export class ClusterConnection {
  readonly name: string;
  readonly agentNamespace: string;
  private current: ClusterTarget;
  private readonly log: Logger;
  private readonly timeoutMs: number;
  private readonly clock: Clock;
  private readonly reconciler: Reconciler;
  private readonly life = new AbortController();
  private readonly wanted = new Map<string, Wanted>();
  private readonly writeErrors = new Map<string, string>();
  private readonly writtenDelivery = new WriteOverlay<MirrorDelivery>();
  private readonly writtenPayload = new WriteOverlay<PayloadObservation>();
  /** Deleted by us; gone as far as plans go, even while an agent finalizer keeps it. */
  private readonly deletedDelivery = new Set<string>();
  private readonly deletedPayload = new Set<string>();
  /** Deliveries found under our names that the watch does not show (see noteForeign). */
  private readonly foreign = new Map<
    string,
    ForeignLook & { delivery: MirrorDelivery; timer: Timer }
  >();
  /** Name -> the mirror whose name it is, while a delivery of another mirror holds it. */
  private readonly interest = new Map<string, string>();
  private deliveries: Watcher<MirrorDelivery> | undefined;
  private payloads: Watcher<KubernetesObject> | undefined;
  /** How often both caches take a fresh look (see setResyncPeriod). */
  private resyncMs: number | undefined;
  private rest: RestClient | undefined;
  private readonly unsubscribe: (() => void)[] = [];
  private running: Promise<void> | undefined;
  private synced = false;
  private resolveSynced!: (ok: boolean) => void;
  private readonly syncedOrStopped = new Promise<boolean>((resolve) => {
    this.resolveSynced = resolve;
  });
  private failingSince: number | undefined;
  private lastError: string | undefined;
  private reportedError: string | undefined;
  private unreachableTimer: Timer | undefined;

  constructor(private readonly opts: ClusterConnectionOptions) {
    this.current = opts.target;
    this.name = opts.target.name;
    this.timeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.agentNamespace = opts.target.agentNamespace;
    this.clock = opts.clock ?? realClock;
    this.log = opts.logger;
    this.reconciler = new Reconciler({
      name: CONTROLLER,
      reconcile: (name) => this.reconcile(name),
      concurrency: opts.concurrency ?? 4,
      logger: this.log,
      metrics: opts.metrics,
      // Refusals are normal operation, and the mirror's status says them.
      expected: (err) => err instanceof OwnershipConflictError,
      backoff: { initialMs: 500, maxMs: 60_000 },
      shutdownTimeoutMs: 10_000,
      clock: this.clock,
    });
  }

  /** The target this connection serves (labels may be updated in place, see retarget). */
  get target(): ClusterTarget {
    return this.current;
  }

  /**
   * Same cluster, same access, new metadata (labels): take the new target without reconnecting.
   * The caller checks that name, agent namespace, locality and kubeConfig are the same.
   */
  retarget(target: ClusterTarget): void {
    this.current = target;
  }

  /**
   * Re-list the cluster's deliveries and payloads at least this often: the shortest poll period
   * of the mirrors, so whatever the watches missed is repaired within one.
   */
  setResyncPeriod(ms: number): void {
    this.resyncMs = ms;
    this.deliveries?.setResyncPeriod(ms);
    this.payloads?.setResyncPeriod(ms);
  }

  /** Connect in the background (retrying with backoff until stopped), then write. */
  start(): void {
    this.running ??= this.reconciler
      .run(this.life.signal, { prepare: (signal) => this.connect(signal) })
      .catch((err: unknown) => {
        this.log.error({ err }, 'cluster connection crashed');
      });
  }

  async stop(): Promise<void> {
    this.life.abort();
    this.resolveSynced(false);
    this.unreachableTimer?.cancel();
    for (const f of this.foreign.values()) f.timer.cancel();
    for (const u of this.unsubscribe.splice(0)) u();
    await this.reconciler.stop();
    await this.running;
    this.rest?.close();
  }

  /** Resolves true once both caches are synced, false if stopped first. */
  waitSynced(): Promise<boolean> {
    return this.syncedOrStopped;
  }

  health(): ClusterHealth {
    return {
      synced: this.synced,
      ...(this.reportedError !== undefined ? { error: this.reportedError } : {}),
    };
  }

  /**
   * Whether the cluster holds a delivery or payload of this name, as its caches show it (a
   * delivery being finalized by the agent counts); undefined while the caches are not synced.
   */
  holds(name: string): boolean | undefined {
    if (!this.synced) return undefined;
    return (
      this.deliveries?.get(name, this.agentNamespace) !== undefined ||
      this.payloads?.get(name, this.agentNamespace) !== undefined
    );
  }

  /** This hub's deliveries in the cluster, as the cache holds them (read-only). */
  deliveryList(): MirrorDelivery[] {
    return this.deliveries?.list() ?? [];
  }

  /** Names of the deliveries of every mirror in this cluster's cache (orphan detection). */
  mirrorKeys(): string[] {
    const keys = new Set<string>();
    for (const o of [...(this.deliveries?.list() ?? []), ...(this.payloads?.list() ?? [])]) {
      const key = o.metadata?.annotations?.[ANNOTATION_MIRROR];
      if (key) keys.add(key);
    }
    return [...keys];
  }

  observe(name: string): DeliveryObservation {
    return observation(this.state(name), this.clock.now());
  }

  /**
   * What delivery `name` (of mirror `mirrorKey`) should become; undefined = nothing to do (a
   * pending write is dropped). Asking for what is already pending changes nothing, so a failing
   * write keeps its backoff however often the mirror is reconciled.
   */
  request(name: string, mirrorKey: string, op: DeliveryOp | undefined): void {
    // Another mirror's delivery holds the name: its changes (its deletion) concern this one too.
    const held = this.deliveries?.get(name, this.agentNamespace);
    if (held && held.metadata.annotations?.[ANNOTATION_MIRROR] !== mirrorKey) {
      this.interest.set(name, mirrorKey);
    } else {
      this.interest.delete(name);
    }
    if (!op) {
      this.wanted.delete(name);
      if (this.writeErrors.delete(name)) this.opts.onMirror(mirrorKey);
      return;
    }
    const fingerprint = fingerprintOf(op);
    const prev = this.wanted.get(name);
    if (prev?.fingerprint === fingerprint) return;
    this.wanted.set(name, { mirrorKey, op, fingerprint });
    this.reconciler.add(name);
  }

  /** Writes queued or backing off (tests, metrics). */
  pendingWrites(): number {
    return this.wanted.size;
  }

  // ---- gathering --------------------------------------------------------------------------------

  /** What this controller knows of `name`: caches, our writes, deletes, foreign, errors. */
  private state(name: string): NameState {
    const ns = this.agentNamespace;
    const payload = this.payloads?.get(name, ns);
    return {
      cached: {
        delivery: this.deliveries?.get(name, ns),
        payload: payload && payloadObservation(payload.metadata?.annotations),
      },
      written: { delivery: this.writtenDelivery.get(name), payload: this.writtenPayload.get(name) },
      deleted: { delivery: this.deletedDelivery.has(name), payload: this.deletedPayload.has(name) },
      foreign: this.foreign.get(name),
      writeError: this.writeErrors.get(name),
    };
  }

  private held(name: string): Held {
    return heldOf(this.state(name), this.clock.now());
  }

  // ---- connecting -------------------------------------------------------------------------------

  /** Build the client and the watches; resolves once both caches are synced (or on stop). */
  private async connect(signal: AbortSignal): Promise<void> {
    const backoff = new Backoff({ initialMs: 1000, maxMs: 60_000, jitter: 0.5 });
    let kc: KubeAccess | undefined;
    while (!signal.aborted) {
      try {
        kc = await this.current.kubeConfig();
        break;
      } catch (err) {
        this.failed(err);
        const delay = backoff.next();
        this.log.warn({ err, retryInMs: delay }, 'cannot build a kubeconfig for the cluster');
        await sleep(this.clock, delay, signal);
      }
    }
    if (!kc || signal.aborted) return;
    this.rest = timedRestClient(kc, this.timeoutMs);
    const transport = { listTimeoutMs: this.timeoutMs };
    const tuning = {
      ...(this.resyncMs ? { resyncPeriodMs: this.resyncMs } : {}),
      ...watchTuning(this.opts.watchProgressDeadlineMs),
    };
    const origin = `${LABEL_ORIGIN_CLUSTER}=${this.opts.originCluster}`;
    const deliveries = createWatcher<MirrorDelivery>(
      kc,
      {
        group: GROUP,
        version: VERSION,
        plural: MIRROR_DELIVERY.plural,
        namespace: this.agentNamespace,
        labelSelector: origin,
      },
      { resource: `mirrordeliveries@${this.name}`, transport, ...tuning },
    );
    const payloads = createWatcher<KubernetesObject>(
      kc,
      {
        version: 'v1',
        plural: 'secrets',
        namespace: this.agentNamespace,
        labelSelector: `${LABEL_PAYLOAD}=true,${origin}`,
        metadataOnly: true,
      },
      { resource: `payloads@${this.name}`, transport, ...tuning },
    );
    this.deliveries = deliveries;
    this.payloads = payloads;
    const route = (written: WriteOverlay<unknown>, gone: Set<string>) => ({
      onAdd: (o: KubernetesObject) => this.seen(o, written, gone),
      onUpdate: (o: KubernetesObject) => this.seen(o, written, gone),
      onDelete: (o: KubernetesObject) => this.seen(o, written, gone, true),
    });
    this.unsubscribe.push(
      deliveries.onEvent((e) => this.watcherEvent(e, this.writtenDelivery, this.deletedDelivery)),
      payloads.onEvent((e) => this.watcherEvent(e, this.writtenPayload, this.deletedPayload)),
    );
    this.reconciler.watch<MirrorDelivery>(
      deliveries,
      route(this.writtenDelivery, this.deletedDelivery),
    );
    this.reconciler.watch<KubernetesObject>(
      payloads,
      route(this.writtenPayload, this.deletedPayload),
    );
    const synced = await new Promise<boolean>((resolve) => {
      signal.addEventListener('abort', () => resolve(false), { once: true });
      this.reconciler.synced().then(
        () => resolve(true),
        () => resolve(false), // stopped before sync
      );
    });
    if (!synced || signal.aborted) return;
    this.synced = true;
    this.resolveSynced(true);
    this.log.info(
      { deliveries: deliveries.size, payloads: payloads.size },
      'cluster caches synced',
    );
    this.opts.onHealth();
  }

  private watcherEvent(e: WatcherEvent, written: WriteOverlay<unknown>, gone: Set<string>): void {
    if (e.type === 'error') {
      this.failed(e.err);
    } else if (e.type === 'listed' || e.type === 'connected') {
      // A fresh list replaces what we wrote with what is there.
      if (e.type === 'listed') {
        written.clear();
        gone.clear();
      }
      this.recovered();
    }
  }

  /** A watch event for `obj`: drop our overlay once the cache shows our write (or the deletion). */
  private seen(
    obj: KubernetesObject,
    written: WriteOverlay<unknown>,
    gone: Set<string>,
    deleted = false,
  ): void {
    const name = obj.metadata?.name ?? '';
    if (deleted) {
      written.deleted(name);
      gone.delete(name);
    } else {
      written.observed(name, obj.metadata?.resourceVersion);
      if (obj.metadata?.deletionTimestamp) gone.delete(name);
    }
    if (written === this.writtenDelivery) this.forgetForeign(name); // the watch shows it now
    const key = obj.metadata?.annotations?.[ANNOTATION_MIRROR];
    const waiting = this.interest.get(name);
    if (waiting !== undefined && waiting !== key) this.opts.onMirror(waiting);
    if (key) this.opts.onMirror(key);
  }

  private failed(err: unknown): void {
    this.report(err);
    this.lastError = errorMessage(err);
    const now = this.clock.now();
    if (this.failingSince === undefined) {
      this.failingSince = now;
      const after = this.opts.unreachableAfterMs ?? 30_000;
      this.unreachableTimer?.cancel();
      this.unreachableTimer = this.clock.setTimer(() => this.reportUnreachable(), after);
    } else if (this.reportedError !== undefined && this.reportedError !== this.lastError) {
      this.reportUnreachable();
    }
  }

  private reportUnreachable(): void {
    if (this.failingSince === undefined || this.life.signal.aborted) return;
    this.reportedError = this.lastError;
    this.log.warn({ err: this.lastError }, 'cluster unreachable');
    this.opts.onHealth();
  }

  private recovered(): void {
    const wasFailing = this.failingSince !== undefined;
    this.failingSince = undefined;
    this.unreachableTimer?.cancel();
    this.unreachableTimer = undefined;
    if (wasFailing) {
      // Writes that failed while the cluster was away: retry now, not after their backoff.
      for (const name of this.wanted.keys()) {
        this.reconciler.forget(name);
        this.reconciler.add(name);
      }
    }
    if (this.reportedError !== undefined) {
      this.reportedError = undefined;
      this.log.info('cluster reachable again');
      this.opts.onHealth();
    }
  }

  /** Let the target react to a failed request (EKS: new token, re-describe). */
  private report(err: unknown): void {
    try {
      this.current.reportError?.(err);
    } catch {
      // a target's bookkeeping must not break the connection
    }
  }

  // ---- reconciling ------------------------------------------------------------------------------

  /** Converge delivery `name` to what was requested: gather, plan, apply. */
  private async reconcile(name: string): Promise<void> {
    const want = this.wanted.get(name);
    if (!want || !this.rest) return;
    const { mirrorKey, op } = want;
    const target: ApplyTarget = {
      rest: this.rest,
      namespace: this.agentNamespace,
      originCluster: this.opts.originCluster,
      timeoutMs: this.timeoutMs,
      metrics: this.opts.metrics,
      logger: this.log,
      foundDelivery: (n, existing, desired) => this.noteForeign(n, existing, desired, mirrorKey),
    };
    let notOurs = false;
    try {
      let held = this.held(name);
      if (needsLookUp(op, held)) {
        // A delivery the caches do not show: read it before writing anything for it (once per
        // new delivery), so one not labelled as this hub's is never written over, nor its payload.
        const found = await readDelivery(target, name);
        if (found) held = { ...held, delivery: found };
        else this.forgetForeign(name);
      }
      const plan = planWrites(name, op, held);
      if (plan.notOurs && op.op === 'apply' && op.delivery) {
        // Another mirror's, or one being deleted: nothing is written. The plan sees it now.
        this.noteForeign(name, plan.notOurs, op.delivery, mirrorKey);
        notOurs = true;
      }
      if (plan.together) {
        // Each write that landed is remembered, whatever became of the other.
        const results = await Promise.allSettled(plan.writes.map((w) => applyWrite(target, w)));
        results.forEach((r, i) => {
          if (r.status === 'fulfilled') this.wrote(plan.writes[i]!, r.value);
        });
        const failed = results.find((r) => r.status === 'rejected');
        if (failed) throw failed.reason;
      } else {
        for (const w of plan.writes) this.wrote(w, await applyWrite(target, w));
      }
      if (this.wanted.get(name) === want) this.wanted.delete(name);
      // A delete may produce no watch event (already gone): tell the mirror either way.
      if (this.writeErrors.delete(name) || op.op === 'delete' || notOurs) {
        this.opts.onMirror(mirrorKey);
      }
    } catch (err) {
      this.report(err);
      const message = errorMessage(err);
      const before = this.writeErrors.get(name);
      this.writeErrors.set(name, message);
      if (before !== message) this.opts.onMirror(mirrorKey);
      throw err; // retried with backoff, logged by the reconciler
    }
  }

  /** Remember a write until the watch shows it; a delete makes the object gone for plans. */
  private wrote(w: PlannedWrite, res: KubernetesObject | undefined): void {
    // One line per write to the cluster (debug): what shows, with hub replicas sharing the
    // followers, that one follower is written by one replica at a time.
    this.log.debug({ kind: w.kind, name: w.name, verb: w.verb }, 'delivery written');
    const rv = res?.metadata?.resourceVersion;
    if (w.kind === 'Secret') {
      if (w.verb === 'delete') {
        this.writtenPayload.drop(w.name);
        this.deletedPayload.add(w.name);
      } else {
        this.deletedPayload.delete(w.name);
        this.writtenPayload.wrote(w.name, rv, payloadObservation(res?.metadata?.annotations));
      }
    } else if (w.verb === 'delete') {
      this.writtenDelivery.drop(w.name);
      this.deletedDelivery.add(w.name);
    } else if (res) {
      this.deletedDelivery.delete(w.name);
      this.writtenDelivery.wrote(w.name, rv, res as MirrorDelivery);
    }
  }

  /**
   * Remember a delivery read under `name` that plans must see and the caches may not show: one
   * not labelled as this hub's, or one we deleted that an agent finalizer still keeps. `observe`
   * reports it for FOREIGN_RECHECK_MS (doubling while it stays, up to FOREIGN_RECHECK_MAX_MS) or
   * until the watch shows the name, so the mirror's plan says whose it is and asks for no write;
   * then the mirror is reconciled again, and its next write looks again.
   */
  private noteForeign(
    name: string,
    found: MirrorDelivery,
    desired: MirrorDelivery,
    mirrorKey: string,
  ): void {
    if (mayWrite(found, desired)) {
      this.forgetForeign(name);
      return;
    }
    const prev = this.foreign.get(name);
    const look = foreignLook(prev, this.clock.now());
    if (prev && look === prev) {
      prev.delivery = found; // seen again, not looked at again: the recheck stays when it was
      return;
    }
    prev?.timer.cancel();
    const timer = this.clock.setTimer(() => this.opts.onMirror(mirrorKey), look.ttlMs);
    this.foreign.set(name, { ...look, delivery: found, timer });
  }

  private forgetForeign(name: string): void {
    this.foreign.get(name)?.timer.cancel();
    this.foreign.delete(name);
  }
}
