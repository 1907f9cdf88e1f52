// What the converter reads and returns. Pure data: the I/O (index.ts) fills an Inventory from the
// cluster, each tool's module turns its objects into mirrorhub objects, Rules (what each selects,
// before and after) and Refusals (what cannot be translated, and why).
import type { LabelSelector, MirrorDestination } from '@mirrorhub/shared/api/index';
import { ALWAYS_DENIED_NAMESPACES } from '@mirrorhub/shared/mirror/namespaces';
import { judgePredecessor, type Succession } from '@mirrorhub/shared/mirror/predecessor';
import {
  compileLabelSelector,
  compileNamespaceMatcher,
  compilePattern,
  type NamespaceInfo,
} from '@mirrorhub/shared/mirror/namespaces';

export type Tool = 'reflector' | 'kubed' | 'ClusterSecret' | 'KTS';

export interface Meta {
  name: string;
  namespace?: string;
  uid?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: { apiVersion?: string; kind: string; name: string; uid?: string }[];
}

/** A Secret or ConfigMap as listed: metadata only (the converter never needs a payload). */
export interface Listed {
  metadata: Meta;
}

/** clustersecret.io/v1 ClusterSecret: its fields sit at the top level, not under spec. */
export interface ClusterSecret {
  metadata: Meta;
  matchNamespace?: string[];
  avoidNamespaces?: string[];
  type?: string;
  data?: Record<string, unknown> & {
    valueFrom?: { secretKeyRef?: { name?: string; namespace?: string; keys?: string[] } };
  };
}

/** KTS VaultSpec (api/v1alpha2/vault.go). */
export interface KtsVault {
  addr?: string;
  path?: string;
  auth?: {
    approle?: {
      secretRef?: { name?: string; namespace?: string };
      appRolePath?: string;
      roleIDKey?: string;
      secretIDKey?: string;
    };
    token?: { secretRef?: { name?: string; namespace?: string }; tokenKey?: string };
  };
}

/** mirrors.kts.studio SecretMirror, v1alpha2 (v1alpha1 is converted to it as KTS does). */
export interface KtsMirror {
  apiVersion?: string;
  metadata: Meta;
  spec?: {
    source?: { type?: string; name?: string; vault?: KtsVault };
    destination?: {
      type?: string;
      namespaces?: string[];
      vault?: KtsVault;
      // v1alpha1
      namespaceRegex?: string;
      namespace?: string;
    };
    deletePolicy?: string;
    pollPeriodSeconds?: number;
  };
}

export interface Inventory {
  namespaces: NamespaceInfo[];
  secrets: Listed[];
  configMaps: Listed[];
  clusterSecrets: ClusterSecret[];
  ktsMirrors: KtsMirror[];
}

export interface Options {
  /** mirrorhub's agent namespace in this cluster: always denied, like kube-system. */
  agentNamespace: string;
  /** Where a ClusterSecret's inline data becomes a source Secret. */
  sourceNamespace: string;
  /**
   * kubed's sync-contexts, as the user maps them (--kubed-context CONTEXT=CLUSTER[/NAMESPACE]):
   * the MirrorCluster each context reaches, and the namespace its kubeconfig context names.
   */
  kubedContexts?: ReadonlyMap<string, { cluster: string; namespace?: string | undefined }>;
}

export interface Refusal {
  tool: Tool;
  /** The old object, e.g. `ClusterSecret wildcard-tls` or `Secret team-a/tls`. */
  object: string;
  reason: string;
}

/** Whether an existing object is a copy the old tool made from this rule's source. */
export type MarkCheck = (copy: Meta) => { ours: true } | { ours: false; why: string };

/**
 * The agent's own takeover proof (shared/src/mirror/predecessor.ts), so --plan says "take over"
 * exactly where the agent will. This cluster's mirrorhub name is not known here: a kubed copy
 * naming a cluster is proven by its origin uid, as the agent falls back to.
 */
export function predecessorMark(s: Omit<Succession, 'readKind' | 'clusterName'>): MarkCheck {
  return (copy) => {
    const j = judgePredecessor(copy, { ...s, readKind: s.targetKind, clusterName: '' });
    return j.tool ? { ours: true } : { ours: false, why: j.why };
  };
}

/** One translated rule: what it selects with the old tool and with mirrorhub, on this cluster. */
export interface Rule {
  tool: Tool;
  object: string;
  /** The mirrorhub mirror, e.g. `SecretMirror team-a/tls`. */
  mirror: string;
  kind: 'Secret' | 'ConfigMap';
  source: { namespace: string; name: string };
  targetName: string;
  /** Namespaces the old tool copies into today (sorted). */
  before: string[];
  /** Namespaces the mirrorhub mirror selects (sorted). */
  after: string[];
  /** In before, not in after, on purpose: each with why. */
  dropped: { namespace: string; why: string }[];
  /**
   * Where the rule writes instead of this cluster's namespaces, in words (a Vault path, other
   * clusters' namespaces), if so: those copies are not visible from here.
   */
  elsewhere?: string;
  mark: MarkCheck;
}

export interface Translation {
  /** mirrorhub objects (and source Secrets / VaultConnections), in apply order. */
  objects: Record<string, unknown>[];
  rules: Rule[];
  refusals: Refusal[];
  notes: string[];
}

export const emptyTranslation = (): Translation => ({
  objects: [],
  rules: [],
  refusals: [],
  notes: [],
});

/** Namespaces no mirrorhub policy can open (shared with the agent's policy). */
export const SYSTEM_NAMESPACES: readonly string[] = ALWAYS_DENIED_NAMESPACES;

export const systemNamespaces = (opts: Options): string[] => [
  ...SYSTEM_NAMESPACES,
  opts.agentNamespace,
];

export const sorted = (xs: Iterable<string>): string[] => [...new Set(xs)].sort();

/**
 * The system namespaces `dest` would select (by name for patterns, by the cluster's labels for a
 * selector): excluding them keeps the mirror Active instead of Degraded by PolicyDenied.
 */
export function systemExclusions(dest: MirrorDestination, inv: Inventory, opts: Options): string[] {
  const out: string[] = [];
  const selector = dest.namespaceSelector
    ? compileLabelSelector(dest.namespaceSelector, 'namespaceSelector')
    : undefined;
  const patterns = (dest.namespaces ?? []).map((p) => compilePattern(p, 'namespaces'));
  const excluded = (dest.excludeNamespaces ?? []).map((p) => compilePattern(p, 'exclude'));
  for (const name of systemNamespaces(opts)) {
    if (excluded.some((m) => m.ok && m.matches(name))) continue;
    const labels = inv.namespaces.find((n) => n.name === name)?.labels;
    const empty =
      dest.namespaceSelector !== undefined &&
      Object.keys(dest.namespaceSelector.matchLabels ?? {}).length === 0 &&
      (dest.namespaceSelector.matchExpressions ?? []).length === 0;
    const bySelector =
      selector?.ok === true &&
      (empty || (inv.namespaces.some((n) => n.name === name) && selector.matches(labels)));
    const byPattern = patterns.some((m) => m.ok && m.matches(name));
    if (bySelector || byPattern) out.push(name);
  }
  return sorted(out);
}

/** What the mirrorhub destination selects on this cluster (without the source's own namespace). */
export function selectedByMirror(
  dest: MirrorDestination,
  inv: Inventory,
  source: { namespace: string; name: string },
  targetName: string,
): string[] {
  const m = compileNamespaceMatcher({
    namespaces: dest.namespaces,
    namespaceSelector: dest.namespaceSelector,
    excludeNamespaces: dest.excludeNamespaces,
    sourceNamespace: source.namespace,
    sourceName: source.name,
    targetName,
  });
  if (!m.ok) return [];
  return sorted(inv.namespaces.filter((n) => m.matches(n)).map((n) => n.name));
}

/**
 * Compares before and after. Returns the namespaces dropped on purpose (system namespaces, the
 * new source's own namespace) and, when anything else differs, the difference in words.
 */
export function compareSelections(
  before: string[],
  after: string[],
  onPurpose: Map<string, string>,
): { dropped: { namespace: string; why: string }[]; mismatch?: string } {
  const dropped: { namespace: string; why: string }[] = [];
  const lost: string[] = [];
  for (const ns of before) {
    if (after.includes(ns)) continue;
    const why = onPurpose.get(ns);
    if (why) dropped.push({ namespace: ns, why });
    else lost.push(ns);
  }
  const gained = after.filter((ns) => !before.includes(ns));
  if (lost.length === 0 && gained.length === 0) return { dropped };
  const parts = [];
  if (lost.length > 0) parts.push(`mirrorhub would not select ${lost.join(', ')}`);
  if (gained.length > 0) parts.push(`mirrorhub would also select ${gained.join(', ')}`);
  return { dropped, mismatch: parts.join('; ') };
}

// ---- Kubernetes label selectors in text (kubed's sync, reflector's *-selector) ---------------

export type ParsedSelector = { ok: true; selector: LabelSelector } | { ok: false; reason: string };

/**
 * A label selector string as Kubernetes parses it (`a=b,c!=d,e in (f,g),h notin (i),j,!k`) as a
 * LabelSelector. `""` is everything (`{}`). Gt/Lt (`a>1`) have no LabelSelector form: refused.
 */
export function parseSelectorString(text: string): ParsedSelector {
  const matchLabels: Record<string, string> = {};
  const matchExpressions: NonNullable<LabelSelector['matchExpressions']> = [];
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '(') depth++;
    else if (text[i] === ')') depth--;
    else if (text[i] === ',' && depth === 0) {
      parts.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(text.slice(start).trim());
  for (const part of parts) {
    if (part === '') {
      if (parts.length === 1) break;
      return { ok: false, reason: `empty requirement in ${JSON.stringify(text)}` };
    }
    let m: RegExpExecArray | null;
    if ((m = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(part))) {
      const values = m[3]!
        .split(',')
        .map((v) => v.trim())
        .filter((v) => v !== '');
      matchExpressions.push({ key: m[1]!, operator: m[2] === 'in' ? 'In' : 'NotIn', values });
    } else if ((m = /^([^!=<>\s]+)\s*!=\s*(\S*)$/.exec(part))) {
      matchExpressions.push({ key: m[1]!, operator: 'NotIn', values: [m[2]!] });
    } else if ((m = /^([^!=<>\s]+)\s*==?\s*(\S*)$/.exec(part))) {
      matchLabels[m[1]!] = m[2]!;
    } else if ((m = /^!\s*([^!=<>\s]+)$/.exec(part))) {
      matchExpressions.push({ key: m[1]!, operator: 'DoesNotExist' });
    } else if ((m = /^([^!=<>\s()]+)$/.exec(part))) {
      matchExpressions.push({ key: m[1]!, operator: 'Exists' });
    } else if (/[<>]/.test(part)) {
      return {
        ok: false,
        reason: `${JSON.stringify(part)} compares numbers (Gt/Lt), which a LabelSelector cannot express`,
      };
    } else {
      return { ok: false, reason: `${JSON.stringify(part)} is not a label selector requirement` };
    }
  }
  const selector: LabelSelector = {};
  if (Object.keys(matchLabels).length > 0) selector.matchLabels = matchLabels;
  if (matchExpressions.length > 0) selector.matchExpressions = matchExpressions;
  const check = compileLabelSelector(selector, 'selector');
  if (!check.ok) return { ok: false, reason: check.error };
  return { ok: true, selector };
}

export const isEverything = (s: LabelSelector): boolean =>
  Object.keys(s.matchLabels ?? {}).length === 0 && (s.matchExpressions ?? []).length === 0;

export const selectorMatches = (s: LabelSelector, labels: Record<string, string> | undefined) => {
  const m = compileLabelSelector(s, 'selector');
  return m.ok && m.matches(labels);
};

export const ref = (kind: string, m: Meta): string =>
  m.namespace ? `${kind} ${m.namespace}/${m.name}` : `${kind} ${m.name}`;

export const truthy = (v: string | undefined): boolean => (v ?? '').trim().toLowerCase() === 'true';

export interface RuleInput {
  tool: Tool;
  object: string;
  mirror: string;
  kind: 'Secret' | 'ConfigMap';
  source: { namespace: string; name: string };
  targetName: string;
  /** The translated destination, before system namespaces are excluded (completed in place). */
  destination: MirrorDestination;
  /** What the old tool selects today, without the source's own namespace when the copy would be the source. */
  before: string[];
  /** Namespaces dropped on purpose besides the system ones, with why. */
  onPurpose?: Map<string, string>;
  mark: MarkCheck;
}

/**
 * Excludes the system namespaces the destination would hit (and says so), computes what the
 * mirror selects, and compares with the old tool: a rule, or a refusal when they differ.
 */
export function buildRule(
  input: RuleInput,
  inv: Inventory,
  opts: Options,
  out: Translation,
): Rule | undefined {
  const system = systemExclusions(input.destination, inv, opts);
  if (system.length > 0) {
    input.destination.excludeNamespaces = sorted([
      ...(input.destination.excludeNamespaces ?? []),
      ...system.map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')),
    ]);
    out.notes.push(
      `${input.mirror}: excludeNamespaces ${system.join(', ')}: mirrorhub never writes to its system namespaces, and selecting them would leave the mirror Degraded (${input.object} copies there today)`,
    );
  }
  const after = selectedByMirror(input.destination, inv, input.source, input.targetName);
  const onPurpose = new Map(input.onPurpose ?? []);
  for (const s of system) onPurpose.set(s, 'a system namespace mirrorhub never writes to');
  const before = sorted(input.before);
  const cmp = compareSelections(before, after, onPurpose);
  if (cmp.mismatch) {
    out.refusals.push({
      tool: input.tool,
      object: input.object,
      reason: `the translation would select other namespaces on this cluster: ${cmp.mismatch} (today: ${before.join(', ') || 'none'})`,
    });
    return undefined;
  }
  const rule: Rule = {
    tool: input.tool,
    object: input.object,
    mirror: input.mirror,
    kind: input.kind,
    source: input.source,
    targetName: input.targetName,
    before,
    after,
    dropped: cmp.dropped,
    mark: input.mark,
  };
  out.rules.push(rule);
  return rule;
}

export const API_VERSION = 'mirrorhub.io/v1alpha1';

/** Drops undefined fields, so the YAML carries only what is set. */
export function compact<T extends Record<string, unknown>>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
