/**
 * List and watch any resource over HTTP, with a KubeAccess's TLS and auth.
 *
 * Why not client-node's `Watch`/`ListWatch` (read in 1.4.0, dist/watch.js and dist/cache.js):
 * - `Watch` overwrites its own 30 s AbortSignal.timeout with the plain controller signal, so a
 *   half-open TCP connection hangs a watch forever; there is no `timeoutSeconds` either.
 * - `Watch` wraps `JSON.parse` *and the caller's callback* in one try/catch that ignores
 *   everything ("ignore parse errors"), so a bug in a handler vanishes silently.
 * - `Watch` cannot set `Accept`, so metadata-only (PartialObjectMetadata) watches are impossible.
 * - `ListWatch` stops for good on any error other than 410 (it just calls the error callbacks),
 *   has no backoff, keys its cache by namespace/name (not uid), calls handlers from an async
 *   function so a throwing handler becomes an unhandled rejection (which kills Node), and lists
 *   in one request without pagination.
 * So this module does the two HTTP calls itself (line-delimited JSON; as streams of the
 * process's one HTTP/2 connection to the API server, h2.ts, or over node:http/https where that
 * cannot be) and `watcher.ts` does the cache and the retry policy. Auth comes from a `KubeAccess`
 * (access.ts; client-node's KubeConfig is one): `applyToHTTPSOptions` runs on *every* request,
 * so rotating credentials (the EKS token authenticator, exec plugins, projected service-account
 * tokens) are picked up on each list and each watch reconnect.
 */
import { http } from '../runtime/builtins.js';
import type { ClientRequest, RequestOptions } from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { StatusLike } from '../runtime/errors.js';
import type { KubeAccess } from './access.js';
import { h2Headers, http2Get, readH2, suspectStream } from './h2.js';
import { shareSecureContext, type TlsRequestOptions } from './tls.js';

/** What to list and watch. */
export interface ResourceTarget {
  /** API group; '' or undefined for the core group. */
  group?: string;
  version: string;
  /** Lower-case plural resource name, e.g. `secrets`, `secretmirrors`. */
  plural: string;
  /** Watch one namespace; undefined = all namespaces (or a cluster-scoped resource). */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /**
   * Receive `PartialObjectMetadata` (apiVersion meta.k8s.io/v1, metadata only) instead of full
   * objects: the API server strips spec/data before sending. Use it when only names, labels and
   * annotations matter.
   */
  metadataOnly?: boolean;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchEvent<T> {
  type: WatchEventType;
  /** The object; for ERROR a `Status`. */
  object: T | (StatusLike & { kind?: string });
}

export interface ListOptions {
  limit?: number;
  continue?: string;
  /** '' / undefined = most recent (quorum read). */
  resourceVersion?: string;
}

export interface ListPage<T> {
  items: T[];
  resourceVersion: string;
  continue?: string;
}

export interface WatchOptions {
  resourceVersion: string;
  /** Ask the server to end the watch after this long (it then closes cleanly). */
  timeoutSeconds: number;
  allowWatchBookmarks: boolean;
}

export interface WatchCallbacks<T> {
  /** The server answered 200: events will follow. */
  onConnected?(): void;
  onEvent(event: WatchEvent<T>): void;
  /** The stream ended: cleanly (no argument) or with an error. Never called after abort(). */
  onClose(err?: unknown): void;
}

export interface WatchHandle {
  /**
   * Close the stream; no callback runs afterwards. `stalled`: it is closed because nothing came
   * for too long, so the connection under it may be dead (HTTP/2: it is checked with a PING).
   */
  abort(reason?: 'stalled'): void;
}

/** The two calls a watcher needs. Implemented over HTTP below, and by fakes in tests. */
export interface ListerWatcher<T> {
  list(opts: ListOptions): Promise<ListPage<T>>;
  /**
   * The same list as metadata only (PartialObjectMetadata): what a periodic re-list compares
   * resourceVersions with before reading whole objects. Absent when `list` already is that.
   */
  listMetadata?(opts: ListOptions): Promise<ListPage<KubernetesObject>>;
  watch(opts: WatchOptions, callbacks: WatchCallbacks<T>): WatchHandle;
}

/** An API error from this transport; `code` is the HTTP status (like client-node's ApiException). */
export class K8sHttpError extends Error {
  readonly code: number;
  readonly reason: string | undefined;
  readonly status: StatusLike | undefined;
  constructor(code: number, status: StatusLike | undefined, context: string) {
    super(
      `${context}: ${code}${status?.reason ? ' ' + status.reason : ''}${status?.message ? ': ' + status.message : ''}`,
    );
    this.name = 'K8sHttpError';
    this.code = code;
    this.reason = status?.reason;
    this.status = status;
  }
}

/** `/api/v1/namespaces/ns/secrets`, `/apis/mirrorhub.io/v1alpha1/secretmirrors`, ... */
export function resourcePath(
  t: Pick<ResourceTarget, 'group' | 'version' | 'plural' | 'namespace'>,
): string {
  const base = t.group ? `/apis/${t.group}/${t.version}` : `/api/${t.version}`;
  const ns = t.namespace ? `/namespaces/${encodeURIComponent(t.namespace)}` : '';
  return `${base}${ns}/${t.plural}`;
}

const ACCEPT_JSON = 'application/json';
const ACCEPT_META_LIST =
  'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;q=0.9';
const ACCEPT_META =
  'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;q=0.9';

export interface KubeListerWatcherOptions {
  /**
   * A watch that receives nothing (not even a bookmark) for this long is presumed dead
   * (half-open connection) and closed with an error. Default: timeoutSeconds + 60 s.
   */
  idleTimeoutMs?: number;
  /** Timeout for one list page request (default 60 s). */
  listTimeoutMs?: number;
}

/** List/watch `target` on the cluster of `kc`. */
export function kubeListerWatcher<T extends KubernetesObject>(
  kc: KubeAccess,
  target: ResourceTarget,
  opts: KubeListerWatcherOptions = {},
): ListerWatcher<T> {
  const path = resourcePath(target);

  function url(params: Record<string, string | number | boolean | undefined>): URL {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    const u = new URL(cluster.server.replace(/\/+$/, '') + path);
    if (target.labelSelector) u.searchParams.set('labelSelector', target.labelSelector);
    if (target.fieldSelector) u.searchParams.set('fieldSelector', target.fieldSelector);
    for (const [k, v] of Object.entries(params)) {
      if (v !== undefined && v !== '') u.searchParams.set(k, String(v));
    }
    return u;
  }

  /** The request's TLS options and headers, from the KubeAccess (fresh credentials each time). */
  async function prepare(accept: string): Promise<TlsRequestOptions> {
    const reqOpts: TlsRequestOptions = { method: 'GET', headers: {} };
    await kc.applyToHTTPSOptions(reqOpts);
    shareSecureContext(reqOpts);
    const headers = { ...(reqOpts.headers as Record<string, string>) };
    headers['Accept'] = accept;
    headers['User-Agent'] ??= 'mirrorhub';
    if (reqOpts.auth) {
      headers['Authorization'] = 'Basic ' + Buffer.from(reqOpts.auth).toString('base64');
      delete reqOpts.auth;
    }
    reqOpts.headers = headers;
    return reqOpts;
  }

  function request(u: URL, reqOpts: TlsRequestOptions): ClientRequest {
    return (u.protocol === 'http:' ? http : https).request(u, reqOpts as RequestOptions);
  }

  /**
   * A watch's response as a stream of text, over a shared HTTP/2 connection (h2.ts) when the
   * server and the credentials allow it, else over HTTP/1.1 as before.
   */
  async function openWatch(u: URL, accept: string): Promise<WatchStream> {
    const reqOpts = await prepare(accept);
    // A watch waits for its connection no longer than a list would.
    const stream = await http2Get(
      u,
      reqOpts,
      h2Headers(reqOpts.headers as Record<string, string>),
      opts.listTimeoutMs ?? 60_000,
    );
    if (stream) return h2WatchStream(stream);
    return h1WatchStream(request(u, reqOpts));
  }

  async function list<O>(o: ListOptions, accept: string): Promise<ListPage<O>> {
    const u = url({ limit: o.limit, continue: o.continue, resourceVersion: o.resourceVersion });
    const timeout = opts.listTimeoutMs ?? 60_000;
    const reqOpts = await prepare(accept);
    const started = Date.now();
    const stream = await http2Get(
      u,
      reqOpts,
      h2Headers(reqOpts.headers as Record<string, string>),
      timeout,
    );
    const left = Math.max(1, timeout - (Date.now() - started));
    const { status, body } = stream
      ? await readH2(stream, left, `list ${path}`)
      : await readH1(request(u, reqOpts), timeout, `list ${path}`);
    if (status !== 200) throw new K8sHttpError(status, parseStatus(body), `list ${path}`);
    const parsed = JSON.parse(body) as {
      items?: O[] | null;
      metadata?: { resourceVersion?: string; continue?: string };
    };
    const page: ListPage<O> = {
      items: parsed.items ?? [],
      resourceVersion: parsed.metadata?.resourceVersion ?? '',
    };
    if (parsed.metadata?.continue) page.continue = parsed.metadata.continue;
    return page;
  }

  return {
    list: (o) => list<T>(o, target.metadataOnly ? ACCEPT_META_LIST : ACCEPT_JSON),
    ...(target.metadataOnly
      ? {}
      : { listMetadata: (o: ListOptions) => list<KubernetesObject>(o, ACCEPT_META_LIST) }),

    watch(o, cb) {
      let aborted = false;
      let closed = false;
      let stream: WatchStream | undefined;
      let idle: NodeJS.Timeout | undefined;
      let buf = '';
      const idleMs = opts.idleTimeoutMs ?? o.timeoutSeconds * 1000 + 60_000;

      const close = (err?: unknown): void => {
        if (closed) return;
        closed = true;
        if (idle) clearTimeout(idle);
        stream?.destroy();
        if (!aborted) cb.onClose(err);
      };
      const touch = (): void => {
        if (idle) clearTimeout(idle);
        idle = setTimeout(() => {
          stream?.suspect();
          close(
            new Error(
              `watch ${path}: nothing received for ${idleMs}ms, presuming the connection dead`,
            ),
          );
        }, idleMs);
      };

      const u = url({
        watch: 'true',
        resourceVersion: o.resourceVersion,
        timeoutSeconds: o.timeoutSeconds,
        allowWatchBookmarks: o.allowWatchBookmarks ? 'true' : undefined,
      });
      openWatch(u, target.metadataOnly ? ACCEPT_META : ACCEPT_JSON).then(
        (st) => {
          if (aborted) return void st.destroy();
          stream = st;
          touch();
          st.start({
            onStatus(code, body) {
              close(new K8sHttpError(code, parseStatus(body), `watch ${path}`));
            },
            onOpen() {
              if (!aborted) cb.onConnected?.();
            },
            onData(chunk) {
              if (closed) return;
              touch();
              buf += chunk;
              let nl: number;
              while (!closed && (nl = buf.indexOf('\n')) >= 0) {
                const line = buf.slice(0, nl).trim();
                buf = buf.slice(nl + 1);
                if (!line) continue;
                let ev: WatchEvent<T>;
                try {
                  ev = JSON.parse(line) as WatchEvent<T>;
                } catch (err) {
                  close(new Error(`watch ${path}: undecodable event`, { cause: err }));
                  return;
                }
                // cb.onEvent is the watcher's own dispatcher, which catches handler errors.
                cb.onEvent(ev);
              }
            },
            onEnd() {
              close();
            },
            onError(err) {
              close(err);
            },
            midStream: `watch ${path}: connection closed mid-stream`,
          });
        },
        (err: unknown) => close(err),
      );

      return {
        abort(reason) {
          aborted = true;
          if (reason === 'stalled') stream?.suspect();
          close();
        },
      };
    },
  };
}

function parseStatus(body: string): StatusLike | undefined {
  try {
    const s = JSON.parse(body) as StatusLike & { kind?: string };
    return {
      ...(s.code !== undefined ? { code: s.code } : {}),
      ...(s.reason ? { reason: s.reason } : {}),
      ...(s.message ? { message: s.message } : {}),
    };
  } catch {
    return body ? { message: body.slice(0, 200) } : undefined;
  }
}

interface WatchStreamHandlers {
  /** The server answered with another status than 200; `body` is its whole answer. */
  onStatus(code: number, body: string): void;
  /** 200: events follow. */
  onOpen(): void;
  onData(chunk: string): void;
  /** The server ended the response (e.g. timeoutSeconds passed). */
  onEnd(): void;
  onError(err: unknown): void;
  /** The message when the response stops without its end. */
  midStream: string;
}

/** One watch response, whichever protocol carries it. */
interface WatchStream {
  start(h: WatchStreamHandlers): void;
  destroy(): void;
  /** Nothing came for too long: have the connection checked (HTTP/2; HTTP/1.1 closes it). */
  suspect(): void;
}

function h1WatchStream(req: ClientRequest): WatchStream {
  return {
    destroy: () => req.destroy(),
    suspect: () => undefined,
    start(h) {
      req.on('error', (err) => h.onError(err));
      req.on('socket', (s) => s.setKeepAlive(true, 30_000));
      req.on('response', (res) => {
        res.setEncoding('utf8');
        if (res.statusCode !== 200) {
          let data = '';
          res.on('data', (c: string) => (data += c));
          res.on('end', () => h.onStatus(res.statusCode ?? 0, data));
          res.on('error', (err) => h.onError(err));
          return;
        }
        h.onOpen();
        let ended = false;
        res.on('data', (chunk: string) => h.onData(chunk));
        res.on('end', () => {
          ended = true;
          h.onEnd();
        });
        res.on('error', (err) => h.onError(err));
        res.on('close', () => {
          if (!ended) h.onError(new Error(h.midStream));
        });
      });
      req.end();
    },
  };
}

function h2WatchStream(stream: http2.ClientHttp2Stream): WatchStream {
  return {
    destroy: () => {
      if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
    },
    suspect: () => suspectStream(stream),
    start(h) {
      stream.setEncoding('utf8');
      let status = 0;
      let ended = false;
      let data = '';
      stream.on('error', (err) => h.onError(err));
      stream.on('response', (headers) => {
        status = Number(headers[':status'] ?? 0);
        if (status === 200) h.onOpen();
      });
      stream.on('data', (chunk: string) => {
        if (status === 200) h.onData(chunk);
        else data += chunk;
      });
      stream.on('end', () => (ended = true));
      // Decided at 'close': a stream cut with its connection also emits 'end', but with a reset
      // code; only one the server ended (NO_ERROR) is a clean end.
      stream.on('close', () => {
        const clean = ended && stream.rstCode === http2.constants.NGHTTP2_NO_ERROR;
        if (!clean)
          h.onError(
            new Error(`${h.midStream} (HTTP/2 stream reset, code ${stream.rstCode ?? '?'})`),
          );
        else if (status === 200) h.onEnd();
        else h.onStatus(status, data);
      });
    },
  };
}

/** The whole answer of an HTTP/1.1 request, within `timeout` ms. */
function readH1(
  req: ClientRequest,
  timeout: number,
  context: string,
): Promise<{ status: number; body: string }> {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.setTimeout(timeout, () =>
      req.destroy(new Error(`${context}: no response in ${timeout}ms`)),
    );
    req.on('error', reject);
    req.on('response', (res) => {
      res.setEncoding('utf8');
      let data = '';
      res.on('data', (c: string) => (data += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
      res.on('error', reject);
    });
    req.end();
  });
}
