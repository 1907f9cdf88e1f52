import { describe, expect, it } from 'vitest';
import { FakeClock } from '@mirrorhub/shared/runtime/clock';
import { Compactor } from './compact.js';

function setup(opts: { minWork?: number; quietMs?: number } = {}) {
  const clock = new FakeClock();
  let gcs = 0;
  const c = new Compactor({ gc: () => void gcs++, clock, minWork: 10, quietMs: 1000, ...opts });
  return { clock, c, gcs: () => gcs };
}

describe('Compactor', () => {
  it('runs one GC once a burst of work has been quiet for a moment', async () => {
    const { clock, c, gcs } = setup();
    for (let i = 0; i < 25; i++) {
      c.worked();
      await clock.advance(100);
    }
    expect(gcs()).toBe(0);
    await clock.advance(999);
    expect(gcs()).toBe(1);
    await clock.advance(60_000);
    expect(gcs()).toBe(1);
  });

  it('waits while work keeps coming', async () => {
    const { clock, c, gcs } = setup();
    for (let i = 0; i < 100; i++) {
      c.worked();
      await clock.advance(500);
    }
    expect(gcs()).toBe(0);
    await clock.advance(500);
    expect(gcs()).toBe(1);
  });

  it('leaves a little work alone', async () => {
    const { clock, c, gcs } = setup();
    for (let i = 0; i < 9; i++) c.worked();
    await clock.advance(60_000);
    expect(gcs()).toBe(0);
    c.worked();
    await clock.advance(1000);
    expect(gcs()).toBe(1);
  });

  it('counts work from the last compaction on', async () => {
    const { clock, c, gcs } = setup();
    c.worked(10);
    await clock.advance(1000);
    c.worked(9);
    await clock.advance(60_000);
    expect(gcs()).toBe(1);
    c.worked(1);
    await clock.advance(1000);
    expect(gcs()).toBe(2);
  });

  it('does nothing without gc, or once stopped', async () => {
    const clock = new FakeClock();
    const none = new Compactor({ gc: undefined, clock, minWork: 1 });
    none.worked(100);
    await clock.advance(60_000);
    expect(none.compactions).toBe(0);

    const { clock: clock2, c, gcs } = setup();
    c.worked(10);
    c.stop();
    await clock2.advance(60_000);
    expect(gcs()).toBe(0);
  });
});
