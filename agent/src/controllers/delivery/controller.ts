// The delivery controller's I/O: watch what a delivery depends on, route every change to the
// deliveries it concerns, and for each one gather -> plan -> apply -> report status.
//
// What is cached (all through shared createWatcher):
// - MirrorDeliveries and payload Secrets in the agent namespace: full objects (one each per
//   mirror; the payload data is what copies are made of).
// - Namespaces: metadata only, slimmed to name, labels and whether it is terminating.
// - Copies (Secrets and ConfigMaps labelled mirrorhub.io/managed-by=mirrorhub, cluster-wide):
//   metadata only, slimmed to identity, resourceVersion and the mirrorhub.io/ marks. Copy data
//   is never cached: memory follows the number of copies, and unrelated Secrets are never seen.
//
// Drift detection without data: see knowledge.ts.

import type { KubernetesObject, V1Secret } from '@kubernetes/client-node';
// Subpath imports only: the root of @mirrorhub/shared also loads client-node, which the agent
// does not need (see shared/src/k8s/access.ts on memory).
import {
  MIRROR_DELIVERY,
  type MirrorDelivery,
  type MirrorDeliveryStatus,
  type SourceKind,
} from '@mirrorhub/shared/api/types.gen';
import type { NamespaceMatcher } from '@mirrorhub/shared/mirror/namespaces';
import type { Policy } from '@mirrorhub/shared/mirror/policy';
import type { Verifier } from '@mirrorhub/shared/mirror/signing';
import { mergePatchBody } from '@mirrorhub/shared/mirror/status';
import { readPayload } from '@mirrorhub/shared/mirror/shape';
import {
  createWatcher,
  instrumentWatcher,
  stripManagedFields,
  type Watcher,
} from '@mirrorhub/shared/k8s/watcher';
import { WorkQueue, type ProcessObservation } from '@mirrorhub/shared/k8s/workqueue';
import { realClock, type Clock } from '@mirrorhub/shared/runtime/clock';
import { errorMessage, httpStatusOf } from '@mirrorhub/shared/runtime/errors';
import { childLogger, type Logger } from '@mirrorhub/shared/runtime/log';
import type { ControllerMetrics } from '@mirrorhub/shared/runtime/metrics';
import type { KubeAccess } from '@mirrorhub/shared/k8s/access';
import { EventRecorder } from '@mirrorhub/shared/k8s/events';
import {
  CONTENT_TYPE,
  RestClient,
  groupPath,
  isConflict,
  isNotFound,
} from '@mirrorhub/shared/k8s/rest';
import { applyActions, restCopyClient, type CopyClient, type WriteObserver } from './apply.js';
import { deliveryEvents } from './events.js';
import { CopyKnowledge, deliveryOf } from './knowledge.js';
import { countWrites, logOutcomes, registerGauges } from './metrics.js';
import { checkSignatures } from './signature.js';
import { copyListers, desiredCopy, verifyAll } from './verify.js';
import { Compactor } from '../../compact.js';
import {
  Interner,
  slimCopy,
  slimDelivery,
  slimNamespace,
  type CopyObject,
  type NamespaceObject,
} from './cached.js';
import {
  compileDeliveryMatcher,
  plan,
  settle,
  type ConflictInfo,
  type NamespaceView,
  type Outcome,
  type PlanInput,
} from './plan.js';
import {
  AGENT_FINALIZER,
  ANNOTATION_CONTENT_HASH,
  FIELD_MANAGER,
  LABEL_MANAGED_BY,
  LABEL_PAYLOAD,
  MANAGED_BY_VALUE,
  USER_AGENT,
} from '@mirrorhub/shared/contract';

export const CONTROLLER_NAME = 'delivery';

export interface DeliveryControllerOptions {
  /** Any KubeAccess (shared/src/k8s/access.ts), or client-node's KubeConfig. */
  kubeConfig: KubeAccess;
  /** The agent namespace: MirrorDeliveries and payload Secrets live here. */
  namespace: string;
  /** This cluster's name as the hub knows it: deliveries are signed for it. */
  clusterName: string;
  /** What this cluster lets the agent write (the cluster owner's configuration). */
  policy: Policy;
  /** The hub public keys this agent trusts. */
  verifier: Verifier;
  agentVersion: string;
  logger: Logger;
  metrics: ControllerMetrics;
  /** Full resync of every delivery this often (jittered +10%); default 300 s. */
  resyncMs?: number;
  /** Deliveries reconciled at once (default 4). */
  concurrency?: number;
  /** Copy writes in flight at once per delivery (default 16). */
  writeParallelism?: number;
  /** Identity in Events' reportingInstance; no Events when undefined. */
  eventsInstance?: string;
  /**
   * How long a payload change waits for the matching contentHash change before copies are
   * checked against it (default 2000 ms). See `CopyKnowledge.payloadSettling`.
   */
  payloadSettleMs?: number;
  /** Compacts the heap, run once the agent is quiet after a burst of work (see compact.ts). */
  gc?: (() => void) | undefined;
  clock?: Clock;
}

interface DeliveryState {
  /** The delivery these notes are about: a delivery re-created under the same name starts clean. */
  uid?: string | undefined;
  failures: Map<string, string>;
  conflicts: Map<string, { info: ConflictInfo; at: number }>;
  matcher?: { uid: string | undefined; generation: number | undefined; matcher: NamespaceMatcher };
  /** The delivery as our last patch returned it, until the cache catches up with it. */
  patched?: { staleVersion: string | undefined; obj: MirrorDelivery };
}

/** Retry a delivery with backoff after failed writes (its status was reported first). */
class WritesFailedError extends Error {
  override readonly name = 'WritesFailedError';
}

function sameLabels(a: Record<string, string> | undefined, b: Record<string, string> | undefined) {
  const ka = Object.keys(a ?? {});
  return ka.length === Object.keys(b ?? {}).length && ka.every((k) => a?.[k] === b?.[k]);
}

export class DeliveryController {
  private readonly opts: DeliveryControllerOptions;
  private readonly log: Logger;
  private readonly metrics: ControllerMetrics;
  private readonly clock: Clock;
  private readonly rest: RestClient;
  private readonly copyClient: CopyClient;
  private readonly events: EventRecorder | undefined;
  private readonly resyncMs: number;

  readonly deliveries: Watcher<MirrorDelivery>;
  readonly payloads: Watcher<V1Secret>;
  readonly namespaces: Watcher<NamespaceObject>;
  readonly copies: Record<SourceKind, Watcher<CopyObject>>;
  private readonly watchers: Watcher<KubernetesObject>[];

  /** What we know of each copy's content (drift detection without data). */
  private readonly knowledge: CopyKnowledge;
  private readonly intern = new Interner();
  private readonly state = new Map<string, DeliveryState>();

  private readonly compactor: Compactor;
  private queue: WorkQueue | undefined;
  private readonly unsubscribe: (() => void)[] = [];
  private started = false;
  private stopped = false;

  constructor(opts: DeliveryControllerOptions) {
    this.opts = opts;
    this.log = childLogger(opts.logger, { controller: CONTROLLER_NAME });
    this.metrics = opts.metrics;
    this.clock = opts.clock ?? realClock;
    this.rest = new RestClient(opts.kubeConfig, { userAgent: USER_AGENT.agent });
    this.copyClient = restCopyClient(this.rest, FIELD_MANAGER.agent);
    this.events =
      opts.eventsInstance === undefined
        ? undefined
        : new EventRecorder(this.rest, FIELD_MANAGER.agent, opts.eventsInstance, this.log);
    this.resyncMs = opts.resyncMs ?? 300_000;
    this.compactor = new Compactor({ gc: opts.gc, clock: this.clock });
    const kc = opts.kubeConfig;
    const ns = opts.namespace;

    this.deliveries = createWatcher<MirrorDelivery>(
      kc,
      {
        group: MIRROR_DELIVERY.group,
        version: MIRROR_DELIVERY.version,
        plural: MIRROR_DELIVERY.plural,
        namespace: ns,
      },
      { resource: 'mirrordeliveries', transform: slimDelivery(this.intern), clock: this.clock },
    );
    this.payloads = createWatcher<V1Secret>(
      kc,
      { version: 'v1', plural: 'secrets', namespace: ns, labelSelector: `${LABEL_PAYLOAD}=true` },
      { resource: 'payload-secrets', clock: this.clock },
    );
    this.namespaces = createWatcher<NamespaceObject>(
      kc,
      { version: 'v1', plural: 'namespaces', metadataOnly: true },
      { resource: 'namespaces', transform: slimNamespace(this.intern), clock: this.clock },
    );
    const copyWatcher = (kind: SourceKind, plural: string) =>
      createWatcher<CopyObject>(
        kc,
        {
          version: 'v1',
          plural,
          labelSelector: `${LABEL_MANAGED_BY}=${MANAGED_BY_VALUE}`,
          metadataOnly: true,
        },
        {
          resource: `copy-${plural}`,
          transform: slimCopy(
            kind,
            this.intern,
            (name, ns) => this.copies[kind].get(name, ns)?.metadata.uid,
          ),
          clock: this.clock,
        },
      );
    this.copies = {
      Secret: copyWatcher('Secret', 'secrets'),
      ConfigMap: copyWatcher('ConfigMap', 'configmaps'),
    };
    this.knowledge = new CopyKnowledge(this.copies, this.clock, opts.payloadSettleMs);
    this.watchers = [
      this.deliveries,
      this.payloads,
      this.namespaces,
      this.copies.Secret,
      this.copies.ConfigMap,
    ] as Watcher<KubernetesObject>[];

    const state = this.state;
    registerGauges(this.metrics.registry, this.copies, {
      totals() {
        let conflicts = 0;
        let failures = 0;
        for (const st of state.values()) {
          conflicts += st.conflicts.size;
          failures += st.failures.size;
        }
        return { conflicts, failures };
      },
    });
    this.route();
  }

  // ---- lifecycle ------------------------------------------------------------------------------

  /** Start every watcher and resolve once all have listed. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    for (const w of this.watchers) {
      this.unsubscribe.push(instrumentWatcher(w, { logger: this.log, metrics: this.metrics }));
      w.start();
    }
    await Promise.all(this.watchers.map((w) => w.synced));
    this.log.info(
      {
        deliveries: this.deliveries.size,
        namespaces: this.namespaces.size,
        copies: this.copies.Secret.size + this.copies.ConfigMap.size,
      },
      'caches synced',
    );
  }

  hasSynced(): boolean {
    return this.watchers.every((w) => w.hasSynced());
  }

  /**
   * Reconcile deliveries until `signal` aborts (a leadership term, or the process's life), then
   * wait for in-flight reconciles. Call after start().
   */
  async run(signal: AbortSignal): Promise<void> {
    if (signal.aborted || this.stopped) return;
    const queue = new WorkQueue({
      name: CONTROLLER_NAME,
      concurrency: this.opts.concurrency ?? 4,
      process: (key) => this.reconcile(key),
      observe: (o) => this.observe(o),
      clock: this.clock,
    });
    this.queue = queue;
    this.metrics.observeQueue(CONTROLLER_NAME, queue);
    await this.checkCopies(signal);
    if (!signal.aborted && !this.stopped) {
      for (const d of this.deliveries.list()) queue.add(d.metadata.name ?? '');
      queue.start();
      this.log.info('controller running');
      await new Promise<void>((resolve) => {
        if (signal.aborted) return resolve();
        signal.addEventListener('abort', () => resolve(), { once: true });
      });
    }
    this.queue = undefined;
    await queue.shutdown({ timeoutMs: 20_000 });
    this.log.info('controller stopped');
  }

  /** Stop the watchers (call after every run() returned). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.compactor.stop();
    await this.queue?.shutdown({ timeoutMs: 20_000 });
    for (const u of this.unsubscribe.splice(0)) u();
    await Promise.all(this.watchers.map((w) => w.stop()));
    this.rest.close();
  }

  /** Resolves when no delivery is queued or being reconciled (tests, benchmarks). */
  async idle(): Promise<void> {
    await this.queue?.idle();
  }

  /** The bulk check of every copy at the start of a term (verify.ts). */
  private checkCopies(signal: AbortSignal): Promise<void> {
    const ns = this.opts.namespace;
    return verifyAll(
      {
        listers: copyListers(this.opts.kubeConfig),
        desired: (name) => {
          const d = this.deliveries.get(name, ns);
          return desiredCopy(d, d && this.payloads.get(d.spec.payloadSecretName, ns));
        },
        intact: (kind, obj, payloadVersion) =>
          this.knowledge.holds(kind, obj.metadata ?? {}, payloadVersion),
        logger: this.log,
        clock: this.clock,
      },
      signal,
    );
  }

  // ---- event routing --------------------------------------------------------------------------

  private enqueue(name: string | undefined): void {
    if (name) this.queue?.add(name);
  }

  private route(): void {
    this.deliveries.addHandler({
      onAdd: (d) => this.enqueue(d.metadata.name),
      onUpdate: (d, old) => {
        // The cache has moved past the version our last patch replaced: drop the patch's answer.
        const st = this.state.get(d.metadata.name ?? '');
        if (st?.patched && st.patched.staleVersion !== d.metadata.resourceVersion)
          delete st.patched;
        // Our own status patches come back as updates: only spec and metadata matter.
        const m = d.metadata;
        const o = old.metadata;
        if (
          m.generation === o.generation &&
          String(m.deletionTimestamp ?? '') === String(o.deletionTimestamp ?? '') &&
          (m.finalizers ?? []).join(',') === (o.finalizers ?? []).join(',') &&
          sameLabels(m.annotations, o.annotations)
        ) {
          return;
        }
        this.enqueue(m.name);
      },
      onDelete: (d) => this.enqueue(d.metadata.name),
    });

    const payloadChanged = (s: V1Secret) => {
      const name = s.metadata?.name;
      for (const d of this.deliveries.list()) {
        if (d.spec.payloadSecretName === name) this.enqueue(d.metadata.name);
      }
    };
    this.payloads.addHandler({
      onAdd: payloadChanged,
      onUpdate: (s) => {
        if (s.metadata?.name) this.knowledge.payloadChanged(s.metadata.name);
        payloadChanged(s);
      },
      onDelete: (s) => {
        if (s.metadata?.name) this.knowledge.payloadDeleted(s.metadata.name);
        payloadChanged(s);
      },
    });

    this.namespaces.addHandler({
      onAdd: (ns) => this.namespaceChanged(ns),
      onUpdate: (ns, old) => {
        if (
          sameLabels(ns.metadata.labels, old.metadata.labels) &&
          Boolean(ns.metadata.deletionTimestamp) === Boolean(old.metadata.deletionTimestamp)
        ) {
          return;
        }
        this.namespaceChanged(ns, old);
      },
      onDelete: (ns) => this.namespaceChanged(ns),
    });

    for (const kind of ['Secret', 'ConfigMap'] as const) {
      this.copies[kind].addHandler({
        onAdd: (c) => {
          if (!this.knowledge.added(c)) this.enqueue(deliveryOf(c));
        },
        onUpdate: (c, old) => {
          // A copy relabelled to another delivery: the one it left looks again too.
          if (deliveryOf(old) !== deliveryOf(c)) this.enqueue(deliveryOf(old));
          if (!this.knowledge.updated(c, old)) this.enqueue(deliveryOf(c));
        },
        onDelete: (c) => {
          if (!this.knowledge.deleted(c)) this.enqueue(deliveryOf(c));
        },
      });
    }
  }

  private namespaceChanged(ns: NamespaceObject, old?: NamespaceObject): void {
    const name = ns.metadata.name;
    const withCopies = new Set<string | undefined>();
    for (const c of [...this.copies.Secret.list(name), ...this.copies.ConfigMap.list(name)]) {
      withCopies.add(deliveryOf(c));
    }
    for (const d of this.deliveries.list()) {
      const dn = d.metadata.name ?? '';
      if (withCopies.has(dn)) {
        this.enqueue(dn);
        continue;
      }
      const m = this.matcherFor(d);
      if (!m.ok) continue;
      if (
        m.matches({ name, labels: ns.metadata.labels }) ||
        (old && m.matches({ name, labels: old.metadata.labels }))
      ) {
        this.enqueue(dn);
      }
    }
  }

  private stateOf(name: string): DeliveryState {
    let s = this.state.get(name);
    if (!s) this.state.set(name, (s = { failures: new Map(), conflicts: new Map() }));
    return s;
  }

  /** Compiled matcher, cached per delivery uid and generation. */
  private matcherFor(d: MirrorDelivery): NamespaceMatcher {
    const s = this.stateOf(d.metadata.name ?? '');
    const { uid, generation } = d.metadata;
    if (!s.matcher || s.matcher.uid !== uid || s.matcher.generation !== generation) {
      s.matcher = { uid, generation, matcher: compileDeliveryMatcher(d) };
    }
    return s.matcher.matcher;
  }

  // ---- reconcile ------------------------------------------------------------------------------

  private async reconcile(name: string): Promise<{ requeueAfterMs: number } | void> {
    const log = childLogger(this.log, { key: name });
    let delivery = this.deliveries.get(name, this.opts.namespace);
    if (!delivery) {
      this.state.delete(name);
      return;
    }
    let st = this.stateOf(name);
    if (st.uid !== undefined && st.uid !== delivery.metadata.uid) {
      this.state.delete(name);
      st = this.stateOf(name);
    }
    st.uid = delivery.metadata.uid;
    // Our last patch may not be in the cache yet: use what the API server returned.
    if (st.patched) {
      if (st.patched.staleVersion === delivery.metadata.resourceVersion) delivery = st.patched.obj;
      else delete st.patched;
    }

    const payloadSecret = this.payloads.get(delivery.spec.payloadSecretName, this.opts.namespace);
    const payloadVersion = payloadSecret?.metadata?.resourceVersion;
    const payloadHash = payloadSecret?.metadata?.annotations?.[ANNOTATION_CONTENT_HASH];
    if (
      payloadHash &&
      payloadHash !== delivery.spec.contentHash &&
      !delivery.metadata.deletionTimestamp
    ) {
      // The hub has written one of the two and not yet the other: wait for the second event.
      log.debug('payload Secret and delivery contentHash differ; waiting for the hub');
      return { requeueAfterMs: this.resyncMs };
    }

    const now = this.clock.now();
    for (const [ns, c] of st.conflicts) {
      // Conflicts are rechecked every resync: we do not watch objects we do not own.
      if (now - c.at >= this.resyncMs) st.conflicts.delete(ns);
    }

    const settling = this.knowledge.payloadSettling(delivery.spec.payloadSecretName, now);
    const { copies, deferred } = this.knowledge.copyViews(name, payloadVersion, settling > 0);
    const input: PlanInput = {
      delivery,
      payload: payloadSecret ? readPayload(payloadSecret) : null,
      namespaces: this.namespaceViews(),
      copies,
      conflicts: new Map([...st.conflicts].map(([ns, c]) => [ns, c.info])),
      failures: st.failures,
      agentVersion: this.opts.agentVersion,
      now: new Date(now),
      matcher: this.matcherFor(delivery),
      policy: this.opts.policy,
      signature: checkSignatures(
        this.opts.verifier,
        { cluster: this.opts.clusterName, namespace: this.opts.namespace },
        delivery,
        payloadSecret,
      ),
    };
    const p = plan(input);

    if (p.addFinalizer) {
      const finalizers = [...(delivery.metadata.finalizers ?? []), AGENT_FINALIZER];
      const updated = await this.patchDelivery(delivery, { metadata: { finalizers } });
      if (!updated) return;
      delivery = updated;
      input.delivery = updated;
    }

    const outcomes =
      p.actions.length === 0
        ? []
        : await applyActions(
            {
              client: this.copyClient,
              deliveryName: name,
              // Adopt only where the cluster's policy allows it (the plan reports the rest).
              adopt:
                this.opts.policy.allowAdopt && (delivery.spec.conflictPolicy ?? 'Skip') === 'Adopt',
              observer: this.observer(payloadVersion),
            },
            p.actions,
            this.opts.writeParallelism ?? 16,
          );
    this.remember(
      st,
      outcomes,
      p.entries.map((e) => e.name),
    );
    const s = settle(input, p, outcomes);
    logOutcomes(log, outcomes);

    if (p.removeFinalizer && s.clean) {
      const finalizers = (delivery.metadata.finalizers ?? []).filter((f) => f !== AGENT_FINALIZER);
      await this.patchDelivery(delivery, { metadata: { finalizers } });
      log.info(
        { copies: outcomes.length },
        'delivery deleted: copies cleaned up, finalizer removed',
      );
      return;
    }
    if (s.statusChanged) {
      await this.patchStatus(delivery, s.status);
      this.announce(delivery, s.status);
    }

    const retry = outcomes.filter((o) => o.result === 'failed' || o.result === 'retry');
    if (retry.length > 0) {
      throw new WritesFailedError(
        `${retry.length} of ${outcomes.length} writes failed or raced; retrying with backoff`,
      );
    }
    // Copies not yet checked against a payload that just changed: look again once it settled.
    return { requeueAfterMs: deferred ? settling : this.resyncMs };
  }

  private namespaceViews(): NamespaceView[] {
    return this.namespaces.list().map((n) => ({
      name: n.metadata.name,
      labels: n.metadata.labels,
      terminating: Boolean(n.metadata.deletionTimestamp),
    }));
  }

  private observer(payloadVersion: string | undefined): WriteObserver {
    return {
      ...this.knowledge.observer(payloadVersion),
      ...countWrites(this.metrics, () => this.compactor.worked()),
    };
  }

  /** Fold this round's outcomes into what we remember per namespace. */
  private remember(st: DeliveryState, outcomes: readonly Outcome[], planned: string[]): void {
    const now = this.clock.now();
    for (const o of outcomes) {
      switch (o.result) {
        case 'ok':
        case 'unchanged':
          st.failures.delete(o.namespace);
          st.conflicts.delete(o.namespace);
          break;
        case 'failed':
          st.failures.set(o.namespace, o.message);
          break;
        case 'conflict':
          st.failures.delete(o.namespace);
          st.conflicts.set(o.namespace, {
            info: { message: o.message, adoptable: o.adoptable },
            at: now,
          });
          break;
        case 'retry':
          break;
      }
    }
    // Forget namespaces the plan no longer reports on (unselected, gone, copy now present).
    const relevant = new Set([...planned, ...outcomes.map((o) => o.namespace)]);
    for (const ns of st.failures.keys()) if (!relevant.has(ns)) st.failures.delete(ns);
    for (const ns of st.conflicts.keys()) if (!relevant.has(ns)) st.conflicts.delete(ns);
  }

  /** Merge-patch the delivery's metadata, conditional on the version we planned from. */
  private async patchDelivery(
    d: MirrorDelivery,
    body: { metadata: Record<string, unknown> },
  ): Promise<MirrorDelivery | undefined> {
    const name = d.metadata.name ?? '';
    try {
      const updated = await this.rest.patch<MirrorDelivery>(
        this.deliveryPath(name),
        { metadata: { ...body.metadata, resourceVersion: d.metadata.resourceVersion } },
        CONTENT_TYPE.merge,
        { fieldManager: FIELD_MANAGER.agent },
      );
      this.metrics.writesTotal.inc({ kind: 'MirrorDelivery', verb: 'patch' });
      this.stateOf(name).patched = {
        staleVersion: d.metadata.resourceVersion,
        // As the cache would hold it: without managedFields (one entry per reported namespace).
        obj: stripManagedFields(updated),
      };
      return updated;
    } catch (err) {
      this.metrics.writeErrorsTotal.inc({
        kind: 'MirrorDelivery',
        verb: 'patch',
        code: String(httpStatusOf(err) ?? 'none'),
      });
      if (isNotFound(err)) return undefined;
      if (isConflict(err))
        throw new Error(`delivery ${name} changed while we patched it`, { cause: err });
      throw err;
    }
  }

  /** The Events a status transition deserves (events.ts decides which). */
  private announce(d: MirrorDelivery, next: MirrorDeliveryStatus): void {
    if (!this.events) return;
    for (const e of deliveryEvents(d.status, next)) {
      void this.events.record(
        this.eventTarget(d),
        e.type,
        e.reason,
        e.action ?? 'Reconcile',
        e.message,
      );
    }
  }

  private eventTarget(d: MirrorDelivery) {
    return {
      apiVersion: d.apiVersion,
      kind: d.kind,
      name: d.metadata.name ?? '',
      namespace: this.opts.namespace,
      uid: d.metadata.uid,
    };
  }

  private deliveryPath(name: string): string {
    const { group, version, plural } = MIRROR_DELIVERY;
    return groupPath(group, version, plural, this.opts.namespace, name);
  }

  private async patchStatus(d: MirrorDelivery, status: MirrorDeliveryStatus): Promise<void> {
    const name = d.metadata.name ?? '';
    try {
      const updated = await this.rest.patch<MirrorDelivery>(
        `${this.deliveryPath(name)}/status`,
        // Fields we no longer report are sent as null, or they would stay.
        { status: mergePatchBody(d.status, status) },
        CONTENT_TYPE.merge,
        { fieldManager: FIELD_MANAGER.agent },
      );
      this.metrics.writesTotal.inc({ kind: 'MirrorDelivery', verb: 'patch' });
      this.stateOf(name).patched = {
        staleVersion: d.metadata.resourceVersion,
        // As the cache would hold it: without managedFields (one entry per reported namespace).
        obj: stripManagedFields(updated),
      };
    } catch (err) {
      this.metrics.writeErrorsTotal.inc({
        kind: 'MirrorDelivery',
        verb: 'patch',
        code: String(httpStatusOf(err) ?? 'none'),
      });
      if (isNotFound(err)) return;
      throw err;
    }
  }

  // ---- metrics ----------------------------------------------------------------------------------

  private observe(o: ProcessObservation): void {
    this.compactor.worked();
    const m = this.metrics;
    m.reconcileTotal.inc({ controller: CONTROLLER_NAME, result: o.result });
    m.reconcileDuration.observe({ controller: CONTROLLER_NAME }, o.durationMs / 1000);
    const log = childLogger(this.log, { key: o.key });
    if (o.result === 'error') {
      m.queueRetriesTotal.inc({ controller: CONTROLLER_NAME });
      const level = o.error instanceof WritesFailedError ? 'info' : 'warn';
      log[level](
        { err: errorMessage(o.error), retryInMs: o.retryInMs, failures: o.failures },
        'reconcile incomplete, retrying',
      );
    } else if (o.result === 'terminal') {
      log.error({ err: o.error }, 'reconcile failed permanently');
    }
  }
}

export function createDeliveryController(opts: DeliveryControllerOptions): DeliveryController {
  return new DeliveryController(opts);
}
