import { describe, expect, it } from 'vitest';
import { ShortestPeriod } from './freshness.js';

describe('ShortestPeriod', () => {
  it('follows the shortest period asked for, and the fallback when nobody asks', () => {
    const applied: number[] = [];
    const p = new ShortestPeriod(300_000, (ms) => applied.push(ms));
    expect(p.ms).toBe(300_000);
    p.set('a', 600_000);
    p.set('b', 10_000);
    p.set('b', 10_000); // unchanged: not applied again
    expect(p.ms).toBe(10_000);
    p.set('b', undefined);
    expect(p.ms).toBe(600_000);
    p.set('a', undefined);
    p.set('never-asked', undefined);
    expect(p.ms).toBe(300_000);
    expect(applied).toEqual([600_000, 10_000, 600_000, 300_000]);
  });
});
