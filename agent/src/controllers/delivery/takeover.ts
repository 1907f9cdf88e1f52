// Taking over a predecessor's copy: the decision and the write, both pure (apply.ts performs it).
//
// An object mirrorhub does not own is a Conflict (adoptable only with conflictPolicy Adopt and the
// policy's allowAdopt), and deleting an old tool's copies first leaves pods that start meanwhile
// without their Secret. A copy whose own marks PROVE that the old tool made it from this
// delivery's source, in this cluster (shared/src/mirror/predecessor.ts, which `mirrorhub migrate
// --plan` asks too), is therefore taken over without Adopt: in one conditional write that keeps
// the object (its uid), gives it mirrorhub's content and marks, and drops the old tool's marks,
// trigger annotations and ownerReferences, so neither that tool nor the garbage collector touches
// it again. Every tool copies within one cluster, so only the delivery to the source's own
// cluster takes anything over.

import type { V1ConfigMap, V1OwnerReference, V1Secret } from '@kubernetes/client-node';
import type { MirrorDelivery, Predecessor } from '@mirrorhub/shared/api/types.gen';
import {
  judgePredecessor,
  kubedOriginUid,
  KUBED_ORIGIN_NAME,
  KUBED_ORIGIN_NAMESPACE,
} from '@mirrorhub/shared/mirror/predecessor';
import { FOREIGN_OWNERSHIP_PATTERNS } from '@mirrorhub/shared/mirror/foreign-ownership';
import { findKeyPattern } from '@mirrorhub/shared/mirror/shape';
import { RESERVED_PREFIX } from '@mirrorhub/shared/api/contract';
import type { Copy } from './plan.js';

export type { Predecessor };

type StringMap = Record<string, string>;

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
  const source = localSource(delivery, clusterName);
  const meta = existing.metadata ?? {};
  return judgePredecessor(
    {
      name: meta.name,
      labels: meta.labels,
      annotations: meta.annotations,
      ownerReferences: meta.ownerReferences,
    },
    {
      readKind: kind,
      targetKind: delivery.spec.target.kind,
      source: source && { ...source, uid: sourceUid },
      mirror: delivery.spec.mirror,
      clusterName,
    },
  ).tool;
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
