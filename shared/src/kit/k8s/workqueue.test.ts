import { describe, expect, it } from 'vitest';
import { FakeClock, settle } from '../../testing/fake.js';
import { backoffDelay, jitterUp } from '../runtime/backoff.js';
import {
  TerminalError,
  WorkQueue,
  type ProcessObservation,
  type ProcessResult,
} from './workqueue.js';

interface Deferred {
  resolve(v?: ProcessResult | void): void;
  reject(e: unknown): void;
}

/** A processor whose runs the test finishes by hand; records order and overlap. */
function manualProcessor() {
  const runs: { key: string; d: Deferred; signal: AbortSignal }[] = [];
  const active = new Map<string, number>();
  let maxActive = 0;
  let maxSameKey = 0;
  const process = (key: string, signal: AbortSignal): Promise<ProcessResult | void> => {
    active.set(key, (active.get(key) ?? 0) + 1);
    maxSameKey = Math.max(maxSameKey, active.get(key) ?? 0);
    maxActive = Math.max(
      maxActive,
      [...active.values()].reduce((a, b) => a + b, 0),
    );
    return new Promise((resolve, reject) => {
      const done = (): void => {
        active.set(key, (active.get(key) ?? 1) - 1);
        if (active.get(key) === 0) active.delete(key);
      };
      runs.push({
        key,
        signal,
        d: {
          resolve: (v) => (done(), resolve(v)),
          reject: (e) => (done(), reject(e)),
        },
      });
    });
  };
  return {
    process,
    runs,
    stats: () => ({ maxActive, maxSameKey }),
    keys: () => runs.map((r) => r.key),
    async finish(i: number, v?: ProcessResult | void) {
      runs[i]?.d.resolve(v);
      await settle();
    },
    async fail(i: number, e: unknown = new Error('boom')) {
      runs[i]?.d.reject(e);
      await settle();
    },
  };
}

function setup(over: { concurrency?: number; random?: () => number } = {}) {
  const clock = new FakeClock();
  const p = manualProcessor();
  const observed: ProcessObservation[] = [];
  const q = new WorkQueue({
    name: 'test',
    process: p.process,
    clock,
    random: over.random ?? (() => 0),
    concurrency: over.concurrency ?? 1,
    backoff: { initialMs: 100, maxMs: 1000 },
    observe: (o) => observed.push(o),
  });
  return { clock, p, q, observed };
}

describe('WorkQueue', () => {
  it('dedupes pending keys and keeps FIFO order', async () => {
    const { p, q } = setup();
    for (const k of ['a', 'b', 'a', 'c', 'b', 'a']) q.add(k);
    expect(q.len()).toBe(3);
    q.start();
    await settle();
    expect(p.keys()).toEqual(['a']);
    await p.finish(0);
    await p.finish(1);
    await p.finish(2);
    expect(p.keys()).toEqual(['a', 'b', 'c']);
    expect(q.len()).toBe(0);
  });

  it('never processes a key concurrently with itself, but does not lose the re-add', async () => {
    const { p, q } = setup({ concurrency: 4 });
    q.start();
    q.add('a');
    await settle();
    expect(q.inFlight()).toBe(1);
    q.add('a'); // arrives while 'a' is being processed
    q.add('a');
    await settle();
    expect(p.runs).toHaveLength(1);
    expect(q.len()).toBe(0); // held back, not queued
    await p.finish(0);
    expect(p.keys()).toEqual(['a', 'a']); // processed once more, after the first run
    await p.finish(1);
    expect(p.runs).toHaveLength(2);
    expect(p.stats().maxSameKey).toBe(1);
  });

  it.each([1, 2, 5])('bounds concurrency to %i', async (concurrency) => {
    const { p, q } = setup({ concurrency });
    q.start();
    for (let i = 0; i < 12; i++) q.add(`k${i}`);
    await settle();
    expect(q.inFlight()).toBe(concurrency);
    for (let i = 0; i < 12; i++) await p.finish(i);
    expect(p.runs).toHaveLength(12);
    expect(p.stats().maxActive).toBe(concurrency);
    await q.idle();
  });

  it('backs off failures exponentially per key and resets on success', async () => {
    const { clock, p, q, observed } = setup();
    q.start();
    q.add('a');
    await settle();
    const expected = [100, 200, 400, 800, 1000, 1000]; // capped at maxMs
    for (const [i, delay] of expected.entries()) {
      await p.fail(i);
      expect(observed.at(-1)).toMatchObject({
        key: 'a',
        result: 'error',
        retryInMs: delay,
        failures: i + 1,
      });
      expect(q.numRequeues('a')).toBe(i + 1);
      await clock.advance(delay - 1);
      expect(p.runs).toHaveLength(i + 1); // not yet
      await clock.advance(1);
      expect(p.runs).toHaveLength(i + 2);
    }
    await p.finish(expected.length);
    expect(q.numRequeues('a')).toBe(0);
    expect(observed.at(-1)).toMatchObject({ result: 'success', failures: 0 });
    // next failure starts from the initial delay again
    q.add('a');
    await settle();
    await p.fail(expected.length + 1);
    expect(observed.at(-1)?.retryInMs).toBe(100);
  });

  it('keeps failure counts per key', async () => {
    const { p, q } = setup({ concurrency: 2 });
    q.start();
    q.add('a');
    q.add('b');
    await settle();
    await p.fail(0);
    await p.finish(1);
    expect(q.numRequeues('a')).toBe(1);
    expect(q.numRequeues('b')).toBe(0);
    q.forget('a');
    expect(q.numRequeues('a')).toBe(0);
  });

  it('does not retry terminal errors', async () => {
    const { clock, p, q, observed } = setup();
    q.start();
    q.add('a');
    await settle();
    await p.fail(0, new TerminalError('bad regex'));
    expect(observed.at(-1)).toMatchObject({ result: 'terminal', failures: 0 });
    await clock.advance(60_000);
    expect(p.runs).toHaveLength(1);
    expect(q.delayedLen()).toBe(0);
  });

  it('requeues after the delay a processor asks for', async () => {
    const { clock, p, q, observed } = setup();
    q.start();
    q.add('a');
    await settle();
    await p.finish(0, { requeueAfterMs: 5000 });
    expect(observed.at(-1)).toMatchObject({ result: 'requeue', retryInMs: 5000 });
    await clock.advance(4999);
    expect(p.runs).toHaveLength(1);
    await clock.advance(1);
    expect(p.runs).toHaveLength(2);
  });

  it('retries a failure the processor reported itself with the key’s backoff, capped', async () => {
    const { clock, p, q, observed } = setup();
    q.start();
    q.add('a');
    await settle();
    // 100, 200, then the cap (300) instead of 400; a plain success resets the count.
    for (const [i, delay] of [100, 200, 300].entries()) {
      await p.finish(i, { retryWithinMs: 300 });
      expect(observed.at(-1)).toMatchObject({ result: 'requeue', retryInMs: delay });
      expect(q.numRequeues('a')).toBe(i + 1);
      await clock.advance(delay - 1);
      expect(p.runs).toHaveLength(i + 1);
      await clock.advance(1);
      expect(p.runs).toHaveLength(i + 2);
    }
    await p.finish(3, { requeueAfterMs: 5000 });
    expect(q.numRequeues('a')).toBe(0);
  });

  describe('addAfter', () => {
    it.each([
      { name: 'no jitter at random=0', random: 0, ms: 1000, due: 1000 },
      { name: '10% jitter at random=1', random: 0.999999, ms: 1000, due: 1100 },
      { name: 'half jitter at random=0.5', random: 0.5, ms: 1000, due: 1050 },
      { name: 'zero delay is immediate', random: 0.5, ms: 0, due: 0 },
    ])('$name', async ({ random, ms, due }) => {
      const { clock, p, q } = setup({ random: () => random });
      q.start();
      q.addAfter('a', ms);
      if (due > 0) {
        await clock.advance(due - 1);
        expect(p.runs).toHaveLength(0);
        await clock.advance(1);
      } else {
        await settle();
      }
      expect(p.runs).toHaveLength(1);
    });

    it('keeps the earliest deadline for a key', async () => {
      const { clock, p, q } = setup();
      q.start();
      q.addAfter('a', 1000);
      q.addAfter('a', 5000); // later: ignored
      q.addAfter('a', 500); // earlier: replaces
      expect(q.delayedLen()).toBe(1);
      await clock.advance(500);
      expect(p.runs).toHaveLength(1);
      await p.finish(0);
      await clock.advance(10_000);
      expect(p.runs).toHaveLength(1);
    });

    it('dedupes a delayed key with a pending one', async () => {
      const { clock, p, q } = setup();
      q.add('a'); // not started: stays pending
      q.addAfter('a', 100);
      await clock.advance(100);
      expect(q.len()).toBe(1);
      q.start();
      await settle();
      expect(p.runs).toHaveLength(1);
    });
  });

  describe('shutdown', () => {
    it('drops pending and delayed keys, refuses new ones, waits for in-flight work', async () => {
      const { clock, p, q } = setup({ concurrency: 1 });
      q.start();
      q.add('a');
      q.add('b');
      q.addAfter('c', 1000);
      await settle();
      let done = false;
      const stopping = q.shutdown().then(() => (done = true));
      q.add('d');
      q.addAfter('e', 1);
      await settle();
      expect(done).toBe(false); // 'a' still in flight
      expect(q.len()).toBe(0);
      expect(q.delayedLen()).toBe(0);
      await p.fail(0); // a failure during shutdown is not retried
      await stopping;
      expect(done).toBe(true);
      await clock.advance(10_000);
      expect(p.keys()).toEqual(['a']);
      expect(clock.pending()).toBe(0);
    });

    it('aborts the processor signal when the timeout passes', async () => {
      const { clock, p, q } = setup();
      q.start();
      q.add('a');
      await settle();
      const stopping = q.shutdown({ timeoutMs: 1000 });
      expect(p.runs[0]?.signal.aborted).toBe(false);
      await clock.advance(1000);
      await stopping;
      expect(p.runs[0]?.signal.aborted).toBe(true);
    });

    it('resolves at once when idle', async () => {
      const { q } = setup();
      q.start();
      await expect(q.shutdown()).resolves.toBeUndefined();
    });
  });

  it('survives an observer that throws', async () => {
    const clock = new FakeClock();
    const seen: string[] = [];
    const q = new WorkQueue({
      name: 't',
      clock,
      process: async (k) => {
        seen.push(k);
      },
      observe: () => {
        throw new Error('observer bug');
      },
    });
    q.start();
    q.add('a');
    q.add('b');
    await q.idle();
    expect(seen).toEqual(['a', 'b']);
  });

  it('survives a processor that throws synchronously', async () => {
    const clock = new FakeClock();
    const q = new WorkQueue({
      name: 't',
      clock,
      random: () => 0,
      backoff: { initialMs: 10 },
      process: ((): Promise<void> => {
        throw new Error('sync');
      }) as never,
    });
    q.start();
    q.add('a');
    await settle();
    expect(q.numRequeues('a')).toBe(1);
    expect(q.delayedLen()).toBe(1);
  });
});

describe('backoff helpers', () => {
  it.each([
    { attempt: 0, random: 0, want: 100 },
    { attempt: 1, random: 0, want: 200 },
    { attempt: 3, random: 0, want: 800 },
    { attempt: 3, random: 1, want: 400 }, // equal jitter: never below half
    { attempt: 50, random: 0, want: 10_000 }, // capped
    { attempt: 5000, random: 0, want: 10_000 }, // no overflow
  ])('backoffDelay attempt=$attempt random=$random -> $want', ({ attempt, random, want }) => {
    expect(backoffDelay({ initialMs: 100, maxMs: 10_000, random: () => random }, attempt)).toBe(
      want,
    );
  });

  it.each([
    { ms: 1000, fraction: 0.1, random: 0, want: 1000 },
    { ms: 1000, fraction: 0.1, random: 0.5, want: 1050 },
    { ms: 1000, fraction: 1, random: 0.5, want: 1500 },
    { ms: -5, fraction: 0.1, random: 0.5, want: 0 },
  ])('jitterUp($ms, $fraction) at $random -> $want', ({ ms, fraction, random, want }) => {
    expect(jitterUp(ms, fraction, () => random)).toBe(want);
  });
});
