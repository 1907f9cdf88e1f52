// The transport against a local HTTP server that plays Vault's error shapes, including a hostile
// one that echoes the request's secrets back: what is sent, how each answer is typed, and that
// no secret reaches an error (real OpenBao: test/src/vault/).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VaultError } from './errors.js';
import { capabilityFor, VaultHttp } from './http.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

let server: http.Server;
let address: string;
const seen: Seen[] = [];
/** Route -> [status, body text]. */
const routes = new Map<string, (s: Seen) => [number, string] | 'hang'>();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const s: Seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
      seen.push(s);
      const route = routes.get(new URL(s.url, 'http://x').pathname);
      const answer = route ? route(s) : ([404, '{"errors":[]}'] as [number, string]);
      if (answer === 'hang') return; // never answers
      res.writeHead(answer[0], { 'Content-Type': 'application/json' });
      res.end(answer[1]);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  address = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

function client(extra: Partial<ConstructorParameters<typeof VaultHttp>[0]> = {}): VaultHttp {
  return new VaultHttp({ address, timeoutMs: 2_000, ...extra });
}

async function failure(p: Promise<unknown>): Promise<VaultError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(VaultError);
  return err as VaultError;
}

/** Every way an error can be printed or serialised. */
function allText(err: unknown): string {
  const e = err as Error;
  return [String(e), e.message, e.stack ?? '', JSON.stringify(e), inspect(e, { depth: 5 })].join(
    '\n',
  );
}

describe('VaultHttp requests', () => {
  it('sends the token, the namespace and a JSON body to /v1/<path>, and parses the answer', async () => {
    routes.set('/v1/secret/data/a', () => [200, '{"data":{"ok":true}}']);
    const h = client({ namespace: '/team-a/' });
    const res = await h.request({
      method: 'POST',
      path: 'secret/data/a',
      body: { data: { k: 'v' } },
      token: 'tok',
    });
    expect(res).toEqual({ status: 200, body: { data: { ok: true } } });
    const s = seen.at(-1)!;
    expect(s.method).toBe('POST');
    expect(s.headers['x-vault-token']).toBe('tok');
    expect(s.headers['x-vault-namespace']).toBe('team-a');
    expect(s.headers['content-type']).toBe('application/json');
    expect(JSON.parse(s.body)).toEqual({ data: { k: 'v' } });
    h.close();
  });

  it("keeps the address's path prefix, sends the query, and '' namespace sends none", async () => {
    routes.set('/vault/v1/secret/metadata/', () => [200, '{"data":{"keys":["a"]}}']);
    const h = new VaultHttp({ address: `${address}/vault/`, namespace: 'ns' });
    await h.request({
      method: 'GET',
      path: 'secret/metadata/',
      query: { list: 'true' },
      namespace: '',
    });
    const s = seen.at(-1)!;
    expect(s.url).toBe('/vault/v1/secret/metadata/?list=true');
    expect(s.headers['x-vault-namespace']).toBeUndefined();
    expect(s.headers['x-vault-token']).toBeUndefined();
    h.close();
  });

  it('answers 204 with no body, and an accepted error status as a response', async () => {
    routes.set('/v1/x/empty', () => [204, '']);
    routes.set('/v1/x/absent', () => [404, '{"errors":[]}']);
    const h = client();
    expect(await h.request({ method: 'DELETE', path: 'x/empty' })).toEqual({
      status: 204,
      body: undefined,
    });
    expect(await h.request({ method: 'GET', path: 'x/absent', accept: [404] })).toEqual({
      status: 404,
      body: { errors: [] },
    });
    h.close();
  });
});

describe('VaultHttp errors say what is wrong and what to do', () => {
  it.each([
    {
      status: 403,
      body: '{"errors":["1 error occurred:\\n\\t* permission denied\\n\\n"]}',
      kind: 'permission-denied',
      message:
        'permission denied on GET secret/data/x (namespace team-a): the Vault policy of the token of AppRole login at auth/approle does not allow "read" on "secret/data/x"; grant it in that policy (in namespace team-a)',
    },
    {
      status: 400,
      body: '{"errors":["check-and-set parameter did not match the current version"]}',
      kind: 'cas-mismatch',
      message:
        'check-and-set refused GET secret/data/x (namespace team-a): check-and-set parameter did not match the current version: the secret changed since it was read; read it again and retry',
    },
    {
      status: 400,
      body: '{"errors":["no data provided"]}',
      kind: 'invalid-request',
      message:
        'Vault refused GET secret/data/x (namespace team-a) as invalid (400): no data provided',
    },
    {
      status: 503,
      body: '{"errors":["Vault is sealed"]}',
      kind: 'unavailable',
      message: 'is unavailable (503): Vault is sealed: unseal it',
    },
    {
      status: 500,
      body: '<html>oops</html>',
      kind: 'server',
      message:
        'GET secret/data/x (namespace team-a): Vault failed (500): retry later and see the Vault server log',
    },
  ])('$status $kind', async ({ status, body, kind, message }) => {
    routes.set('/v1/secret/data/x', () => [status, body]);
    const h = client({ namespace: 'team-a' });
    const err = await failure(
      h.request({
        method: 'GET',
        path: 'secret/data/x',
        token: 't',
        who: 'the token of AppRole login at auth/approle',
      }),
    );
    expect(err.kind).toBe(kind);
    expect(err.status).toBe(status);
    expect(err.path).toBe('secret/data/x');
    expect(err.message).toContain(message);
    h.close();
  });

  it('names the capability a policy needs for each method', () => {
    expect(capabilityFor('GET')).toBe('read');
    expect(capabilityFor('GET', { list: 'true' })).toBe('list');
    expect(capabilityFor('DELETE')).toBe('delete');
    expect(capabilityFor('POST')).toBe('create" or "update');
  });

  it('a 2xx that is not JSON is an unexpected answer, and its text is not quoted', async () => {
    routes.set('/v1/ui', () => [200, '<html>login page with hunter2hunter2</html>']);
    const h = client();
    const err = await failure(h.request({ method: 'GET', path: 'ui' }));
    expect(err.kind).toBe('unexpected-response');
    expect(err.message).toContain('is the address that of Vault');
    expect(allText(err)).not.toContain('hunter2');
    expect(err.cause).toBeUndefined();
    h.close();
  });

  it('times out with the address and the limit', async () => {
    routes.set('/v1/slow', () => 'hang');
    const h = client({ timeoutMs: 200 });
    const err = await failure(h.request({ method: 'GET', path: 'slow' }));
    expect(err.kind).toBe('timeout');
    expect(err.message).toBe(
      `GET slow: no answer from Vault at ${address} within 200 ms: check that Vault is up and not overloaded, or raise the request timeout`,
    );
    h.close();
  });

  it('says when nothing listens at the address', async () => {
    const probe = http.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const h = new VaultHttp({ address: `http://127.0.0.1:${port}` });
    const err = await failure(h.request({ method: 'GET', path: 'sys/health' }));
    expect(err.kind).toBe('unreachable');
    expect(err.code).toBe('ECONNREFUSED');
    expect(err.message).toContain(`cannot reach Vault at http://127.0.0.1:${port} (ECONNREFUSED)`);
    h.close();
  });

  it.each([
    [{ address: 'vault:8200' }, 'must start with https://'],
    [{ address: 'not a url' }, 'is not a URL'],
    [{ address: 'https://u:p@vault' }, 'no credentials'],
    [{ address: 'https://vault', caPem: 'hello' }, 'the Vault CA bundle is not PEM'],
    [{ address: 'http://vault', caPem: '-----BEGIN CERTIFICATE-----\n' }, 'which is not https://'],
  ])('refuses options %j', (opts, message) => {
    expect(() => new VaultHttp(opts)).toThrow(message);
  });
});

describe('VaultHttp never lets a secret into an error', () => {
  const TOKEN = 's.AAAAbbbbCCCCddddEEEEffff';
  const SECRET_ID = '7f1c2b9e-4d3a-4c5b-9e8f-0a1b2c3d4e5f';
  const VALUE = 'correct-horse-battery-staple';
  const LEASE = 'database/creds/app/Zx81Qq1234abcd';

  it.each([400, 403, 404, 500, 503])(
    'not even when Vault echoes the request into its %i errors',
    async (status) => {
      routes.set('/v1/echo', (s) => [
        status,
        JSON.stringify({
          errors: [`bad request ${s.body}`, `token ${String(s.headers['x-vault-token'])}`],
        }),
      ]);
      const h = client();
      const err = await failure(
        h.request({
          method: 'POST',
          path: 'echo',
          token: TOKEN,
          body: { secret_id: SECRET_ID, data: { password: VALUE }, lease_id: LEASE },
          secrets: [SECRET_ID, VALUE, LEASE],
        }),
      );
      const text = allText(err) + JSON.stringify(err.errors);
      for (const secret of [TOKEN, SECRET_ID, VALUE, LEASE]) expect(text).not.toContain(secret);
      expect(err.errors.join(' ')).toContain('[redacted]');
      h.close();
    },
  );
});
