/**
 * Time, injected. Every loop in the runtime (work queue, watcher, leader election) takes a
 * `Clock` so that tests drive time with `FakeClock` instead of sleeping.
 */

/** A scheduled callback; `cancel()` is idempotent. */
export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Run `fn` after `ms` milliseconds (0 or less: on the next macrotask). */
  setTimer(fn: () => void, ms: number): Timer;
}

export const realClock: Clock = {
  now: () => Date.now(),
  setTimer(fn, ms) {
    const handle = setTimeout(fn, Math.max(0, ms));
    return { cancel: () => clearTimeout(handle) };
  },
};

/**
 * Resolves after `ms` on `clock`, or early (without rejecting) when `signal` aborts.
 * Returns true when the full time elapsed, false when aborted.
 */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      timer.cancel();
      resolve(false);
    };
    const timer = clock.setTimer(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

interface FakeTimer {
  id: number;
  due: number;
  fn: () => void;
}

/**
 * A manual clock for tests. Timers fire only from `advance()`/`tick()`, in due order; a timer
 * scheduled by a firing timer fires in the same advance if it is due.
 */
export class FakeClock implements Clock {
  private current: number;
  private timers: FakeTimer[] = [];
  private nextId = 1;

  constructor(startMs = 1_700_000_000_000) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  setTimer(fn: () => void, ms: number): Timer {
    const t: FakeTimer = { id: this.nextId++, due: this.current + Math.max(0, ms), fn };
    this.timers.push(t);
    return {
      cancel: () => {
        this.timers = this.timers.filter((x) => x !== t);
      },
    };
  }

  /** Number of timers not yet fired or cancelled. */
  pending(): number {
    return this.timers.length;
  }

  /** Due time of the earliest pending timer, if any. */
  nextDue(): number | undefined {
    let min: number | undefined;
    for (const t of this.timers) if (min === undefined || t.due < min) min = t.due;
    return min;
  }

  /**
   * Move time forward by `ms`, firing due timers in order and letting promise callbacks settle
   * between timers (so async code reacting to one timer can schedule the next).
   */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    await settle();
    for (;;) {
      const next = this.popDue(target);
      if (!next) break;
      this.current = next.due;
      next.fn();
      await settle();
    }
    this.current = target;
    await settle();
  }

  /** Advance to the earliest pending timer and fire it (and any due at the same time). */
  async tick(): Promise<void> {
    const due = this.nextDue();
    if (due !== undefined) await this.advance(due - this.current);
    else await settle();
  }

  private popDue(target: number): FakeTimer | undefined {
    let best: FakeTimer | undefined;
    for (const t of this.timers) {
      if (t.due <= target && (!best || t.due < best.due || (t.due === best.due && t.id < best.id)))
        best = t;
    }
    if (best) this.timers = this.timers.filter((x) => x !== best);
    return best;
  }
}

/** Let every pending promise callback run (a macrotask boundary drains the microtask queue). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
