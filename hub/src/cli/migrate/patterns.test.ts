import { describe, expect, it } from 'vitest';
import { compilePattern } from '@mirrorhub/shared/mirror/namespaces';
import { oldToolSelects, rewritePattern, type Anchoring } from './patterns.js';

const NAMES = ['team-a', 'team-ab', 'app-team-a', 'team', 'ns1', 'ns10', 'prod', 'preprod', 'x'];

describe('rewritePattern', () => {
  it.each<[Anchoring, string, string]>([
    ['substring', 'team', '.*(?:team).*'],
    ['substring', '^team-a$', '.*(?:^team-a$).*'],
    ['substring', '.*', '.*'],
    ['substring', '', '.*'],
    ['prefix', 'team', '(?:team).*'],
    ['prefix', 'team-a$', '(?:team-a$).*'],
    ['prefix', '.*', '.*'],
    ['prefix', 'a|b', '(?:a|b).*'],
    ['leftmost-full', 'team-.*', 'team-.*'],
    ['leftmost-full', 'prod', 'prod'],
  ])('%s %j -> %j', (anchoring, p, expected) => {
    expect(rewritePattern(p, anchoring)).toEqual({ ok: true, pattern: expected });
  });

  // Each rewritten pattern selects exactly what the tool selects, on every sample name.
  it.each<[Anchoring, string]>([
    ['substring', 'team'],
    ['substring', '^team-a$'],
    ['substring', 'a$'],
    ['substring', 'prod|x'],
    ['prefix', 'team'],
    ['prefix', 'team-a$'],
    ['prefix', 'pre|prod'],
    ['prefix', 'ns1'],
    ['leftmost-full', 'team-.*'],
    ['leftmost-full', 'ns10|ns1'],
    ['leftmost-full', 'prod'],
  ])('%s %j selects the same names as the tool', (anchoring, p) => {
    const r = rewritePattern(p, anchoring);
    if (!r.ok) throw new Error(r.reason);
    const m = compilePattern(r.pattern, 'p');
    if (!m.ok) throw new Error(m.error);
    for (const name of NAMES) {
      expect([name, m.matches(name)]).toEqual([name, oldToolSelects(p, anchoring, name)]);
    }
  });

  it('finds where .NET first-match semantics differ from an anchored match', () => {
    // reflector: Regex.Match("ns10", "ns1|ns10") finds "ns1", not the whole name.
    expect(oldToolSelects('ns1|ns10', 'leftmost-full', 'ns10')).toBe(false);
    const anchored = compilePattern('ns1|ns10', 'p');
    expect(anchored.ok && anchored.matches('ns10')).toBe(true);
  });

  it.each<[string, RegExp]>([
    ['team-(?!b)', /lookahead or lookbehind/],
    ['(?<=x)a', /lookahead or lookbehind/],
    ['(a)\\1', /backreference/],
    ['(?P<n>a)(?P=n)', /backreference/],
    ['(?>a+)b', /atomic group/],
    ['a++', /possessive/],
    ['(?(1)a|b)', /conditional/],
    ['[a-z-[aeiou]]+', /class subtraction/],
    ['team\\Z', /\\Z or \\G/],
    ['team-(', /not an RE2 regular expression/],
  ])('refuses %j: %s', (p, reason) => {
    for (const anchoring of ['substring', 'prefix', 'leftmost-full'] as const) {
      const r = rewritePattern(p, anchoring);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.reason).toMatch(reason);
    }
  });
});
