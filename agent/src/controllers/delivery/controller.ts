// The delivery controller: for each MirrorDelivery in the agent namespace, bring its copies in
// line and report status. Built on the controller kit (shared/src/kit/controller):
// - watches.ts: the caches, and which deliveries each change concerns;
// - knowledge.ts: what we know of each copy's content without caching data (drift detection);
// - notes.ts: what we remember of each delivery between reconciles (failures, conflicts);
// - verify.ts: the bulk check of every copy at the start of a term;
// - sequence.ts refuses a delivery older than one applied under its name (a replay), from what
//   memory.ts keeps in the agent's own ConfigMap;
// - plan.ts decides, apply.ts writes copies, events.ts picks the Events of a transition;
// - the kit's StatusWriter writes status (queued, so a report never holds up copies) and
//   finalizers; its Reconciler runs the queue.

import type { V1Secret } from '@kubernetes/client-node';
// Subpath imports only: the root of @mirrorhub/shared also loads client-node, which the agent
// does not need (see shared/src/kit/k8s/access.ts on memory).
import { MIRROR_DELIVERY, type MirrorDelivery } from '@mirrorhub/shared/api/types.gen';
import type { Policy } from '@mirrorhub/agent/policy';
import type { Verifier } from '@mirrorhub/shared/mirror/signing';
import { readPayload } from '@mirrorhub/shared/mirror/shape';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { RestClient, groupPath } from '@mirrorhub/shared/kit/k8s/rest';
import type { ProcessResult } from '@mirrorhub/shared/kit/k8s/workqueue';
import { Reconciler } from '@mirrorhub/shared/kit/controller/reconciler';
import { StatusWriter } from '@mirrorhub/shared/kit/controller/status';
import { realClock, sleep, type Clock } from '@mirrorhub/shared/kit/runtime/clock';
import { errorMessage } from '@mirrorhub/shared/kit/runtime/errors';
import { childLogger, type Logger } from '@mirrorhub/shared/kit/runtime/log';
import type { ControllerMetrics } from '@mirrorhub/shared/kit/runtime/metrics';
import { AGENT_FINALIZER, FIELD_MANAGER, USER_AGENT } from '@mirrorhub/shared/api/contract';
import { Compactor } from '../../compact.js';
import { applyActions, restCopyClient, type CopyClient, type TakeoverContext } from './apply.js';
import { deliveryEvents } from './events.js';
import { CopyKnowledge } from './knowledge.js';
import { countWrites, logOutcomes, registerGauges } from './metrics.js';
import { DeliveryNotes, type DeliveryNote } from './notes.js';
import { hubMidWrite, plan, settle, type Action, type Outcome, type PlanInput } from './plan.js';
import { SequenceMemory } from './memory.js';
import { judgeSequence } from './sequence.js';
import { predecessorOf, predecessorText, sourceToCheck } from './takeover.js';
import { checkSignatures, SignatureCache } from './signature.js';
import { copyListers, desiredCopy, verifyAll } from './verify.js';
import { DeliveryWatches } from './watches.js';

export const CONTROLLER_NAME = 'delivery';
/**
 * How long a delivery's status report may wait for the copy writes in hand (the new namespace's
 * other deliveries): the API server serves those first, and reports follow.
 */
const STATUS_HOLD_MS = 250;

export interface DeliveryControllerOptions {
  /** Any KubeAccess (shared/src/kit/k8s/access.ts), or client-node's KubeConfig. */
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
  /** See AgentConfig.watchProgressDeadlineSeconds. */
  watchProgressDeadlineMs?: number;
  /**
   * Deliveries reconciled at once (default 16). A new namespace queues every delivery selecting
   * it, one copy each: with fewer workers those copies land a few at a time instead of together
   * (docs/BENCHMARKS.md, Engine). A reconcile spends little CPU and mostly waits on the API
   * server, and the REST client caps connections at 32 anyway.
   */
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

/** Retry a delivery with backoff after failed writes (its status was reported first). */
class WritesFailedError extends Error {
  override readonly name = 'WritesFailedError';
}

export class DeliveryController {
  private readonly opts: DeliveryControllerOptions;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly rest: RestClient;
  private readonly copyClient: CopyClient;
  private readonly resyncMs: number;
  private readonly watches: DeliveryWatches;
  private readonly knowledge: CopyKnowledge;
  private readonly notes = new DeliveryNotes();
  private readonly signatures = new SignatureCache();
  private readonly sequences: SequenceMemory;
  private readonly writer: StatusWriter<MirrorDelivery>;
  private readonly reconciler: Reconciler;
  private readonly compactor: Compactor;
  private started = false;

  constructor(opts: DeliveryControllerOptions) {
    this.opts = opts;
    const { namespace, metrics } = opts;
    const log = (this.log = childLogger(opts.logger, { controller: CONTROLLER_NAME }));
    const clock = (this.clock = opts.clock ?? realClock);
    this.rest = new RestClient(opts.kubeConfig, { userAgent: USER_AGENT.agent });
    this.copyClient = restCopyClient(this.rest, FIELD_MANAGER.agent);
    this.resyncMs = opts.resyncMs ?? 300_000;
    this.compactor = new Compactor({ gc: opts.gc, clock });
    this.watches = new DeliveryWatches({
      kubeConfig: opts.kubeConfig,
      namespace,
      clock,
      resyncMs: this.resyncMs,
      progressDeadlineMs: opts.watchProgressDeadlineMs,
    });
    this.knowledge = new CopyKnowledge(this.watches.copies, clock, opts.payloadSettleMs);
    this.sequences = new SequenceMemory({
      rest: this.rest,
      namespace,
      fieldManager: FIELD_MANAGER.agent,
      logger: log,
      metrics,
      live: (name) => this.watches.delivery(name) !== undefined,
    });
    const { group, version, plural } = MIRROR_DELIVERY;
    this.writer = new StatusWriter<MirrorDelivery>({
      rest: this.rest,
      pathOf: (d) => groupPath(group, version, plural, namespace, d.metadata.name ?? ''),
      keyOf: (d) => d.metadata.name ?? '',
      fieldManager: FIELD_MANAGER.agent,
      metrics,
      // Events on transitions, reported as this pod (none when eventsInstance is undefined).
      reportingInstance: opts.eventsInstance,
      logger: log,
      // As the cache holds deliveries: without managedFields, namespace entries shared.
      asCached: this.watches.asCached,
      // Status is queued, not awaited (reconcile): a write that fails reconciles again.
      onQueuedWriteFailed: (key) => this.reconciler.add(key),
      // Copies first: a report goes out once the deliveries in hand are written (at most
      // STATUS_HOLD_MS later), not in the middle of a burst of copy writes.
      beforeQueuedWrite: async () => {
        const held = new AbortController();
        await Promise.race([this.reconciler.idle(), sleep(clock, STATUS_HOLD_MS, held.signal)]);
        held.abort();
      },
      clock,
    });
    this.reconciler = new Reconciler({
      name: CONTROLLER_NAME,
      reconcile: (name) => this.reconcile(name),
      concurrency: opts.concurrency ?? 16,
      logger: log,
      metrics,
      expected: (err) => err instanceof WritesFailedError,
      afterReconcile: () => this.compactor.worked(),
      clock,
    });
    registerGauges(metrics.registry, this.watches.copies, this.notes);
  }

  // ---- lifecycle ------------------------------------------------------------------------------

  /** Start every watcher and resolve once all have listed. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    const { knowledge, notes, writer, watches } = this;
    watches.start(this.reconciler, { knowledge, notes, writer });
    await this.reconciler.synced();
    this.log.info(
      {
        deliveries: watches.deliveries.size,
        namespaces: watches.namespaces.size,
        copies: watches.copies.Secret.size + watches.copies.ConfigMap.size,
      },
      'caches synced',
    );
  }

  hasSynced(): boolean {
    return this.started && this.reconciler.hasSynced();
  }

  /**
   * Reconcile deliveries until `signal` aborts (a leadership term, or the process's life), then
   * wait for in-flight reconciles. Each term starts with a bulk check of every copy. Call after
   * start().
   */
  async run(signal: AbortSignal): Promise<void> {
    await this.reconciler.run(signal, {
      prepare: (s) => this.checkCopies(s),
      keys: () => this.watches.deliveries.list().map((d) => d.metadata.name ?? ''),
    });
  }

  /** Stop reconciling and watching (call after every run() returned). */
  async stop(): Promise<void> {
    this.compactor.stop();
    await this.reconciler.stop();
    await this.writer.flushed();
    this.rest.close();
  }

  /**
   * Resolves when no delivery is queued or being reconciled and every status is written (tests,
   * benchmarks).
   */
  async idle(): Promise<void> {
    await this.reconciler.idle();
    await this.writer.flushed();
  }

  /**
   * The bulk check of every copy at the start of a term (verify.ts). The sequences are read
   * again in the term: another agent may have held it since.
   */
  private checkCopies(signal: AbortSignal): Promise<void> {
    this.sequences.reset();
    const { watches, knowledge } = this;
    return verifyAll(
      {
        listers: copyListers(this.opts.kubeConfig),
        desired: (name) => {
          const d = watches.delivery(name);
          return desiredCopy(d, d && watches.payload(d.spec.payloadSecretName));
        },
        intact: (kind, obj, payloadVersion) =>
          knowledge.holds(kind, obj.metadata ?? {}, payloadVersion),
        logger: this.log,
        clock: this.clock,
      },
      signal,
    );
  }

  // ---- reconcile: gather -> plan -> apply -> settle -> status --------------------------------

  private async reconcile(name: string): Promise<ProcessResult | void> {
    // Made only for the lines that need it (see logOutcomes).
    let keyed: Logger | undefined;
    const log = () => (keyed ??= childLogger(this.log, { key: name }));
    // Gather. Our last write stands in for the cached delivery until the cache has caught up.
    let delivery = this.writer.current(name, this.watches.delivery(name));
    if (!delivery) {
      this.notes.forget(name);
      this.watches.selections.forget(name);
      return;
    }
    const note = this.notes.of(delivery);
    const payload = this.watches.payload(delivery.spec.payloadSecretName);
    if (hubMidWrite(delivery, payload)) {
      log().debug('payload Secret and delivery contentHash differ; waiting for the hub');
      return { requeueAfterMs: this.resyncMs };
    }
    const { input, payloadVersion, settling, deferred } = this.gather(delivery, note, payload);
    let unrecorded: unknown;
    if (input.signature.ok) {
      // Not older than what was applied under the name; a sequence not applied yet is
      // remembered before anything is written for it, so a restart does not forget it.
      try {
        const verdict = judgeSequence(delivery, await this.sequences.memory());
        if (!verdict.ok) input.replay = verdict;
        else if (verdict.remember) await this.sequences.remember(name, verdict.remember);
      } catch (err) {
        // Without its memory the agent cannot tell a replay: nothing is acted on, status says
        // why, and the reconcile is tried again with backoff.
        unrecorded = err;
        input.memoryError = errorMessage(err);
      }
    }

    // Plan, then apply: the finalizer goes on before any copy is written.
    const p = plan(input);
    if (p.addFinalizer) {
      const updated = await this.setFinalizer(name, true);
      if (!updated) return;
      input.delivery = delivery = updated;
    }
    const outcomes = await this.apply(delivery, p.actions, payloadVersion);
    note.remember(outcomes, p.entries, this.clock.now());
    logOutcomes(this.log, outcomes, name);

    // Settle what the writes did into the status, and report it.
    const s = settle(input, p, outcomes);
    if (p.removeFinalizer && s.clean) {
      // Copies created moments ago are not in the cache yet, so this plan did not remove them:
      // wait for their watch events (their own adds do not queue us), then remove them too.
      const unseen = this.knowledge.unseenCopies(name);
      if (unseen > 0) {
        log().debug({ unseen }, 'delivery deleted: waiting for copies just created to show');
        return { requeueAfterMs: 250 };
      }
      await this.setFinalizer(name, false);
      log().info(
        { copies: outcomes.length },
        'delivery deleted: copies cleaned up, finalizer removed',
      );
      return;
    }
    if (s.statusChanged) {
      // Queued: the worker goes on to the next delivery's copies (what users wait for) while
      // the report is written; current() shows it to the next reconcile meanwhile.
      this.writer.queueStatus(delivery, s.status, deliveryEvents(delivery.status, s.status));
    }
    if (unrecorded !== undefined) throw unrecorded;
    const retry = outcomes.filter((o) => o.result === 'failed' || o.result === 'retry');
    if (retry.length > 0) {
      throw new WritesFailedError(
        `${retry.length} of ${outcomes.length} writes failed or raced; retrying with backoff`,
      );
    }
    // Copies not yet checked against a payload that just changed: look again once it settled.
    return { requeueAfterMs: deferred ? settling : this.resyncMs };
  }

  /**
   * Add or remove the agent's finalizer, after this delivery's queued status write: the patch is
   * conditional on the resourceVersion, which that write moves.
   */
  private async setFinalizer(name: string, present: boolean): Promise<MirrorDelivery | undefined> {
    await this.writer.sent(name);
    const delivery = this.writer.current(name, this.watches.delivery(name));
    return delivery && this.writer.setFinalizer(delivery, AGENT_FINALIZER, present);
  }

  /** Everything the plan decides from, out of the caches and what we know and remember. */
  private gather(
    delivery: MirrorDelivery,
    note: DeliveryNote,
    payloadSecret: V1Secret | undefined,
  ) {
    const now = this.clock.now();
    const payloadVersion = payloadSecret?.metadata?.resourceVersion;
    const settling = this.knowledge.payloadSettling(delivery.spec.payloadSecretName, now);
    const name = delivery.metadata.name ?? '';
    const { copies, deferred } = this.knowledge.copyViews(
      name,
      payloadVersion,
      settling > 0,
      delivery.metadata.generation,
    );
    const { verifier, clusterName: cluster, namespace } = this.opts;
    const matcher = this.notes.matcherFor(delivery);
    const input: PlanInput = {
      delivery,
      payload: payloadSecret ? readPayload(payloadSecret) : null,
      // The namespaces it selects and those holding its copies: the rest plan to nothing.
      namespaces: this.watches.selections.planViews(
        name,
        { matcher, acceptLabel: delivery.spec.acceptLabel },
        copies.map((c) => c.namespace),
      ),
      copies,
      conflicts: note.conflictsAt(now, this.resyncMs),
      failures: note.failures,
      agentVersion: this.opts.agentVersion,
      now: new Date(now),
      matcher,
      policy: this.opts.policy,
      signature: checkSignatures(
        verifier,
        { cluster, namespace },
        delivery,
        payloadSecret,
        this.signatures,
      ),
    };
    return { input, payloadVersion, settling, deferred };
  }

  /** How apply recognises and takes over a predecessor's copy of this delivery's source. */
  private takeoverContext(delivery: MirrorDelivery): TakeoverContext {
    const { policy, clusterName } = this.opts;
    return {
      predecessorOf: (existing, kind, sourceUid) =>
        predecessorOf(existing, kind, delivery, clusterName, sourceUid),
      sourceToCheck: (existing, kind) => sourceToCheck(existing, kind, delivery, clusterName),
      describe: (tool) => predecessorText(tool, delivery),
      enabled: policy.takeOver,
      offMessage: (what) => policy.takeOverOff(what),
      foreignPatterns: policy.foreignOwnership,
    };
  }

  private async apply(
    delivery: MirrorDelivery,
    actions: Action[],
    payloadVersion: string | undefined,
  ): Promise<Outcome[]> {
    if (actions.length === 0) return [];
    const context = {
      client: this.copyClient,
      deliveryName: delivery.metadata.name ?? '',
      // Adopt only where the cluster's policy allows it (the plan reports the rest).
      adopt: this.opts.policy.allowAdopt && (delivery.spec.conflictPolicy ?? 'Skip') === 'Adopt',
      takeover: this.takeoverContext(delivery),
      observer: {
        ...this.knowledge.observer(payloadVersion, delivery.metadata.generation),
        ...countWrites(this.opts.metrics, () => this.compactor.worked()),
      },
    };
    return applyActions(context, actions, this.opts.writeParallelism ?? 16);
  }
}

export function createDeliveryController(opts: DeliveryControllerOptions): DeliveryController {
  return new DeliveryController(opts);
}
