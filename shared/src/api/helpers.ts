// Small helpers over the generated API types, shared by hub and agent.

import { customObjectPath } from '../kit/k8s/rest.js';
import {
  GROUP,
  VERSION,
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
  type MirrorSourceKind,
  type VaultConnectionKind,
  type VaultConnectionReference,
  type VaultDynamicSource,
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

/** A mirror's pollPeriodSeconds when it sets none, in ms: also how often caches no mirror asks anything of re-list. */
export const DEFAULT_POLL_PERIOD_MS = DEFAULTS.SecretMirrorSpec.pollPeriodSeconds * 1000;

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

/** A Secret or ConfigMap in the hub cluster. */
export interface KubernetesSource {
  kind: SourceKind;
  namespace: string;
  name: string;
}

/** A secret in Vault, read through a connection. */
export interface VaultSourceRef {
  kind: 'Vault';
  connection: {
    kind: VaultConnectionKind;
    name: string;
    /** VaultConnection: its namespace (always the mirror's own). */
    namespace?: string | undefined;
  };
  /** `<mount>/<secret path>`, normalised (no leading, trailing or double slashes). */
  path: string;
  kvVersion?: 1 | 2 | undefined;
  /** Leased credentials (source.vault.dynamic), with the defaults filled in. */
  dynamic?: Required<VaultDynamicSource> | undefined;
}

export type ResolvedSource = KubernetesSource | VaultSourceRef;

/** source.kind, which the API server defaults to Secret (an object may predate the default). */
export function sourceKindOf(spec: Pick<SecretMirrorSpec, 'source'>): MirrorSourceKind {
  return spec.source.kind ?? DEFAULTS.MirrorSource.kind;
}

/** What every copy is: a Vault source is copied as a Secret. */
export function targetKindOf(source: ResolvedSource): SourceKind {
  return source.kind === 'Vault' ? 'Secret' : source.kind;
}

/** The source in one line for status and Events (never data). */
export function sourceText(source: ResolvedSource): string {
  if (source.kind === 'Vault') {
    const c = source.connection;
    return `source Vault ${source.path} (${c.kind} ${c.namespace ? `${c.namespace}/` : ''}${c.name})`;
  }
  return `source ${source.kind} ${source.namespace}/${source.name}`;
}

/**
 * Where a mirror's source lives, or why it may not be read. A SecretMirror reads only its own
 * namespace (source.namespace, if set, must name it); a ClusterSecretMirror must say its
 * namespace (the CRD refuses one without, but an object may predate that rule). A Vault source
 * names a VaultConnection in the mirror's own namespace or a ClusterVaultConnection; whether a
 * ClusterVaultConnection admits a SecretMirror's namespace is judged by the hub, which knows the
 * connection.
 */
export function resolveSource(
  mirror: AnyMirror,
): { ok: true; source: ResolvedSource } | { ok: false; error: string } {
  const { name, namespace } = mirror.spec.source;
  const kind = sourceKindOf(mirror.spec);
  if (kind === 'Vault') return resolveVaultSource(mirror);
  if (!name) return { ok: false, error: `source.name is required for a ${kind} source` };
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

function resolveVaultSource(
  mirror: AnyMirror,
): { ok: true; source: VaultSourceRef } | { ok: false; error: string } {
  const vault = mirror.spec.source.vault;
  if (!vault) return { ok: false, error: 'source.vault is required when source.kind is Vault' };
  if (!mirror.spec.destination.name && !mirror.spec.destination.vault) {
    return { ok: false, error: 'a Vault source needs destination.name: the name of every copy' };
  }
  const r = resolveVaultRef(mirror, vault, 'source.vault');
  if (!r.ok) return r;
  if (!vault.dynamic) return { ok: true, source: r.ref };
  if (mirror.spec.destination.vault) {
    return {
      ok: false,
      error:
        'a dynamic Vault source cannot be written to Vault (destination.vault): deliver it to namespaces',
    };
  }
  const d = DEFAULTS.VaultDynamicSource;
  return {
    ok: true,
    source: {
      ...r.ref,
      kvVersion: undefined,
      dynamic: {
        method: vault.dynamic.method ?? d.method,
        renewIncrementSeconds: vault.dynamic.renewIncrementSeconds ?? d.renewIncrementSeconds,
        revokeGraceSeconds: vault.dynamic.revokeGraceSeconds ?? d.revokeGraceSeconds,
      },
    },
  };
}

/**
 * The Vault secret a mirror writes (destination.vault), or why it may not: as for a Vault
 * source, and a SecretMirror writes only through a VaultConnection of its own namespace (its own
 * Vault identity), never through a shared ClusterVaultConnection, whose identity is not the
 * tenant's to write with. undefined: the mirror writes to namespaces.
 */
export function resolveVaultDestination(
  mirror: AnyMirror,
): { ok: true; ref: VaultSourceRef } | { ok: false; error: string } | undefined {
  const vault = mirror.spec.destination.vault;
  if (!vault) return undefined;
  if (!isClusterSecretMirror(mirror) && vault.connectionRef.kind === 'ClusterVaultConnection') {
    return {
      ok: false,
      error: `a SecretMirror writes to Vault only through a VaultConnection of its own namespace, not ClusterVaultConnection "${vault.connectionRef.name}" (a shared Vault identity): create a VaultConnection with your own credentials, or use a ClusterSecretMirror`,
    };
  }
  return resolveVaultRef(mirror, vault, 'destination.vault');
}

/**
 * Vault engines no mirror reads or writes, whatever its kind or connection: Vault's control plane
 * and the connection's own identity (auth/token/lookup-self prints its token, revoke-self kills
 * it, cubbyhole/ is its private store). hub/src/vault/paths.ts has the whole rule set.
 */
export const RESERVED_MOUNTS: readonly string[] = ['sys', 'auth', 'identity', 'cubbyhole'];

function resolveVaultRef(
  mirror: AnyMirror,
  vault: { connectionRef: VaultConnectionReference; path: string; kvVersion?: number },
  field: string,
): { ok: true; ref: VaultSourceRef } | { ok: false; error: string } {
  const segments = vault.path.split('/').filter((s) => s !== '');
  if (segments.length < 2 || segments.some((s) => s === '.' || s === '..')) {
    return {
      ok: false,
      error: `${field}.path "${vault.path}" is not <mount>/<secret path> (e.g. secret/team-a/db)`,
    };
  }
  const path = segments.join('/');
  // Compared without case: nothing legitimate differs from a reserved mount by case alone.
  const first = (segments[0] ?? '').toLowerCase();
  if (RESERVED_MOUNTS.includes(first)) {
    return {
      ok: false,
      error: `${field}.path "${path}" is under ${first}/ (rule: no mirror reads or writes Vault's sys/, auth/, identity/ or cubbyhole/ paths, which hold Vault's configuration and the connection's own token): give the path of a KV secret or of a credential endpoint`,
    };
  }
  const kvVersion = vault.kvVersion === 1 || vault.kvVersion === 2 ? vault.kvVersion : undefined;
  const ref = vault.connectionRef;
  if (ref.kind === 'VaultConnection') {
    if (isClusterSecretMirror(mirror)) {
      return {
        ok: false,
        error: `a ClusterSecretMirror can only use a ClusterVaultConnection (VaultConnection "${ref.name}" is namespaced)`,
      };
    }
    const own = mirror.metadata.namespace;
    if (!own) return { ok: false, error: 'SecretMirror has no metadata.namespace' };
    return {
      ok: true,
      ref: {
        kind: 'Vault',
        connection: { kind: ref.kind, name: ref.name, namespace: own },
        path,
        kvVersion,
      },
    };
  }
  return {
    ok: true,
    ref: { kind: 'Vault', connection: { kind: ref.kind, name: ref.name }, path, kvVersion },
  };
}

/**
 * The API path of a mirrorhub object of a kind that comes in a namespaced and a cluster-scoped
 * form (SecretMirror / ClusterSecretMirror, VaultConnection / ClusterVaultConnection): which one
 * it is follows from its namespace.
 */
export function objectPath(
  obj: { metadata: { name?: string | undefined; namespace?: string | undefined } },
  plurals: { namespaced: string; cluster: string },
): string {
  const ns = obj.metadata.namespace;
  return customObjectPath({
    group: GROUP,
    version: VERSION,
    name: obj.metadata.name ?? '',
    plural: ns ? plurals.namespaced : plurals.cluster,
    ...(ns ? { namespace: ns } : {}),
  });
}
