/**
 * A keyed work queue with client-go's semantics, plus the worker loop that drives it.
 *
 * - A key waiting in the queue is there once (adds are deduplicated while pending).
 * - A key is never processed concurrently with itself: adding a key that is being processed
 *   marks it dirty and it is queued again when the current run ends.
 * - At most `concurrency` keys are processed at once.
 * - Failures back off per key, exponentially with jitter (`addRateLimited`), until `forget`.
 * - `addAfter(key, ms)` requeues later, jittered upwards; the earliest pending deadline wins.
 * - `shutdown()` stops intake, drops what is pending, and waits for in-flight work.
 *
 * The queue calls `process(key, signal)` and interprets the result the way controller-runtime
 * does: resolve = done (forget the key's failures), `{ requeueAfterMs }` = done for now and
 * look again later, throw = retry with backoff, throw `TerminalError` = do not retry (bad
 * config, surfaced in status by the caller). Time and randomness are injected for tests.
 */
import { backoffDelay, jitterUp, type BackoffOptions } from '../runtime/backoff.js';
import { realClock, type Clock, type Timer } from '../runtime/clock.js';

/** Thrown by a processor for errors that retrying cannot fix. */
export class TerminalError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TerminalError';
  }
}

export function isTerminalError(err: unknown): boolean {
  return err instanceof TerminalError;
}

export interface ProcessResult {
  /** Look at this key again after (about) this long, even if nothing changes. */
  requeueAfterMs?: number;
  /**
   * The reconcile reported a transient failure itself (in the object's status) instead of
   * throwing: look again after the key's failure backoff, as for a thrown error, but no later
   * than this. The queue is the one place that counts a key's retries.
   */
  retryWithinMs?: number;
}

export type Processor = (key: string, signal: AbortSignal) => Promise<ProcessResult | void>;

/** What happened to one processed key; feed it to metrics and logs. */
export interface ProcessObservation {
  key: string;
  result: 'success' | 'requeue' | 'error' | 'terminal';
  durationMs: number;
  error?: unknown;
  /** For `error`: when the retry is due; for `requeue`: the requeue delay. */
  retryInMs?: number;
  /** Consecutive failures of this key, including this one (0 on success). */
  failures: number;
}

export interface WorkQueueOptions {
  /** For logs and metrics. */
  name: string;
  process: Processor;
  /** Keys processed at once (default 1). */
  concurrency?: number;
  /** Per-key failure backoff (default 200 ms doubling to 5 min, equal jitter). */
  backoff?: Partial<Omit<BackoffOptions, 'random'>>;
  /** Upward jitter fraction applied to `addAfter` (default 0.1). */
  requeueJitter?: number;
  /** Called after every processed key; exceptions in it are ignored. */
  observe?: (o: ProcessObservation) => void;
  clock?: Clock;
  random?: () => number;
}

export class WorkQueue {
  readonly name: string;
  private readonly queue: string[] = [];
  private head = 0;
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly delayed = new Map<string, { due: number; timer: Timer }>();
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly concurrency: number;
  private readonly backoffOpts: BackoffOptions;
  private readonly abort = new AbortController();
  private started = false;
  private stopping = false;
  private pumpScheduled = false;
  private idleWaiters: (() => void)[] = [];
  private drainWaiters: (() => void)[] = [];

  constructor(private readonly opts: WorkQueueOptions) {
    this.name = opts.name;
    this.clock = opts.clock ?? realClock;
    this.random = opts.random ?? Math.random;
    this.concurrency = Math.max(1, Math.floor(opts.concurrency ?? 1));
    this.backoffOpts = {
      initialMs: opts.backoff?.initialMs ?? 200,
      maxMs: opts.backoff?.maxMs ?? 5 * 60_000,
      factor: opts.backoff?.factor ?? 2,
      jitter: opts.backoff?.jitter ?? 0.5,
      random: this.random,
    };
  }

  /** Begin processing (keys added before `start()` wait). Controllers start after caches sync. */
  start(): void {
    if (this.started || this.stopping) return;
    this.started = true;
    this.schedulePump();
  }

  /** Queue `key` now (no-op if already pending or shutting down). */
  add(key: string): void {
    if (this.stopping) return;
    if (this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return; // re-queued when the current run ends
    this.queue.push(key);
    this.schedulePump();
  }

  /** Queue `key` after `ms` (jittered up by `requeueJitter`); an earlier deadline wins. */
  addAfter(key: string, ms: number): void {
    if (this.stopping) return;
    if (ms <= 0) return this.add(key);
    const delay = jitterUp(ms, this.opts.requeueJitter ?? 0.1, this.random);
    this.schedule(key, delay);
  }

  /** Queue `key` after its backoff delay (at most `maxMs`) and count a failure. Returns the delay. */
  addRateLimited(key: string, maxMs = Infinity): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    const delay = Math.min(backoffDelay(this.backoffOpts, n), maxMs);
    if (!this.stopping) this.schedule(key, delay);
    return delay;
  }

  /** Clear the failure count of `key` (its next failure starts from the initial delay). */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** Consecutive failures recorded for `key`. */
  numRequeues(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Keys waiting to be processed (not counting delayed ones). */
  len(): number {
    return this.queue.length - this.head;
  }

  /** Keys being processed now. */
  inFlight(): number {
    return this.processing.size;
  }

  /** Keys scheduled for later (`addAfter` / `addRateLimited`). */
  delayedLen(): number {
    return this.delayed.size;
  }

  get shuttingDown(): boolean {
    return this.stopping;
  }

  /**
   * Resolves when nothing is queued or in flight (delayed keys do not count). For tests and for
   * callers that want to wait for a burst of work to finish.
   */
  idle(): Promise<void> {
    if (this.len() === 0 && this.processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Stop accepting keys, cancel delayed ones, drop pending ones and wait for in-flight work.
   * After `timeoutMs` (if given) the signal passed to processors is aborted and shutdown
   * resolves without waiting further.
   */
  async shutdown(opts: { timeoutMs?: number } = {}): Promise<void> {
    this.stopping = true;
    for (const { timer } of this.delayed.values()) timer.cancel();
    this.delayed.clear();
    this.queue.length = 0;
    this.head = 0;
    for (const k of [...this.dirty]) if (!this.processing.has(k)) this.dirty.delete(k);
    this.resolveIdle();
    if (this.processing.size === 0) return;
    const drained = new Promise<void>((resolve) => this.drainWaiters.push(resolve));
    if (opts.timeoutMs === undefined) return drained;
    let timer: Timer | undefined;
    const timedOut = new Promise<void>((resolve) => {
      timer = this.clock.setTimer(() => {
        this.abort.abort(new Error(`work queue ${this.name}: shutdown timeout`));
        resolve();
      }, opts.timeoutMs ?? 0);
    });
    await Promise.race([drained, timedOut]);
    timer?.cancel();
  }

  private schedule(key: string, delay: number): void {
    const due = this.clock.now() + delay;
    const existing = this.delayed.get(key);
    if (existing && existing.due <= due) return;
    existing?.timer.cancel();
    const timer = this.clock.setTimer(() => {
      const cur = this.delayed.get(key);
      if (cur?.timer === timer) this.delayed.delete(key);
      this.add(key);
    }, delay);
    this.delayed.set(key, { due, timer });
  }

  private schedulePump(): void {
    if (!this.started || this.pumpScheduled) return;
    this.pumpScheduled = true;
    // Never run a processor inside add()'s call stack (watch callbacks call add()).
    queueMicrotask(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    while (!this.stopping && this.processing.size < this.concurrency && this.len() > 0) {
      const key = this.queue[this.head++] as string;
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue.splice(0, this.head);
        this.head = 0;
      }
      this.dirty.delete(key);
      this.processing.add(key);
      void this.run(key);
    }
  }

  private async run(key: string): Promise<void> {
    const started = this.clock.now();
    let obs: ProcessObservation;
    try {
      const res = await this.opts.process(key, this.abort.signal);
      const within = res?.retryWithinMs;
      if (within === undefined) this.forget(key);
      const after = res?.requeueAfterMs;
      if (within !== undefined) {
        const retryInMs = this.addRateLimited(key, within);
        obs = {
          key,
          result: 'requeue',
          durationMs: 0,
          retryInMs,
          failures: this.numRequeues(key),
        };
      } else if (after !== undefined && after > 0) {
        this.addAfter(key, after);
        obs = { key, result: 'requeue', durationMs: 0, retryInMs: after, failures: 0 };
      } else {
        obs = { key, result: 'success', durationMs: 0, failures: 0 };
      }
    } catch (error) {
      if (isTerminalError(error)) {
        this.forget(key);
        obs = { key, result: 'terminal', durationMs: 0, error, failures: 0 };
      } else {
        const retryInMs = this.addRateLimited(key);
        obs = {
          key,
          result: 'error',
          durationMs: 0,
          error,
          retryInMs,
          failures: this.numRequeues(key),
        };
      }
    }
    obs.durationMs = this.clock.now() - started;
    this.processing.delete(key);
    if (this.dirty.has(key) && !this.stopping) this.queue.push(key);
    else this.dirty.delete(key);
    try {
      this.opts.observe?.(obs);
    } catch {
      // an observer must not break the queue
    }
    if (this.stopping && this.processing.size === 0) {
      for (const w of this.drainWaiters.splice(0)) w();
    }
    this.pump();
    this.resolveIdle();
  }

  private resolveIdle(): void {
    if (this.len() === 0 && this.processing.size === 0) {
      for (const w of this.idleWaiters.splice(0)) w();
    }
  }
}
