import { describe, expect, it } from 'vitest';
import { FakeClock } from '@mirrorhub/shared/testing/fake';
import { Compactor } from './compact.js';

const MB = 2 ** 20;

/** A heap that grows with work and shrinks back to `live` when compacted. */
function setup() {
  const clock = new FakeClock();
  const heap = { size: 20 * MB, live: 20 * MB };
  let gcs = 0;
  const c = new Compactor({
    gc: () => {
      gcs++;
      heap.size = heap.live;
    },
    clock,
    heapSize: () => heap.size,
    minGrowthBytes: 4 * MB,
    quietMs: 1000,
  });
  return { clock, c, heap, gcs: () => gcs };
}

describe('Compactor', () => {
  it('compacts once a burst that grew the heap has been quiet for a moment', async () => {
    const { clock, c, heap, gcs } = setup();
    for (let i = 0; i < 25; i++) {
      c.worked();
      heap.size += MB;
      await clock.advance(100);
    }
    expect(gcs()).toBe(0);
    await clock.advance(999);
    expect(gcs()).toBe(1);
    expect(heap.size).toBe(20 * MB);
    await clock.advance(60_000);
    expect(gcs()).toBe(1);
  });

  it('waits while work keeps coming', async () => {
    const { clock, c, heap, gcs } = setup();
    heap.size += 10 * MB;
    for (let i = 0; i < 100; i++) {
      c.worked();
      await clock.advance(500);
    }
    expect(gcs()).toBe(0);
    await clock.advance(500);
    expect(gcs()).toBe(1);
  });

  it('leaves a heap alone that did not grow much since the last compaction', async () => {
    const { clock, c, heap, gcs } = setup();
    heap.size += 3 * MB;
    c.worked();
    await clock.advance(60_000);
    expect(gcs()).toBe(0);
    heap.size += 2 * MB;
    c.worked();
    await clock.advance(1000);
    expect(gcs()).toBe(1);
    heap.size = 23 * MB;
    c.worked();
    await clock.advance(1000);
    expect(gcs()).toBe(1); // 3 MB over the 20 MB it had after compacting
  });

  it('measures growth from where V8 shrank the heap itself', async () => {
    const { clock, c, heap, gcs } = setup();
    heap.size = 16 * MB; // V8's memory reducer
    c.worked();
    await clock.advance(1000);
    heap.size = 21 * MB;
    c.worked();
    await clock.advance(1000);
    expect(gcs()).toBe(1);
  });

  it('does nothing without gc, or once stopped', async () => {
    const clock = new FakeClock();
    let measured = 0;
    const none = new Compactor({ gc: undefined, clock, heapSize: () => ++measured * 100 * MB });
    none.worked();
    await clock.advance(60_000);
    expect(none.compactions).toBe(0);
    expect(measured).toBe(0);

    const { clock: clock2, c, heap, gcs } = setup();
    heap.size += 10 * MB;
    c.worked();
    c.stop();
    await clock2.advance(60_000);
    expect(gcs()).toBe(0);
  });
});
