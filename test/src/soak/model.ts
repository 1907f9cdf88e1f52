/**
 * The soak checker's own idea of what the clusters should hold, computed from what it reads in
 * them: the mirrors' specs, the MirrorClusters' labels, each cluster's namespaces and Secrets.
 * It does not import mirrorhub's planner or read its status, so a bug there cannot hide here.
 * The only mirrorhub knowledge it uses is the documented contract: copies carry the
 * `mirrorhub.io/managed-by` label and the `mirrorhub.io/mirror` annotation, copy names equal the
 * source's name, and a Retain release removes both marks (docs/architecture.md).
 *
 * Pure: snapshots in, discrepancies out.
 */
export const MANAGED_BY = 'mirrorhub.io/managed-by';
export const MIRROR_ANNOTATION = 'mirrorhub.io/mirror';

export interface NamespaceView {
  name: string;
  labels: Record<string, string>;
  terminating: boolean;
}

export interface SecretView {
  namespace: string;
  name: string;
  uid: string;
  resourceVersion: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** Decoded as UTF-8. */
  data: Record<string, string>;
}

export interface ClusterView {
  name: string;
  /** The MirrorCluster's labels on the hub. */
  labels: Record<string, string>;
  namespaces: NamespaceView[];
  /** Secrets in the soak's namespaces. */
  secrets: SecretView[];
}

/** The part of a ClusterSecretMirror spec the soak uses. */
export interface SoakMirrorSpec {
  source: { kind: 'Secret'; name: string; namespace: string };
  destination: {
    clusters: { selector: { matchLabels: Record<string, string> } };
    namespaces?: string[];
    namespaceSelector?: { matchLabels: Record<string, string> };
    excludeNamespaces?: string[];
  };
  template?: { labels?: Record<string, string>; keys?: Array<{ from: string; to?: string }> };
  deletePolicy?: 'Delete' | 'Retain';
  pollPeriodSeconds?: number;
}

export interface MirrorView {
  name: string;
  deleting: boolean;
  spec: SoakMirrorSpec;
}

export interface Snapshot {
  /** The hub's own cluster name (it holds the sources). */
  hub: string;
  clusters: ClusterView[];
  mirrors: MirrorView[];
  /** `<namespace>/<name>` of a source Secret in the hub cluster -> its data. */
  sources: Map<string, Record<string, string>>;
  /** Namespaces no mirror may write in, per cluster (the agents' policies). */
  denied: (cluster: string, namespace: string) => boolean;
}

export type DiscrepancyKind = 'missing' | 'stale' | 'orphan';

export interface Discrepancy {
  kind: DiscrepancyKind;
  cluster: string;
  namespace: string;
  name: string;
  mirror: string;
  /** What was expected (a content fingerprint) or found; keys a discrepancy across checks. */
  detail: string;
}

export interface Expected {
  mirror: string;
  cluster: string;
  namespace: string;
  name: string;
  data: Record<string, string>;
  labels: Record<string, string>;
}

const anchored = (p: string): RegExp => new RegExp(`^(?:${p})$`);

function labelsMatch(want: Record<string, string> | undefined, have: Record<string, string>) {
  if (!want) return false;
  return Object.entries(want).every(([k, v]) => have[k] === v);
}

/** Does this mirror want a copy in this namespace of this cluster? */
export function selects(
  s: Snapshot,
  m: MirrorView,
  cluster: ClusterView,
  ns: NamespaceView,
): boolean {
  const d = m.spec.destination;
  if (m.deleting || ns.terminating) return false;
  if (!labelsMatch(d.clusters.selector.matchLabels, cluster.labels)) return false;
  if (cluster.name === s.hub && ns.name === m.spec.source.namespace) return false;
  if (s.denied(cluster.name, ns.name)) return false;
  const byName = (d.namespaces ?? []).some((p) => anchored(p).test(ns.name));
  const byLabel = labelsMatch(d.namespaceSelector?.matchLabels, ns.labels);
  if (!byName && !byLabel) return false;
  return !(d.excludeNamespaces ?? []).some((p) => anchored(p).test(ns.name));
}

/** The copy's data as the template shapes the source's. */
export function shaped(spec: SoakMirrorSpec, src: Record<string, string>): Record<string, string> {
  const keys = spec.template?.keys;
  if (!keys) return { ...src };
  const out: Record<string, string> = {};
  for (const k of keys) if (k.from in src) out[k.to ?? k.from] = src[k.from]!;
  return out;
}

/** Every copy the snapshot calls for. A mirror whose source is missing calls for none. */
export function expectedCopies(s: Snapshot): Expected[] {
  const out: Expected[] = [];
  for (const m of s.mirrors) {
    const src = s.sources.get(`${m.spec.source.namespace}/${m.spec.source.name}`);
    if (!src) continue;
    const data = shaped(m.spec, src);
    for (const c of s.clusters)
      for (const ns of c.namespaces)
        if (selects(s, m, c, ns))
          out.push({
            mirror: m.name,
            cluster: c.name,
            namespace: ns.name,
            name: m.spec.source.name,
            data,
            labels: m.spec.template?.labels ?? {},
          });
  }
  return out;
}

/** Carries both of mirrorhub's marks (a Retain release removes them). */
export const isMarked = (
  labels: Record<string, string> | undefined,
  annotations: Record<string, string> | undefined,
): boolean => labels?.[MANAGED_BY] !== undefined && annotations?.[MIRROR_ANNOTATION] !== undefined;

export const isCopy = (o: SecretView): boolean => isMarked(o.labels, o.annotations);

/** `ClusterSecretMirror//<name>` -> `<name>`. */
export function mirrorOf(o: SecretView): string {
  return (o.annotations[MIRROR_ANNOTATION] ?? '').split('/').pop() ?? '';
}

const sameData = (a: Record<string, string>, b: Record<string, string>) => {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => b[k] === a[k]);
};

export function fingerprint(data: Record<string, string>): string {
  return Object.keys(data)
    .sort()
    .map((k) => `${k}=${data[k]!.length}:${data[k]!.slice(-6)}`)
    .join(',');
}

/**
 * What differs from the snapshot's own expectation. A name taken by an object that is not a
 * copy is a conflict mirrorhub must leave alone: not a discrepancy (the planted-object check
 * proves it was left alone).
 */
export function discrepancies(s: Snapshot): Discrepancy[] {
  const out: Discrepancy[] = [];
  const wanted = new Set<string>();
  const byCluster = new Map(
    s.clusters.map((c) => [
      c.name,
      new Map(c.secrets.map((o) => [`${o.namespace}/${o.name}`, o] as const)),
    ]),
  );
  for (const e of expectedCopies(s)) {
    wanted.add(`${e.cluster}/${e.namespace}/${e.name}/${e.mirror}`);
    const o = byCluster.get(e.cluster)?.get(`${e.namespace}/${e.name}`);
    const at = { cluster: e.cluster, namespace: e.namespace, name: e.name, mirror: e.mirror };
    if (!o) {
      out.push({ kind: 'missing', ...at, detail: fingerprint(e.data) });
    } else if (!isCopy(o)) {
      continue; // a conflict: the owner's object stays as it is
    } else if (!sameData(o.data, e.data) || !labelsMatch(e.labels, o.labels)) {
      out.push({
        kind: 'stale',
        ...at,
        detail: `${fingerprint(o.data)} != ${fingerprint(e.data)}`,
      });
    }
  }
  const terminating = new Set(
    s.clusters.flatMap((c) =>
      c.namespaces.filter((n) => n.terminating).map((n) => `${c.name}/${n.name}`),
    ),
  );
  for (const c of s.clusters)
    for (const o of c.secrets) {
      if (!isCopy(o) || terminating.has(`${c.name}/${o.namespace}`)) continue;
      const mirror = mirrorOf(o);
      if (wanted.has(`${c.name}/${o.namespace}/${o.name}/${mirror}`)) continue;
      out.push({
        kind: 'orphan',
        cluster: c.name,
        namespace: o.namespace,
        name: o.name,
        mirror,
        detail: 'a marked copy nothing selects',
      });
    }
  return out;
}

export const discrepancyKey = (d: Discrepancy): string =>
  `${d.kind} ${d.cluster}/${d.namespace}/${d.name} (${d.mirror}) ${d.detail}`;

/** Conflicts per mirror: namespaces it selects whose copy name an unmarked object holds. */
export function conflictsByMirror(s: Snapshot): Map<string, number> {
  const out = new Map<string, number>();
  const objs = new Map(
    s.clusters.flatMap((c) => c.secrets.map((o) => [`${c.name}/${o.namespace}/${o.name}`, o])),
  );
  for (const e of expectedCopies(s)) {
    const o = objs.get(`${e.cluster}/${e.namespace}/${e.name}`);
    if (o && !isCopy(o)) out.set(e.mirror, (out.get(e.mirror) ?? 0) + 1);
  }
  return out;
}
