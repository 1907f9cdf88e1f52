// The reconciler skeleton every controller of hub and agent runs on: watchers route changes to
// keys, a work queue runs `reconcile(key)` for each (never concurrently with itself, with
// backoff on failure and requeue on request), and every reconcile is observed (metrics, logs).
// A controller brings its watches, its routing and its reconcile; the skeleton owns the
// lifecycle.
//
// Lifecycle: `watch()` registers and starts a watcher (instrumented: relists, restarts and event
// counts are logged and counted), `unwatch()` ends one needed only for a while (e.g. a watch of
// one Secret an object refers to); `synced()` resolves once every watcher listed. `run(signal)`
// processes keys until the signal aborts (a leadership term, or the process's life) and then
// waits for the reconciles in flight; `start()` is `run` for the controller's whole life. Keys
// added while no run is active wait for the next one. `stop()` ends it all.

import type { KubernetesObject } from '@kubernetes/client-node';
import { realClock, type Clock } from '../runtime/clock.js';
import type { Logger } from '../runtime/log.js';
import type { ControllerMetrics } from '../runtime/metrics.js';
import {
  instrumentWatcher,
  type ListReason,
  type Watcher,
  type WatchHandlers,
} from '../k8s/watcher.js';
import {
  WorkQueue,
  type ProcessObservation,
  type ProcessResult,
  type WorkQueueOptions,
} from '../k8s/workqueue.js';
import { observeReconciles } from './observe.js';

export interface ReconcilerOptions {
  /** The controller's name in logs and metrics (`controller` label). */
  name: string;
  reconcile(key: string, signal: AbortSignal): Promise<ProcessResult | void>;
  /** Keys reconciled at once (default 4). */
  concurrency?: number | undefined;
  logger: Logger;
  metrics: ControllerMetrics;
  /** Errors that are normal operation and reported in status: logged at info, not warn. */
  expected?: ((err: unknown) => boolean) | undefined;
  /** Called after every reconcile. */
  afterReconcile?: ((o: ProcessObservation) => void) | undefined;
  /** How long `run` waits for reconciles in flight when it ends (default 20 s). */
  shutdownTimeoutMs?: number | undefined;
  /** Per-key failure backoff (default: the work queue's, 200 ms doubling to 5 min). */
  backoff?: WorkQueueOptions['backoff'] | undefined;
  clock?: Clock | undefined;
}

export interface WatchRouting<T> extends WatchHandlers<T> {
  /**
   * The watcher listed afresh (its cache was replaced, `reason` says why) or, with reason
   * `checked`, found its cache current without listing; `resourceVersion` is the list's.
   */
  onListed?(listing: { reason: ListReason; resourceVersion: string }): void;
}

export class Reconciler {
  private readonly clock: Clock;
  private readonly watchers: Watcher<KubernetesObject>[] = [];
  private readonly unsubscribe: (() => void)[] = [];
  /** Per watcher, what `watch()` registered on it (for `unwatch()`). */
  private readonly routes = new Map<Watcher<KubernetesObject>, () => void>();
  private readonly lifetime = new AbortController();
  private queue: WorkQueue;
  private running: Promise<void> | undefined;
  private stopped = false;
  private stopping: Promise<void> | undefined;

  constructor(private readonly opts: ReconcilerOptions) {
    this.clock = opts.clock ?? realClock;
    this.queue = this.newQueue();
  }

  // ---- watches ---------------------------------------------------------------------------------

  /**
   * Route `w`'s changes with `routing`, instrument it and start it. Returns `w`. After `stop()`
   * (e.g. a watch begun by a reconcile that was still running), `w` is stopped, not started.
   */
  watch<T extends KubernetesObject>(w: Watcher<T>, routing: WatchRouting<T> = {}): Watcher<T> {
    if (this.stopped) {
      void w.stop();
      return w;
    }
    const { onListed, ...handlers } = routing;
    const subscriptions = [
      instrumentWatcher(w, { logger: this.opts.logger, metrics: this.opts.metrics }),
    ];
    if (onListed) {
      subscriptions.push(
        w.onEvent((e) => {
          if (e.type === 'listed') {
            onListed({ reason: e.reason, resourceVersion: e.resourceVersion });
          }
        }),
      );
    }
    if (handlers.onAdd || handlers.onUpdate || handlers.onDelete) {
      subscriptions.push(w.addHandler(handlers));
    }
    let routed = true;
    const unroute = () => {
      if (!routed) return;
      routed = false;
      for (const u of subscriptions) u();
    };
    this.unsubscribe.push(unroute);
    this.routes.set(w as unknown as Watcher<KubernetesObject>, unroute);
    this.watchers.push(w as unknown as Watcher<KubernetesObject>);
    w.start();
    return w;
  }

  /**
   * Stop routing `w`'s changes and stop it: a watch needed only for a while. Keys it queued
   * stay queued. A watcher this reconciler does not hold is left alone.
   */
  async unwatch<T extends KubernetesObject>(w: Watcher<T>): Promise<void> {
    const held = w as unknown as Watcher<KubernetesObject>;
    const unroute = this.routes.get(held);
    if (!unroute) return;
    this.routes.delete(held);
    unroute();
    remove(this.unsubscribe, unroute);
    remove(this.watchers, held);
    await w.stop();
  }

  /** Resolves once every watcher has listed (rejects if one is stopped first). */
  async synced(): Promise<void> {
    await Promise.all(this.watchers.map((w) => w.synced));
  }

  hasSynced(): boolean {
    return this.watchers.every((w) => w.hasSynced());
  }

  // ---- keys ------------------------------------------------------------------------------------

  add(key: string): void {
    this.queue.add(key);
  }

  addAfter(key: string, ms: number): void {
    this.queue.addAfter(key, ms);
  }

  /** Clear `key`'s failures: its next failure backs off from the initial delay again. */
  forget(key: string): void {
    this.queue.forget(key);
  }

  /** Resolves when no key is queued or being reconciled (tests, benchmarks). */
  async idle(): Promise<void> {
    if (this.running) await this.queue.idle();
  }

  // ---- running ---------------------------------------------------------------------------------

  /**
   * Reconcile keys until `signal` aborts, then wait for reconciles in flight. `prepare` runs
   * first (e.g. a start-up check); `keys` are queued before processing starts.
   */
  async run(
    signal: AbortSignal,
    opts: { prepare?(signal: AbortSignal): Promise<void>; keys?(): Iterable<string> } = {},
  ): Promise<void> {
    // A term that begins while the last one still winds down (its reconciles in flight) waits
    // for it: never two at once, and never a term that silently does nothing.
    while (this.running) await this.running;
    if (signal.aborted || this.stopped) return;
    const both = AbortSignal.any([signal, this.lifetime.signal]);
    const queue = this.queue;
    let done!: () => void;
    this.running = new Promise<void>((resolve) => (done = resolve));
    try {
      await opts.prepare?.(both);
      if (!both.aborted) {
        for (const key of opts.keys?.() ?? []) queue.add(key);
        queue.start();
        this.opts.logger.info('controller running');
        await new Promise<void>((resolve) => {
          if (both.aborted) return resolve();
          both.addEventListener('abort', () => resolve(), { once: true });
        });
      }
    } finally {
      // Keys that arrive from now on wait for the next run.
      this.queue = this.newQueue();
      await queue.shutdown({ timeoutMs: this.opts.shutdownTimeoutMs ?? 20_000 });
      unobserveQueue(this.opts.metrics, this.opts.name, queue);
      this.running = undefined;
      done();
      this.opts.logger.info('controller stopped');
    }
  }

  /** Run for the controller's whole life (until `stop()`). */
  start(): void {
    void this.run(this.lifetime.signal);
  }

  /**
   * End the current run, unregister and stop every watcher. Idempotent: every call resolves
   * once the one stop is done (a caller that stops twice must not go on while it is under way).
   */
  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    this.stopped = true;
    const running = this.running;
    this.lifetime.abort();
    await running;
    await this.queue.shutdown({ timeoutMs: 0 });
    unobserveQueue(this.opts.metrics, this.opts.name, this.queue);
    for (const u of this.unsubscribe.splice(0)) u();
    await Promise.all(this.watchers.map((w) => w.stop()));
  }

  private newQueue(): WorkQueue {
    const { name, metrics, logger } = this.opts;
    const queue = new WorkQueue({
      name,
      concurrency: this.opts.concurrency ?? 4,
      process: (key, signal) => this.opts.reconcile(key, signal),
      observe: observeReconciles(name, {
        metrics,
        logger,
        expected: this.opts.expected,
        after: this.opts.afterReconcile,
      }),
      ...(this.opts.backoff ? { backoff: this.opts.backoff } : {}),
      clock: this.clock,
    });
    observeQueue(metrics, name, queue);
    return queue;
  }
}

function remove<T>(list: T[], item: T): void {
  const i = list.indexOf(item);
  if (i >= 0) list.splice(i, 1);
}

// Reconcilers that share a name (one controller, one reconciler per cluster) are one controller
// in the queue gauges: their queues are summed.
const observedQueues = new WeakMap<ControllerMetrics, Map<string, Set<WorkQueue>>>();

function observeQueue(metrics: ControllerMetrics, name: string, queue: WorkQueue): void {
  let byName = observedQueues.get(metrics);
  if (!byName) observedQueues.set(metrics, (byName = new Map()));
  let queues = byName.get(name);
  if (!queues) {
    const all = new Set<WorkQueue>();
    byName.set(name, (queues = all));
    const sum = (f: (q: WorkQueue) => number) => [...all].reduce((n, q) => n + f(q), 0);
    metrics.observeQueue(name, {
      len: () => sum((q) => q.len()),
      inFlight: () => sum((q) => q.inFlight()),
    });
  }
  queues.add(queue);
}

function unobserveQueue(metrics: ControllerMetrics, name: string, queue: WorkQueue): void {
  observedQueues.get(metrics)?.get(name)?.delete(queue);
}
