// Taking over a predecessor's copy: the decision and the write, both pure (apply.ts performs it).
//
// Teams move to mirrorhub from kubernetes-reflector, kubed (config-syncer), ClusterSecret and KTS
// mirrors, each of which has already copied the source into the namespaces mirrorhub will serve.
// An object mirrorhub does not own is a Conflict (adoptable only with conflictPolicy Adopt and the
// policy's allowAdopt), and deleting those copies first leaves pods that start meanwhile without
// their Secret. A copy whose own marks PROVE that the old tool made it from this delivery's
// source, in this cluster, is therefore taken over without Adopt: in one conditional write that
// keeps the object (its uid), gives it mirrorhub's content and marks, and drops the old tool's
// marks, trigger annotations and ownerReferences, so neither that tool nor the garbage collector
// touches it again. Anything short of proof stays a Conflict, exactly as before.
//
// The proofs, as each tool writes its copies (read from their sources):
// - kubernetes-reflector: annotation reflector.v1.k8s.emberstack.com/reflects = "<ns>/<name>" of
//   the source (ResourceMirror.cs writes the source's NamespacedName there);
// - kubed / config-syncer: labels kubed.appscode.com/origin.namespace and origin.name = the
//   source's, on a copy with the source's name (syncer.go), made in this cluster: origin.cluster
//   is kubed's own --cluster-name (empty by default, "unicorn" in kubed's example config), which
//   mirrorhub cannot know, and a copy kubed synced here from another cluster's source of the
//   same name (sync-contexts) carries that cluster's. So origin.cluster empty or this cluster's
//   name proves it, and otherwise the annotation kubed.appscode.com/origin, the source's object
//   reference, must carry the uid of the source in this cluster (the agent reads it);
// - KTS mirrors: annotation mirrors.kts.studio/owned-by = "<mirror ns>/<mirror name>", where a
//   Secret source lives in the mirror's namespace and copies keep its name (dest_namespaces.go),
//   so the namespace part and the copy's name must be the source's; source-type, when present,
//   is "secret" (a Vault-sourced KTS copy is not a copy of this Secret);
// - ClusterSecret: label clustersecret.io or annotation clustersecret.io/created-by, on a copy
//   named as the ClusterSecret (cluster-scoped, so only a ClusterSecretMirror of that name
//   delivers it; kubernetes_utils.py), any ownerReference being to that ClusterSecret.
// Every tool copies within one cluster, so only the delivery to the source's own cluster takes
// anything over, and a copy owned (ownerReferences) by anything but the proving tool is not one
// that tool made as it makes them.

import type { V1ConfigMap, V1OwnerReference, V1Secret } from '@kubernetes/client-node';
import type { MirrorDelivery, Predecessor } from '@mirrorhub/shared/api/types.gen';
import { FOREIGN_OWNERSHIP_PATTERNS } from '@mirrorhub/shared/mirror/foreign-ownership';
import { findKeyPattern } from '@mirrorhub/shared/mirror/shape';
import { RESERVED_PREFIX } from '@mirrorhub/shared/api/contract';
import type { Copy } from './plan.js';

export type { Predecessor };

type StringMap = Record<string, string>;

export const REFLECTOR_REFLECTS = 'reflector.v1.k8s.emberstack.com/reflects';
export const KUBED_ORIGIN_NAMESPACE = 'kubed.appscode.com/origin.namespace';
export const KUBED_ORIGIN_NAME = 'kubed.appscode.com/origin.name';
export const KUBED_ORIGIN_CLUSTER = 'kubed.appscode.com/origin.cluster';
export const KUBED_ORIGIN = 'kubed.appscode.com/origin';
export const KTS_OWNED_BY = 'mirrors.kts.studio/owned-by';
export const KTS_SOURCE_TYPE = 'mirrors.kts.studio/source-type';
export const CLUSTERSECRET_LABEL = 'clustersecret.io';
export const CLUSTERSECRET_CREATED_BY = 'clustersecret.io/created-by';
export const CLUSTERSECRET_GROUP = 'clustersecret.io';

/** The object holding a copy's name, as read (metadata is all the decision looks at). */
export interface ExistingObject {
  kind?: string | undefined;
  metadata?:
    | {
        name?: string | undefined;
        namespace?: string | undefined;
        resourceVersion?: string | undefined;
        labels?: StringMap | undefined;
        annotations?: StringMap | undefined;
        ownerReferences?: Pick<V1OwnerReference, 'apiVersion' | 'kind' | 'name'>[] | undefined;
      }
    | undefined;
}

/** A namespace name (RFC 1123 label): what a Vault origin's "vault:<mount>" part is not. */
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * The delivery's source as namespace and name when it is an object in this cluster (spec.origin
 * "<cluster>/<namespace>/<name>", the cluster being this one); undefined for another cluster's
 * source, a Vault source ("<cluster>/vault:<path>"), or a delivery of a hub too old to say.
 */
export function localSource(
  delivery: MirrorDelivery,
  clusterName: string,
): { namespace: string; name: string } | undefined {
  const { origin, originCluster } = delivery.spec;
  if (!origin || !clusterName || originCluster !== clusterName) return undefined;
  const parts = origin.split('/');
  if (parts.length !== 3) return undefined;
  const [cluster, namespace, name] = parts as [string, string, string];
  if (cluster !== clusterName || !NAMESPACE.test(namespace) || !name) return undefined;
  return { namespace, name };
}

/** The uid in kubed's origin annotation (the source's object reference, as JSON), if any. */
function kubedOriginUid(annotations: StringMap): string | undefined {
  try {
    const ref = JSON.parse(annotations[KUBED_ORIGIN] ?? '') as { uid?: unknown };
    return typeof ref.uid === 'string' && ref.uid !== '' ? ref.uid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Where to read the source, when only its uid can decide whether `existing` is kubed's copy of
 * it (origin.cluster names a cluster mirrorhub does not know by that name); else undefined.
 */
export function sourceToCheck(
  existing: ExistingObject,
  kind: string,
  delivery: MirrorDelivery,
  clusterName: string,
): { namespace: string; name: string } | undefined {
  const source = localSource(delivery, clusterName);
  const meta = existing.metadata ?? {};
  const labels = meta.labels ?? {};
  if (
    !source ||
    kind !== delivery.spec.target.kind ||
    labels[KUBED_ORIGIN_NAMESPACE] !== source.namespace ||
    labels[KUBED_ORIGIN_NAME] !== source.name ||
    meta.name !== source.name ||
    kubedOriginUid(meta.annotations ?? {}) === undefined
  ) {
    return undefined;
  }
  return source;
}

/**
 * The tool whose copy of this delivery's source `existing` provably is, or undefined (then it is
 * a Conflict as any object mirrorhub does not own). `kind` is the kind it was read as;
 * `sourceUid`, the source's uid in this cluster when sourceToCheck asked for it.
 */
export function predecessorOf(
  existing: ExistingObject,
  kind: string,
  delivery: MirrorDelivery,
  clusterName: string,
  sourceUid?: string,
): Predecessor | undefined {
  if (kind !== delivery.spec.target.kind) return undefined;
  const source = localSource(delivery, clusterName);
  if (!source) return undefined;
  const meta = existing.metadata ?? {};
  const name = meta.name ?? '';
  const labels = meta.labels ?? {};
  const annotations = meta.annotations ?? {};
  const owners = meta.ownerReferences ?? [];
  const has = (map: StringMap, key: string) => Object.hasOwn(map, key);

  let tool: Predecessor | undefined;
  if (annotations[REFLECTOR_REFLECTS] === `${source.namespace}/${source.name}`) {
    tool = 'reflector';
  } else if (
    labels[KUBED_ORIGIN_NAMESPACE] === source.namespace &&
    labels[KUBED_ORIGIN_NAME] === source.name &&
    name === source.name &&
    ([undefined, '', clusterName].includes(labels[KUBED_ORIGIN_CLUSTER]) ||
      (sourceUid !== undefined && kubedOriginUid(annotations) === sourceUid))
  ) {
    tool = 'kubed';
  } else if (
    kind === 'Secret' &&
    name === source.name &&
    (annotations[KTS_OWNED_BY] ?? '').startsWith(`${source.namespace}/`) &&
    (annotations[KTS_OWNED_BY] ?? '').length > source.namespace.length + 1 &&
    (annotations[KTS_SOURCE_TYPE] ?? 'secret') === 'secret'
  ) {
    tool = 'kts-mirrors';
  } else if (
    kind === 'Secret' &&
    (has(labels, CLUSTERSECRET_LABEL) || has(annotations, CLUSTERSECRET_CREATED_BY)) &&
    delivery.spec.mirror.kind === 'ClusterSecretMirror' &&
    delivery.spec.mirror.name === name
  ) {
    tool = 'ClusterSecret';
  }
  if (!tool) return undefined;
  // Owned by anything but the tool's own object: not a copy as that tool makes it.
  const toolOwns = (r: (typeof owners)[number]) =>
    tool === 'ClusterSecret' &&
    r.kind === 'ClusterSecret' &&
    (r.apiVersion ?? '').startsWith(`${CLUSTERSECRET_GROUP}/`) &&
    r.name === name;
  return owners.every(toolOwns) ? tool : undefined;
}

/** How status and messages name a copy a tool made: "a copy kubed made from <ns>/<name>". */
export function predecessorText(tool: Predecessor, delivery: MirrorDelivery): string {
  const origin = delivery.spec.origin ?? '';
  const source = origin.slice(origin.indexOf('/') + 1);
  return `a copy ${tool} made from ${delivery.spec.target.kind} ${source}`;
}

/**
 * The one write that takes `existing` over (a JSON merge patch, conditional on the version read):
 * the copy's data, labels and annotations as `obj` has them; every other controller's ownership
 * or trigger key (foreign-ownership.ts, and the policy's list) removed; every ownerReference
 * removed (predecessorOf accepted only the old tool's); data keys the copy does not have
 * removed. Other keys someone else added (a reloader's annotation) stay, as an apply keeps them.
 * Never changes the type: a copy whose type must change is recreated instead (apply.ts).
 */
export function takeoverPatch(
  obj: Copy,
  existing: V1Secret | V1ConfigMap,
  foreignPatterns: readonly string[] = FOREIGN_OWNERSHIP_PATTERNS,
): Record<string, unknown> {
  const foreign = (key: string) =>
    !key.startsWith(RESERVED_PREFIX) &&
    (findKeyPattern(key, foreignPatterns) !== undefined ||
      findKeyPattern(key, FOREIGN_OWNERSHIP_PATTERNS) !== undefined);
  const merged = (have: StringMap | undefined, want: StringMap, drop: (k: string) => boolean) => {
    const out: Record<string, string | null> = {};
    for (const k of Object.keys(have ?? {}).sort()) {
      if (!Object.hasOwn(want, k) && drop(k)) out[k] = null;
    }
    return Object.assign(out, want);
  };
  const meta = existing.metadata ?? {};
  const metadata: Record<string, unknown> = {
    resourceVersion: meta.resourceVersion,
    labels: merged(meta.labels, obj.metadata.labels, foreign),
    annotations: merged(meta.annotations, obj.metadata.annotations, foreign),
  };
  if ((meta.ownerReferences ?? []).length > 0) metadata['ownerReferences'] = null;
  const body: Record<string, unknown> = { metadata };
  const every = () => true;
  if (obj.kind === 'Secret') {
    body['data'] = merged((existing as V1Secret).data, obj.data, every);
  } else {
    const cm = existing as V1ConfigMap;
    body['data'] = merged(cm.data, obj.data ?? {}, every);
    body['binaryData'] = merged(cm.binaryData, obj.binaryData ?? {}, every);
  }
  return body;
}
