// What the hub calls and marks the objects it owns, on top of shared/src/mirror/names.ts.
import { type MirrorKind } from '@mirrorhub/shared/api/index';
import { mirrorRef, type MirrorIdentity } from '@mirrorhub/shared/mirror/index';

/** Finalizer on mirrors the hub has delivered: cleanup in every cluster before deletion. */
export const HUB_FINALIZER = 'mirrorhub.io/hub-cleanup';

/** Secret in the hub's namespace holding the random key the content hashes are keyed with. */
export const HASH_KEY_SECRET = 'mirrorhub-hash-key';
export const HASH_KEY_FIELD = 'key';

/** The Secret in the hub's namespace holding dynamic Vault sources' leases (mirrors/sources/vault-dynamic/store.ts). */
export const LEASES_SECRET = 'mirrorhub-leases';

/** Default Lease name for leader election. */
export const DEFAULT_LEASE_NAME = 'mirrorhub-hub';

/**
 * Work-queue key of a mirror: `SecretMirror/<ns>/<name>` or `ClusterSecretMirror//<name>` (the
 * same string as the mirrorhub.io/mirror annotation).
 */
export function mirrorKey(mirror: MirrorIdentity): string {
  return mirrorRef(mirror);
}

export function parseMirrorKey(key: string): MirrorIdentity | undefined {
  const first = key.indexOf('/');
  const second = key.indexOf('/', first + 1);
  if (first < 0 || second < 0) return undefined;
  const kind = key.slice(0, first);
  const namespace = key.slice(first + 1, second);
  const name = key.slice(second + 1);
  if (!name) return undefined;
  if (kind === 'SecretMirror' && namespace) return { kind, namespace, name };
  if (kind === 'ClusterSecretMirror' && !namespace) return { kind: kind as MirrorKind, name };
  return undefined;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Cluster names end up in label values and delivery name hashes: a DNS label. */
export function validateClusterName(name: string): string | undefined {
  return DNS_LABEL.test(name)
    ? undefined
    : `cluster name "${name}" must be a DNS label (lowercase letters, digits and '-', at most 63)`;
}
