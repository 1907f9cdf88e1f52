import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Retries `fn` until it stops throwing (an `expect` inside it) or the timeout passes, then
 * rethrows the last failure. Waits on state, never on the clock.
 */
export async function eventually<T>(
  fn: () => T | Promise<T>,
  opts: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 15_000);
  let last: unknown;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw last;
    await sleep(opts.intervalMs ?? 100);
  }
}

/** Asserts that `fn` keeps holding for the whole period (used for "nothing happens"). */
export async function consistently(
  fn: () => void | Promise<void>,
  opts: { forMs: number; intervalMs?: number },
): Promise<void> {
  const end = Date.now() + opts.forMs;
  while (Date.now() < end) {
    await fn();
    await sleep(opts.intervalMs ?? 200);
  }
}
