// ClusterSecret (zakkg3, clustersecret.io/v1, cluster-scoped). Fields at the top level:
//   matchNamespace: [patterns]   default [".*"]; Python re.match: anchored at the start only
//   avoidNamespaces: [patterns]  same matching; wins over matchNamespace
//   data: {key: base64}          inline values, or
//   data.valueFrom.secretKeyRef: {name, namespace, keys?}  another Secret (keys: only these)
//   type                         the copies' type (default Opaque, even with valueFrom)
// Copies are named as the ClusterSecret, carry the annotation clustersecret.io/created-by:
// ClusterSecrets (+ version, last-sync), the label clustersecret.io: "true", and the
// ClusterSecret's own labels and annotations minus kubectl.kubernetes.io/*, kopf.zalando.org/*
// (annotations) and app.kubernetes.io/* (labels) (src/kubernetes_utils.py, src/consts.py).
import type { KeyMapping, MirrorDestination } from '@mirrorhub/shared/api/index';
import {
  API_VERSION,
  buildRule,
  predecessorMark,
  compact,
  ref,
  type ClusterSecret,
  type Inventory,
  type Options,
  type Translation,
} from './model.js';
import { oldToolSelects, rewritePattern } from './patterns.js';

export const CLUSTER_SECRET = {
  createdBy: 'clustersecret.io/created-by',
  label: 'clustersecret.io',
} as const;

const BLOCKED_ANNOTATIONS = ['kopf.zalando.org', 'kubectl.kubernetes.io'];
const BLOCKED_LABELS = ['app.kubernetes.io'];

const without = (m: Record<string, string> | undefined, prefixes: string[]) => {
  const kept = Object.entries(m ?? {}).filter(([k]) => !prefixes.some((p) => k.startsWith(p)));
  return kept.length > 0 ? Object.fromEntries(kept) : undefined;
};

export function translateClusterSecrets(inv: Inventory, opts: Options, out: Translation): void {
  for (const cs of inv.clusterSecrets) translateOne(cs, inv, opts, out);
}

function translateOne(cs: ClusterSecret, inv: Inventory, opts: Options, out: Translation): void {
  const name = cs.metadata.name;
  const object = ref('ClusterSecret', cs.metadata);
  const refuse = (reason: string) => out.refusals.push({ tool: 'ClusterSecret', object, reason });
  const match = cs.matchNamespace ?? ['.*'];
  const avoid = cs.avoidNamespaces ?? [];
  const dest: MirrorDestination = {};
  for (const [list, field] of [
    [match, 'matchNamespace'],
    [avoid, 'avoidNamespaces'],
  ] as const) {
    const rewritten: string[] = [];
    for (const p of list) {
      const r = rewritePattern(p, 'prefix');
      if (!r.ok) return void refuse(`${field}: ${r.reason}`);
      rewritten.push(r.pattern);
    }
    if (rewritten.length > 0) {
      if (field === 'matchNamespace') dest.namespaces = rewritten;
      else dest.excludeNamespaces = rewritten;
    }
  }
  if (match.length === 0) return void refuse('matchNamespace is empty: it selects no namespace');
  dest.name = name;

  const data = cs.data;
  if (!data || Object.keys(data).length === 0) return void refuse('it has no data');
  let source: { kind: 'Secret'; namespace: string; name: string };
  const template: Record<string, unknown> = {};
  const sourceSecret: Record<string, unknown>[] = [];
  const onPurpose = new Map<string, string>();
  if ('valueFrom' in data) {
    if (Object.keys(data).length > 1) {
      return void refuse(
        'data.valueFrom sits beside other keys, which ClusterSecret itself refuses',
      );
    }
    const r = data.valueFrom?.secretKeyRef;
    if (!r?.name || !r.namespace) {
      return void refuse(
        'data.valueFrom.secretKeyRef needs both name and namespace (ClusterSecret cannot read it either)',
      );
    }
    source = { kind: 'Secret', namespace: r.namespace, name: r.name };
    if (r.keys) template['keys'] = r.keys.map((k): KeyMapping => ({ from: k }));
    // ClusterSecret writes its own type (default Opaque), not the referenced Secret's.
    template['type'] = cs.type ?? 'Opaque';
  } else {
    source = { kind: 'Secret', namespace: opts.sourceNamespace, name };
    sourceSecret.push({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace: opts.sourceNamespace },
      type: cs.type ?? 'Opaque',
      data,
    });
    onPurpose.set(opts.sourceNamespace, 'the new source Secret lives there');
    out.notes.push(
      `${object}: its inline data becomes the Secret ${opts.sourceNamespace}/${name} (the mirror's source; --source-namespace chooses the namespace)`,
    );
  }
  const labels = without(cs.metadata.labels, BLOCKED_LABELS);
  const annotations = without(cs.metadata.annotations, BLOCKED_ANNOTATIONS);
  if (labels) template['labels'] = labels;
  if (annotations) template['annotations'] = annotations;

  const before = inv.namespaces
    .filter((n) => !(n.name === source.namespace && source.name === name))
    .filter((n) => match.some((p) => oldToolSelects(p, 'prefix', n.name)))
    .filter((n) => !avoid.some((p) => oldToolSelects(p, 'prefix', n.name)))
    .map((n) => n.name);
  const mark = predecessorMark({
    targetKind: 'Secret',
    source,
    mirror: { kind: 'ClusterSecretMirror', name },
  });
  const rule = buildRule(
    {
      tool: 'ClusterSecret',
      object,
      mirror: `ClusterSecretMirror ${name}`,
      kind: 'Secret',
      source,
      targetName: name,
      destination: dest,
      before,
      onPurpose,
      mark,
    },
    inv,
    opts,
    out,
  );
  if (!rule) return;
  out.objects.push(...sourceSecret, {
    apiVersion: API_VERSION,
    kind: 'ClusterSecretMirror',
    // Named exactly as the ClusterSecret: the copies' names, and the agent's proof of takeover.
    metadata: { name },
    spec: compact({
      source,
      destination: dest,
      template: Object.keys(template).length > 0 ? template : undefined,
    }),
  });
}
