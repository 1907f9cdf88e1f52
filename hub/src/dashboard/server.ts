// The dashboard over HTTP, on the hub's health/metrics port: the page (hub/web, built by
// `npm run build` into hub/web/dist) and its JSON API. Every API request carries the viewer's
// Kubernetes bearer token; auth.ts decides who it is and what it may see, view.ts computes the
// answer from the hub's caches. Nothing here calls an API server except those (cached) reviews.
//
//   GET /                                      the page
//   GET /assets/app.js, /assets/app.css         its script and style
//   GET /api/v1/snapshot?groupBy=<label>        Snapshot: overview, clusters, mirrors, matrix
//   GET /api/v1/mirrors/<kind>/<ns or _>/<name> MirrorDetail (403: not yours, 404: none)
//   GET /api/v1/where?name=<copy name>          Where: every (cluster, namespace) with a copy
//   GET /api/v1/watch                           text/event-stream: `changed` with the version
// (paths and query parameters: routes.ts, the one list they are registered and checked from)
import { crypto, fs } from '@mirrorhub/shared/kit/runtime/builtins';
import type http from 'node:http';
import { fileURLToPath } from 'node:url';
import type { Gauge, HealthServer, Logger } from '@mirrorhub/shared/kit/runtime/index';
import type { RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import { viewerToken, ViewerAuth, type AuthResult } from './auth.js';
import { proxy, VIA_HEADER } from './proxy.js';
import {
  API_ROUTES,
  checkTarget,
  MIRROR_PATH_HELP,
  mirrorKeyOfPath,
  type RouteName,
  type TargetCheck,
} from './routes.js';
import { parseMirrorRef } from '@mirrorhub/shared/mirror/index';
import type { DashboardFeed } from './feed.js';
import type { ApiError, Snapshot } from './types.js';
import {
  clusterRows,
  findMirror,
  matrix,
  maySee,
  mirrorDetail,
  mirrorRows,
  overview,
  viewerInput,
  where,
  type ViewInput,
} from './view.js';

const { createHash } = crypto;
const { readFileSync } = fs;

/** Where `npm run build` puts the page (hub/web/dist), from src/dashboard or dist/dashboard. */
export const DEFAULT_ASSETS_DIR = fileURLToPath(new URL('../../web/dist/', import.meta.url));

export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const SECURITY_HEADERS = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
} as const;

export interface DashboardSource {
  /** What the views are computed from, or why there is nothing (standing by, not synced). */
  input(): ViewInput | string;
  leader(): boolean;
  /** A standby: the leader's dashboard to pass API requests to (proxy.ts), if it is known. */
  leaderUrl?(): Promise<string | undefined>;
}

export interface DashboardOptions {
  server: HealthServer;
  rest: RestClient;
  source: DashboardSource;
  feed: DashboardFeed;
  hub: { cluster: string; version: string };
  /** This replica, in the header of requests it passes to the leader. */
  identity: string;
  logger?: Logger;
  /** Open event streams (a gauge, `dashboard_viewers`). */
  viewers?: Gauge;
  assetsDir?: string;
  /** Reviews are trusted this long (default 30 s); streams re-check their viewer as often. */
  authTtlMs?: number;
  /** Event streams at once (default 200); more get 503. */
  maxStreams?: number;
  /** A comment line on every stream this often (default 15 s), through idle proxies. */
  heartbeatMs?: number;
}

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

const ASSETS: Record<string, [file: string, type: string]> = {
  '/': ['index.html', 'text/html; charset=utf-8'],
  '/index.html': ['index.html', 'text/html; charset=utf-8'],
  '/assets/app.js': ['app.js', 'text/javascript; charset=utf-8'],
  '/assets/app.css': ['app.css', 'text/css; charset=utf-8'],
};

export interface Dashboard {
  /** Event streams open now. */
  readonly streams: number;
  close(): void;
}

export function serveDashboard(opts: DashboardOptions): Dashboard {
  const auth = new ViewerAuth({
    rest: opts.rest,
    ...(opts.authTtlMs !== undefined ? { ttlMs: opts.authTtlMs } : {}),
  });
  const dir = opts.assetsDir ?? DEFAULT_ASSETS_DIR;
  const maxStreams = opts.maxStreams ?? 200;
  const heartbeatMs = opts.heartbeatMs ?? 15_000;
  const recheckMs = opts.authTtlMs ?? 30_000;
  const assets = new Map<string, Asset | undefined>();
  const streams = new Set<http.ServerResponse>();

  function asset(file: string, type: string): Asset | undefined {
    if (!assets.has(file)) {
      try {
        const body = readFileSync(dir + file);
        const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
        assets.set(file, { body, type, etag });
      } catch {
        assets.set(file, undefined); // not built: said so on every request, checked once
      }
    }
    return assets.get(file);
  }

  function serveAsset(req: http.IncomingMessage, res: http.ServerResponse, path: string): void {
    const [file, type] = ASSETS[path]!;
    const a = asset(file, type);
    if (!a) {
      return text(
        res,
        503,
        `the dashboard page is not built (${dir}${file} is missing): run \`npm run build\`; the API under /api/v1 works without it\n`,
      );
    }
    if (req.headers['if-none-match'] === a.etag) {
      res.writeHead(304, { ...SECURITY_HEADERS, etag: a.etag, 'cache-control': 'no-cache' });
      return void res.end();
    }
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': a.type,
      'content-length': a.body.length,
      etag: a.etag,
      'cache-control': 'no-cache',
    });
    res.end(req.method === 'HEAD' ? undefined : a.body);
  }

  /** The viewer, the input and the checked request target, or an error answer already sent. */
  async function gate(
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): Promise<
    | {
        input: ViewInput;
        auth: Extract<AuthResult, { ok: true }>;
        target: Extract<TargetCheck, { ok: true }>;
      }
    | undefined
  > {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      json(res, 405, { error: 'only GET is served here' });
      return undefined;
    }
    const target = checkTarget(req.url ?? '/');
    if (!target.ok) {
      json(res, target.status, { error: target.error });
      return undefined;
    }
    const token = viewerToken(req.headers);
    if (!token) {
      json(res, 401, {
        error:
          'sign in: send `Authorization: Bearer <token>` with a Kubernetes token for the hub cluster',
      });
      return undefined;
    }
    const input = opts.source.input();
    if (typeof input === 'string') {
      await forward(req, res, token, target, input);
      return undefined;
    }
    const namespaces = new Set<string>();
    for (const m of input.mirrors) if (m.metadata.namespace) namespaces.add(m.metadata.namespace);
    const result = await auth.authorize(token, namespaces);
    if (!result.ok) {
      json(res, result.status, { error: result.error });
      return undefined;
    }
    // A namespace viewer's views are computed from what they may see, messages included.
    return { input: viewerInput(input, result.access), auth: result, target };
  }

  /**
   * A standby passes the request to the leader (once: never from one standby to another), and
   * only a GET of a checked route from a viewer whose token it reviewed itself: nothing it did not
   * check opens a connection anywhere.
   */
  async function forward(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    token: string,
    target: Extract<TargetCheck, { ok: true }>,
    standingBy: string,
  ): Promise<void> {
    if (req.method !== 'GET') {
      return json(res, 405, {
        error: 'this hub replica is standing by and passes only GET requests to the leader',
      });
    }
    if (req.headers[VIA_HEADER] !== undefined) return json(res, 503, { error: standingBy });
    const authn = await auth.authenticate(token);
    if (!authn.ok) return json(res, authn.status, { error: authn.error });
    const leader = await opts.source.leaderUrl?.().catch((err: unknown) => {
      opts.logger?.warn({ err }, 'cannot find the leader for a dashboard request');
      return undefined;
    });
    if (!leader) return json(res, 503, { error: standingBy });
    proxy(leader, target, req, res, opts.identity, (message) => opts.logger?.warn(message));
  }

  async function snapshot(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const g = await gate(req, res);
    if (!g) return;
    const { input, auth: a } = g;
    const groupBy = g.target.params.get('groupBy') ?? '';
    const body: Snapshot = {
      whoami: {
        user: a.identity.username,
        scope: a.access.allMirrors ? 'cluster' : 'namespaces',
        namespaces: [...a.access.namespaces].sort(),
        clusters: a.access.clusters,
      },
      hub: { ...opts.hub, leader: opts.source.leader() },
      version: opts.feed.version,
      generatedAt: new Date(input.now).toISOString(),
      overview: overview(input, a.access),
      clusters: clusterRows(input, a.access),
      mirrors: mirrorRows(input, a.access),
      matrix: matrix(input, a.access, groupBy),
    };
    json(res, 200, body);
  }

  async function detail(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const g = await gate(req, res);
    if (!g) return;
    const key = mirrorKeyOfPath(g.target.pathname);
    const id = key === undefined ? undefined : parseMirrorRef(key);
    if (key === undefined || !id) return json(res, 400, { error: MIRROR_PATH_HELP });
    if (!maySee(g.auth.access, key)) {
      const what = id.namespace
        ? `SecretMirrors in namespace ${id.namespace}`
        : 'ClusterSecretMirrors';
      return json(res, 403, {
        error: `${g.auth.identity.username} may not list ${what} in the hub cluster, so this mirror is not shown`,
      });
    }
    const mirror = findMirror(g.input, key);
    if (!mirror) return json(res, 404, { error: `${key} does not exist (or is already deleted)` });
    json(res, 200, mirrorDetail(g.input, mirror));
  }

  async function whereIs(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const g = await gate(req, res);
    if (!g) return;
    const name = g.target.params.get('name')?.trim() ?? '';
    if (!name) return json(res, 400, { error: 'give the name of a copy: ?name=<name>' });
    json(res, 200, where(g.input, g.auth.access, name));
  }

  async function watch(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (streams.size >= maxStreams) {
      return json(res, 503, { error: `too many open dashboards (${maxStreams}); try again later` });
    }
    const g = await gate(req, res);
    if (!g) return;
    const token = viewerToken(req.headers)!;
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    });
    res.flushHeaders();
    streams.add(res);
    opts.viewers?.set(streams.size);
    const send = (event: string, data: unknown) =>
      res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    res.write('retry: 2000\n');
    send('changed', { version: opts.feed.version });
    const unsubscribe = opts.feed.subscribe((version) => send('changed', { version }));
    const heartbeat = setInterval(() => res.write(': ping\n\n'), heartbeatMs);
    // A token that expires or is revoked ends its stream within one review period (what it may
    // see is checked by each fetch the stream triggers, not here).
    const recheck = setInterval(() => {
      void auth.authorize(token, []).then((r) => {
        if (!r.ok && r.status === 401) {
          send('unauthorized', { error: r.error });
          res.end();
        }
      });
    }, recheckMs);
    heartbeat.unref();
    recheck.unref();
    const done = () => {
      unsubscribe();
      clearInterval(heartbeat);
      clearInterval(recheck);
      streams.delete(res);
      opts.viewers?.set(streams.size);
    };
    res.on('close', done);
  }

  const { server } = opts;
  for (const path of Object.keys(ASSETS)) {
    server.route(path, (req, res) => {
      if (req.method !== 'GET' && req.method !== 'HEAD') return text(res, 405, 'only GET\n');
      serveAsset(req, res, path);
    });
  }
  // Browsers ask for it on every page; no icon, and no 404 in their consoles.
  server.route('/favicon.ico', (_req, res) => {
    res.writeHead(204, { ...SECURITY_HEADERS, 'cache-control': 'max-age=86400' });
    res.end();
  });
  const handlers: Record<
    RouteName,
    (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>
  > = {
    snapshot,
    where: whereIs,
    watch,
    mirror: detail,
  };
  for (const [name, route] of Object.entries(API_ROUTES)) {
    server.route(route.path, handlers[name as RouteName]);
  }
  opts.logger?.info({ port: server.port }, 'dashboard served');

  return {
    get streams() {
      return streams.size;
    },
    close() {
      for (const res of streams) res.end();
      streams.clear();
      opts.viewers?.set(0);
    },
  };
}

function json(res: http.ServerResponse, status: number, body: unknown | ApiError): void {
  const s = JSON.stringify(body);
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(s),
    'cache-control': 'no-store',
    ...(status === 401 ? { 'www-authenticate': 'Bearer realm="mirrorhub"' } : {}),
  });
  res.end(res.req.method === 'HEAD' ? undefined : s);
}

function text(res: http.ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}
