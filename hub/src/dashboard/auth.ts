// Who is looking at the dashboard, and what they may see: the bearer token is checked with a
// TokenReview, and what the identity may list with SubjectAccessReviews, exactly as the API
// server would decide a `kubectl get` of the same resources. Both answers are cached for
// `ttlMs` (keyed by the token's SHA-256, never by the token), so a viewer costs the API server a
// handful of reviews per minute, not one per request or per change.
import { crypto } from '@mirrorhub/shared/kit/runtime/builtins';
import { GROUP } from '@mirrorhub/shared/api/index';
import { errorMessage } from '@mirrorhub/shared/kit/runtime/index';
import type { RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import type { Access } from './view.js';

const { createHash } = crypto;

export interface Identity {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export type AuthResult =
  | { ok: true; identity: Identity; access: Access }
  | { ok: false; status: 401 | 503; error: string };

export interface ViewerAuthOptions {
  rest: RestClient;
  /** How long a review's answer is trusted (default 30 s). */
  ttlMs?: number;
  /** Identities remembered at most (default 1000; the oldest are dropped). */
  maxEntries?: number;
  now?: () => number;
}

interface Cached<T> {
  at: number;
  value: Promise<T>;
}

const RESOURCES = {
  secretMirrors: 'secretmirrors',
  clusterSecretMirrors: 'clustersecretmirrors',
  mirrorClusters: 'mirrorclusters',
} as const;

/** Bearer token from an Authorization header; undefined when absent or malformed. */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m?.[1];
}

/**
 * The same `Bearer <token>` as Authorization, under another name: the API server's service proxy
 * (`kubectl mirrorhub dashboard`) authenticates the caller by their Authorization header and
 * removes it before passing the request on, so the viewer's token travels in this one. It is
 * checked exactly as Authorization is; a custom header cannot be sent cross-origin without a
 * CORS preflight, which the dashboard never answers.
 */
export const VIEWER_TOKEN_HEADER = 'x-mirrorhub-authorization';

/** The viewer's bearer token: Authorization, else VIEWER_TOKEN_HEADER. */
export function viewerToken(
  headers: Record<string, string | string[] | undefined>,
): string | undefined {
  const auth = headers['authorization'];
  const alt = headers[VIEWER_TOKEN_HEADER];
  return bearerToken(auth !== undefined ? String(auth) : typeof alt === 'string' ? alt : undefined);
}

export class ViewerAuth {
  private readonly ttlMs: number;
  private readonly max: number;
  private readonly now: () => number;
  private readonly tokens = new Map<string, Cached<Identity | string>>();
  private readonly decisions = new Map<string, Cached<boolean>>();

  constructor(private readonly opts: ViewerAuthOptions) {
    this.ttlMs = opts.ttlMs ?? 30_000;
    this.max = opts.maxEntries ?? 1000;
    this.now = opts.now ?? Date.now;
  }

  /**
   * Authenticate `token` and work out what it may see; `namespaces` are the namespaces that
   * hold SecretMirrors now (a namespace viewer is asked about each of those only).
   */
  async authorize(token: string, namespaces: Iterable<string>): Promise<AuthResult> {
    const authn = await this.authenticate(token);
    if (!authn.ok) return authn;
    const { identity } = authn;
    try {
      const allowed = (resource: string, namespace?: string) =>
        this.allowed(identity, resource, namespace);
      const [all, cluster, clusters] = await Promise.all([
        allowed(RESOURCES.secretMirrors),
        allowed(RESOURCES.clusterSecretMirrors),
        allowed(RESOURCES.mirrorClusters),
      ]);
      const visible = new Set<string>();
      if (!(all && cluster)) {
        const list = [...new Set(namespaces)];
        const answers = await Promise.all(list.map((ns) => allowed(RESOURCES.secretMirrors, ns)));
        list.forEach((ns, i) => answers[i] && visible.add(ns));
      }
      return {
        ok: true,
        identity,
        access: { allMirrors: all && cluster, namespaces: visible, clusters },
      };
    } catch (err) {
      return {
        ok: false,
        status: 503,
        error: `cannot check what the identity may see (SubjectAccessReview): ${errorMessage(err)}`,
      };
    }
  }

  /**
   * Only who the token belongs to (the cached TokenReview): what a standby checks before it
   * passes a request to the leader, which then decides what the identity may see.
   */
  async authenticate(
    token: string,
  ): Promise<{ ok: true; identity: Identity } | Extract<AuthResult, { ok: false }>> {
    let identity: Identity | string;
    try {
      identity = await this.cached(this.tokens, sha256(token), () => this.review(token));
    } catch (err) {
      return {
        ok: false,
        status: 503,
        error: `cannot check the token with the API server: ${errorMessage(err)}`,
      };
    }
    if (typeof identity === 'string') return { ok: false, status: 401, error: identity };
    return { ok: true, identity };
  }

  /** TokenReview: the identity, or why the token is refused. */
  private async review(token: string): Promise<Identity | string> {
    const res = await this.opts.rest.post<{
      status?: {
        authenticated?: boolean;
        error?: string;
        user?: Identity;
      };
    }>('/apis/authentication.k8s.io/v1/tokenreviews', {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenReview',
      spec: { token },
    });
    const st = res.status ?? {};
    if (!st.authenticated || !st.user?.username) {
      return (
        'the token was not accepted by the hub cluster' +
        (st.error ? ` (${st.error})` : '') +
        ': sign in with a current token, e.g. `kubectl create token <serviceaccount> -n <namespace>`'
      );
    }
    return st.user;
  }

  private allowed(identity: Identity, resource: string, namespace?: string): Promise<boolean> {
    const key = `${identity.uid ?? ''}|${identity.username}|${(identity.groups ?? []).join(',')}|${resource}|${namespace ?? ''}`;
    return this.cached(this.decisions, key, async () => {
      const res = await this.opts.rest.post<{ status?: { allowed?: boolean } }>(
        '/apis/authorization.k8s.io/v1/subjectaccessreviews',
        {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: {
            user: identity.username,
            ...(identity.uid ? { uid: identity.uid } : {}),
            ...(identity.groups ? { groups: identity.groups } : {}),
            ...(identity.extra ? { extra: identity.extra } : {}),
            resourceAttributes: {
              verb: 'list',
              group: GROUP,
              resource,
              ...(namespace ? { namespace } : {}),
            },
          },
        },
      );
      return res.status?.allowed === true;
    });
  }

  /** One review per key per ttl; a failed review is not remembered. */
  private cached<T>(map: Map<string, Cached<T>>, key: string, load: () => Promise<T>): Promise<T> {
    const now = this.now();
    const hit = map.get(key);
    if (hit && now - hit.at < this.ttlMs) return hit.value;
    const value = load();
    map.delete(key);
    map.set(key, { at: now, value });
    value.catch(() => {
      if (map.get(key)?.value === value) map.delete(key);
    });
    while (map.size > this.max) map.delete(map.keys().next().value as string);
    return value;
  }
}

function sha256(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}
