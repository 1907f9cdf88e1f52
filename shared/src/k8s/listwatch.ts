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
 * So this module does the two HTTP calls itself (node:http/https, line-delimited JSON) and
 * `watcher.ts` does the cache and the retry policy. Auth comes from a `KubeAccess` (access.ts;
 * client-node's KubeConfig is one): `applyToHTTPSOptions` runs on *every* request, so rotating
 * credentials (the EKS token authenticator, exec plugins, projected service-account tokens) are
 * picked up on each list and each watch reconnect.
 */
import http from 'node:http';
import https from 'node:https';
import type { KubernetesObject } from '@kubernetes/client-node';
import type { StatusLike } from '../runtime/errors.js';
import type { KubeAccess } from './access.js';
import { shareSecureContext } from './tls.js';

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
  /** Close the stream; no callback runs afterwards. */
  abort(): void;
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

  async function open(u: URL, accept: string): Promise<http.ClientRequest> {
    const reqOpts: https.RequestOptions = { method: 'GET', headers: {} };
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
    return (u.protocol === 'http:' ? http : https).request(u, reqOpts as http.RequestOptions);
  }

  async function list<O>(o: ListOptions, accept: string): Promise<ListPage<O>> {
    const u = url({ limit: o.limit, continue: o.continue, resourceVersion: o.resourceVersion });
    const req = await open(u, accept);
    const timeout = opts.listTimeoutMs ?? 60_000;
    const { status, body } = await new Promise<{ status: number; body: string }>(
      (resolve, reject) => {
        req.setTimeout(timeout, () =>
          req.destroy(new Error(`list ${path}: no response in ${timeout}ms`)),
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
      },
    );
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
      let req: http.ClientRequest | undefined;
      let idle: NodeJS.Timeout | undefined;
      const idleMs = opts.idleTimeoutMs ?? o.timeoutSeconds * 1000 + 60_000;

      const close = (err?: unknown): void => {
        if (closed) return;
        closed = true;
        if (idle) clearTimeout(idle);
        req?.destroy();
        if (!aborted) cb.onClose(err);
      };
      const touch = (): void => {
        if (idle) clearTimeout(idle);
        idle = setTimeout(
          () =>
            close(
              new Error(
                `watch ${path}: nothing received for ${idleMs}ms, presuming the connection dead`,
              ),
            ),
          idleMs,
        );
      };

      const u = url({
        watch: 'true',
        resourceVersion: o.resourceVersion,
        timeoutSeconds: o.timeoutSeconds,
        allowWatchBookmarks: o.allowWatchBookmarks ? 'true' : undefined,
      });
      open(u, target.metadataOnly ? ACCEPT_META : ACCEPT_JSON).then(
        (r) => {
          if (aborted) return void r.destroy();
          req = r;
          touch();
          r.on('error', (err) => close(err));
          r.on('socket', (s) => s.setKeepAlive(true, 30_000));
          r.on('response', (res) => {
            if (res.statusCode !== 200) {
              res.setEncoding('utf8');
              let data = '';
              res.on('data', (c: string) => (data += c));
              res.on('end', () =>
                close(new K8sHttpError(res.statusCode ?? 0, parseStatus(data), `watch ${path}`)),
              );
              res.on('error', (err) => close(err));
              return;
            }
            if (aborted) return;
            cb.onConnected?.();
            res.setEncoding('utf8');
            let buf = '';
            res.on('data', (chunk: string) => {
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
            });
            let ended = false;
            res.on('end', () => {
              ended = true;
              close();
            });
            res.on('error', (err) => close(err));
            res.on('close', () => {
              if (!ended) close(new Error(`watch ${path}: connection closed mid-stream`));
            });
          });
          r.end();
        },
        (err: unknown) => close(err),
      );

      return {
        abort() {
          aborted = true;
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
