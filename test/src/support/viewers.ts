// Identities that look at the hub dashboard: ServiceAccounts of the hub cluster with the RBAC a
// platform engineer or a team lead would have, and bound tokens of them to sign in with.
import { sign } from 'node:crypto';
import { readFileSync } from 'node:fs';

import { CoreV1Api, RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';

const LIST_MIRRORHUB = {
  apiGroups: ['mirrorhub.io'],
  resources: ['secretmirrors', 'clustersecretmirrors', 'mirrorclusters'],
  verbs: ['get', 'list', 'watch'],
};

/** Creates the ServiceAccount (if missing) and returns a bound token of it. */
export async function serviceAccountToken(
  kc: KubeConfig,
  namespace: string,
  name: string,
  expirationSeconds = 3600,
): Promise<string> {
  const core = kc.makeApiClient(CoreV1Api);
  await core
    .createNamespacedServiceAccount({ namespace, body: { metadata: { name } } })
    .catch((err: { code?: number }) => {
      if (err.code !== 409) throw err;
    });
  const tr = await core.createNamespacedServiceAccountToken({
    namespace,
    name,
    body: { spec: { audiences: [], expirationSeconds } },
  });
  return tr.status!.token!;
}

/** A token of `namespace/name`, which may list every mirror and MirrorCluster (cluster scope). */
export async function clusterViewerToken(
  kc: KubeConfig,
  namespace: string,
  name: string,
  expirationSeconds = 3600,
): Promise<string> {
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const role = `${name}-mirrorhub-viewer`;
  await rbac.createClusterRole({ body: { metadata: { name: role }, rules: [LIST_MIRRORHUB] } });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: role },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
  });
  return serviceAccountToken(kc, namespace, name, expirationSeconds);
}

/** A token of `namespace/name`, which may list the SecretMirrors of `namespace` only. */
export async function namespaceViewerToken(
  kc: KubeConfig,
  namespace: string,
  name: string,
): Promise<string> {
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const role = `${name}-mirror-viewer`;
  await rbac.createNamespacedRole({
    namespace,
    body: {
      metadata: { name: role },
      rules: [
        { apiGroups: ['mirrorhub.io'], resources: ['secretmirrors'], verbs: ['get', 'list'] },
      ],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: role },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
  });
  return serviceAccountToken(kc, namespace, name);
}

/**
 * `token` (a bound ServiceAccount JWT) with its claims changed by `edit` and signed again with
 * the API server's ServiceAccount signing key (`keyFile`, PEM): e.g. an expired token, which no
 * TokenRequest can produce (its shortest lifetime is 10 minutes).
 */
export function resignToken(
  token: string,
  keyFile: string,
  edit: (claims: Record<string, unknown>) => Record<string, unknown>,
): string {
  const [header, payload] = token.split('.');
  const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8')) as Record<
    string,
    unknown
  >;
  const body = `${header}.${Buffer.from(JSON.stringify(edit(claims))).toString('base64url')}`;
  const { alg } = JSON.parse(Buffer.from(header!, 'base64url').toString('utf8')) as { alg: string };
  if (alg !== 'ES256' && alg !== 'RS256') throw new Error(`resignToken: cannot sign ${alg}`);
  // JWS ES256 signatures are r || s (IEEE P1363), not DER.
  const key = { key: readFileSync(keyFile), dsaEncoding: 'ieee-p1363' as const };
  const signature = sign('sha256', Buffer.from(body), key);
  return `${body}.${signature.toString('base64url')}`;
}
