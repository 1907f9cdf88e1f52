// Acting as another ServiceAccount of the same cluster, through the TokenRequest API.
//
// Why: in one-process mode (standalone/) the hub and its cluster's agent share a pod, and so the
// pod's one ServiceAccount. The agent half must still act with exactly the agent's rights, so
// that the agent chart's RBAC and ValidatingAdmissionPolicies (bound to the agent's
// ServiceAccount) hold for it as they do for a separate agent pod. The pod's identity requests
// short-lived tokens of the agent's ServiceAccount (`create serviceaccounts/token` on that one
// name, granted by the chart) and the agent half sends those instead of the pod's own.

import type https from 'node:https';
import type { KubeAccess } from './access.js';
import { corePath, RestClient } from './rest.js';

export interface ServiceAccountRef {
  namespace: string;
  name: string;
}

export interface ServiceAccountAccessOptions {
  /** Lifetime asked of each token (default 3600 s; the API server's minimum is 600). */
  expirationSeconds?: number;
  /** A new token is requested once this share of its lifetime has passed (default 0.8). */
  refreshAfter?: number;
  /** The clock, for tests (default Date.now). */
  now?: () => number;
  /** Per TokenRequest (default 10 s). */
  timeoutMs?: number;
}

interface TokenRequestAnswer {
  status?: { token?: string; expirationTimestamp?: string };
}

export interface ServiceAccountAccess extends KubeAccess {
  /** Requests the first token now, so a missing grant fails start-up with a clear message. */
  check(): Promise<void>;
  /** The user the API server sees: system:serviceaccount:<namespace>:<name>. */
  readonly user: string;
  /** Closes the pooled connection used for TokenRequests. */
  close(): void;
}

/**
 * A KubeAccess that reaches the same API server as `base` (its server URL and CA) but
 * authenticates as `sa`, with tokens `base`'s identity requests from the TokenRequest API.
 * A token is reused until `refreshAfter` of its lifetime has passed; callers arriving meanwhile
 * share one request. When a refresh fails, the old token is used for as long as it is valid.
 */
export function serviceAccountAccess(
  base: KubeAccess,
  sa: ServiceAccountRef,
  opts: ServiceAccountAccessOptions = {},
): ServiceAccountAccess {
  const expirationSeconds = opts.expirationSeconds ?? 3600;
  const refreshAfter = opts.refreshAfter ?? 0.8;
  const now = opts.now ?? Date.now;
  const rest = new RestClient(base, { timeoutMs: opts.timeoutMs ?? 10_000 });
  const user = `system:serviceaccount:${sa.namespace}:${sa.name}`;
  let token: { value: string; refreshAt: number; expiresAt: number } | undefined;
  let inFlight: Promise<string> | undefined;

  async function request(): Promise<string> {
    const issuedAt = now();
    let answer: TokenRequestAnswer;
    try {
      answer = await rest.post<TokenRequestAnswer>(
        corePath('serviceaccounts', sa.namespace, sa.name) + '/token',
        {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenRequest',
          spec: { expirationSeconds },
        },
      );
    } catch (err) {
      throw new Error(
        `cannot request a token of ServiceAccount ${sa.namespace}/${sa.name} (the agent's identity): ${(err as Error).message}; ` +
          `this process needs create on serviceaccounts/token for it (the hub chart grants it with localAgent.inProcess)`,
        { cause: err },
      );
    }
    const value = answer.status?.token;
    if (!value) throw new Error(`TokenRequest for ${sa.namespace}/${sa.name} returned no token`);
    const expires = Date.parse(answer.status?.expirationTimestamp ?? '');
    const expiresAt = Number.isFinite(expires) ? expires : issuedAt + expirationSeconds * 1000;
    const lifetime = Math.max(0, expiresAt - issuedAt);
    token = { value, expiresAt, refreshAt: issuedAt + lifetime * refreshAfter };
    return value;
  }

  async function current(): Promise<string> {
    const t = now();
    if (token && t < token.refreshAt) return token.value;
    inFlight ??= request().finally(() => (inFlight = undefined));
    try {
      return await inFlight;
    } catch (err) {
      // Refresh failed: the old token while it lasts (the next call tries again).
      if (token && now() < token.expiresAt) return token.value;
      throw err;
    }
  }

  return {
    user,
    getCurrentCluster: () => base.getCurrentCluster(),
    async applyToHTTPSOptions(o: https.RequestOptions): Promise<void> {
      await base.applyToHTTPSOptions(o);
      // Only the server's CA (and TLS name) stays from base: a client certificate would
      // authenticate the request as base's identity before the token is looked at.
      delete o.cert;
      delete o.key;
      delete o.pfx;
      delete o.auth;
      const bearer = await current();
      o.headers = { ...(o.headers ?? {}), Authorization: `Bearer ${bearer}` };
    },
    async check() {
      await current();
    },
    close() {
      rest.close();
    },
  };
}
