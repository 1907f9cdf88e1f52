// Which namespaces get a copy.
//
// Semantics (also stated in the CRD descriptions):
//   selected(ns) = (matches any `namespaces` pattern  OR  matches `namespaceSelector`)
//                  AND NOT matches any `excludeNamespaces` pattern
//                  AND NOT (ns is the source's namespace and the copy would have the source's name)
// - Patterns are RE2 regular expressions (the syntax Go and the API server's CEL use), matched
//   against the whole name: "project-a-.+" behaves like ^(?:project-a-.+)$. RE2 runs in linear
//   time, so a tenant's pattern cannot stall the agent the way a backtracking RegExp could
//   (e.g. "(a+)+b" against a long name).
// - An absent namespaceSelector selects nothing by itself; an empty one ({}) selects every
//   namespace (Kubernetes semantics). Exclusions win over both.
// - Anything that does not compile is an error naming the field and the value, e.g.
//   `destination.namespaces[1]: invalid regular expression "project-(": missing closing )`.

import { RE2JS } from 're2js';
import type { LabelSelector } from '../api/types.gen.js';

/**
 * Namespaces no follower policy can open: the control plane's own (the agent adds its own
 * namespace). The agent refuses copies there; `mirrorhub migrate` excludes them from rules that
 * selected every namespace, so a migrated mirror does not end Degraded.
 */
export const ALWAYS_DENIED_NAMESPACES: readonly string[] = [
  'kube-system',
  'kube-public',
  'kube-node-lease',
];

export type Labels = Readonly<Record<string, string>>;

export interface NamespaceInfo {
  name: string;
  labels?: Labels | undefined;
}

export type Compiled<T> = ({ ok: true } & T) | { ok: false; error: string };

export type PatternMatcher = Compiled<{ matches(value: string): boolean }>;
export type LabelSelectorMatcher = Compiled<{ matches(labels: Labels | undefined): boolean }>;
export type NamespaceMatcher = Compiled<{ matches(ns: NamespaceInfo): boolean }>;

export interface NamespaceSelectionInput {
  namespaces?: readonly string[] | undefined;
  namespaceSelector?: LabelSelector | undefined;
  excludeNamespaces?: readonly string[] | undefined;
  /** Namespace of the source object when it lives in the cluster being matched. */
  sourceNamespace?: string | undefined;
  /** Name of the source object; with targetName decides whether sourceNamespace is skipped. */
  sourceName?: string | undefined;
  /** Name of every copy. */
  targetName?: string | undefined;
}

/** Compiles one anchored RE2 pattern; `path` names the field in errors. */
export function compilePattern(pattern: string, path: string): PatternMatcher {
  const invalid = (why: string): PatternMatcher => ({
    ok: false,
    error: `${path}: invalid regular expression ${JSON.stringify(pattern)}: ${why}`,
  });
  if (pattern === '') return invalid('empty pattern');
  try {
    // Compile the pattern on its own first: a pattern that is not self-contained (e.g. "a)|(b")
    // would otherwise escape the anchoring group below.
    RE2JS.compile(pattern);
    const re = RE2JS.compile(`^(?:${pattern})$`);
    return { ok: true, matches: (value) => re.matches(value) };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return invalid(message.replace(/^error parsing regexp: /, ''));
  }
}

// Kubernetes' validation of label keys (qualified names) and values.
const QUALIFIED_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function labelKeyProblem(key: string): string | undefined {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) {
    return 'prefix must be a DNS subdomain';
  }
  if (name.length === 0 || name.length > 63 || !QUALIFIED_NAME.test(name)) {
    return 'name must be 1-63 alphanumerics, with -, _ and . inside';
  }
  return undefined;
}

function labelValueProblem(value: string): string | undefined {
  if (value.length > 63 || !LABEL_VALUE.test(value)) {
    return 'must be at most 63 alphanumerics, with -, _ and . inside';
  }
  return undefined;
}

type Requirement = (labels: Labels) => boolean;

/** Own keys only: a label named "constructor" must not be found on Object.prototype. */
const has = (labels: Labels, key: string): boolean => Object.hasOwn(labels, key);

/**
 * Compiles a Kubernetes LabelSelector: every matchLabels entry and every matchExpressions
 * requirement must hold; `{}` matches everything. Errors name the field, as the API server does.
 */
export function compileLabelSelector(selector: LabelSelector, path: string): LabelSelectorMatcher {
  const errors: string[] = [];
  const requirements: Requirement[] = [];

  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    const keyProblem = labelKeyProblem(key);
    const valueProblem = labelValueProblem(value);
    if (keyProblem)
      errors.push(`${path}.matchLabels: invalid key ${JSON.stringify(key)}: ${keyProblem}`);
    if (valueProblem) {
      errors.push(
        `${path}.matchLabels[${key}]: invalid value ${JSON.stringify(value)}: ${valueProblem}`,
      );
    }
    requirements.push((labels) => has(labels, key) && labels[key] === value);
  }

  (selector.matchExpressions ?? []).forEach((expr, i) => {
    const at = `${path}.matchExpressions[${i}]`;
    const { key, operator } = expr;
    const values = expr.values ?? [];
    const keyProblem = labelKeyProblem(key ?? '');
    if (keyProblem) errors.push(`${at}.key: invalid key ${JSON.stringify(key)}: ${keyProblem}`);
    switch (operator) {
      case 'In':
      case 'NotIn': {
        if (values.length === 0) {
          errors.push(`${at}.values: must be non-empty for operator ${operator}`);
        }
        values.forEach((v, j) => {
          const problem = labelValueProblem(v);
          if (problem)
            errors.push(`${at}.values[${j}]: invalid value ${JSON.stringify(v)}: ${problem}`);
        });
        const set = new Set(values);
        requirements.push(
          operator === 'In'
            ? (labels) => has(labels, key) && set.has(labels[key]!)
            : (labels) => !has(labels, key) || !set.has(labels[key]!),
        );
        break;
      }
      case 'Exists':
      case 'DoesNotExist':
        if (values.length > 0) {
          errors.push(`${at}.values: must be empty for operator ${operator}`);
        }
        requirements.push(
          operator === 'Exists' ? (labels) => has(labels, key) : (labels) => !has(labels, key),
        );
        break;
      default:
        errors.push(
          `${at}.operator: ${JSON.stringify(operator)} is not a valid operator (In, NotIn, Exists, DoesNotExist)`,
        );
    }
  });

  if (errors.length > 0) return { ok: false, error: errors.join('; ') };
  return {
    ok: true,
    matches: (labels) => {
      const own = labels ?? {};
      return requirements.every((req) => req(own));
    },
  };
}

/**
 * Compiles a namespace selection (a mirror's destination or a MirrorDelivery spec) into a
 * matcher. `fieldPath` prefixes error messages: "destination" for mirrors, "spec" for deliveries.
 */
export function compileNamespaceMatcher(
  input: NamespaceSelectionInput,
  options: { fieldPath?: string } = {},
): NamespaceMatcher {
  const path = options.fieldPath ?? 'destination';
  const errors: string[] = [];

  const compileAll = (patterns: readonly string[] | undefined, field: string) => {
    const out: ((name: string) => boolean)[] = [];
    (patterns ?? []).forEach((pattern, i) => {
      const m = compilePattern(pattern, `${path}.${field}[${i}]`);
      if (m.ok) out.push(m.matches);
      else errors.push(m.error);
    });
    return out;
  };

  const includes = compileAll(input.namespaces, 'namespaces');
  const excludes = compileAll(input.excludeNamespaces, 'excludeNamespaces');
  let selector: ((labels: Labels | undefined) => boolean) | undefined;
  if (input.namespaceSelector) {
    const m = compileLabelSelector(input.namespaceSelector, `${path}.namespaceSelector`);
    if (m.ok) selector = m.matches;
    else errors.push(m.error);
  }
  if ((input.namespaces ?? []).length === 0 && !input.namespaceSelector) {
    errors.push(`${path}: set namespaces or namespaceSelector (or both)`);
  }
  if (errors.length > 0) return { ok: false, error: errors.join('; ') };

  // The source object itself is never a target. When either name is unknown, err on the safe side
  // and skip the whole source namespace.
  const { sourceNamespace, sourceName, targetName } = input;
  const skipsSourceNamespace =
    sourceNamespace !== undefined &&
    sourceNamespace !== '' &&
    (sourceName === undefined || targetName === undefined || sourceName === targetName);

  return {
    ok: true,
    matches: (ns) => {
      if (skipsSourceNamespace && ns.name === sourceNamespace) return false;
      if (excludes.some((m) => m(ns.name))) return false;
      return includes.some((m) => m(ns.name)) || (selector?.(ns.labels) ?? false);
    },
  };
}

/**
 * A LabelSelector in kubectl's notation (`team=a,env in (prod,stage),!legacy`), keys sorted as
 * Kubernetes prints them. `{}` prints as "" (everything); callers decide how to show that.
 */
export function formatLabelSelector(selector: LabelSelector): string {
  const parts: { key: string; text: string }[] = [];
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    parts.push({ key, text: `${key}=${value}` });
  }
  for (const { key, operator, values } of selector.matchExpressions ?? []) {
    const list = [...(values ?? [])].sort().join(',');
    const text =
      operator === 'In'
        ? `${key} in (${list})`
        : operator === 'NotIn'
          ? `${key} notin (${list})`
          : operator === 'Exists'
            ? key
            : operator === 'DoesNotExist'
              ? `!${key}`
              : `${key} ${String(operator)} (${list})`;
    parts.push({ key, text });
  }
  return parts
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map((p) => p.text)
    .join(',');
}
