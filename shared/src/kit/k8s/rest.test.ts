import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeAccess } from './access.js';
import {
  corePath,
  isAlreadyExists,
  isConflict,
  isInvalid,
  isNotFound,
  KubeApiError,
  microTime,
  RestClient,
  CONTENT_TYPE,
} from './rest.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  socket: number;
}

/** A plain-HTTP stand-in for the API server: records requests, answers from `reply`. */
describe('RestClient', () => {
  let server: http.Server;
  let base: string;
  const seen: Seen[] = [];
  const sockets = new WeakMap<object, number>();
  let nextSocket = 0;
  let reply: (s: Seen) => { status: number; body?: unknown } = () => ({ status: 200, body: {} });

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        if (!sockets.has(req.socket)) sockets.set(req.socket, ++nextSocket);
        const s: Seen = {
          method: req.method ?? '',
          url: req.url ?? '',
          headers: req.headers,
          body,
          socket: sockets.get(req.socket)!,
        };
        seen.push(s);
        const r = reply(s);
        res.writeHead(r.status, { 'Content-Type': 'application/json' });
        res.end(r.body === undefined ? '' : JSON.stringify(r.body));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const access = (auth?: string): KubeAccess => ({
    getCurrentCluster: () => ({ server: `${base}/` }),
    applyToHTTPSOptions(opts) {
      if (auth) opts.auth = auth;
      else opts.headers = { ...(opts.headers ?? {}), Authorization: 'Bearer t0k3n' };
      return Promise.resolve();
    },
  });

  it('sends JSON with auth, query and content type, over one kept-alive connection', async () => {
    seen.length = 0;
    reply = (s) => ({ status: 200, body: { echo: s.method } });
    const rest = new RestClient(access(), { userAgent: 'test-agent' });
    try {
      const path = corePath('secrets', 'ns-1', 'a b');
      expect(await rest.get(path)).toEqual({ echo: 'GET' });
      await rest.post(corePath('secrets', 'ns-1'), { kind: 'Secret' }, { fieldManager: 'm' });
      await rest.put(path, { kind: 'Secret' });
      await rest.patch(path, { metadata: {} }, CONTENT_TYPE.merge, { dryRun: undefined });
      await rest.delete(path, { preconditions: { uid: 'u' } });
    } finally {
      rest.close();
    }
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      'GET /api/v1/namespaces/ns-1/secrets/a%20b',
      'POST /api/v1/namespaces/ns-1/secrets?fieldManager=m',
      'PUT /api/v1/namespaces/ns-1/secrets/a%20b',
      'PATCH /api/v1/namespaces/ns-1/secrets/a%20b',
      'DELETE /api/v1/namespaces/ns-1/secrets/a%20b',
    ]);
    expect(seen[0]!.headers).toMatchObject({
      authorization: 'Bearer t0k3n',
      accept: 'application/json',
      'user-agent': 'test-agent',
    });
    expect(seen[3]!.headers['content-type']).toBe('application/merge-patch+json');
    expect(seen[1]!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(seen[4]!.body)).toEqual({ preconditions: { uid: 'u' } });
    expect(new Set(seen.map((s) => s.socket)).size).toBe(1);
  });

  it('turns basic auth into an Authorization header', async () => {
    seen.length = 0;
    reply = () => ({ status: 200, body: {} });
    const rest = new RestClient(access('me:pw'));
    await rest.get('/version');
    rest.close();
    expect(seen[0]!.headers.authorization).toBe(`Basic ${Buffer.from('me:pw').toString('base64')}`);
  });

  it.each([
    [404, 'NotFound', { isNotFound: true }],
    [409, 'AlreadyExists', { isAlreadyExists: true }],
    [409, 'Conflict', { isConflict: true }],
    [422, 'Invalid', { isInvalid: true }],
  ])('%i %s: a KubeApiError the predicates know', async (code, reason, want) => {
    reply = () => ({ status: code, body: { kind: 'Status', code, reason, message: 'nope' } });
    const rest = new RestClient(access());
    const err = await rest.get('/api/v1/namespaces/x').catch((e: unknown) => e);
    rest.close();
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err).toMatchObject({ code, body: { code, reason, message: 'nope' } });
    expect(String((err as Error).message)).toContain(`GET /api/v1/namespaces/x: ${code} ${reason}`);
    expect({
      isNotFound: isNotFound(err),
      isAlreadyExists: isAlreadyExists(err),
      isConflict: isConflict(err),
      isInvalid: isInvalid(err),
    }).toEqual({
      isNotFound: false,
      isAlreadyExists: false,
      isConflict: false,
      isInvalid: false,
      ...want,
    });
  });
});

describe('microTime', () => {
  it('writes six fractional digits', () => {
    expect(microTime(Date.UTC(2024, 0, 2, 3, 4, 5, 678))).toBe('2024-01-02T03:04:05.678000Z');
  });
});
