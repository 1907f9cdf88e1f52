/**
 * Graceful shutdown. Components register closers as they start (health server first, then
 * clients, watchers, queues, leader election); on SIGTERM/SIGINT the closers run one at a time
 * in reverse order of registration — the last thing started is the first stopped — within one
 * overall deadline. A closer that throws or overruns is logged and skipped; the rest still run.
 * A second signal while shutting down exits at once.
 *
 * The deadline defaults to 25 s, inside Kubernetes' default 30 s termination grace period.
 */
import type { Logger } from 'pino';
import { errorMessage } from './errors.js';

export type Closer = (signal: AbortSignal) => void | Promise<void>;

export interface ShutdownOptions {
  logger?: Logger;
  /** Overall time for all closers (default 25 000 ms). */
  deadlineMs?: number;
  /** Signals handled by `install()` (default SIGTERM, SIGINT). */
  signals?: NodeJS.Signals[];
  /** Called when shutdown finishes (default `process.exit`). Tests pass a spy. */
  exit?: (code: number) => void;
  /** Where signals come from (default `process`). Tests pass an EventEmitter. */
  process?: Pick<NodeJS.Process, 'on' | 'off'>;
}

export interface CloserOutcome {
  name: string;
  ok: boolean;
  durationMs: number;
  error?: string;
  timedOut?: boolean;
}

export interface ShutdownResult {
  reason: string;
  ok: boolean;
  outcomes: CloserOutcome[];
}

export class Shutdown {
  private readonly closers: { name: string; fn: Closer }[] = [];
  private readonly controller = new AbortController();
  private running: Promise<ShutdownResult> | undefined;
  private readonly deadlineMs: number;
  private readonly handlers = new Map<NodeJS.Signals, () => void>();

  constructor(private readonly opts: ShutdownOptions = {}) {
    this.deadlineMs = opts.deadlineMs ?? 25_000;
  }

  /** Aborted as soon as shutdown starts: long-running loops watch it. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get shuttingDown(): boolean {
    return this.running !== undefined;
  }

  /** Register a closer; returns a function that unregisters it. */
  register(name: string, fn: Closer): () => void {
    const entry = { name, fn };
    this.closers.push(entry);
    return () => {
      const i = this.closers.indexOf(entry);
      if (i >= 0) this.closers.splice(i, 1);
    };
  }

  /** Handle SIGTERM/SIGINT: shut down, then exit (0 if every closer succeeded, else 1). */
  install(): this {
    const proc = this.opts.process ?? process;
    const exit = this.opts.exit ?? ((code: number) => process.exit(code));
    for (const sig of this.opts.signals ?? (['SIGTERM', 'SIGINT'] as NodeJS.Signals[])) {
      const handler = (): void => {
        if (this.running) {
          this.opts.logger?.warn({ signal: sig }, 'second signal during shutdown: exiting now');
          exit(130);
          return;
        }
        void this.shutdown(sig).then((r) => exit(r.ok ? 0 : 1));
      };
      this.handlers.set(sig, handler);
      proc.on(sig, handler);
    }
    return this;
  }

  /** Remove the signal handlers (tests). */
  uninstall(): void {
    const proc = this.opts.process ?? process;
    for (const [sig, h] of this.handlers) proc.off(sig, h);
    this.handlers.clear();
  }

  /** Run every closer once, in reverse order. Idempotent: later calls get the same result. */
  shutdown(reason = 'requested'): Promise<ShutdownResult> {
    this.running ??= this.run(reason);
    return this.running;
  }

  private async run(reason: string): Promise<ShutdownResult> {
    const log = this.opts.logger;
    const start = Date.now();
    const deadline = start + this.deadlineMs;
    log?.info(
      { reason, closers: this.closers.length, deadlineMs: this.deadlineMs },
      'shutting down',
    );
    this.controller.abort(new Error(`shutdown: ${reason}`));

    const outcomes: CloserOutcome[] = [];
    // Set once a closer overran: the deadline has passed, whatever Date.now() says (a timer may
    // fire a millisecond before the wall clock reaches the time it was set for).
    let expired = false;
    for (const { name, fn } of [...this.closers].reverse()) {
      const began = Date.now();
      const remaining = deadline - began;
      const closerAbort = new AbortController();
      if (expired || remaining <= 0) {
        outcomes.push({ name, ok: false, durationMs: 0, timedOut: true, error: 'deadline passed' });
        log?.error({ closer: name }, 'shutdown deadline passed: closer skipped');
        continue;
      }
      let timer: NodeJS.Timeout | undefined;
      try {
        const timedOut = Symbol('timeout');
        const result = await Promise.race([
          Promise.resolve().then(() => fn(closerAbort.signal)),
          new Promise<typeof timedOut>((resolve) => {
            timer = setTimeout(() => resolve(timedOut), remaining);
          }),
        ]);
        if (result === timedOut) {
          expired = true;
          closerAbort.abort(new Error('shutdown deadline'));
          outcomes.push({ name, ok: false, durationMs: Date.now() - began, timedOut: true });
          log?.error(
            { closer: name, remainingMs: remaining },
            'closer overran the shutdown deadline',
          );
        } else {
          outcomes.push({ name, ok: true, durationMs: Date.now() - began });
          log?.debug({ closer: name, durationMs: Date.now() - began }, 'closed');
        }
      } catch (err) {
        outcomes.push({
          name,
          ok: false,
          durationMs: Date.now() - began,
          error: errorMessage(err),
        });
        log?.error({ closer: name, err }, 'closer failed');
      } finally {
        if (timer) clearTimeout(timer);
      }
    }
    const ok = outcomes.every((o) => o.ok);
    log?.info({ reason, ok, durationMs: Date.now() - start }, 'shutdown complete');
    this.uninstall();
    return { reason, ok, outcomes };
  }
}

export function createShutdown(opts: ShutdownOptions = {}): Shutdown {
  return new Shutdown(opts);
}
