// The soak checker's own model and report, without clusters: what it expects, what it calls a
// discrepancy, and how the figures replace their section. A checker that cannot see a missing,
// stale or orphaned copy would pass any soak; these cases prove it sees each one.
import { describe, expect, it } from 'vitest';

import {
  conflictsByMirror,
  discrepancies,
  expectedCopies,
  MANAGED_BY,
  MIRROR_ANNOTATION,
  shaped,
  type ClusterView,
  type MirrorView,
  type SecretView,
  type Snapshot,
} from './model.js';
import { BEGIN, END, replaceSection } from './report.js';
import { parseDuration } from './run.js';

const marks = (mirror: string) => ({
  labels: { [MANAGED_BY]: 'mirrorhub' },
  annotations: { [MIRROR_ANNOTATION]: `ClusterSecretMirror//${mirror}` },
});

const withLabel = (m: ReturnType<typeof marks>) => ({
  ...m,
  labels: { ...m.labels, edition: '2' },
});

function secret(
  namespace: string,
  name: string,
  data: Record<string, string>,
  extra: Partial<SecretView> = {},
): SecretView {
  return {
    namespace,
    name,
    uid: `${namespace}-${name}`,
    resourceVersion: '1',
    labels: {},
    annotations: {},
    data,
    ...extra,
  };
}

function mirror(spec: Partial<MirrorView['spec']> = {}, name = 'm'): MirrorView {
  return {
    name,
    deleting: false,
    spec: {
      source: { kind: 'Secret', name: 'src', namespace: 'platform' },
      destination: {
        clusters: { selector: { matchLabels: { soak: 'true' } } },
        namespaces: ['soak-.+'],
      },
      ...spec,
    },
  };
}

function world(clusters: ClusterView[], mirrors: MirrorView[]): Snapshot {
  return {
    hub: 'hub',
    clusters,
    mirrors,
    sources: new Map([['platform/src', { value: 'v1', extra: 'x' }]]),
    denied: (_c, ns) => ns.startsWith('soak-locked-'),
  };
}

const ns = (name: string, labels: Record<string, string> = {}, terminating = false) => ({
  name,
  labels,
  terminating,
});

describe('the soak checker model', () => {
  it('expects a copy in every selected namespace and nowhere else', () => {
    const c: ClusterView = {
      name: 'follower-1',
      labels: { soak: 'true' },
      namespaces: [
        ns('soak-1'),
        ns('soak-12'),
        ns('other'), // no pattern matches
        ns('xsoak-1'), // patterns are anchored
        ns('soak-2', {}, true), // Terminating
        ns('soak-locked-9'), // the agent's policy denies it
      ],
      secrets: [],
    };
    const other: ClusterView = { ...c, name: 'follower-2', labels: { soak: 'false' } };
    const exp = expectedCopies(
      world(
        [c, other],
        [
          mirror({
            destination: { ...mirror().spec.destination, excludeNamespaces: ['soak-1.+'] },
          }),
        ],
      ),
    );
    expect(exp.map((e) => `${e.cluster}/${e.namespace}`)).toEqual(['follower-1/soak-1']);
  });

  it('selects by labels too, and never the source itself', () => {
    const hub: ClusterView = {
      name: 'hub',
      labels: { soak: 'true' },
      namespaces: [ns('platform', { tier: 'gold' }), ns('team', { tier: 'gold' }), ns('soak-3')],
      secrets: [],
    };
    const m = mirror({
      destination: {
        clusters: { selector: { matchLabels: { soak: 'true' } } },
        namespaceSelector: { matchLabels: { tier: 'gold' } },
      },
    });
    expect(expectedCopies(world([hub], [m])).map((e) => e.namespace)).toEqual(['team']);
  });

  it('shapes the data as the template says', () => {
    const spec = mirror({
      template: { keys: [{ from: 'value', to: 'v' }, { from: 'gone' }] },
    }).spec;
    expect(shaped(spec, { value: 'a', extra: 'b' })).toEqual({ v: 'a' });
    expect(shaped(mirror().spec, { value: 'a' })).toEqual({ value: 'a' });
  });

  it('finds a missing, a stale and an orphaned copy, and a copy without its template label', () => {
    const c: ClusterView = {
      name: 'follower-1',
      labels: { soak: 'true' },
      namespaces: [ns('soak-1'), ns('soak-2'), ns('soak-3'), ns('other'), ns('soak-4')],
      secrets: [
        secret('soak-2', 'src', { value: 'v0', extra: 'x' }, withLabel(marks('m'))), // stale
        secret('soak-3', 'src', { value: 'v1', extra: 'x' }, withLabel(marks('m'))), // good
        secret('other', 'src', { value: 'v1', extra: 'x' }, withLabel(marks('m'))), // orphan
        secret('soak-4', 'src', { value: 'v1', extra: 'x' }, marks('m')), // lacks the label
      ],
    };
    const got = discrepancies(world([c], [mirror({ template: { labels: { edition: '2' } } })])).map(
      (d) => `${d.kind} ${d.namespace}`,
    );
    expect(got.sort()).toEqual(['missing soak-1', 'orphan other', 'stale soak-2', 'stale soak-4']);
  });

  it('leaves a name held by someone else alone and counts it as the mirror conflict', () => {
    const c: ClusterView = {
      name: 'follower-1',
      labels: { soak: 'true' },
      namespaces: [ns('soak-1'), ns('soak-2', {}, true)],
      secrets: [
        secret('soak-1', 'src', { owner: 'someone else' }),
        // What mirrorhub left in a Terminating namespace is not judged.
        secret('soak-2', 'src', { value: 'old' }, marks('m')),
      ],
    };
    const s = world([c], [mirror()]);
    expect(discrepancies(s)).toEqual([]);
    expect(conflictsByMirror(s)).toEqual(new Map([['m', 1]]));
  });

  it("calls every copy of a deleted mirror an orphan, and a deleted source's mirror expects none", () => {
    const c: ClusterView = {
      name: 'follower-1',
      labels: { soak: 'true' },
      namespaces: [ns('soak-1')],
      secrets: [secret('soak-1', 'src', { value: 'v1', extra: 'x' }, marks('m'))],
    };
    expect(discrepancies(world([c], [{ ...mirror(), deleting: true }])).map((d) => d.kind)).toEqual(
      ['orphan'],
    );
    const noSource = { ...world([c], [mirror()]), sources: new Map() };
    expect(expectedCopies(noSource)).toEqual([]);
  });
});

describe('the soak report and arguments', () => {
  it('replaces only its own section and appends one when there is none', () => {
    const doc = `# Reliability\n\nintro\n\n${BEGIN}\nold figures\n${END}\n\n## After\n`;
    const next = replaceSection(doc, `${BEGIN}\nnew\n${END}`);
    expect(next).toBe(`# Reliability\n\nintro\n\n${BEGIN}\nnew\n${END}\n\n## After\n`);
    expect(replaceSection('# R\n', `${BEGIN}\nx\n${END}`)).toBe(`# R\n\n${BEGIN}\nx\n${END}\n`);
  });

  it('reads durations and refuses what it cannot', () => {
    expect(parseDuration('20m')).toBe(1_200_000);
    expect(parseDuration('2h')).toBe(7_200_000);
    expect(parseDuration('90s')).toBe(90_000);
    expect(() => parseDuration('10')).toThrow(/between 1m and 24h/);
    expect(() => parseDuration('ten minutes')).toThrow(/look like 90s, 20m or 2h/);
  });
});
