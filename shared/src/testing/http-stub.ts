// A plain-HTTP stand-in for an API server in unit tests: records every request and answers
// from a function the test sets. Integration tests use a real kube-apiserver instead.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KubeAccess } from '../kit/k8s/access.js';

export interface StubRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** The body parsed as JSON (undefined when empty). */
  json: unknown;
}

export interface StubReply {
  status: number;
  body?: unknown;
}

export interface HttpStub {
  readonly requests: StubRequest[];
  /** Answers every request; default 200 `{}`. */
  reply: (r: StubRequest) => StubReply;
  /** A KubeAccess pointing at the stub. */
  access: KubeAccess;
  close(): Promise<void>;
}

export async function startHttpStub(): Promise<HttpStub> {
  const requests: StubRequest[] = [];
  const stub = {
    requests,
    reply: (() => ({ status: 200, body: {} })) as (r: StubRequest) => StubReply,
  };
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      const r: StubRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body,
        json: body ? (JSON.parse(body) as unknown) : undefined,
      };
      requests.push(r);
      const out = stub.reply(r);
      res.writeHead(out.status, { 'Content-Type': 'application/json' });
      res.end(out.body === undefined ? '' : JSON.stringify(out.body));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return Object.assign(stub, {
    access: {
      getCurrentCluster: () => ({ server: base }),
      applyToHTTPSOptions: () => Promise.resolve(),
    } satisfies KubeAccess,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  });
}
