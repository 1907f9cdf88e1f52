/**
 * Exponential backoff with jitter, shared by the work queue, the watcher and leader election so
 * that many controllers (or many clusters failing at once) do not retry in lockstep.
 */

export interface BackoffOptions {
  /** First delay. */
  initialMs: number;
  /** Cap before jitter. */
  maxMs: number;
  /** Growth per attempt; default 2. */
  factor?: number;
  /**
   * Fraction of the delay that is randomised downwards: the delay is drawn from
   * [d * (1 - jitter), d]. Default 0.5 ("equal jitter"): never above the cap, never below half.
   */
  jitter?: number;
  /** Injected randomness in [0, 1); default Math.random. */
  random?: () => number;
}

/** Delay for attempt `n` (0-based) without mutable state. */
export function backoffDelay(opts: BackoffOptions, attempt: number): number {
  const factor = opts.factor ?? 2;
  const jitter = clamp01(opts.jitter ?? 0.5);
  const random = opts.random ?? Math.random;
  // Compute in log space so large attempt counts cannot overflow to Infinity/NaN.
  const raw =
    attempt <= 0 ? opts.initialMs : opts.initialMs * Math.pow(factor, Math.min(attempt, 1000));
  const capped = Math.min(opts.maxMs, Number.isFinite(raw) ? raw : opts.maxMs);
  return Math.round(capped * (1 - jitter * random()));
}

/** Stateful backoff: `next()` returns the delay to wait and counts the attempt. */
export class Backoff {
  private attempt = 0;
  constructor(private readonly opts: BackoffOptions) {}

  next(): number {
    return backoffDelay(this.opts, this.attempt++);
  }

  reset(): void {
    this.attempt = 0;
  }

  /** Attempts since the last reset. */
  get attempts(): number {
    return this.attempt;
  }
}

/**
 * Spread a period upwards by up to `fraction` (client-go's wait.Jitter): used for requeue-after
 * and periodic re-lists so that objects created together do not come due together.
 */
export function jitterUp(ms: number, fraction = 0.1, random: () => number = Math.random): number {
  if (ms <= 0) return 0;
  return Math.round(ms * (1 + Math.max(0, fraction) * random()));
}

function clamp01(n: number): number {
  return n < 0 ? 0 : n > 1 ? 1 : n;
}
