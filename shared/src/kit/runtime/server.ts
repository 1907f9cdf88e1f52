/**
 * The operational HTTP endpoint of hub and agent (node:http, no framework):
 *
 * - `GET /metrics`  Prometheus exposition of the process registry.
 * - `GET /healthz`  (alias `/livez`) liveness: the process answers and its event loop is not
 *   stuck. A timer ticks every `loopCheckIntervalMs`; if the last tick is older than
 *   `loopStallMs` the loop has been blocked (or starved) and we answer 500 so the kubelet
 *   restarts us. (A loop blocked outright cannot answer at all; the probe's timeout covers it.)
 * - `GET /readyz`   readiness: every registered check passes (caches synced, leader or standby
 *   ok, ...). 503 lists the failing checks, kube-apiserver style: `[-]caches failed: ...`.
 *
 * Port 0 is allowed (tests): `start()` resolves with the bound port.
 */
import { http } from './builtins.js';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { errorMessage } from './errors.js';

/** true = ok; false or a string = not ok (the string says why); throwing = not ok. */
export type CheckResult = boolean | string | { ok: boolean; message?: string };
export type ReadinessCheck = () => CheckResult | Promise<CheckResult>;

export type RouteHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

export interface HealthServerOptions {
  port: number;
  /** Default `0.0.0.0`; tests use `127.0.0.1`. */
  host?: string;
  registry?: Registry;
  logger?: Logger;
  /** Readiness checks time out after this long each (default 2000 ms). */
  checkTimeoutMs?: number;
  /** Event loop considered stuck when a timer fires this late (default 10 000 ms). */
  loopStallMs?: number;
  loopCheckIntervalMs?: number;
}

export interface HealthServer {
  readonly port: number;
  readonly server: Server;
  /** Add (or replace) a named readiness check. Returns a function removing it. */
  addReadinessCheck(name: string, check: ReadinessCheck): () => void;
  /**
   * Serve another path (e.g. the hub dashboard's API); `/metrics` etc. win. A path ending in
   * `/` (other than `/` itself) serves everything under it.
   */
  route(path: string, handler: RouteHandler): void;
  /** Stop listening and drop keep-alive connections. */
  close(): Promise<void>;
}

interface CheckOutcome {
  name: string;
  ok: boolean;
  message?: string;
}

export async function startHealthServer(opts: HealthServerOptions): Promise<HealthServer> {
  const checks = new Map<string, ReadinessCheck>();
  const routes = new Map<string, RouteHandler>();
  const checkTimeoutMs = opts.checkTimeoutMs ?? 2000;
  const stallMs = opts.loopStallMs ?? 10_000;
  const intervalMs = opts.loopCheckIntervalMs ?? 1000;

  // A timer that should fire every intervalMs: when it fires late by more than stallMs the loop
  // was blocked; report that for the next stallMs, so a probe arriving just after sees it.
  let lastTick = Date.now();
  let stalledUntil = 0;
  let lastStallMs = 0;
  const ticker = setInterval(() => {
    const now = Date.now();
    const late = now - lastTick - intervalMs;
    if (late > stallMs) {
      lastStallMs = late;
      stalledUntil = now + stallMs;
      opts.logger?.warn({ blockedMs: late }, 'event loop was blocked');
    }
    lastTick = now;
  }, intervalMs);
  ticker.unref();

  async function runCheck(name: string, check: ReadinessCheck): Promise<CheckOutcome> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<CheckResult>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`timed out after ${checkTimeoutMs}ms`)),
          checkTimeoutMs,
        );
      });
      const r = await Promise.race([Promise.resolve().then(check), timeout]);
      if (r === true) return { name, ok: true };
      if (r === false) return { name, ok: false };
      if (typeof r === 'string') return { name, ok: false, message: r };
      return r.message === undefined ? { name, ok: r.ok } : { name, ok: r.ok, message: r.message };
    } catch (err) {
      return { name, ok: false, message: errorMessage(err) };
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  function prefixRoute(path: string): RouteHandler | undefined {
    for (const [prefix, handler] of routes) {
      if (prefix.length > 1 && prefix.endsWith('/') && path.startsWith(prefix)) return handler;
    }
    return undefined;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Only a path (origin form): an absolute or scheme-relative target (`http://host/...`,
    // `//host/...`, `/\host/...` as URL parsers read it) names another server, and nothing
    // here is a proxy.
    if (!/^\/(?![/\\])[^\\?]*(\?.*)?$/.test(req.url ?? '')) {
      return send(res, 400, 'the request target must be a path on this server (/...)\n');
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    const path = url.pathname;
    const route = routes.get(path) ?? prefixRoute(path);
    if (req.method !== 'GET' && req.method !== 'HEAD' && !route) {
      return send(res, 405, 'method not allowed\n');
    }
    switch (path) {
      case '/metrics': {
        if (!opts.registry) return send(res, 404, 'no metrics registry\n');
        const body = await opts.registry.metrics();
        return send(res, 200, body, opts.registry.contentType);
      }
      case '/healthz':
      case '/livez': {
        const now = Date.now();
        const since = now - lastTick;
        if (since > stallMs + intervalMs) {
          return send(
            res,
            500,
            `[-]eventloop failed: timer ${since}ms late\nhealthz check failed\n`,
          );
        }
        if (now < stalledUntil) {
          return send(
            res,
            500,
            `[-]eventloop failed: blocked for ${lastStallMs}ms\nhealthz check failed\n`,
          );
        }
        return send(res, 200, 'ok\n');
      }
      case '/readyz': {
        const outcomes = await Promise.all([...checks].map(([n, c]) => runCheck(n, c)));
        const failed = outcomes.filter((o) => !o.ok);
        const verbose = url.searchParams.has('verbose') || failed.length > 0;
        let body = '';
        if (verbose) {
          for (const o of outcomes) {
            body += o.ok
              ? `[+]${o.name} ok\n`
              : `[-]${o.name} failed${o.message ? ': ' + o.message : ''}\n`;
          }
        }
        if (failed.length) {
          opts.logger?.debug({ failed: failed.map((f) => f.name) }, 'readiness check failed');
          return send(res, 503, body + 'readyz check failed\n');
        }
        return send(res, 200, body + 'ok\n');
      }
      default: {
        if (route) return void (await route(req, res));
        return send(res, 404, 'not found\n');
      }
    }
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      opts.logger?.error({ err, path: req.url }, 'health server handler failed');
      if (!res.headersSent) send(res, 500, 'internal error\n');
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 5000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '0.0.0.0', () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (err) => opts.logger?.error({ err }, 'health server error'));
  const port = (server.address() as AddressInfo).port;
  opts.logger?.info({ port }, 'health server listening');

  return {
    port,
    server,
    addReadinessCheck(name, check) {
      checks.set(name, check);
      return () => {
        if (checks.get(name) === check) checks.delete(name);
      };
    },
    route(path, handler) {
      routes.set(path, handler);
    },
    close() {
      clearInterval(ticker);
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

function send(
  res: ServerResponse,
  code: number,
  body: string,
  contentType = 'text/plain; charset=utf-8',
): void {
  res.writeHead(code, {
    'content-type': contentType,
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}
