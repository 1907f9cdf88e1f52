/**
 * Time, injected. Every loop in the runtime (work queue, watcher, leader election) takes a
 * `Clock` so that tests drive time with a manual clock (`FakeClock`, in the test helpers
 * '@mirrorhub/shared/testing/index') instead of sleeping.
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
