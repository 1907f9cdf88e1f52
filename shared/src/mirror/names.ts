// Names and marks: what mirrorhub calls the objects it writes, and how it recognises its own.

import { crypto } from '../kit/runtime/builtins.js';
import type { LabelSelector, MirrorDestination, MirrorKind } from '../api/types.gen.js';
import { LIMITS } from '../api/types.gen.js';
import { formatLabelSelector } from './namespaces.js';
import {
  ANNOTATION_CONTENT_HASH,
  ANNOTATION_MIRROR,
  ANNOTATION_ORIGIN,
  LABEL_DELIVERY,
  LABEL_MANAGED_BY,
  MANAGED_BY_VALUE,
} from '../api/contract.js';

const { createHash } = crypto;

/** Never copied from a source: it describes the source's own last `kubectl apply`. */
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

export interface MirrorIdentity {
  kind: MirrorKind;
  /** Namespace of a SecretMirror; absent or empty for a ClusterSecretMirror. */
  namespace?: string | undefined;
  name: string;
}

/**
 * Longest delivery name. A MirrorDelivery name may be 253 characters, but it is also the value of
 * the mirrorhub.io/delivery label on every copy, and label values stop at 63.
 */
export const MAX_DELIVERY_NAME = 63;

/** Hex characters of the hash in a delivery name: 64 bits, so no two mirrors meet by chance. */
export const DELIVERY_HASH_LENGTH = 16;

/**
 * Name of the MirrorDelivery (and of its payload Secret) for one mirror, the same in every
 * cluster: `sm-<namespace>-<name>-<hash16>` or `csm-<name>-<hash16>`. The readable part is
 * truncated to fit 63 characters; the hash (64 bits of SHA-256 over origin cluster, kind,
 * namespace and name) keeps truncated names apart and lets two hubs deliver to the same cluster
 * without clashing. 64 bits, not fewer: anyone who may create a SecretMirror picks its namespace
 * and name, and a hash short enough to search (32 bits: minutes on a laptop) would let them aim
 * at another mirror's delivery. The result is a DNS-1123 label, so it is a valid object name and
 * label value.
 */
export function deliveryName(mirror: MirrorIdentity, originCluster: string): string {
  const namespace = mirror.namespace ?? '';
  const hash = createHash('sha256')
    .update([originCluster, mirror.kind, namespace, mirror.name].join('\0'))
    .digest('hex')
    .slice(0, DELIVERY_HASH_LENGTH);
  const readable =
    mirror.kind === 'SecretMirror' ? `sm-${namespace}-${mirror.name}` : `csm-${mirror.name}`;
  const body = readable
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-') // dots too: a label has none
    .slice(0, MAX_DELIVERY_NAME - hash.length - 1)
    .replace(/-+$/, '');
  return `${body}-${hash}`;
}

/** The payload Secret of a delivery has the delivery's name (different kinds, no clash). */
export function payloadSecretName(deliveryName: string): string {
  return deliveryName;
}

/** Value of ANNOTATION_MIRROR. */
export function mirrorRef(mirror: MirrorIdentity): string {
  return `${mirror.kind}/${mirror.namespace ?? ''}/${mirror.name}`;
}

/** The identity ANNOTATION_MIRROR names (the inverse of mirrorRef); undefined if malformed. */
export function parseMirrorRef(ref: string): MirrorIdentity | undefined {
  const parts = ref.split('/');
  if (parts.length !== 3) return undefined;
  const [kind, namespace, name] = parts as [string, string, string];
  if (!name) return undefined;
  if (kind === 'SecretMirror' && namespace) return { kind, namespace, name };
  if (kind === 'ClusterSecretMirror' && !namespace) return { kind, name };
  return undefined;
}

/** Value of ANNOTATION_ORIGIN. */
export function originRef(cluster: string, namespace: string, name: string): string {
  return `${cluster}/${namespace}/${name}`;
}

export interface CopyMarks {
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** The labels and annotations that make a copy mirrorhub's (see docs/architecture.md). */
export function copyMarks(input: {
  deliveryName: string;
  origin: string;
  mirror: string;
  contentHash: string;
}): CopyMarks {
  return {
    labels: { [LABEL_MANAGED_BY]: MANAGED_BY_VALUE, [LABEL_DELIVERY]: input.deliveryName },
    annotations: {
      [ANNOTATION_ORIGIN]: input.origin,
      [ANNOTATION_MIRROR]: input.mirror,
      [ANNOTATION_CONTENT_HASH]: input.contentHash,
    },
  };
}

/**
 * Who owns an existing object with the target name:
 * - `absent`: nothing there, free to create;
 * - `ours`: marked as a copy of this delivery;
 * - `other-delivery`: a mirrorhub copy of another delivery (two mirrors aim at one name);
 * - `foreign`: not marked by mirrorhub: someone else's (Skip reports a Conflict, Adopt takes it).
 */
export type Ownership = 'absent' | 'ours' | 'other-delivery' | 'foreign';

export function ownershipOf(
  existing:
    | {
        metadata?:
          | {
              labels?: Record<string, string> | undefined;
              annotations?: Record<string, string> | undefined;
            }
          | undefined;
      }
    | undefined,
  delivery: string,
): Ownership {
  if (!existing) return 'absent';
  const labels = existing.metadata?.labels ?? {};
  const marked = labels[LABEL_DELIVERY];
  if (labels[LABEL_MANAGED_BY] !== MANAGED_BY_VALUE || !marked) return 'foreign';
  return marked === delivery ? 'ours' : 'other-delivery';
}

/** Longest status.destination (the CRD's maxLength). */
export const MAX_DESTINATION_SUMMARY = LIMITS.SecretMirrorStatus.destination;

/**
 * One-line destination for `kubectl get` (status.destination):
 * `/project-a-.+/, team=a except /legacy/ on prod-eu, env=prod`.
 * Patterns are shown between slashes, selectors in kubectl notation, `{}` as `*`.
 */
export function destinationSummary(spec: { destination: MirrorDestination }): string {
  const d = spec.destination;
  if (d.vault) return `Vault ${d.vault.path}`.slice(0, MAX_DESTINATION_SUMMARY);
  const selector = (s: LabelSelector) => formatLabelSelector(s) || '*';
  const targets = [
    ...(d.namespaces ?? []).map((p) => `/${p}/`),
    ...(d.namespaceSelector ? [selector(d.namespaceSelector)] : []),
  ];
  let text = targets.join(', ') || '-';
  const excludes = (d.excludeNamespaces ?? []).map((p) => `/${p}/`);
  if (excludes.length > 0) text += ` except ${excludes.join(', ')}`;
  if (d.clusters) {
    const clusters = [
      ...(d.clusters.names ?? []),
      ...(d.clusters.selector ? [selector(d.clusters.selector)] : []),
    ];
    if (clusters.length > 0) text += ` on ${clusters.join(', ')}`;
  }
  return text.length <= MAX_DESTINATION_SUMMARY
    ? text
    : `${text.slice(0, MAX_DESTINATION_SUMMARY - 1)}…`;
}
