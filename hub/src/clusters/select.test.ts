import type { ClusterSelection } from '@mirrorhub/shared';
import { describe, expect, it } from 'vitest';
import { ClusterRegistry, type RegistryChange } from './registry.js';
import { selectClusters, type SelectableCluster } from './select.js';
import { localTarget, type ClusterTarget } from './target.js';

const c = (
  name: string,
  labels: Record<string, string> = {},
  local = false,
): SelectableCluster => ({
  name,
  labels,
  local,
});
const targets = [
  c('hub', {}, true),
  c('prod-eu', { env: 'prod', region: 'eu' }),
  c('prod-us', { env: 'prod', region: 'us' }),
  c('stage-eu', { env: 'stage', region: 'eu' }),
];

describe('selectClusters', () => {
  it.each<[string, ClusterSelection | undefined, string[], string[]]>([
    ['absent: the local cluster only', undefined, ['hub'], []],
    ['names', { names: ['prod-us', 'hub'] }, ['hub', 'prod-us'], []],
    [
      'unknown names are reported',
      { names: ['prod-eu', 'nope', 'also-nope'] },
      ['prod-eu'],
      ['also-nope', 'nope'],
    ],
    ['selector', { selector: { matchLabels: { env: 'prod' } } }, ['prod-eu', 'prod-us'], []],
    [
      'names OR selector',
      {
        names: ['hub'],
        selector: { matchExpressions: [{ key: 'region', operator: 'In', values: ['eu'] }] },
      },
      ['hub', 'prod-eu', 'stage-eu'],
      [],
    ],
    [
      'empty selector: every cluster',
      { selector: {} },
      ['hub', 'prod-eu', 'prod-us', 'stage-eu'],
      [],
    ],
    ['clusters: {} selects nothing', {}, [], []],
  ])('%s', (_, selection, selected, missing) => {
    const r = selectClusters(selection, targets);
    expect(r.selected.map((t) => t.name)).toEqual(selected);
    expect(r.missing).toEqual(missing);
    expect(r.error).toBeUndefined();
  });

  it('refuses an invalid selector, naming the field', () => {
    const r = selectClusters({ selector: { matchLabels: { 'bad key!': 'x' } } }, targets);
    expect(r.selected).toEqual([]);
    expect(r.error).toMatch(
      /^destination\.clusters\.selector\.matchLabels: invalid key "bad key!"/,
    );
  });
});

describe('ClusterRegistry', () => {
  const kc = {} as never;
  const remote = (name: string): ClusterTarget => ({
    name,
    agentNamespace: 'mirrorhub-system',
    labels: {},
    local: false,
    type: 'EKS',
    kubeConfig: () => Promise.reject(new Error('not in a unit test')),
  });

  it('holds the local cluster and tells listeners about changes', () => {
    const reg = new ClusterRegistry([
      localTarget({ name: 'hub', agentNamespace: 'ns', kubeConfig: kc }),
    ]);
    const seen: string[] = [];
    const off = reg.onChange((e: RegistryChange) => seen.push(`${e.type}:${e.target.name}`));
    const a = remote('a');
    reg.set(a);
    reg.set(a); // same object: no change
    reg.set(remote('a'));
    expect(reg.remove('a')).toBe(true);
    expect(reg.remove('a')).toBe(false);
    off();
    reg.set(remote('b'));
    expect(seen).toEqual(['added:a', 'updated:a', 'removed:a']);
    expect(reg.list().map((t) => t.name)).toEqual(['b', 'hub']);
    expect(reg.local()?.name).toBe('hub');
  });

  it('refuses a second local cluster', () => {
    const reg = new ClusterRegistry([
      localTarget({ name: 'hub', agentNamespace: 'ns', kubeConfig: kc }),
    ]);
    expect(() =>
      reg.set(localTarget({ name: 'other', agentNamespace: 'ns', kubeConfig: kc })),
    ).toThrow(/already the local cluster/);
  });
});
