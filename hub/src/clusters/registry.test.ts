// The registry of clusters the hub delivers to. Two leadership terms of one hub may overlap for
// a moment: the old one's controller, winding down, must not remove what the new one registered.
import { describe, expect, it } from 'vitest';

import { ClusterRegistry } from './registry.js';
import type { ClusterTarget } from './target.js';

function target(name: string): ClusterTarget {
  return {
    name,
    agentNamespace: 'mirrorhub-system',
    labels: {},
    local: false,
    type: 'EKS',
    kubeConfig: () => Promise.reject(new Error('not reached in this test')),
  };
}

describe('ClusterRegistry', () => {
  it('removes a target only while it is the one given', () => {
    const r = new ClusterRegistry();
    const changes: string[] = [];
    r.onChange((c) => changes.push(`${c.type} ${c.target.name}`));
    const old = target('follower-1');
    r.set(old);
    const successor = target('follower-1');
    r.set(successor);
    expect(r.remove('follower-1', old)).toBe(false);
    expect(r.get('follower-1')).toBe(successor);
    expect(r.remove('follower-1', successor)).toBe(true);
    expect(r.get('follower-1')).toBeUndefined();
    expect(changes).toEqual(['added follower-1', 'updated follower-1', 'removed follower-1']);
  });

  it('removes whatever is there without a target to compare', () => {
    const r = new ClusterRegistry([target('a')]);
    expect(r.remove('a')).toBe(true);
    expect(r.remove('a')).toBe(false);
  });
});
