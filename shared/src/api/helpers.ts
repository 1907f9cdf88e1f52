// Small helpers over the generated API types, shared by hub and agent.

import {
  DEFAULTS,
  type ClusterSecretMirror,
  type ClusterSecretMirrorSpec,
  type ConflictPolicy,
  type DeletePolicy,
  type MirrorDeliverySpec,
  type SecretMirror,
  type SecretMirrorSpec,
  type SecretMirrorStatus,
  type SourceKind,
} from './types.gen.js';

/** Either kind of mirror. Their spec and status have the same shape. */
export type AnyMirror = SecretMirror | ClusterSecretMirror;
export type MirrorSpec = SecretMirrorSpec | ClusterSecretMirrorSpec;
export type MirrorStatus = SecretMirrorStatus;

export function isClusterSecretMirror(mirror: AnyMirror): mirror is ClusterSecretMirror {
  return mirror.kind === 'ClusterSecretMirror';
}

/** Policies with the API server's defaults filled in (objects may predate a default). */
export interface MirrorPolicies {
  deletePolicy: DeletePolicy;
  conflictPolicy: ConflictPolicy;
  pollPeriodSeconds: number;
  suspend: boolean;
}

export function mirrorPolicies(spec: MirrorSpec): MirrorPolicies {
  const d = DEFAULTS.SecretMirrorSpec;
  return {
    deletePolicy: spec.deletePolicy ?? d.deletePolicy,
    conflictPolicy: spec.conflictPolicy ?? d.conflictPolicy,
    pollPeriodSeconds: spec.pollPeriodSeconds ?? d.pollPeriodSeconds,
    suspend: spec.suspend ?? d.suspend,
  };
}

export function deliveryPolicies(
  spec: MirrorDeliverySpec,
): Omit<MirrorPolicies, 'pollPeriodSeconds'> {
  const d = DEFAULTS.MirrorDeliverySpec;
  return {
    deletePolicy: spec.deletePolicy ?? d.deletePolicy,
    conflictPolicy: spec.conflictPolicy ?? d.conflictPolicy,
    suspend: spec.suspend ?? d.suspend,
  };
}

export interface ResolvedSource {
  kind: SourceKind;
  namespace: string;
  name: string;
}

/** source.kind, which the API server defaults to Secret (an object may predate the default). */
export function sourceKindOf(spec: Pick<SecretMirrorSpec, 'source'>): SourceKind {
  return spec.source.kind ?? DEFAULTS.MirrorSource.kind;
}

/**
 * Where a mirror's source lives, or why it may not be read. A SecretMirror reads only its own
 * namespace (source.namespace, if set, must name it); a ClusterSecretMirror must say its
 * namespace (the CRD refuses one without, but an object may predate that rule).
 */
export function resolveSource(
  mirror: AnyMirror,
): { ok: true; source: ResolvedSource } | { ok: false; error: string } {
  const { name, namespace } = mirror.spec.source;
  const kind = sourceKindOf(mirror.spec);
  if (isClusterSecretMirror(mirror)) {
    if (!namespace)
      return { ok: false, error: 'source.namespace is required for a ClusterSecretMirror' };
    return { ok: true, source: { kind, name, namespace } };
  }
  const own = mirror.metadata.namespace;
  if (!own) return { ok: false, error: 'SecretMirror has no metadata.namespace' };
  if (namespace !== undefined && namespace !== own) {
    return {
      ok: false,
      error: `source.namespace "${namespace}" is not the mirror's namespace "${own}": a SecretMirror may only read its own namespace (use a ClusterSecretMirror)`,
    };
  }
  return { ok: true, source: { kind, name, namespace: own } };
}
