// The Vault controllers' decisions, as pure functions (unit-tested in decide.test.ts): whether a
// SecretMirror's namespace may use a ClusterVaultConnection, what a Vault error means for a
// connection's Ready condition and for a mirror's source, when a poller polls next, and when a
// KV v1 read is a change. connections.ts and the Vault sources gather the inputs and act.
import type { ClusterVaultConnection, VaultSourceRef } from '@mirrorhub/shared/api/index';
import { compileLabelSelector } from '@mirrorhub/shared/mirror/index';
import { errorMessage } from '@mirrorhub/shared/kit/runtime/index';
import { isVaultError } from './index.js';

/** Thrown for configuration problems found before Vault is asked (missing Secret, refused SA). */
export class ConnectionConfigError extends Error {
  override readonly name = 'ConnectionConfigError';
}

/**
 * A path the rules refuse (paths.ts), found with Vault's help (the mount's engine): the mirror
 * is in Error with this message, which names the rule; retrying cannot fix it.
 */
export class PathRefused extends Error {
  override readonly name = 'PathRefused';
}

export function connectionKey(c: VaultSourceRef['connection']): string {
  return c.kind === 'VaultConnection'
    ? `${c.kind}/${c.namespace ?? ''}/${c.name}`
    : `${c.kind}/${c.name}`;
}

// ---- tenancy --------------------------------------------------------------------------------------

export type AllowedNamespaces = ClusterVaultConnection['spec']['allowedNamespaces'];

/**
 * Whether `tenancyRefusal` needs the namespace's labels: only when the name is not listed and a
 * selector might still admit it.
 */
export function needsNamespaceLabels(allowed: AllowedNamespaces, namespace: string): boolean {
  return !!allowed?.namespaceSelector && !allowed.names?.includes(namespace);
}

/**
 * Why a SecretMirror in `namespace` may not use ClusterVaultConnection `name` (undefined: it
 * may). It may when spec.allowedNamespaces lists the namespace or its selector matches the
 * namespace's labels; no allowedNamespaces admits nobody. `labels`: the namespace's labels when
 * needsNamespaceLabels said so, or the error reading them.
 */
export function tenancyRefusal(
  name: string,
  allowed: AllowedNamespaces,
  namespace: string,
  labels: Record<string, string> | Error = {},
): string | undefined {
  const denied = `ClusterVaultConnection "${name}" does not allow SecretMirrors in namespace "${namespace}" (its spec.allowedNamespaces does not list or select it)`;
  if (!allowed) return denied;
  if (allowed.names?.includes(namespace)) return undefined;
  if (!allowed.namespaceSelector) return denied;
  const matcher = compileLabelSelector(
    allowed.namespaceSelector,
    'spec.allowedNamespaces.namespaceSelector',
  );
  if (!matcher.ok) return `ClusterVaultConnection "${name}": ${matcher.error}`;
  if (labels instanceof Error) {
    return `${denied}: reading namespace "${namespace}" failed: ${errorMessage(labels)}`;
  }
  return matcher.matches(labels) ? undefined : denied;
}

// ---- referenced Secrets ---------------------------------------------------------------------------

/** Which credential a Secret holds for a connection. */
export type SecretRole = 'token' | 'roleId' | 'secretId';

export interface SecretReference {
  role: SecretRole;
  namespace: string;
  name: string;
  key: string;
}

/**
 * The Secrets a connection reads its credentials from. A VaultConnection's are in its own
 * namespace (`ownNamespace`), whatever its spec says; a ClusterVaultConnection's name theirs.
 */
export function referencedSecrets(
  auth: ClusterVaultConnection['spec']['auth'],
  ownNamespace: string | undefined,
): SecretReference[] {
  const at = (role: SecretRole, ref: { namespace?: string; name: string; key: string }) => ({
    role,
    namespace: ownNamespace ?? ref.namespace ?? '',
    name: ref.name,
    key: ref.key,
  });
  if (auth.token) return [at('token', auth.token.secretRef)];
  if (auth.appRole) {
    const r = auth.appRole;
    return [
      ...(r.roleId === undefined && r.roleIdSecretRef ? [at('roleId', r.roleIdSecretRef)] : []),
      at('secretId', r.secretIdSecretRef),
    ];
  }
  return [];
}

// ---- errors ---------------------------------------------------------------------------------------

/** The outcome label of a Vault error (no paths, no messages: bounded cardinality). */
export function outcomeOf(err: unknown): string {
  if (!isVaultError(err)) return 'error';
  switch (err.kind) {
    case 'permission-denied':
    case 'invalid-token':
      return 'denied';
    case 'login-failed':
      return 'login_failed';
    case 'not-found':
      return 'not_found';
    case 'unavailable':
    case 'unreachable':
    case 'timeout':
    case 'rate-limited':
    case 'server':
      return 'unavailable';
    case 'tls':
      return 'tls';
    default:
      return 'error';
  }
}

/** Errors that a retry can fix (Vault down, sealed, slow): the mirror is Degraded, not in Error. */
export function isTransient(err: unknown): boolean {
  return outcomeOf(err) === 'unavailable';
}

export type ReadyReason =
  'Authenticated' | 'InvalidConfig' | 'TLSError' | 'Unavailable' | 'LoginFailed';

/** The reason of a connection's Ready=False condition for a failed login. */
export function notReadyReason(err: unknown): Exclude<ReadyReason, 'Authenticated'> {
  if (err instanceof ConnectionConfigError) return 'InvalidConfig';
  if (isVaultError(err, 'tls')) return 'TLSError';
  return isTransient(err) ? 'Unavailable' : 'LoginFailed';
}

// ---- timing ---------------------------------------------------------------------------------------

/** A shared poller polls as often as its most demanding mirror asks. */
export function pollPeriod(periodsMs: Iterable<number>): number {
  return Math.min(...periodsMs);
}

/**
 * `ms` shortened by up to `fraction` (`random` in [0, 1)): spread, but never later than the period,
 * so a change is seen within one poll period.
 */
export function jittered(ms: number, fraction: number, random: number = Math.random()): number {
  return Math.max(0, Math.round(ms * (1 - fraction * random)));
}

/** After `failures` (>= 1) transient failures: `initialMs` doubling, never later than the period. */
export function retryDelay(failures: number, initialMs: number, periodMs: number): number {
  return Math.min(periodMs, initialMs * 2 ** Math.min(Math.max(failures, 1) - 1, 10));
}
