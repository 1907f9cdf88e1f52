// client-node KubeConfigs for EKS clusters, for tests that drive a follower with client-node's
// generated clients. Production reaches EKS with the lean KubeAccess of eks-token.ts
// (kubeAccessForCluster, EksClusterAccess.kubeAccess()); this is the same access as a
// KubeConfig, and lives here because importing client-node costs ~70 MB resident.
import { KubeConfig } from '@kubernetes/client-node';
import type { User } from '@kubernetes/client-node';
import type { EksClusterAccess } from '@mirrorhub/hub/clusters/aws/cluster-access';
import { bearerTokens, type ClusterKubeConfigOptions } from '@mirrorhub/hub/clusters/aws/eks-token';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';

const AUTH_PROVIDER_NAME = 'mirrorhub-eks-token';

/**
 * An in-memory KubeConfig that asks `token` for a bearer token on every request.
 *
 * Why an authenticator and not `user.token` or `exec`: @kubernetes/client-node 1.4 calls
 * `applyAuthorizationHeader` for every request and every watch (re)connect, consulting
 * authenticators registered with `addAuthenticator`. A static `user.token` would be frozen into
 * long-lived API clients and informers and die after 15 minutes; `exec` would need a binary and a
 * file on disk. The authenticator is bound to this KubeConfig only (a closure over `token`), and
 * the exported config contains no secret: just `auth-provider: {name: mirrorhub-eks-token}`.
 */
export function kubeConfigForCluster(opts: ClusterKubeConfigOptions): KubeConfig {
  const getToken = bearerTokens(opts.token);
  const kc = new KubeConfig();
  kc.addAuthenticator({
    isAuthProvider: (user: User) => user.authProvider?.name === AUTH_PROVIDER_NAME,
    applyAuthentication: async (_user: User, reqOpts: { headers?: unknown }) => {
      const headers = (reqOpts.headers ??= {}) as Record<string, string>;
      headers.Authorization = `Bearer ${await getToken()}`;
    },
  });
  const user = `${opts.name}-mirrorhub`;
  kc.loadFromOptions({
    clusters: [
      {
        name: opts.name,
        server: opts.server,
        caData: Buffer.from(opts.caPem, 'utf8').toString('base64'),
        skipTLSVerify: false,
      },
    ],
    users: [{ name: user, authProvider: { name: AUTH_PROVIDER_NAME, config: {} } }],
    contexts: [{ name: opts.name, cluster: opts.name, user }],
    currentContext: opts.name,
  });
  return kc;
}

/**
 * A KubeConfig for the follower an EksClusterAccess reaches: its endpoint and CA, and on every
 * request the bearer token its kubeAccess() would send (so refreshes, re-assumed roles and
 * invalidations are exactly production's). A new KubeConfig per call; production's caching is
 * kubeAccess()'s.
 */
export async function eksKubeConfig(access: EksClusterAccess): Promise<KubeConfig> {
  const { server, caPem } = await access.endpoint();
  const lean = await access.kubeAccess();
  return kubeConfigForCluster({
    name: access.cluster.name,
    server,
    caPem,
    token: () => bearerOf(lean),
  });
}

/** The bearer token `access` puts on a request. */
export async function bearerOf(access: KubeAccess): Promise<string> {
  const opts: { headers?: Record<string, string> } = {};
  await access.applyToHTTPSOptions(opts);
  const header = opts.headers?.Authorization ?? '';
  if (!header.startsWith('Bearer ')) throw new Error('the access sent no bearer token');
  return header.slice('Bearer '.length);
}
