import { describe, expect, it } from 'vitest';
import { WriteOverlay } from './overlay.js';

describe('WriteOverlay', () => {
  it('shadows the cache until the watch shows our write', () => {
    const o = new WriteOverlay<string>();
    o.observed('k', '1');
    o.wrote('k', '2', 'ours');
    expect(o.get('k')).toBe('ours');
    expect(o.observed('k', '1')).toBe(false); // an older event
    expect(o.get('k')).toBe('ours');
    expect(o.observed('k', '2')).toBe(true); // the echo
    expect(o.get('k')).toBeUndefined();
  });

  it('ignores a write result whose event already arrived (it would shadow newer state)', () => {
    const o = new WriteOverlay<string>();
    o.observed('k', '2');
    o.observed('k', '3');
    o.wrote('k', '2', 'late');
    expect(o.get('k')).toBeUndefined();
  });

  it('forgets on delete, relist and drop', () => {
    const o = new WriteOverlay<string>();
    o.wrote('a', '1', 'x');
    o.wrote('b', '1', 'y');
    o.wrote('c', '1', 'z');
    o.deleted('a');
    o.drop('b');
    expect([o.has('a'), o.has('b'), o.has('c')]).toEqual([false, false, true]);
    o.clear();
    expect(o.has('c')).toBe(false);
  });

  it('ignores writes without a resourceVersion', () => {
    const o = new WriteOverlay<string>();
    o.wrote('k', undefined, 'x');
    expect(o.has('k')).toBe(false);
  });
});
