// How the hub gets a Vault token, and keeps one.
//
// A `VaultAuth` is a login method: `tokenAuth` (a static token: "login" is a lookup-self that
// learns its TTL and whether it is renewable), `appRoleAuth` (role_id + secret_id) and
// `kubernetesAuth` (a role + a ServiceAccount JWT from a callback, which the hub fills with a
// TokenRequest token of its own ServiceAccount for the audience the Vault role expects).
//
// A `VaultSession` holds the token one login gave and keeps it alive:
// - concurrent callers share one login (single flight);
// - at 2/3 of the TTL (injectable clock) it renews the token (renew-self) when it is renewable;
//   when it is not, or when renewal hits the token's max TTL or fails, AppRole and Kubernetes
//   log in afresh; a static token can only be renewed, and a warning says when it will expire;
// - a token Vault refuses (revoked, expired) is dropped with `invalidate()`, and the next
//   `token()` logs in again (VaultClient does this on a 403 and retries the request once).
//
// Tokens, secret_ids and JWTs live in closures and private fields: they are never logged,
// never put in an error, and a session printed or serialised shows none of them.

import { util } from '@mirrorhub/shared/kit/runtime/builtins';
import type { Logger } from 'pino';
import type { Clock, Timer } from '@mirrorhub/shared/kit/runtime/clock';
import { isVaultError, VaultError } from './errors.js';
import type { VaultEnvelope, VaultHttp } from './http.js';

const { inspect } = util;

/** What a login gives. */
export interface VaultLogin {
  token: string;
  /** Seconds the token lives from now; 0: it never expires (a root token). */
  ttlSeconds: number;
  renewable: boolean;
  /** The TTL to ask for on renewal (default `ttlSeconds`; a static token's creation TTL). */
  incrementSeconds?: number | undefined;
}

export type VaultAuthMethod = 'token' | 'approle' | 'kubernetes';

export interface VaultAuth {
  readonly method: VaultAuthMethod;
  /** Safe to print: the method and mount, never a credential (e.g. `AppRole login at auth/approle`). */
  readonly description: string;
  /** True when `login()` mints a new token; false for a static token (it can only be renewed). */
  readonly mintsTokens: boolean;
  /** Namespace the token lives in (default: the client's). */
  readonly namespace?: string | undefined;
  login(http: VaultHttp): Promise<VaultLogin>;
}

/** Mount paths: `approle`, `auth/approle`, `/approle/` all mean `auth/approle`. */
export function authMountPath(mount: string): string {
  const m = mount.replace(/^\/+|\/+$/g, '').replace(/^auth(\/|$)/, '');
  if (!m || m.split('/').some((s) => s === '' || s === '.' || s === '..')) {
    throw new VaultError({
      kind: 'usage',
      message: `"${mount}" is not an auth mount path: give it as e.g. "approle" or "kubernetes"`,
    });
  }
  return `auth/${m}`;
}

// ---- methods -----------------------------------------------------------------------------------

export interface TokenAuthOptions {
  token: string;
  /** Namespace of the token (default: the client's). */
  namespace?: string | undefined;
}

/** A static token: looked up to learn its TTL; renewed while renewable; cannot be re-minted. */
export function tokenAuth(opts: TokenAuthOptions): VaultAuth {
  const token = opts.token;
  if (!token) throw new VaultError({ kind: 'usage', message: 'the Vault token is empty' });
  const description = 'the static Vault token';
  return {
    method: 'token',
    description,
    mintsTokens: false,
    namespace: opts.namespace,
    async login(http) {
      try {
        const res = await http.request<
          VaultEnvelope<{ ttl?: number; creation_ttl?: number; renewable?: boolean }>
        >({
          method: 'GET',
          path: 'auth/token/lookup-self',
          token,
          namespace: opts.namespace,
          secrets: [token],
          who: description,
        });
        const data = res.body?.data;
        return {
          token,
          ttlSeconds: typeof data?.ttl === 'number' ? data.ttl : 0,
          renewable: data?.renewable === true,
          incrementSeconds: typeof data?.creation_ttl === 'number' ? data.creation_ttl : undefined,
        };
      } catch (err) {
        if (isVaultError(err, 'permission-denied')) {
          throw err.withMessage(
            `Vault refused the static Vault token (lookup-self answered 403): it was revoked, has expired, or is not a token of this Vault${err.namespace ? ` / namespace ${err.namespace}` : ''}; give mirrorhub a valid token`,
            'login-failed',
          );
        }
        throw err;
      }
    },
  };
}

export interface AppRoleAuthOptions {
  roleId: string;
  /** The secret_id, or a callback that returns the current one (e.g. read from a file). */
  secretId: string | (() => Promise<string>);
  /** Mount path of the AppRole auth method (default `approle`). */
  mount?: string | undefined;
  namespace?: string | undefined;
}

export function appRoleAuth(opts: AppRoleAuthOptions): VaultAuth {
  const mount = authMountPath(opts.mount ?? 'approle');
  const description = `AppRole login at ${mount}`;
  if (!opts.roleId)
    throw new VaultError({ kind: 'usage', message: `${description}: role_id is empty` });
  return {
    method: 'approle',
    description,
    mintsTokens: true,
    namespace: opts.namespace,
    async login(http) {
      const secretId = typeof opts.secretId === 'string' ? opts.secretId : await opts.secretId();
      return loginRequest(http, {
        path: `${mount}/login`,
        body: { role_id: opts.roleId, secret_id: secretId },
        secrets: [opts.roleId, secretId],
        namespace: opts.namespace,
        description,
        hint: 'check role_id and secret_id (a secret_id can expire or run out of uses: issue a new one)',
      });
    },
  };
}

export interface KubernetesAuthOptions {
  /** The Vault role (`auth/<mount>/role/<role>`). */
  role: string;
  /**
   * A ServiceAccount JWT for each login: the hub passes a TokenRequest token of its own
   * ServiceAccount, for the audience the Vault role is bound to.
   */
  getJwt: () => Promise<string>;
  /** Mount path of the Kubernetes auth method (default `kubernetes`). */
  mount?: string | undefined;
  namespace?: string | undefined;
}

export function kubernetesAuth(opts: KubernetesAuthOptions): VaultAuth {
  const mount = authMountPath(opts.mount ?? 'kubernetes');
  const description = `Kubernetes login at ${mount} as role "${opts.role}"`;
  if (!opts.role)
    throw new VaultError({ kind: 'usage', message: `${description}: the role is empty` });
  return {
    method: 'kubernetes',
    description,
    mintsTokens: true,
    namespace: opts.namespace,
    async login(http) {
      let jwt: string;
      try {
        jwt = await opts.getJwt();
      } catch (err) {
        throw new VaultError({
          kind: 'login-failed',
          message: `${description}: could not get a ServiceAccount token to log in with: ${err instanceof Error ? err.message : String(err)}`,
        });
      }
      if (!jwt) {
        throw new VaultError({
          kind: 'login-failed',
          message: `${description}: the ServiceAccount token callback returned an empty token`,
        });
      }
      return loginRequest(http, {
        path: `${mount}/login`,
        body: { role: opts.role, jwt },
        secrets: [jwt],
        namespace: opts.namespace,
        description,
        hint: `check that the role binds this ServiceAccount's name and namespace, that the token's audience is the role's audience, and that ${mount}/config can reach the API server's TokenReview`,
      });
    },
  };
}

async function loginRequest(
  http: VaultHttp,
  o: {
    path: string;
    body: Record<string, string>;
    secrets: string[];
    namespace: string | undefined;
    description: string;
    hint: string;
  },
): Promise<VaultLogin> {
  let res;
  try {
    res = await http.request({
      method: 'POST',
      path: o.path,
      body: o.body,
      secrets: o.secrets,
      namespace: o.namespace,
    });
  } catch (err) {
    if (isVaultError(err) && err.status !== undefined && err.status < 500 && err.status !== 429) {
      const said = err.errors.length ? `: Vault says: ${err.errors.join('; ')}` : '';
      const missing = err.status === 404 || err.status === 405;
      throw err.withMessage(
        missing
          ? `${o.description} failed (${err.status})${said}: no such auth mount${err.namespace ? ` in namespace ${err.namespace}` : ''}; check the mount path`
          : `${o.description} failed (${err.status})${said}; ${o.hint}${err.status === 403 ? `; and that an auth method is mounted at ${o.path.replace(/\/login$/, '')}${err.namespace ? ` in namespace ${err.namespace}` : ''} (Vault answers 403 when none is)` : ''}`,
        'login-failed',
      );
    }
    throw err;
  }
  const auth = res.body?.auth;
  if (!auth?.client_token) {
    throw new VaultError({
      kind: 'unexpected-response',
      message: `${o.description}: Vault answered without a token`,
      method: 'POST',
      path: o.path,
    });
  }
  return {
    token: auth.client_token,
    ttlSeconds: auth.lease_duration ?? 0,
    renewable: auth.renewable === true,
  };
}

// ---- session -----------------------------------------------------------------------------------

/** `setTimeout` that does not keep the process alive for a renewal nobody waits on. */
export const unrefClock: Clock = {
  now: () => Date.now(),
  setTimer(fn, ms) {
    const handle = setTimeout(fn, Math.max(0, ms));
    handle.unref();
    return { cancel: () => clearTimeout(handle) };
  },
};

export interface VaultSessionOptions {
  http: VaultHttp;
  auth: VaultAuth;
  clock?: Clock | undefined;
  logger?: Logger | undefined;
  /** Fraction of the TTL after which the token is renewed or replaced (default 2/3). */
  renewFraction?: number | undefined;
  /** Wait before retrying a failed renewal or background login (default 5 s, capped by the TTL). */
  retryMs?: number | undefined;
}

/** What a session did, for tests, metrics and the dashboard (no credentials). */
export interface VaultSessionStats {
  logins: number;
  renewals: number;
  failedRenewals: number;
  /** When the current token expires (ms since epoch); undefined without a token or TTL. */
  expiresAt: number | undefined;
  renewable: boolean;
}

interface Current {
  token: string;
  /** What renewals ask for. */
  increment: number;
  renewable: boolean;
  expiresAt: number | undefined;
  /** Renewal hit the max TTL: replace the token by a login at the next timer. */
  capped: boolean;
}

export class VaultSession {
  readonly auth: VaultAuth;
  private readonly http: VaultHttp;
  private readonly clock: Clock;
  private readonly logger: Logger | undefined;
  private readonly renewFraction: number;
  private readonly retryMs: number;
  private current: Current | undefined;
  private pending: Promise<Current> | undefined;
  private readonly refusedChecks = new Map<string, Promise<boolean>>();
  private timer: Timer | undefined;
  private closed = false;
  private readonly counts = { logins: 0, renewals: 0, failedRenewals: 0 };

  constructor(opts: VaultSessionOptions) {
    this.http = opts.http;
    this.auth = opts.auth;
    this.clock = opts.clock ?? unrefClock;
    this.logger = opts.logger;
    const f = opts.renewFraction ?? 2 / 3;
    if (!(f > 0 && f < 1)) {
      throw new VaultError({ kind: 'usage', message: `renewFraction must be in (0, 1); got ${f}` });
    }
    this.renewFraction = f;
    this.retryMs = opts.retryMs ?? 5_000;
  }

  /** A token Vault should accept: the current one, or one from a (shared) login. */
  async token(): Promise<string> {
    this.assertOpen();
    const c = this.current;
    if (c && (c.expiresAt === undefined || this.clock.now() < c.expiresAt)) return c.token;
    return (await this.login()).token;
  }

  /** Vault refused `token`: forget it (if still current) so that the next `token()` logs in. */
  invalidate(token: string): void {
    if (this.current?.token === token) {
      this.current = undefined;
      this.timer?.cancel();
      this.timer = undefined;
    }
  }

  /**
   * After a 403: is it the token that is refused (revoked, expired), rather than the policy?
   * Asks lookup-self, which every token's default policy allows. Concurrent callers share one
   * check per token.
   */
  isRefused(token: string): Promise<boolean> {
    let check = this.refusedChecks.get(token);
    if (!check) {
      check = this.http
        .request({
          method: 'GET',
          path: 'auth/token/lookup-self',
          token,
          secrets: [token],
          namespace: this.authNamespace(),
        })
        .then(
          () => false,
          (err: unknown) => {
            if (isVaultError(err, 'permission-denied')) return true;
            throw err;
          },
        )
        .finally(() => this.refusedChecks.delete(token));
      this.refusedChecks.set(token, check);
    }
    return check;
  }

  stats(): VaultSessionStats {
    return {
      ...this.counts,
      expiresAt: this.current?.expiresAt,
      renewable: this.current?.renewable ?? false,
    };
  }

  /** Stops renewing; with `revoke`, revokes a token this session minted (not a static one). */
  async close(opts: { revoke?: boolean } = {}): Promise<void> {
    this.closed = true;
    this.timer?.cancel();
    this.timer = undefined;
    const c = this.current;
    this.current = undefined;
    if (opts.revoke && c && this.auth.mintsTokens) {
      await this.http
        .request({
          method: 'POST',
          path: 'auth/token/revoke-self',
          token: c.token,
          secrets: [c.token],
          namespace: this.authNamespace(),
        })
        .catch((err: unknown) =>
          this.logger?.warn({ err, auth: this.auth.description }, 'vault token revocation failed'),
        );
    }
  }

  /** Printed or serialised, a session shows its method and counters, never its token. */
  toJSON(): Record<string, unknown> {
    return { auth: this.auth.description, ...this.stats() };
  }

  [inspect.custom](): string {
    return `VaultSession ${JSON.stringify(this.toJSON())}`;
  }

  /** Token self-operations go to the namespace the token lives in. */
  private authNamespace(): string | undefined {
    return this.auth.namespace;
  }

  private assertOpen(): void {
    if (this.closed) {
      throw new VaultError({
        kind: 'usage',
        message: `the Vault session (${this.auth.description}) is closed`,
      });
    }
  }

  private login(): Promise<Current> {
    this.pending ??= (async () => {
      try {
        const l = await this.auth.login(this.http);
        this.assertOpen();
        this.counts.logins++;
        const c = this.adopt(
          l.token,
          l.ttlSeconds,
          l.incrementSeconds ?? l.ttlSeconds,
          l.renewable,
        );
        this.logger?.info(
          { auth: this.auth.description, ttlSeconds: l.ttlSeconds, renewable: l.renewable },
          this.auth.mintsTokens ? 'vault login succeeded' : 'vault token looked up',
        );
        return c;
      } finally {
        this.pending = undefined;
      }
    })();
    return this.pending;
  }

  private adopt(
    token: string,
    ttlSeconds: number,
    increment: number,
    renewable: boolean,
    capped = false,
  ): Current {
    const now = this.clock.now();
    const c: Current = {
      token,
      increment,
      renewable,
      expiresAt: ttlSeconds > 0 ? now + ttlSeconds * 1000 : undefined,
      capped,
    };
    this.current = c;
    this.schedule(c, ttlSeconds * 1000 * this.renewFraction);
    return c;
  }

  private schedule(c: Current, delayMs: number): void {
    this.timer?.cancel();
    this.timer = undefined;
    if (this.closed || c.expiresAt === undefined) return; // a token without TTL needs nothing
    if (!c.renewable && !this.auth.mintsTokens) {
      this.logger?.warn(
        { auth: this.auth.description, expiresAt: new Date(c.expiresAt).toISOString() },
        'the static Vault token is not renewable and will expire: give mirrorhub a new one before then',
      );
      return;
    }
    this.timer = this.clock.setTimer(() => void this.refresh(c), Math.max(0, delayMs));
  }

  /** The timer's work: renew the token, or replace it by a login. Never throws. */
  private async refresh(c: Current): Promise<void> {
    if (this.closed || this.current !== c) return;
    const relogin = this.auth.mintsTokens && (!c.renewable || c.capped);
    try {
      if (relogin) {
        await this.login();
        return;
      }
      const res = await this.http.request({
        method: 'POST',
        path: 'auth/token/renew-self',
        token: c.token,
        body: { increment: c.increment },
        secrets: [c.token],
        namespace: this.authNamespace(),
        who: this.auth.description,
      });
      if (this.closed || this.current !== c) return;
      const auth = res.body?.auth;
      const ttl = auth?.lease_duration ?? 0;
      this.counts.renewals++;
      // Vault caps a renewal at the token's max TTL: from there on, only a new login helps.
      const capped = ttl < c.increment;
      this.logger?.debug(
        { auth: this.auth.description, ttlSeconds: ttl, capped },
        'vault token renewed',
      );
      // Keep asking for the original TTL.
      this.adopt(c.token, ttl, c.increment, auth?.renewable ?? c.renewable, capped);
      if (capped && !this.auth.mintsTokens) {
        this.logger?.warn(
          { auth: this.auth.description, ttlSeconds: ttl },
          'the static Vault token reached its max TTL and will expire: give mirrorhub a new one before then',
        );
      }
    } catch (err) {
      if (this.closed || this.current !== c) return;
      this.counts.failedRenewals++;
      const refused = isVaultError(err, 'permission-denied') || isVaultError(err, 'login-failed');
      this.logger?.warn(
        { err, auth: this.auth.description },
        relogin ? 'vault login to replace an expiring token failed' : 'vault token renewal failed',
      );
      if (refused && !this.auth.mintsTokens) {
        this.invalidate(c.token); // the static token is gone: requests now fail with login-failed
        return;
      }
      if (!relogin && this.auth.mintsTokens) {
        // Renewal failed: try a fresh login now; if that fails too, retry below.
        try {
          await this.login();
          return;
        } catch (loginErr) {
          if (this.closed) return;
          this.logger?.warn({ err: loginErr, auth: this.auth.description }, 'vault login failed');
        }
      }
      const left = (c.expiresAt ?? this.clock.now()) - this.clock.now();
      if (left <= 0) {
        this.invalidate(c.token);
        return; // expired: the next request logs in (and reports the error if it fails)
      }
      this.schedule(c, Math.min(this.retryMs, left / 3));
    }
  }
}
