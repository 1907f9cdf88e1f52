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
//
// Never over another's object: a MirrorDelivery is written only over one of the same mirror (its
// spec.mirror uid), a payload Secret only over one labelled as this hub's. A name found taken by
// an object the watches do not show (not labelled as this hub's) is reported by `observe` for a
// while, so the plan says whose it is, and looked at again by the next write after that.
//
// Deliveries an older hub named with an 8-character hash (legacyDeliveryName) are retired here:
// deleted once the delivery under the current name has been applied by the agent (which takes
// their copies over, see ownershipOf), or together with it.
import type { KubernetesObject, V1Secret } from '@kubernetes/client-node';
import type { KubeAccess } from '@mirrorhub/shared/k8s/access';
import { GROUP, MIRROR_DELIVERY, VERSION, type MirrorDelivery } from '@mirrorhub/shared/api/index';
import {
  canonicalJson,
  deliveryName,
  legacyDeliveryName,
  mirrorRef,
  parseMirrorRef,
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
import { WriteOverlay } from '@mirrorhub/shared/controller/overlay';
import type { ClusterTarget } from './target.js';
import {
  ANNOTATION_CONTENT_HASH,
  ANNOTATION_MIRROR,
  ANNOTATION_SIGNATURE,
  FIELD_MANAGER,
  LABEL_ORIGIN_CLUSTER,
  LABEL_PAYLOAD,
} from '@mirrorhub/shared/contract';

/** What the cluster holds for one delivery name, as far as the hub knows. */
export interface DeliveryObservation {
  delivery?: MirrorDelivery;
  payload?: PayloadObservation;
  writeError?: string;
  /** A delivery or payload an older hub left under legacyDeliveryName, still there. */
  legacy?: string;
}

/**
 * How long a delivery found under a mirror's name, not ours to write and not shown by the watch,
 * is reported without another look; doubled on each look that finds it again, up to the max.
 */
export const FOREIGN_RECHECK_MS = 30_000;
export const FOREIGN_RECHECK_MAX_MS = 5 * 60_000;

/** A write refused because the object there is not ours to write over. */
export class OwnershipConflictError extends Error {
  override readonly name = 'OwnershipConflictError';
}

/** A payload Secret, by its marks only: the content hash and the hub's signature it carries. */
export interface PayloadObservation {
  contentHash?: string;
  signature?: string;
}

/** A payload Secret's observation from its annotations. */
function payloadObservation(annotations: Record<string, string> | undefined): PayloadObservation {
  const contentHash = annotations?.[ANNOTATION_CONTENT_HASH];
  const signature = annotations?.[ANNOTATION_SIGNATURE];
  return {
    ...(contentHash !== undefined ? { contentHash } : {}),
    ...(signature !== undefined ? { signature } : {}),
  };
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
  private readonly writtenPayload = new WriteOverlay<PayloadObservation>();
  /** Deleted by us; gone as far as plans go, even while an agent finalizer keeps it. */
  private readonly deletedDelivery = new Set<string>();
  private readonly deletedPayload = new Set<string>();
  /** Deliveries found under our names that the watch does not show (see noteForeign). */
  private readonly foreign = new Map<
    string,
    { delivery: MirrorDelivery; at: number; ttlMs: number; timer: Timer }
  >();
  /** Name -> the mirror whose name it is, while a delivery of another mirror holds it. */
  private readonly interest = new Map<string, string>();
  /** Current delivery name -> the legacy name an older hub gave it, where objects have it. */
  private readonly legacyNames = new Map<string, string>();
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
    for (const f of this.foreign.values()) f.timer.cancel();
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
    const legacy = this.legacyNames.get(name);
    return (
      this.deliveries?.get(name, this.agentNamespace) !== undefined ||
      this.payloads?.get(name, this.agentNamespace) !== undefined ||
      (legacy !== undefined && this.holds(legacy) === true)
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
        out.payload = payloadObservation(cached.metadata?.annotations);
      }
    }
    if (!out.delivery) {
      const f = this.foreign.get(name);
      if (f && this.clock.now() - f.at < f.ttlMs) out.delivery = f.delivery;
    }
    const err = this.writeErrors.get(name);
    if (err !== undefined) out.writeError = err;
    const legacy = this.legacyHeld(name);
    if (legacy !== undefined) out.legacy = legacy;
    return out;
  }

  /** The legacy name of delivery `name`, when something is still there under it (not deleting). */
  private legacyHeld(name: string): string | undefined {
    const legacy = this.legacyNames.get(name);
    if (legacy === undefined) return undefined;
    const seen = this.observe(legacy);
    const held =
      (seen.delivery !== undefined && !seen.delivery.metadata.deletionTimestamp) ||
      seen.payload !== undefined;
    return held ? legacy : undefined;
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
    if (written === this.writtenDelivery) this.forgetForeign(name); // the watch shows it now
    const key = obj.metadata?.annotations?.[ANNOTATION_MIRROR];
    const waiting = this.interest.get(name);
    if (waiting !== undefined && waiting !== key) this.opts.onMirror(waiting);
    const current = key === undefined ? undefined : this.currentNameOfLegacy(name, key);
    if (current !== undefined) {
      if (!deleted) this.legacyNames.set(current, name);
      else if (this.holds(name) === false) this.legacyNames.delete(current);
    }
    this.retireLegacy(current ?? name);
    if (key) this.opts.onMirror(key);
  }

  /** The current delivery name of `name`, when `name` is the legacy name of mirror `key`. */
  private currentNameOfLegacy(name: string, key: string): string | undefined {
    const id = parseMirrorRef(key);
    if (!id || legacyDeliveryName(id, this.opts.originCluster) !== name) return undefined;
    return deliveryName(id, this.opts.originCluster);
  }

  /**
   * Delete the legacy delivery of `name` once the agent has applied the delivery under `name`
   * (its report is for the current spec and generation) and reports no copy it could not take
   * over from the legacy one (an agent older than ownershipOf's takeover reports those as
   * conflicts naming it: then the legacy delivery stays, and so do its copies, until the agent is
   * upgraded too). The agent's finalizer on the legacy delivery then has nothing left to remove.
   */
  private retireLegacy(name: string): void {
    const legacy = this.legacyHeld(name);
    if (legacy === undefined || this.wanted.has(legacy)) return;
    const d = this.deliveries?.get(name, this.agentNamespace);
    const report = d?.status;
    if (!d || !report || d.metadata.deletionTimestamp) return;
    const key = mirrorRef(d.spec.mirror);
    if (this.currentNameOfLegacy(legacy, key) !== name) return;
    const applied =
      report.observedHash === d.spec.contentHash &&
      (d.metadata.generation === undefined || report.observedGeneration === d.metadata.generation);
    const blocked = (report.namespaces ?? []).some(
      (n) => n.state === 'Conflict' && (n.message ?? '').includes(legacy),
    );
    if (!applied || blocked) return;
    this.log.info({ delivery: legacy, replacedBy: name }, 'retiring a legacy-named delivery');
    this.wanted.set(legacy, { mirrorKey: key, op: { op: 'delete' }, fingerprint: 'delete' });
    if (this.synced) this.queue.add(legacy);
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
    let skipped = false;
    try {
      if (op.op === 'apply') {
        const seen = this.observe(name);
        let observed = seen.delivery;
        if (op.delivery && !observed) observed = await this.lookUpDelivery(name);
        if (op.delivery && observed && !mayWrite(observed, op.delivery)) {
          // Another mirror's, or one being deleted: nothing is written. The plan sees it now.
          this.noteForeign(name, observed, op.delivery, mirrorKey);
          skipped = true;
        } else if (
          op.payload &&
          (seen.payload?.contentHash !== contentHashOf(op.payload) ||
            seen.payload?.signature !== op.payload.metadata.annotations?.[ANNOTATION_SIGNATURE])
        ) {
          await this.applyPayload(op.payload, seen.payload !== undefined);
        }
        if (!skipped && op.delivery && !deliveryUpToDate(observed, op.delivery)) {
          await this.applyDelivery(op.delivery, observed, mirrorKey);
        }
      } else {
        const legacy = this.legacyNames.get(name);
        await this.deleteDelivery(name);
        await this.deletePayload(name);
        if (legacy !== undefined) {
          await this.deleteDelivery(legacy);
          await this.deletePayload(legacy);
        }
      }
      if (this.wanted.get(name) === want) this.wanted.delete(name);
      // A delete may produce no watch event (already gone): tell the mirror either way.
      if (this.writeErrors.delete(name) || op.op === 'delete' || skipped) {
        this.opts.onMirror(mirrorKey);
      }
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
   * last key into null, and Kubernetes then refuses the object. Replaced only when it is labelled
   * as this hub's payload: one our watch does not show (`known` false) is created, and a Secret
   * already holding the name is looked at first.
   */
  private async applyPayload(payload: PayloadSecret, known: boolean): Promise<void> {
    const name = payload.metadata.name;
    const namespace = this.agentNamespace;
    const body = payload as V1Secret;
    const path = corePath('secrets', namespace, name);
    const put = () =>
      this.counted('Secret', 'update', () =>
        this.rest!.put<V1Secret>(path, body, { fieldManager: FIELD_MANAGER.hub }),
      );
    const post = () =>
      this.counted('Secret', 'create', () =>
        this.rest!.post<V1Secret>(corePath('secrets', namespace), body, {
          fieldManager: FIELD_MANAGER.hub,
        }),
      );
    let res: V1Secret;
    if (known) {
      try {
        res = await put();
      } catch (err) {
        if (!isNotFound(err)) throw err;
        res = await post();
      }
    } else {
      try {
        res = await post();
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        const existing = await withDeadline('get Secret', this.timeoutMs, () =>
          this.rest!.get<V1Secret>(path),
        );
        const labels = existing.metadata?.labels ?? {};
        if (
          labels[LABEL_PAYLOAD] !== 'true' ||
          labels[LABEL_ORIGIN_CLUSTER] !== this.opts.originCluster
        ) {
          throw new OwnershipConflictError(
            `Secret ${name} (namespace ${namespace}) exists and is not a payload of this hub ` +
              `(labels ${LABEL_PAYLOAD}=true, ${LABEL_ORIGIN_CLUSTER}=${this.opts.originCluster}): ` +
              `nothing is written there; if it is stale, delete it`,
          );
        }
        res = await put();
      }
    }
    this.deletedPayload.delete(name);
    this.writtenPayload.wrote(
      name,
      res.metadata?.resourceVersion,
      payloadObservation(res.metadata?.annotations),
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
    mirrorKey: string,
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
        this.noteForeign(name, observed, delivery, mirrorKey);
        assertMayWrite(observed, delivery, namespace);
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

  /**
   * A delivery the caches do not show: read it before writing anything for it (once per new
   * delivery), so one not labelled as this hub's is never written over, nor its payload.
   */
  private async lookUpDelivery(name: string): Promise<MirrorDelivery | undefined> {
    const path = customObjectPath({
      group: GROUP,
      version: VERSION,
      plural: MIRROR_DELIVERY.plural,
      namespace: this.agentNamespace,
      name,
    });
    try {
      return await withDeadline('get MirrorDelivery', this.timeoutMs, () =>
        this.rest!.get<MirrorDelivery>(path),
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
      this.forgetForeign(name);
      return undefined;
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
    prev?.timer.cancel();
    const ttlMs = prev ? Math.min(prev.ttlMs * 2, FOREIGN_RECHECK_MAX_MS) : FOREIGN_RECHECK_MS;
    const timer = this.clock.setTimer(() => this.opts.onMirror(mirrorKey), ttlMs);
    this.foreign.set(name, { delivery: found, at: this.clock.now(), ttlMs, timer });
  }

  private forgetForeign(name: string): void {
    this.foreign.get(name)?.timer.cancel();
    this.foreign.delete(name);
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

/**
 * Whether `existing` may be written over with `desired`: the same mirror (kind, namespace, name
 * and uid) from the same origin, and not being deleted (a new one waits until it is gone).
 */
function mayWrite(existing: MirrorDelivery, desired: MirrorDelivery): boolean {
  const have = (existing.spec as Partial<MirrorDelivery['spec']> | undefined) ?? {};
  return (
    !existing.metadata?.deletionTimestamp &&
    have.mirror !== undefined &&
    have.mirror.uid === desired.spec.mirror.uid &&
    mirrorRef(have.mirror) === mirrorRef(desired.spec.mirror) &&
    have.originCluster === desired.spec.originCluster
  );
}

function assertMayWrite(existing: MirrorDelivery, desired: MirrorDelivery, ns: string): void {
  if (mayWrite(existing, desired)) return;
  const name = existing.metadata?.name ?? '';
  if (existing.metadata?.deletionTimestamp) {
    throw new OwnershipConflictError(
      `MirrorDelivery ${name} (namespace ${ns}) is being deleted; writing once it is gone`,
    );
  }
  const claimed = (existing.spec as Partial<MirrorDelivery['spec']> | undefined)?.mirror;
  throw new OwnershipConflictError(
    `MirrorDelivery ${name} (namespace ${ns}) belongs to another mirror ` +
      `(${claimed ? mirrorRef(claimed) : '?'} uid ${claimed?.uid || '(none)'}), not to this one ` +
      `(uid ${desired.spec.mirror.uid}): nothing is written there; if it is stale, delete it`,
  );
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
