// kubed / config-syncer (appscode): annotations on a source Secret or ConfigMap.
//   kubed.appscode.com/sync: "true" or ""    every namespace
//   kubed.appscode.com/sync: "<selector>"    namespaces whose labels match (Kubernetes syntax)
//   kubed.appscode.com/sync-contexts: a,b    also the namespace of each named context of kubed's
//                                            own kubeconfig file (other clusters)
// Copies are named as the source, never in the source's namespace (pkg/syncer/secret.go), and
// carry the labels kubed.appscode.com/origin.{name,namespace,cluster} and the annotation
// kubed.appscode.com/origin (the source's object reference).
import type { MirrorDestination } from '@mirrorhub/shared/api/index';
import {
  API_VERSION,
  buildRule,
  predecessorMark,
  parseSelectorString,
  ref,
  selectorMatches,
  sorted,
  type Inventory,
  type MarkCheck,
  type Options,
  type Translation,
} from './model.js';
import { exactPattern } from './patterns.js';

export const KUBED = {
  sync: 'kubed.appscode.com/sync',
  syncContexts: 'kubed.appscode.com/sync-contexts',
  origin: 'kubed.appscode.com/origin',
  originName: 'kubed.appscode.com/origin.name',
  originNamespace: 'kubed.appscode.com/origin.namespace',
  originCluster: 'kubed.appscode.com/origin.cluster',
} as const;

/** Whether a copy is kubed's copy of the source ns/name (of uid `uid`) in this cluster. */
function kubedMark(
  kind: 'Secret' | 'ConfigMap',
  ns: string,
  name: string,
  uid?: string,
): MarkCheck {
  return predecessorMark({
    targetKind: kind,
    source: { namespace: ns, name, uid },
    mirror: { kind: 'SecretMirror', name },
  });
}

/**
 * sync-contexts: kubed copies into the namespace of each named context of its own kubeconfig file
 * (the source's namespace when the context names none), in other clusters. This cluster does not
 * hold that file, so the user maps each context to a MirrorCluster (--kubed-context); then one
 * ClusterSecretMirror per target namespace delivers to exactly those clusters (a namespaced
 * SecretMirror reaches other clusters only where the hub's tenancy allows it). Unmapped contexts
 * are refused.
 */
function translateContexts(
  kind: 'Secret' | 'ConfigMap',
  ns: string,
  name: string,
  uid: string | undefined,
  object: string,
  contexts: string[],
  opts: Options,
  out: Translation,
): void {
  const map = opts.kubedContexts ?? new Map<string, { cluster: string; namespace?: string }>();
  const unmapped = contexts.filter((c) => !map.has(c));
  if (unmapped.length > 0) {
    out.refusals.push({
      tool: 'kubed',
      object,
      reason: `sync-contexts ${unmapped.join(', ')}: these name contexts of kubed's own kubeconfig file, which this cluster does not hold, so migrate cannot tell which cluster and namespace each reaches; register each cluster as a MirrorCluster and pass --kubed-context CONTEXT=MIRRORCLUSTER[/NAMESPACE] (the namespace of the context, else ${ns}) for each`,
    });
    return;
  }
  const byNamespace = new Map<string, string[]>();
  for (const c of contexts) {
    const m = map.get(c)!;
    const target = m.namespace || ns;
    byNamespace.set(target, [...(byNamespace.get(target) ?? []), m.cluster]);
  }
  for (const [target, clusters] of [...byNamespace].sort(([a], [b]) => a.localeCompare(b))) {
    const names = sorted(clusters);
    if (names.length !== clusters.length) {
      out.refusals.push({
        tool: 'kubed',
        object,
        reason: `sync-contexts map two contexts to one MirrorCluster and namespace (${target}): kubed itself refuses contexts that reach the same cluster`,
      });
      continue;
    }
    const mirrorName =
      byNamespace.size === 1 ? `kubed-${ns}-${name}` : `kubed-${ns}-${name}-${target}`;
    out.rules.push({
      tool: 'kubed',
      object: `${object} (sync-contexts)`,
      mirror: `ClusterSecretMirror ${mirrorName}`,
      kind,
      source: { namespace: ns, name },
      targetName: name,
      before: [],
      after: [],
      dropped: [],
      elsewhere: `namespace ${target} of clusters ${names.join(', ')}`,
      mark: kubedMark(kind, ns, name, uid),
    });
    out.notes.push(
      `${object}: sync-contexts become ClusterSecretMirror ${mirrorName}, delivering to the MirrorClusters ${names.join(', ')} (register them before applying)`,
    );
    out.objects.push({
      apiVersion: API_VERSION,
      kind: 'ClusterSecretMirror',
      metadata: { name: mirrorName.slice(0, 253) },
      spec: {
        source: { kind, namespace: ns, name },
        destination: { clusters: { names }, namespaces: [exactPattern(target)] },
      },
    });
  }
}

export function translateKubed(inv: Inventory, opts: Options, out: Translation): void {
  for (const [kind, items] of [
    ['Secret', inv.secrets],
    ['ConfigMap', inv.configMaps],
  ] as const) {
    for (const src of items) {
      const a = src.metadata.annotations ?? {};
      const sync = a[KUBED.sync];
      const contexts = (a[KUBED.syncContexts] ?? '')
        .split(',')
        .map((c) => c.trim())
        .filter((c) => c !== '');
      if (sync === undefined && contexts.length === 0) continue;
      const ns = src.metadata.namespace ?? '';
      const name = src.metadata.name;
      const object = ref(kind, src.metadata);
      if (contexts.length > 0)
        translateContexts(kind, ns, name, src.metadata.uid, object, contexts, opts, out);
      if (sync === undefined) continue;
      const parsed = parseSelectorString(sync === 'true' ? '' : sync);
      if (!parsed.ok) {
        out.refusals.push({ tool: 'kubed', object, reason: `sync selector: ${parsed.reason}` });
        continue;
      }
      const mark = kubedMark(kind, ns, name, src.metadata.uid);
      const dest: MirrorDestination = { namespaceSelector: parsed.selector };
      const before = inv.namespaces
        .filter((n) => n.name !== ns && selectorMatches(parsed.selector, n.labels))
        .map((n) => n.name);
      const rule = buildRule(
        {
          tool: 'kubed',
          object,
          mirror: `SecretMirror ${ns}/${name}`,
          kind,
          source: { namespace: ns, name },
          targetName: name,
          destination: dest,
          before,
          mark,
        },
        inv,
        opts,
        out,
      );
      if (!rule) continue;
      out.objects.push({
        apiVersion: API_VERSION,
        kind: 'SecretMirror',
        metadata: { name, namespace: ns },
        spec: { source: { kind, name }, destination: dest },
      });
    }
  }
}
