import { describe, expect, it } from 'vitest';
import { PendingCleanups } from './pending.js';

describe('PendingCleanups', () => {
  it('adds, seeds without overriding, prunes what is done, and tells listeners', () => {
    const p = new PendingCleanups();
    const changed: string[] = [];
    p.onChange((c) => changed.push(c));
    p.add('a', 'csm-x', 'ClusterSecretMirror//x');
    p.add('a', 'csm-x', 'ClusterSecretMirror//x'); // same: no news
    p.seed('a', [
      { delivery: 'csm-x', mirror: 'ClusterSecretMirror//other' },
      { delivery: 'sm-ns-y', mirror: 'SecretMirror/ns/y' },
    ]);
    expect(p.list('a')).toEqual([
      { delivery: 'csm-x', mirror: 'ClusterSecretMirror//x' },
      { delivery: 'sm-ns-y', mirror: 'SecretMirror/ns/y' },
    ]);
    expect(changed).toEqual(['a', 'a']);
    expect(p.prune('a', (d) => d === 'csm-x')).toBe(true);
    expect(p.list('a').map((e) => e.delivery)).toEqual(['sm-ns-y']);
    expect(p.prune('a', () => false)).toBe(false);
    p.clear('a');
    expect(p.list('a')).toEqual([]);
  });
});
