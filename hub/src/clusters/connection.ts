// One cluster, seen and written by the hub: watches of the MirrorDeliveries and payload Secrets
// this hub wrote into the cluster's agent namespace (label-selected, payloads metadata-only), and
// a writer with its own work queue. Every cluster has its own, so a slow or dead cluster only
// delays its own writes; the mirror controller never waits on a cluster. Every request has a
// deadline (`requestTimeoutMs`, lists included), so a cluster that accepts connections and never
// answers fails like a dead one instead of holding its writers forever.
//
// The writer is told what each delivery should be (`request`) and converges to it with backoff.
// Until the watch shows a write back, `observe` overlays what was written, so a reconcile that
// runs in between neither writes the same thing twice nor reports a stale state.
import type { KubernetesObject, V1Secret } from '@kubernetes/client-node';
import type { KubeAccess } from '@mirrorhub/shared/k8s/access';
import { GROUP, MIRROR_DELIVERY, VERSION, type MirrorDelivery } from '@mirrorhub/shared/api/index';
import {
  ANNOTATION_CONTENT_HASH,
  ANNOTATION_MIRROR,
  canonicalJson,
  LABEL_PAYLOAD,
  type PayloadSecret,
} from '@mirrorhub/shared/mirror/index';
import {
  Backoff,
  errorMessage,
  httpStatusOf,
  realClock,
  sleep,
  type Clock,
  type ControllerMetrics,
  type Logger,
  type Timer,
} from '@mirrorhub/shared/runtime/index';
import { FIELD_MANAGER } from '@mirrorhub/shared/k8s/fields';
import {
  corePath,
  customObjectPath,
  groupPath,
  isAlreadyExists,
  isNotFound,
  type RestClient,
} from '@mirrorhub/shared/k8s/rest';
import {
  createWatcher,
  instrumentWatcher,
  type Watcher,
  type WatcherEvent,
} from '@mirrorhub/shared/k8s/watcher';
import { WorkQueue } from '@mirrorhub/shared/k8s/workqueue';
import { deliveryUpToDate } from '../controllers/mirror/plan.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, timedRestClient, withDeadline } from './client.js';
import { LABEL_ORIGIN_CLUSTER } from '../names.js';
import { WriteOverlay } from '../overlay.js';
import type { ClusterTarget } from './target.js';

/** What the cluster holds for one delivery name, as far as the hub knows. */
export interface DeliveryObservation {
  delivery?: MirrorDelivery;
  payload?: { contentHash?: string };
  writeError?: string;
}

/** What a delivery should become. */
export type DeliveryOp =
  { op: 'apply'; payload?: PayloadSecret; delivery?: MirrorDelivery } | { op: 'delete' };

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
  clock?: Clock;
}

type PayloadMeta = KubernetesObject;

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
  private readonly queue: WorkQueue;
  private readonly wanted = new Map<string, Wanted>();
  private readonly writeErrors = new Map<string, string>();
  private readonly writtenDelivery = new WriteOverlay<MirrorDelivery>();
  private readonly writtenPayload = new WriteOverlay<{ contentHash?: string }>();
  /** Deleted by us; gone as far as plans go, even while an agent finalizer keeps it. */
  private readonly deletedDelivery = new Set<string>();
  private readonly deletedPayload = new Set<string>();
  private deliveries: Watcher<MirrorDelivery> | undefined;
  private payloads: Watcher<PayloadMeta> | undefined;
  private rest: RestClient | undefined;
  private readonly stopController = new AbortController();
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
    this.queue = new WorkQueue({
      name: `deliveries/${this.name}`,
      concurrency: opts.concurrency ?? 4,
      process: (key) => this.write(key),
      backoff: { initialMs: 500, maxMs: 60_000 },
      observe: (o) => {
        if (o.result === 'error') opts.metrics.queueRetriesTotal.inc({ controller: 'deliveries' });
      },
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

  /** Connect in the background (retrying with backoff until stopped). */
  start(): void {
    this.running ??= this.connect().catch((err: unknown) => {
      this.log.error({ err }, 'cluster connection crashed');
    });
  }

  async stop(): Promise<void> {
    this.stopController.abort();
    this.resolveSynced(false);
    this.unreachableTimer?.cancel();
    for (const u of this.unsubscribe.splice(0)) u();
    await this.queue.shutdown({ timeoutMs: 10_000 });
    await Promise.all([this.deliveries?.stop(), this.payloads?.stop()]);
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

  /** Names of the deliveries of every mirror in this cluster's cache (orphan detection). */
  mirrorKeys(): string[] {
    const keys = new Set<string>();
    for (const d of this.deliveries?.list() ?? []) {
      const key = d.metadata?.annotations?.[ANNOTATION_MIRROR];
      if (key) keys.add(key);
    }
    for (const p of this.payloads?.list() ?? []) {
      const key = p.metadata?.annotations?.[ANNOTATION_MIRROR];
      if (key) keys.add(key);
    }
    return [...keys];
  }

  observe(name: string): DeliveryObservation {
    const out: DeliveryObservation = {};
    if (!this.deletedDelivery.has(name)) {
      const d = this.writtenDelivery.get(name) ?? this.deliveries?.get(name, this.agentNamespace);
      if (d) out.delivery = d;
    }
    if (!this.deletedPayload.has(name)) {
      const written = this.writtenPayload.get(name);
      const cached = this.payloads?.get(name, this.agentNamespace);
      if (written) {
        out.payload = written;
      } else if (cached) {
        const h = cached.metadata?.annotations?.[ANNOTATION_CONTENT_HASH];
        out.payload = h === undefined ? {} : { contentHash: h };
      }
    }
    const err = this.writeErrors.get(name);
    if (err !== undefined) out.writeError = err;
    return out;
  }

  /**
   * What delivery `name` (of mirror `mirrorKey`) should become; undefined = nothing to do (a
   * pending write is dropped). Asking for what is already pending changes nothing, so a failing
   * write keeps its backoff however often the mirror is reconciled.
   */
  request(name: string, mirrorKey: string, op: DeliveryOp | undefined): void {
    if (!op) {
      this.wanted.delete(name);
      if (this.writeErrors.delete(name)) this.opts.onMirror(mirrorKey);
      return;
    }
    const fingerprint = fingerprintOf(op);
    const prev = this.wanted.get(name);
    if (prev?.fingerprint === fingerprint) return;
    this.wanted.set(name, { mirrorKey, op, fingerprint });
    this.queue.add(name);
  }

  /** Writes queued or backing off (tests, metrics). */
  pendingWrites(): number {
    return this.wanted.size;
  }

  // ---- connecting ---------------------------------------------------------------------------------

  private async connect(): Promise<void> {
    const signal = this.stopController.signal;
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
      { resource: `mirrordeliveries@${this.name}`, transport },
    );
    const payloads = createWatcher<PayloadMeta>(
      kc,
      {
        version: 'v1',
        plural: 'secrets',
        namespace: this.agentNamespace,
        labelSelector: `${LABEL_PAYLOAD}=true,${origin}`,
        metadataOnly: true,
      },
      { resource: `payloads@${this.name}`, transport },
    );
    this.deliveries = deliveries;
    this.payloads = payloads;
    const deps = { logger: this.log, metrics: this.opts.metrics };
    this.unsubscribe.push(
      instrumentWatcher(deliveries, deps),
      instrumentWatcher(payloads, deps),
      deliveries.onEvent((e) => this.watcherEvent(e, this.writtenDelivery, this.deletedDelivery)),
      payloads.onEvent((e) => this.watcherEvent(e, this.writtenPayload, this.deletedPayload)),
      deliveries.addHandler({
        onAdd: (d) => this.seen(d, this.writtenDelivery, this.deletedDelivery),
        onUpdate: (d) => this.seen(d, this.writtenDelivery, this.deletedDelivery),
        onDelete: (d) => this.seen(d, this.writtenDelivery, this.deletedDelivery, true),
      }),
      payloads.addHandler({
        onAdd: (p) => this.seen(p, this.writtenPayload, this.deletedPayload),
        onUpdate: (p) => this.seen(p, this.writtenPayload, this.deletedPayload),
        onDelete: (p) => this.seen(p, this.writtenPayload, this.deletedPayload, true),
      }),
    );
    deliveries.start();
    payloads.start();
    try {
      await Promise.all([deliveries.synced, payloads.synced]);
    } catch {
      return; // stopped before sync
    }
    if (signal.aborted) return;
    this.synced = true;
    this.resolveSynced(true);
    this.queue.start();
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
    const key = obj.metadata?.annotations?.[ANNOTATION_MIRROR];
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
    if (this.failingSince === undefined || this.stopController.signal.aborted) return;
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
        this.queue.forget(name);
        this.queue.add(name);
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

  // ---- writing ------------------------------------------------------------------------------------

  private async write(name: string): Promise<void> {
    const want = this.wanted.get(name);
    if (!want) return;
    const { mirrorKey, op } = want;
    try {
      if (op.op === 'apply') {
        const seen = this.observe(name);
        if (op.payload && seen.payload?.contentHash !== contentHashOf(op.payload)) {
          await this.applyPayload(op.payload);
        }
        if (op.delivery && !deliveryUpToDate(seen.delivery, op.delivery)) {
          await this.applyDelivery(op.delivery, seen.delivery);
        }
      } else {
        await this.deleteDelivery(name);
        await this.deletePayload(name);
      }
      if (this.wanted.get(name) === want) this.wanted.delete(name);
      // A delete may produce no watch event (already gone): tell the mirror either way.
      if (this.writeErrors.delete(name) || op.op === 'delete') this.opts.onMirror(mirrorKey);
    } catch (err) {
      this.report(err);
      const message = errorMessage(err);
      const before = this.writeErrors.get(name);
      this.writeErrors.set(name, message);
      if (before !== message) this.opts.onMirror(mirrorKey);
      this.log.warn({ err, delivery: name, op: op.op }, 'writing a delivery failed; retrying');
      throw err;
    }
  }

  /**
   * The payload Secret is entirely ours: replaced as a whole (an unconditional update, which
   * Secrets allow), created when missing. Not server-side apply: SSA turns a map that loses its
   * last key into null, and Kubernetes then refuses the object.
   */
  private async applyPayload(payload: PayloadSecret): Promise<void> {
    const name = payload.metadata.name;
    const namespace = this.agentNamespace;
    const body = payload as V1Secret;
    let res: V1Secret;
    try {
      res = await this.counted('Secret', 'update', () =>
        this.rest!.put<V1Secret>(corePath('secrets', namespace, name), body, {
          fieldManager: FIELD_MANAGER.hub,
        }),
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
      res = await this.counted('Secret', 'create', () =>
        this.rest!.post<V1Secret>(corePath('secrets', namespace), body, {
          fieldManager: FIELD_MANAGER.hub,
        }),
      );
    }
    const hash = res.metadata?.annotations?.[ANNOTATION_CONTENT_HASH];
    this.deletedPayload.delete(name);
    this.writtenPayload.wrote(
      name,
      res.metadata?.resourceVersion,
      hash ? { contentHash: hash } : {},
    );
    this.log.debug({ payload: name }, 'payload Secret written');
  }

  /**
   * Created when missing; otherwise a JSON patch that sets spec as a whole and our labels and
   * annotations (no resourceVersion needed, so the agent's status updates never conflict).
   */
  private async applyDelivery(
    delivery: MirrorDelivery,
    observed: MirrorDelivery | undefined,
  ): Promise<void> {
    const name = delivery.metadata.name ?? '';
    const namespace = this.agentNamespace;
    const ref = { group: GROUP, version: VERSION, plural: MIRROR_DELIVERY.plural, namespace, name };
    const collection = groupPath(GROUP, VERSION, MIRROR_DELIVERY.plural, namespace);
    let res: MirrorDelivery | undefined;
    if (!observed) {
      try {
        res = await this.counted('MirrorDelivery', 'create', () =>
          this.rest!.post<MirrorDelivery>(collection, delivery, {
            fieldManager: FIELD_MANAGER.hub,
          }),
        );
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        observed = await withDeadline('get MirrorDelivery', this.timeoutMs, () =>
          this.rest!.get<MirrorDelivery>(customObjectPath(ref)),
        );
      }
    }
    if (!res) {
      const ops = [
        { op: 'add', path: '/spec', value: delivery.spec },
        ...mapOps('labels', observed?.metadata.labels, delivery.metadata.labels),
        ...mapOps('annotations', observed?.metadata.annotations, delivery.metadata.annotations),
      ];
      res = await this.counted('MirrorDelivery', 'patch', () =>
        this.rest!.patch<MirrorDelivery>(
          customObjectPath(ref),
          ops,
          'application/json-patch+json',
          {
            fieldManager: FIELD_MANAGER.hub,
          },
        ),
      );
    }
    this.deletedDelivery.delete(name);
    this.writtenDelivery.wrote(name, res.metadata?.resourceVersion, res);
    this.log.debug({ delivery: name, contentHash: delivery.spec.contentHash }, 'delivery written');
  }

  private async deleteDelivery(name: string): Promise<void> {
    const seen = this.observe(name).delivery;
    if (!seen || seen.metadata.deletionTimestamp) return;
    try {
      await this.counted('MirrorDelivery', 'delete', () =>
        this.rest!.delete(
          groupPath(GROUP, VERSION, MIRROR_DELIVERY.plural, this.agentNamespace, name),
        ),
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    this.writtenDelivery.drop(name);
    this.deletedDelivery.add(name);
    this.log.debug({ delivery: name }, 'delivery deleted');
  }

  private async deletePayload(name: string): Promise<void> {
    if (!this.observe(name).payload) return;
    try {
      await this.counted('Secret', 'delete', () =>
        this.rest!.delete(corePath('secrets', this.agentNamespace, name)),
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    this.writtenPayload.drop(name);
    this.deletedPayload.add(name);
    this.log.debug({ payload: name }, 'payload Secret deleted');
  }

  private async counted<T>(
    kind: string,
    verb: 'create' | 'update' | 'patch' | 'delete',
    fn: () => Promise<T>,
  ): Promise<T> {
    try {
      const r = await withDeadline(`${verb} ${kind}`, this.timeoutMs, fn);
      this.opts.metrics.writesTotal.inc({ kind, verb });
      return r;
    } catch (err) {
      if (!(verb === 'delete' && isNotFound(err))) {
        this.opts.metrics.writeErrorsTotal.inc({
          kind,
          verb,
          code: String(httpStatusOf(err) ?? 'network'),
        });
      }
      throw err;
    }
  }
}

/** JSON patch ops that put `want`'s keys into metadata.<field> (creating the map if needed). */
function mapOps(
  field: 'labels' | 'annotations',
  have: Record<string, string> | undefined,
  want: Record<string, string> | undefined,
): { op: string; path: string; value: unknown }[] {
  const entries = Object.entries(want ?? {}).filter(([k, v]) => have?.[k] !== v);
  if (entries.length === 0) return [];
  if (!have) return [{ op: 'add', path: `/metadata/${field}`, value: { ...want } }];
  return entries.map(([k, v]) => ({
    op: 'add',
    path: `/metadata/${field}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`,
    value: v,
  }));
}

function contentHashOf(payload: PayloadSecret): string | undefined {
  return payload.metadata.annotations?.[ANNOTATION_CONTENT_HASH];
}

/** Identifies an op without its data: the payload is represented by its content hash. */
function fingerprintOf(op: DeliveryOp): string {
  if (op.op === 'delete') return 'delete';
  return canonicalJson({
    payload: op.payload ? { hash: contentHashOf(op.payload), meta: op.payload.metadata } : null,
    delivery: op.delivery ? { meta: op.delivery.metadata, spec: op.delivery.spec } : null,
  });
}
