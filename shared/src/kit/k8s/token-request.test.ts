import type https from 'node:https';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startHttpStub, type HttpStub } from '../../testing/http-stub.js';
import { RestClient } from './rest.js';
import { serviceAccountAccess } from './token-request.js';

const SA = { namespace: 'mirrorhub-system', name: 'mirrorhub-agent' };
const TOKEN_PATH = '/api/v1/namespaces/mirrorhub-system/serviceaccounts/mirrorhub-agent/token';

describe('serviceAccountAccess', () => {
  let stub: HttpStub;
  let clock = 0;
  let issued = 0;
  beforeEach(async () => {
    stub = await startHttpStub();
    clock = Date.parse('2026-11-26T12:00:00Z');
    issued = 0;
    stub.reply = (r) => {
      if (r.url === TOKEN_PATH) {
        issued++;
        const spec = (r.json as { spec: { expirationSeconds: number } }).spec;
        return {
          status: 201,
          body: {
            status: {
              token: `agent-token-${issued}`,
              expirationTimestamp: new Date(clock + spec.expirationSeconds * 1000).toISOString(),
            },
          },
        };
      }
      return { status: 200, body: { auth: r.headers.authorization } };
    };
  });
  afterEach(() => stub.close());

  const whoami = async (rest: RestClient) =>
    (await rest.get<{ auth: string }>('/api/v1/namespaces')).auth;

  it('sends a requested token of the ServiceAccount, reused until 80% of its lifetime', async () => {
    const access = serviceAccountAccess(stub.access, SA, { now: () => clock });
    const rest = new RestClient(access);
    try {
      expect(access.user).toBe('system:serviceaccount:mirrorhub-system:mirrorhub-agent');
      expect(await whoami(rest)).toBe('Bearer agent-token-1');
      clock += 2879_000; // 47:59 of 60 minutes
      expect(await whoami(rest)).toBe('Bearer agent-token-1');
      expect(issued).toBe(1);
      clock += 2_000;
      expect(await whoami(rest)).toBe('Bearer agent-token-2');
      const asked = stub.requests.find((r) => r.url === TOKEN_PATH)!;
      expect(asked.method).toBe('POST');
      expect(asked.json).toMatchObject({ kind: 'TokenRequest', spec: { expirationSeconds: 3600 } });
    } finally {
      rest.close();
      access.close();
    }
  });

  it('shares one TokenRequest among callers that arrive together', async () => {
    const access = serviceAccountAccess(stub.access, SA, { now: () => clock });
    const rest = new RestClient(access);
    try {
      const auths = await Promise.all(Array.from({ length: 10 }, () => whoami(rest)));
      expect(new Set(auths)).toEqual(new Set(['Bearer agent-token-1']));
      expect(issued).toBe(1);
    } finally {
      rest.close();
      access.close();
    }
  });

  it('keeps the old token while a refresh fails, and says what is missing once it expired', async () => {
    const access = serviceAccountAccess(stub.access, SA, { now: () => clock });
    const rest = new RestClient(access);
    try {
      expect(await whoami(rest)).toBe('Bearer agent-token-1');
      const reply = stub.reply;
      stub.reply = (r) =>
        r.url === TOKEN_PATH
          ? { status: 403, body: { code: 403, message: 'serviceaccounts "x" is forbidden' } }
          : reply(r);
      clock += 3000_000; // past the refresh point, before expiry
      expect(await whoami(rest)).toBe('Bearer agent-token-1');
      clock += 700_000; // expired
      await expect(access.check()).rejects.toThrow(
        /cannot request a token of ServiceAccount mirrorhub-system\/mirrorhub-agent .*create on serviceaccounts\/token/,
      );
    } finally {
      rest.close();
      access.close();
    }
  });

  it("drops the base identity's client certificate and header, keeps its CA", async () => {
    // (TLS material only once the token is there: the stub speaks plain HTTP.)
    let tls = false;
    const base = {
      getCurrentCluster: () => stub.access.getCurrentCluster(),
      applyToHTTPSOptions: async (o: https.RequestOptions) => {
        await stub.access.applyToHTTPSOptions(o);
        if (tls) Object.assign(o, { ca: 'CA', cert: 'CERT', key: 'KEY' });
        o.headers = { Authorization: 'Bearer pod-token' };
      },
    };
    const access = serviceAccountAccess(base, SA, { now: () => clock });
    try {
      await access.check();
      tls = true;
      const o: https.RequestOptions = {};
      await access.applyToHTTPSOptions(o);
      expect(o).toMatchObject({ ca: 'CA', headers: { Authorization: 'Bearer agent-token-1' } });
      expect(o.cert).toBeUndefined();
      expect(o.key).toBeUndefined();
      // The TokenRequest itself went out as the base identity.
      expect(stub.requests[0]!.headers.authorization).toBe('Bearer pod-token');
    } finally {
      access.close();
    }
  });
});
