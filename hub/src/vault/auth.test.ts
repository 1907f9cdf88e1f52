// The token lifecycle of VaultSession, driven by a FakeClock against a scripted transport:
// when it renews, when it logs in again, that concurrent callers share one login, and that no
// token reaches a log line.
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '@mirrorhub/shared/testing/fake';
import { createLogger } from '@mirrorhub/shared/kit/runtime/log';
import { authMountPath, VaultSession, type VaultAuth, type VaultLogin } from './auth.js';
import { VaultError } from './errors.js';
import type { VaultHttp, VaultRequest, VaultResponse } from './http.js';

interface Script {
  /** What renew-self answers (ttl), or an error to throw. */
  renew?: (token: string) => number | VaultError;
  /** lookup-self: is the token refused? */
  refused?: (token: string) => boolean;
}

function denied(path: string): VaultError {
  return new VaultError({ kind: 'permission-denied', message: 'denied', path, status: 403 });
}

function fakeHttp(script: Script) {
  const calls: string[] = [];
  const http = {
    async request(req: VaultRequest): Promise<VaultResponse<unknown>> {
      calls.push(req.path);
      if (req.path === 'auth/token/renew-self') {
        const r = script.renew?.(req.token ?? '') ?? 0;
        if (r instanceof VaultError) throw r;
        return {
          status: 200,
          body: { auth: { client_token: req.token, lease_duration: r, renewable: true } },
        };
      }
      if (req.path === 'auth/token/lookup-self') {
        if (script.refused?.(req.token ?? '')) throw denied(req.path);
        return { status: 200, body: { data: {} } };
      }
      throw new Error(`unexpected request ${req.path}`);
    },
  };
  return { http: http as unknown as VaultHttp, calls };
}

/** An auth that mints `tok-1`, `tok-2`, ... (or, static, always returns the same). */
function scriptedAuth(
  login: Omit<VaultLogin, 'token'>,
  opts: { mintsTokens?: boolean; fail?: () => boolean; gate?: Promise<void> } = {},
) {
  let n = 0;
  const auth: VaultAuth = {
    method: opts.mintsTokens === false ? 'token' : 'approle',
    description: 'test auth',
    mintsTokens: opts.mintsTokens ?? true,
    async login() {
      n++;
      await opts.gate;
      if (opts.fail?.()) {
        throw new VaultError({ kind: 'login-failed', message: 'test auth failed: refused' });
      }
      return { ...login, token: opts.mintsTokens === false ? 'tok-static' : `tok-${n}` };
    },
  };
  return { auth, logins: () => n };
}

function logSink() {
  const lines: string[] = [];
  const logger = createLogger({
    level: 'debug',
    destination: { write: (l: string) => void lines.push(l) },
  });
  return { logger, text: () => lines.join('') };
}

describe('VaultSession', () => {
  it('shares one login among concurrent callers', async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const { auth, logins } = scriptedAuth({ ttlSeconds: 60, renewable: true }, { gate });
    const s = new VaultSession({ http: fakeHttp({}).http, auth, clock: new FakeClock() });
    const tokens = Promise.all([s.token(), s.token(), s.token(), s.token()]);
    open();
    expect(await tokens).toEqual(['tok-1', 'tok-1', 'tok-1', 'tok-1']);
    expect(logins()).toBe(1);
    expect(await s.token()).toBe('tok-1');
    expect(logins()).toBe(1);
  });

  it('renews at 2/3 of the TTL, asking for the TTL again, and keeps renewing', async () => {
    const clock = new FakeClock();
    const { http, calls } = fakeHttp({ renew: () => 30 });
    const { auth, logins } = scriptedAuth({ ttlSeconds: 30, renewable: true });
    const s = new VaultSession({ http, auth, clock });
    await s.token();
    const start = clock.now();
    await clock.advance(19_999);
    expect(s.stats().renewals).toBe(0);
    await clock.advance(1);
    expect(s.stats().renewals).toBe(1);
    expect(s.stats().expiresAt).toBe(start + 20_000 + 30_000);
    await clock.advance(20_000);
    expect(s.stats().renewals).toBe(2);
    expect(calls.filter((p) => p === 'auth/token/renew-self')).toHaveLength(2);
    expect(logins()).toBe(1);
    expect(await s.token()).toBe('tok-1');
  });

  it('renews at the fraction it is given', async () => {
    const clock = new FakeClock();
    const { auth } = scriptedAuth({ ttlSeconds: 10, renewable: true });
    const s = new VaultSession({
      http: fakeHttp({ renew: () => 10 }).http,
      auth,
      clock,
      renewFraction: 0.5,
    });
    await s.token();
    await clock.advance(4_999);
    expect(s.stats().renewals).toBe(0);
    await clock.advance(1);
    expect(s.stats().renewals).toBe(1);
  });

  it('logs in afresh when the token is not renewable', async () => {
    const clock = new FakeClock();
    const { auth, logins } = scriptedAuth({ ttlSeconds: 30, renewable: false });
    const s = new VaultSession({ http: fakeHttp({}).http, auth, clock });
    expect(await s.token()).toBe('tok-1');
    await clock.advance(20_000);
    expect(logins()).toBe(2);
    expect(await s.token()).toBe('tok-2');
  });

  it('logs in afresh when renewal fails, and again once renewal reaches the max TTL', async () => {
    const clock = new FakeClock();
    let renewals = 0;
    const { auth, logins } = scriptedAuth({ ttlSeconds: 30, renewable: true });
    const http = fakeHttp({
      renew: (token) => {
        renewals++;
        if (token === 'tok-1')
          return new VaultError({ kind: 'server', message: 'boom', status: 500 });
        return 12; // tok-2: capped below the 30 s asked for
      },
    }).http;
    const s = new VaultSession({ http, auth, clock });
    await s.token();
    await clock.advance(20_000); // renew tok-1 fails -> login tok-2
    expect(logins()).toBe(2);
    expect(s.stats().failedRenewals).toBe(1);
    expect(await s.token()).toBe('tok-2');
    await clock.advance(20_000); // renew tok-2 -> 12 s (capped)
    expect(renewals).toBe(2);
    expect(logins()).toBe(2);
    await clock.advance(8_000); // 2/3 of 12 s: a login, not another renewal
    expect(renewals).toBe(2);
    expect(logins()).toBe(3);
    expect(await s.token()).toBe('tok-3');
  });

  it('keeps retrying a failed background login until one succeeds', async () => {
    const clock = new FakeClock();
    let down = false;
    const { auth, logins } = scriptedAuth(
      { ttlSeconds: 30, renewable: false },
      { fail: () => down },
    );
    const s = new VaultSession({ http: fakeHttp({}).http, auth, clock, retryMs: 1_000 });
    await s.token();
    down = true;
    await clock.advance(20_000);
    expect(logins()).toBe(2);
    await clock.advance(1_000);
    expect(logins()).toBe(3);
    down = false;
    await clock.advance(1_000);
    expect(logins()).toBe(4);
    expect(await s.token()).toBe('tok-4');
  });

  it('forgets a refused token so that the next caller logs in; a stale invalidate is ignored', async () => {
    const { auth, logins } = scriptedAuth({ ttlSeconds: 0, renewable: false });
    const s = new VaultSession({ http: fakeHttp({}).http, auth, clock: new FakeClock() });
    expect(await s.token()).toBe('tok-1');
    s.invalidate('tok-1');
    expect(await s.token()).toBe('tok-2');
    s.invalidate('tok-1');
    expect(await s.token()).toBe('tok-2');
    expect(logins()).toBe(2);
  });

  it('tells a refused token (lookup-self 403) from a policy denial, one check per token', async () => {
    const { http, calls } = fakeHttp({ refused: (t) => t === 'dead' });
    const { auth } = scriptedAuth({ ttlSeconds: 0, renewable: false });
    const s = new VaultSession({ http, auth, clock: new FakeClock() });
    expect(await Promise.all([s.isRefused('dead'), s.isRefused('dead')])).toEqual([true, true]);
    expect(await s.isRefused('alive')).toBe(false);
    expect(calls).toEqual(['auth/token/lookup-self', 'auth/token/lookup-self']);
  });

  it('a static token refused at renewal is dropped, and the next request reports the login failure', async () => {
    const clock = new FakeClock();
    let revoked = false;
    const { auth } = scriptedAuth(
      { ttlSeconds: 30, renewable: true },
      { mintsTokens: false, fail: () => revoked },
    );
    const http = fakeHttp({ renew: () => denied('auth/token/renew-self') }).http;
    const s = new VaultSession({ http, auth, clock });
    await s.token();
    revoked = true;
    await clock.advance(20_000);
    expect(s.stats().expiresAt).toBeUndefined();
    await expect(s.token()).rejects.toMatchObject({ kind: 'login-failed' });
  });

  it('a static token that is not renewable is kept until it expires, with a warning', async () => {
    const clock = new FakeClock();
    const sink = logSink();
    const { auth, logins } = scriptedAuth(
      { ttlSeconds: 30, renewable: false },
      { mintsTokens: false },
    );
    const s = new VaultSession({ http: fakeHttp({}).http, auth, clock, logger: sink.logger });
    await s.token();
    expect(clock.pending()).toBe(0);
    expect(sink.text()).toContain('not renewable and will expire');
    await clock.advance(30_000);
    await s.token(); // expired by the clock: looked up again
    expect(logins()).toBe(2);
  });

  it('close() stops renewing and refuses further use', async () => {
    const clock = new FakeClock();
    const { auth } = scriptedAuth({ ttlSeconds: 30, renewable: true });
    const s = new VaultSession({ http: fakeHttp({ renew: () => 30 }).http, auth, clock });
    await s.token();
    expect(clock.pending()).toBe(1);
    await s.close();
    expect(clock.pending()).toBe(0);
    await clock.advance(60_000);
    expect(s.stats().renewals).toBe(0);
    await expect(s.token()).rejects.toThrow('closed');
  });

  it('never logs or serialises a token', async () => {
    const clock = new FakeClock();
    const sink = logSink();
    const { auth } = scriptedAuth({ ttlSeconds: 30, renewable: true });
    const http = fakeHttp({
      renew: (t) =>
        t === 'tok-1' ? new VaultError({ kind: 'server', message: 'x', status: 500 }) : 30,
    }).http;
    const s = new VaultSession({ http, auth, clock, logger: sink.logger });
    await s.token();
    await clock.advance(60_000);
    expect(sink.text()).toContain('vault login succeeded');
    expect(sink.text()).toContain('vault token renewal failed');
    expect(sink.text()).not.toMatch(/tok-\d/);
    expect(JSON.stringify(s)).not.toMatch(/tok-\d/);
    expect(inspect(s, { depth: 10, showHidden: true })).not.toMatch(/tok-\d/);
  });
});

describe('authMountPath', () => {
  it.each([
    ['approle', 'auth/approle'],
    ['/auth/approle/', 'auth/approle'],
    ['team/k8s', 'auth/team/k8s'],
  ])('%s -> %s', (mount, want) => {
    expect(authMountPath(mount)).toBe(want);
  });
  it.each(['', '/', 'auth/', 'a/../b'])('refuses %j', (mount) => {
    expect(() => authMountPath(mount)).toThrow(VaultError);
  });
});
