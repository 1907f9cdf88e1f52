// The client-node variant of kubeAccessForCluster (eks-token.ts): an in-memory KubeConfig for an
// EKS cluster. In its own module because importing client-node costs ~70 MB resident; the hub
// uses kubeAccessForCluster, and EksClusterAccess.kubeConfig() loads this on demand.
import { KubeConfig } from '@kubernetes/client-node';
import type { User } from '@kubernetes/client-node';
import { bearerTokens, type ClusterKubeConfigOptions } from './eks-token.js';

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
