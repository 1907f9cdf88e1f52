// Namespace patterns of the old tools, rewritten as mirrorhub patterns (RE2, fully anchored: a
// pattern p selects a name n when ^(?:p)$ matches n, shared/src/mirror/namespaces.ts).
//
// Each tool anchors differently, so the same text selects different names:
//   - KTS mirrors: Go regexp MatchString, an unanchored search: p selects n when p matches any
//     substring of n. Exactly `.*(?:p).*` in mirrorhub.
//   - ClusterSecret: Python re.match, anchored at the start only: p selects n when p matches a
//     prefix of n. Exactly `(?:p).*`.
//   - kubernetes-reflector: .NET Regex.Match, then "the match covers the whole name". A leftmost
//     match that covers the whole name is an anchored match, so `p` itself; but .NET returns the
//     FIRST match by backtracking priority, not the longest, so `ns1|ns10` rejects ns10 where an
//     anchored `ns1|ns10` selects it. The translation is `p`, and every rule's lists are compared
//     on the cluster (evaluate below) so such a difference is found and refused, never silent.
//
// A pattern RE2 cannot express (lookaround, backreferences, atomic groups, possessive
// quantifiers, conditionals, .NET class subtraction) is refused, naming the feature.
import { compilePattern } from '@mirrorhub/shared/mirror/namespaces';

export type Anchoring = 'substring' | 'prefix' | 'leftmost-full';

/** The RE2-incompatible feature `p` uses, in words, or undefined. Checked before compiling. */
export function unsupportedFeature(p: string): string | undefined {
  const checks: [RegExp, string][] = [
    [/\(\?<?[=!]/, 'a lookahead or lookbehind ((?=, (?!, (?<=, (?<!)'],
    [/\\[1-9]|\\k<|\\k'|\(\?P=/, 'a backreference'],
    [/\(\?>/, 'an atomic group ((?>...))'],
    [/[*+?}]\+/, 'a possessive quantifier (*+, ++, ?+)'],
    [/\(\?\(/, 'a conditional ((?(...)...))'],
    [/\(\?#/, 'an inline comment ((?#...))'],
    [/\\Z|\\G/, '\\Z or \\G'],
    [/\(\?'/, "a .NET named group ((?'name'...))"],
  ];
  for (const [re, what] of checks) if (re.test(p)) return what;
  if (classSubtraction(p)) return 'a .NET character class subtraction ([a-z-[aeiou]])';
  return undefined;
}

/** Whether a character class holds `-[`: .NET subtraction, read by RE2 as other characters. */
function classSubtraction(p: string): boolean {
  let inClass = false;
  for (let i = 0; i < p.length; i++) {
    const c = p[i];
    if (c === '\\') {
      i++;
      continue;
    }
    if (!inClass && c === '[') {
      inClass = true;
      if (p[i + 1] === '^') i++;
      if (p[i + 1] === ']') i++;
    } else if (inClass && c === ']') {
      inClass = false;
    } else if (inClass && c === '-' && p[i + 1] === '[') {
      return true;
    }
  }
  return false;
}

export type Rewritten = { ok: true; pattern: string } | { ok: false; reason: string };

/** The mirrorhub pattern selecting what `p` selects under `anchoring`, or why there is none. */
export function rewritePattern(p: string, anchoring: Anchoring): Rewritten {
  if (p === '') {
    // Go and Python match the empty pattern everywhere; .NET's empty match covers no name.
    return anchoring === 'leftmost-full'
      ? { ok: false, reason: 'the empty pattern selects no namespace' }
      : { ok: true, pattern: '.*' };
  }
  const feature = unsupportedFeature(p);
  if (feature) {
    return { ok: false, reason: `${JSON.stringify(p)} uses ${feature}, which RE2 does not have` };
  }
  const own = compilePattern(p, 'pattern');
  if (!own.ok) {
    return {
      ok: false,
      reason: `${JSON.stringify(p)} is not an RE2 regular expression (${own.error.replace(/^pattern: invalid regular expression "[^"]*": /, '')})`,
    };
  }
  const pattern =
    anchoring === 'substring'
      ? isMatchAll(p)
        ? '.*'
        : `.*(?:${p}).*`
      : anchoring === 'prefix'
        ? isMatchAll(p)
          ? '.*'
          : `(?:${p}).*`
        : p;
  return { ok: true, pattern };
}

/** `.*` and its spellings: kept as `.*` rather than `(?:.*).*`. */
function isMatchAll(p: string): boolean {
  return p === '.*' || p === '^.*' || p === '.*$' || p === '^.*$';
}

/**
 * Whether the old tool selects `name` with `p`, evaluated by a backtracking engine like the
 * tool's own (JavaScript's RegExp for .NET and Python; Go is RE2, so the rewritten pattern is its
 * semantics). Patterns JavaScript cannot read (Python's (?P<n>...), inline flags) fall back to the
 * rewritten pattern, which is exact for them.
 */
export function oldToolSelects(p: string, anchoring: Anchoring, name: string): boolean {
  if (p === '') return anchoring !== 'leftmost-full';
  let re: RegExp | undefined;
  // Go's regexp is RE2: JavaScript would misread its syntax (POSIX classes, (?i)).
  if (anchoring !== 'substring') {
    try {
      re = new RegExp(anchoring === 'prefix' ? `^(?:${p})` : p, 'u');
    } catch {
      re = undefined;
    }
  }
  if (re && anchoring === 'leftmost-full') {
    const m = re.exec(name);
    return m !== null && m.index === 0 && m[0].length === name.length;
  }
  if (re) return re.test(name);
  const rewritten = rewritePattern(p, anchoring);
  if (!rewritten.ok) return false;
  const m = compilePattern(rewritten.pattern, 'pattern');
  return m.ok && m.matches(name);
}

/** The literal name `p` stands for when it has no regular-expression syntax at all. */
export function literalName(p: string): string | undefined {
  return /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(p) ? p : undefined;
}

/** A namespace name as an anchored RE2 pattern matching only it. */
export function exactPattern(name: string): string {
  return name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
