// How a process reaches its API server, without loading @kubernetes/client-node at run time.
//
// Why: importing client-node loads its whole generated API (every group, every model), about
// 70 MB of resident memory before anything has been done; the agent's budget is 80 MB with 20k
// copies. The REST client (rest.ts), Events (events.ts), the list/watch transport and leader
// election need just two things from a kubeconfig: the server URL and the TLS and auth options
// of a request. `KubeAccess` is that subset, and client-node's KubeConfig already satisfies it,
// so code that has one passes it as is.
//
// In a pod, `inClusterAccess()` reads the service account token (re-read as it rotates) and CA
// itself. A kubeconfig file (laptops, the local kit) goes through client-node's KubeConfig,
// loaded on demand: full kubeconfig semantics (exec plugins, auth providers) where memory is
// not the concern.

import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

/** The part of client-node's KubeConfig that talking to one API server needs. */
export interface KubeAccess {
  getCurrentCluster(): { server: string } | null;
  /** Sets TLS options and auth headers (may refresh a token) on one request's options. */
  applyToHTTPSOptions(opts: https.RequestOptions): Promise<void>;
}

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** Re-read the projected token this often at most (kubelet rotates it well before expiry). */
const TOKEN_RELOAD_MS = 60_000;

/** The pod's own service account: KUBERNETES_SERVICE_HOST/PORT, token and CA from `dir`. */
export function inClusterAccess(
  env: Record<string, string | undefined> = process.env,
  dir: string = SERVICE_ACCOUNT_DIR,
): KubeAccess {
  const host = env['KUBERNETES_SERVICE_HOST'];
  const port = env['KUBERNETES_SERVICE_PORT'];
  if (!host || !port) {
    throw new Error('not in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set');
  }
  const server = `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const ca = readFileSync(join(dir, 'ca.crt'));
  const tokenFile = join(dir, 'token');
  let token = '';
  let readAt = 0;
  let mtime = 0;
  const currentToken = (): string => {
    const now = Date.now();
    if (token && now - readAt < TOKEN_RELOAD_MS) return token;
    const m = statSync(tokenFile).mtimeMs;
    if (!token || m !== mtime) {
      token = readFileSync(tokenFile, 'utf8').trim();
      mtime = m;
    }
    readAt = now;
    return token;
  };
  currentToken(); // fail at start-up, not on the first request
  return {
    getCurrentCluster: () => ({ server }),
    applyToHTTPSOptions(opts) {
      opts.ca = ca;
      opts.headers = { ...(opts.headers ?? {}), Authorization: `Bearer ${currentToken()}` };
      return Promise.resolve();
    },
  };
}

/** client-node's KubeConfig from a file, or from its default chain when `path` is undefined. */
export async function clientNodeKubeConfig(path: string | undefined): Promise<KubeConfig> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  if (path) kc.loadFromFile(path);
  else kc.loadFromDefault();
  return kc;
}

/**
 * --kubeconfig or KUBECONFIG (or ~/.kube/config) through client-node; in a pod without either,
 * the service account directly.
 */
export async function loadKubeAccess(
  path: string | undefined,
  env: Record<string, string | undefined> = process.env,
): Promise<KubeAccess> {
  if (!path && !env['KUBECONFIG'] && env['KUBERNETES_SERVICE_HOST']) {
    return inClusterAccess(env, env['MIRRORHUB_SERVICE_ACCOUNT_DIR'] || SERVICE_ACCOUNT_DIR);
  }
  return clientNodeKubeConfig(path);
}
