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
  parseSelectorString,
  ref,
  selectorMatches,
  type Inventory,
  type MarkCheck,
  type Options,
  type Translation,
} from './model.js';

export const KUBED = {
  sync: 'kubed.appscode.com/sync',
  syncContexts: 'kubed.appscode.com/sync-contexts',
  origin: 'kubed.appscode.com/origin',
  originName: 'kubed.appscode.com/origin.name',
  originNamespace: 'kubed.appscode.com/origin.namespace',
  originCluster: 'kubed.appscode.com/origin.cluster',
} as const;

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
      if (contexts.length > 0) {
        out.refusals.push({
          tool: 'kubed',
          object,
          reason: `sync-contexts ${contexts.join(', ')} name contexts of kubed's own kubeconfig file, which this cluster does not hold: migrate cannot tell which cluster and namespace each one is; register each cluster as a MirrorCluster and add a SecretMirror with destination.clusters.names and the context's namespace (else ${ns}), then remove sync-contexts`,
        });
      }
      if (sync === undefined) continue;
      const parsed = parseSelectorString(sync === 'true' ? '' : sync);
      if (!parsed.ok) {
        out.refusals.push({ tool: 'kubed', object, reason: `sync selector: ${parsed.reason}` });
        continue;
      }
      const mark: MarkCheck = (copy) => {
        const l = copy.labels ?? {};
        if (l[KUBED.originName] === name && l[KUBED.originNamespace] === ns) return { ours: true };
        return {
          ours: false,
          why:
            l[KUBED.originName] !== undefined
              ? `kubed copy of ${l[KUBED.originNamespace] ?? '?'}/${l[KUBED.originName]}, another source`
              : 'not a kubed copy (no origin labels)',
        };
      };
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
