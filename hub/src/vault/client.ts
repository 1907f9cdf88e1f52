// One Vault (or OpenBao) server as the hub sees it: the transport (http.ts) and a session that
// logs in and keeps its token alive (auth.ts). Every request carries the session's token; when
// Vault answers 403 and lookup-self confirms that the token itself is refused (revoked,
// expired), the session logs in again (one login shared by every request that hit it) and the
// request is retried once. A 403 for a valid token is a policy denial and is thrown as is.
// (lookup-self is allowed by Vault's `default` policy: a token made without it
// (token_no_default_policy) makes every policy denial cost a login before it is reported.)

import { util } from '@mirrorhub/shared/kit/runtime/builtins';
import type { Logger } from 'pino';
import type { Clock } from '@mirrorhub/shared/kit/runtime/clock';
import { VaultSession, type VaultAuth } from './auth.js';
import { isVaultError } from './errors.js';
import {
  VaultHttp,
  type VaultEnvelope,
  type VaultHttpOptions,
  type VaultRequest,
  type VaultResponse,
} from './http.js';

const { inspect } = util;

export interface VaultClientOptions extends VaultHttpOptions {
  auth: VaultAuth;
  /** Drives renewal timers (tests pass a manual clock). */
  clock?: Clock | undefined;
  /** Fraction of the token TTL after which it is renewed or replaced (default 2/3). */
  renewFraction?: number | undefined;
  logger?: Logger | undefined;
}

/** A request as callers give it: the token, and whose policy it is, come from the session. */
export type VaultClientRequest = Omit<VaultRequest, 'token' | 'who'>;

export class VaultClient {
  readonly http: VaultHttp;
  readonly session: VaultSession;
  private readonly inflight = new Set<Promise<unknown>>();

  constructor(opts: VaultClientOptions) {
    this.http = new VaultHttp(opts);
    this.session = new VaultSession({
      http: this.http,
      auth: opts.auth,
      clock: opts.clock,
      logger: opts.logger,
      renewFraction: opts.renewFraction,
    });
  }

  get address(): string {
    return this.http.address;
  }

  get namespace(): string | undefined {
    return this.http.namespace;
  }

  /** Logs in now (otherwise the first request does): fail fast on bad credentials at start-up. */
  async login(): Promise<void> {
    await this.session.token();
  }

  async request<T = VaultEnvelope>(req: VaultClientRequest): Promise<VaultResponse<T>> {
    const auth = this.session.auth;
    const who = auth.mintsTokens ? `the token of ${auth.description}` : auth.description;
    const run = (async () => {
      const token = await this.session.token();
      try {
        return await this.http.request<T>({ ...req, token, who });
      } catch (err) {
        if (!isVaultError(err, 'permission-denied')) throw err;
        if (!(await this.session.isRefused(token))) throw err; // the policy, not the token
        this.session.invalidate(token);
        const fresh = await this.session.token(); // a static token: throws login-failed here
        return await this.http.request<T>({ ...req, token: fresh, who });
      }
    })();
    this.inflight.add(run);
    try {
      return await run;
    } finally {
      this.inflight.delete(run);
    }
  }

  /**
   * Waits for the requests in flight (each bounded by the request timeout), then stops renewing
   * and closes connections; `revoke` revokes a token the session minted.
   */
  async close(opts: { revoke?: boolean } = {}): Promise<void> {
    await Promise.allSettled([...this.inflight]);
    await this.session.close(opts);
    this.http.close();
  }

  toJSON(): Record<string, unknown> {
    return { address: this.address, namespace: this.namespace, session: this.session.toJSON() };
  }

  [inspect.custom](): string {
    return `VaultClient ${JSON.stringify(this.toJSON())}`;
  }
}
