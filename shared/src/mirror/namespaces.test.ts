import { describe, expect, it } from 'vitest';
import type { LabelSelector } from '../api/types.gen.js';
import {
  compileLabelSelector,
  compileNamespaceMatcher,
  compilePattern,
  formatLabelSelector,
  type NamespaceSelectionInput,
} from './namespaces.js';

const ns = (name: string, labels: Record<string, string> = {}) => ({ name, labels });

describe('compilePattern', () => {
  it.each([
    ['project-a-.+', 'project-a-x', true],
    ['project-a-.+', 'project-a-', false],
    ['project-a-.+', 'xproject-a-b', false], // anchored at the start
    ['project', 'project-b', false], // anchored at the end
    ['a|b', 'ab', false], // alternation stays inside the anchors
    ['a|b', 'b', true],
    ['(?i)PROD-.*', 'prod-eu', true], // RE2 inline flags
    ['team-[0-9]{2}', 'team-07', true],
    ['(a+)+b', 'a'.repeat(63), false], // linear time: no catastrophic backtracking
  ])('%s on %s -> %s', (pattern, value, expected) => {
    const m = compilePattern(pattern, 'p');
    expect(m.ok).toBe(true);
    if (m.ok) expect(m.matches(value)).toBe(expected);
  });

  it.each([
    ['project-(', 'missing closing )'],
    ['a)|(b', 'unexpected )'], // would escape the anchoring group if wrapped blindly
    ['(?=a)', 'invalid or unsupported Perl syntax'], // lookahead: not RE2
    ['', 'empty pattern'],
    ['[z-a]', 'invalid character class range'],
  ])('%s is refused (%s)', (pattern, why) => {
    const m = compilePattern(pattern, 'destination.namespaces[1]');
    expect(m.ok).toBe(false);
    if (!m.ok) {
      expect(m.error).toContain(
        `destination.namespaces[1]: invalid regular expression ${JSON.stringify(pattern)}: `,
      );
      expect(m.error).toContain(why);
    }
  });
});

describe('compileLabelSelector', () => {
  const labels = { team: 'a', env: 'prod', tier: '' };
  it.each<[string, LabelSelector, Record<string, string> | undefined, boolean]>([
    ['empty selector matches everything', {}, labels, true],
    ['empty selector matches no labels', {}, undefined, true],
    ['matchLabels equal', { matchLabels: { team: 'a' } }, labels, true],
    ['matchLabels differ', { matchLabels: { team: 'b' } }, labels, false],
    ['matchLabels all must hold', { matchLabels: { team: 'a', env: 'dev' } }, labels, false],
    ['matchLabels empty value', { matchLabels: { tier: '' } }, labels, true],
    ['matchLabels missing key', { matchLabels: { zone: '' } }, labels, false],
    [
      'In',
      { matchExpressions: [{ key: 'env', operator: 'In', values: ['prod', 'stage'] }] },
      labels,
      true,
    ],
    [
      'In, other value',
      { matchExpressions: [{ key: 'env', operator: 'In', values: ['dev'] }] },
      labels,
      false,
    ],
    [
      'In, missing key',
      { matchExpressions: [{ key: 'zone', operator: 'In', values: ['x'] }] },
      labels,
      false,
    ],
    [
      'NotIn',
      { matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['prod'] }] },
      labels,
      false,
    ],
    [
      'NotIn, other value',
      { matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['dev'] }] },
      labels,
      true,
    ],
    [
      'NotIn, missing key matches',
      { matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['x'] }] },
      labels,
      true,
    ],
    ['Exists', { matchExpressions: [{ key: 'team', operator: 'Exists' }] }, labels, true],
    ['Exists, missing', { matchExpressions: [{ key: 'zone', operator: 'Exists' }] }, labels, false],
    [
      'DoesNotExist',
      { matchExpressions: [{ key: 'zone', operator: 'DoesNotExist' }] },
      labels,
      true,
    ],
    [
      'DoesNotExist, present',
      { matchExpressions: [{ key: 'team', operator: 'DoesNotExist' }] },
      labels,
      false,
    ],
    [
      'Exists ignores Object.prototype',
      { matchExpressions: [{ key: 'constructor', operator: 'Exists' }] },
      labels,
      false,
    ],
    [
      'matchLabels AND matchExpressions',
      {
        matchLabels: { team: 'a' },
        matchExpressions: [{ key: 'env', operator: 'In', values: ['dev'] }],
      },
      labels,
      false,
    ],
  ])('%s', (_, selector, input, expected) => {
    const m = compileLabelSelector(selector, 'sel');
    expect(m.ok).toBe(true);
    if (m.ok) expect(m.matches(input)).toBe(expected);
  });

  it.each<[string, LabelSelector, string]>([
    [
      'In without values',
      { matchExpressions: [{ key: 'env', operator: 'In' }] },
      'sel.matchExpressions[0].values: must be non-empty for operator In',
    ],
    [
      'NotIn with empty values',
      { matchExpressions: [{ key: 'env', operator: 'NotIn', values: [] }] },
      'sel.matchExpressions[0].values: must be non-empty for operator NotIn',
    ],
    [
      'Exists with values',
      { matchExpressions: [{ key: 'env', operator: 'Exists', values: ['x'] }] },
      'sel.matchExpressions[0].values: must be empty for operator Exists',
    ],
    [
      'unknown operator',
      { matchExpressions: [{ key: 'env', operator: 'Gt' as never, values: ['1'] }] },
      'sel.matchExpressions[0].operator: "Gt" is not a valid operator',
    ],
    [
      'invalid key',
      { matchExpressions: [{ key: 'bad key', operator: 'Exists' }] },
      'sel.matchExpressions[0].key: invalid key "bad key"',
    ],
    [
      'invalid matchLabels key',
      { matchLabels: { '-x': 'a' } },
      'sel.matchLabels: invalid key "-x"',
    ],
    [
      'invalid matchLabels value',
      { matchLabels: { x: 'a b' } },
      'sel.matchLabels[x]: invalid value "a b"',
    ],
    [
      'invalid In value',
      { matchExpressions: [{ key: 'x', operator: 'In', values: ['ok', 'no!'] }] },
      'sel.matchExpressions[0].values[1]: invalid value "no!"',
    ],
  ])('%s is refused', (_, selector, error) => {
    const m = compileLabelSelector(selector, 'sel');
    expect(m.ok).toBe(false);
    if (!m.ok) expect(m.error).toContain(error);
  });
});

describe('compileNamespaceMatcher', () => {
  const all = [
    ns('project-a-web', { team: 'a' }),
    ns('project-a-db'),
    ns('project-b-web', { team: 'b' }),
    ns('legacy', { team: 'a' }),
    ns('kube-system'),
    ns('shared'),
  ];
  it.each<[string, NamespaceSelectionInput, string[]]>([
    ['regexes', { namespaces: ['project-a-.+'] }, ['project-a-web', 'project-a-db']],
    ['several regexes', { namespaces: ['project-a-web', 'shared'] }, ['project-a-web', 'shared']],
    [
      'selector',
      { namespaceSelector: { matchLabels: { team: 'a' } } },
      ['project-a-web', 'legacy'],
    ],
    [
      'regexes OR selector (union)',
      { namespaces: ['project-b-.+'], namespaceSelector: { matchLabels: { team: 'a' } } },
      ['project-a-web', 'project-b-web', 'legacy'],
    ],
    [
      'excludes win over regexes and selector',
      {
        namespaces: ['project-.+'],
        namespaceSelector: { matchLabels: { team: 'a' } },
        excludeNamespaces: ['.*-web', 'legacy'],
      },
      ['project-a-db'],
    ],
    ['empty selector: every namespace', { namespaceSelector: {} }, all.map((n) => n.name)],
    [
      'every namespace but the excluded',
      { namespaces: ['.*'], excludeNamespaces: ['kube-.*'] },
      ['project-a-web', 'project-a-db', 'project-b-web', 'legacy', 'shared'],
    ],
    [
      'never the source itself (same name)',
      { namespaces: ['.*'], sourceNamespace: 'shared', sourceName: 'tls', targetName: 'tls' },
      ['project-a-web', 'project-a-db', 'project-b-web', 'legacy', 'kube-system'],
    ],
    [
      'source namespace is fine under another name',
      {
        namespaces: ['shared'],
        sourceNamespace: 'shared',
        sourceName: 'tls',
        targetName: 'tls-copy',
      },
      ['shared'],
    ],
    [
      'names unknown: the source namespace is skipped to be safe',
      { namespaces: ['shared', 'legacy'], sourceNamespace: 'shared' },
      ['legacy'],
    ],
  ])('%s', (_, input, expected) => {
    const m = compileNamespaceMatcher(input);
    expect(m.ok).toBe(true);
    if (m.ok) expect(all.filter((n) => m.matches(n)).map((n) => n.name)).toEqual(expected);
  });

  it.each<[string, NamespaceSelectionInput, string | undefined, string[]]>([
    [
      'bad include regex',
      { namespaces: ['ok', 'project-('] },
      undefined,
      ['destination.namespaces[1]: invalid regular expression "project-(": missing closing )'],
    ],
    [
      'bad exclude regex, delivery path',
      { namespaces: ['.*'], excludeNamespaces: ['[a-'] },
      'spec',
      ['spec.excludeNamespaces[0]: invalid regular expression "[a-"'],
    ],
    [
      'bad selector',
      { namespaceSelector: { matchExpressions: [{ key: 'a', operator: 'In' }] } },
      undefined,
      ['destination.namespaceSelector.matchExpressions[0].values: must be non-empty'],
    ],
    [
      'every problem is reported at once',
      { namespaces: ['('], excludeNamespaces: [')'] },
      undefined,
      ['destination.namespaces[0]', 'destination.excludeNamespaces[0]'],
    ],
    [
      'nothing selects',
      { namespaces: [] },
      undefined,
      ['destination: set namespaces or namespaceSelector'],
    ],
  ])('%s is an error', (_, input, fieldPath, fragments) => {
    const m = compileNamespaceMatcher(input, fieldPath ? { fieldPath } : {});
    expect(m.ok).toBe(false);
    if (!m.ok) for (const f of fragments) expect(m.error).toContain(f);
  });
});

describe('formatLabelSelector', () => {
  it.each<[LabelSelector, string]>([
    [{}, ''],
    [{ matchLabels: { team: 'a' } }, 'team=a'],
    [
      {
        matchLabels: { team: 'a' },
        matchExpressions: [
          { key: 'env', operator: 'In', values: ['stage', 'prod'] },
          { key: 'legacy', operator: 'DoesNotExist' },
          { key: 'zone', operator: 'NotIn', values: ['x'] },
          { key: 'app', operator: 'Exists' },
        ],
      },
      'app,env in (prod,stage),!legacy,team=a,zone notin (x)',
    ],
  ])('%j -> %s', (selector, expected) => {
    expect(formatLabelSelector(selector)).toBe(expected);
  });
});
