// A small JSON REST client (read, create, replace, patch, delete): its requests are streams of the
// process's one HTTP/2 connection to the API server (h2.ts), or, where that cannot be, go over
// node:https with one keep-alive connection pool per client. The agent makes all its calls with
// it, leader election its Lease calls, the EventRecorder its Events.
//
// Why not client-node's generated APIs: see access.ts (memory). A side benefit: client-node
// 1.x builds a new https.Agent for every request, so every call pays a TLS handshake; a pool
// reuses connections, which matters when a delivery rewrites thousands of copies.

import { http } from '../runtime/builtins.js';
import type { Agent, RequestOptions } from 'node:http';
import https from 'node:https';
import { httpStatusOf, reasonOf, type StatusLike } from '../runtime/errors.js';
import type { KubeAccess } from './access.js';
import { h2Headers, http2Request, readH2 } from './h2.js';
import { shareSecureContext } from './tls.js';

/** An error answer of the API server. `code` and `body` have client-node's ApiException shape. */
export class KubeApiError extends Error {
  override readonly name = 'KubeApiError';
  readonly code: number;
  readonly body: StatusLike;
  constructor(code: number, body: StatusLike, context: string) {
    super(
      `${context}: ${code}${body.reason ? ` ${body.reason}` : ''}${body.message ? `: ${body.message}` : ''}`,
    );
    this.code = code;
    this.body = body;
  }
}

// ---- error predicates (KubeApiError, client-node's ApiException, listwatch's K8sHttpError) ---

export function isNotFound(err: unknown): boolean {
  return httpStatusOf(err) === 404;
}
/** 409 caused by a stale resourceVersion (optimistic concurrency), not by a name clash. */
export function isConflict(err: unknown): boolean {
  return httpStatusOf(err) === 409 && reasonOf(err) !== 'AlreadyExists';
}
export function isAlreadyExists(err: unknown): boolean {
  return httpStatusOf(err) === 409 && reasonOf(err) === 'AlreadyExists';
}
/** 410: the resourceVersion is too old (watch/list continue expired): re-list. */
export function isGone(err: unknown): boolean {
  return httpStatusOf(err) === 410;
}
export function isForbidden(err: unknown): boolean {
  return httpStatusOf(err) === 403;
}
export function isUnauthorized(err: unknown): boolean {
  return httpStatusOf(err) === 401;
}
export function isInvalid(err: unknown): boolean {
  return httpStatusOf(err) === 422;
}
export function isTooManyRequests(err: unknown): boolean {
  return httpStatusOf(err) === 429;
}
/** Worth retrying as is: throttling, server errors, timeouts, network failures. */
export function isRetriable(err: unknown): boolean {
  const code = httpStatusOf(err);
  if (code === undefined) return true; // network-level failure
  return code === 429 || code >= 500 || code === 408;
}

export const CONTENT_TYPE = {
  json: 'application/json',
  merge: 'application/merge-patch+json',
  apply: 'application/apply-patch+yaml',
} as const;

/**
 * `Accept` for a metadata-only answer (PartialObjectMetadata): the API server answers a create,
 * update or patch with the object's metadata alone, not its data. For writes whose answer is
 * only read for uid and resourceVersion, that is a few hundred bytes to parse instead of the
 * whole object (a Secret copy's data and managedFields).
 */
export const ACCEPT_METADATA =
  'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;q=0.9';

export interface RestRequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  /** `Accept` header (default `application/json`); see ACCEPT_METADATA. */
  accept?: string | undefined;
}

export interface RestClientOptions {
  /** Per request (default 30 s). */
  timeoutMs?: number;
  /**
   * Requests in flight at most (default 32): streams of the shared HTTP/2 connection, or
   * connections of the HTTP/1.1 pool.
   */
  maxSockets?: number;
  /** User-Agent header (default `mirrorhub`). */
  userAgent?: string;
}

export class RestClient {
  /** HTTP/1.1 pools, made on first use: over HTTP/2 (h2.ts) a client never needs one. */
  private httpsAgent: https.Agent | undefined;
  private httpAgent: Agent | undefined;
  private readonly agentOptions: https.AgentOptions;
  private readonly timeoutMs: number;
  private readonly userAgent: string;
  private readonly maxInFlight: number;
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly access: KubeAccess,
    opts: RestClientOptions = {},
  ) {
    const agentOptions = { keepAlive: true, maxSockets: opts.maxSockets ?? 32 };
    this.agentOptions = agentOptions;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.maxInFlight = agentOptions.maxSockets;
    this.userAgent = opts.userAgent ?? 'mirrorhub';
  }

  get<T>(path: string, opts: RestRequestOptions = {}): Promise<T> {
    return this.request<T>('GET', path, opts);
  }
  post<T>(
    path: string,
    body: unknown,
    query?: RestRequestOptions['query'],
    accept?: string,
  ): Promise<T> {
    return this.request<T>('POST', path, { body, query, accept });
  }
  put<T>(
    path: string,
    body: unknown,
    query?: RestRequestOptions['query'],
    accept?: string,
  ): Promise<T> {
    return this.request<T>('PUT', path, { body, query, accept });
  }
  patch<T>(
    path: string,
    body: unknown,
    contentType: string,
    query?: RestRequestOptions['query'],
    accept?: string,
  ): Promise<T> {
    return this.request<T>('PATCH', path, { body, contentType, query, accept });
  }
  delete<T>(path: string, body?: unknown): Promise<T> {
    return this.request<T>('DELETE', path, { body });
  }

  private slot(): Promise<void> {
    if (this.inFlight < this.maxInFlight) {
      this.inFlight++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Hands the slot to the next waiting request, or frees it. */
  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.inFlight--;
  }

  /**
   * Close idle pooled HTTP/1.1 connections (in-flight requests finish). The HTTP/2 connections
   * are the process's: each closes 30 s after its last stream.
   */
  close(): void {
    this.httpsAgent?.destroy();
    this.httpAgent?.destroy();
  }

  async request<T>(method: string, path: string, opts: RestRequestOptions = {}): Promise<T> {
    const cluster = this.access.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    const url = new URL(cluster.server.replace(/\/+$/, '') + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) {
      if (v !== undefined) url.searchParams.set(k, String(v));
    }
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const reqOpts: https.RequestOptions = { method, headers: {} };
    await this.access.applyToHTTPSOptions(reqOpts);
    shareSecureContext(reqOpts);
    const headers: Record<string, string> = {
      ...(reqOpts.headers as Record<string, string>),
      Accept: opts.accept ?? 'application/json',
      'User-Agent': this.userAgent,
    };
    if (reqOpts.auth) {
      headers['Authorization'] = `Basic ${Buffer.from(reqOpts.auth).toString('base64')}`;
      delete reqOpts.auth;
    }
    if (payload !== undefined) {
      headers['Content-Type'] = opts.contentType ?? CONTENT_TYPE.json;
      headers['Content-Length'] = String(Buffer.byteLength(payload));
    }
    reqOpts.headers = headers;
    // Over the process's shared HTTP/2 connection to this server when it has one to offer
    // (h2.ts), at most maxSockets at once as over HTTP/1.1; else the keep-alive pool below.
    if (url.protocol === 'https:') {
      await this.slot();
      try {
        // One deadline for the whole request: connecting (or waiting for a connection) included.
        const started = Date.now();
        const stream = await http2Request(
          url,
          reqOpts,
          h2Headers(headers),
          method,
          payload,
          this.timeoutMs,
        );
        if (stream) {
          const context = `${method} ${url.pathname}`;
          const left = Math.max(1, this.timeoutMs - (Date.now() - started));
          const { status, body } = await readH2(stream, left, context);
          if (status >= 200 && status < 300) return (body ? JSON.parse(body) : undefined) as T;
          throw new KubeApiError(status, parseStatus(body), context);
        }
      } finally {
        this.release();
      }
    }
    const isHttp = url.protocol === 'http:';
    // client-node's applyToHTTPSOptions sets a fresh agent per call; use our pool instead (the
    // pool keys connections by the TLS options set above, so credentials are respected). An
    // agent of another kind is a proxy's (a CONNECT tunnel): it is how the server is reached,
    // so it stays.
    if (!isProxyAgent(reqOpts.agent)) {
      reqOpts.agent = isHttp
        ? (this.httpAgent ??= new http.Agent(this.agentOptions))
        : (this.httpsAgent ??= new https.Agent(this.agentOptions));
    }
    const context = `${method} ${url.pathname}`;
    const { status, body } = await new Promise<{ status: number; body: string }>(
      (resolve, reject) => {
        const req = (isHttp ? http : https).request(url, reqOpts as RequestOptions, (res) => {
          res.setEncoding('utf8');
          let data = '';
          res.on('data', (c: string) => (data += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
          res.on('error', reject);
        });
        req.setTimeout(this.timeoutMs, () =>
          req.destroy(
            // name and code of a deadline, so callers can tell it from other network failures
            Object.assign(new Error(`${context}: no answer in ${this.timeoutMs} ms`), {
              name: 'TimeoutError',
              code: 'ETIMEDOUT',
            }),
          ),
        );
        req.on('error', reject);
        req.end(payload);
      },
    );
    if (status >= 200 && status < 300) {
      return (body ? JSON.parse(body) : undefined) as T;
    }
    throw new KubeApiError(status, parseStatus(body), context);
  }
}

/** An agent that is not node's own (a subclass, e.g. one that tunnels through a proxy). */
function isProxyAgent(agent: unknown): boolean {
  return (
    agent instanceof http.Agent &&
    agent.constructor !== http.Agent &&
    agent.constructor !== https.Agent
  );
}

function parseStatus(body: string): StatusLike {
  try {
    const s = JSON.parse(body) as StatusLike;
    const out: StatusLike = {};
    if (typeof s.code === 'number') out.code = s.code;
    if (typeof s.reason === 'string') out.reason = s.reason;
    if (typeof s.message === 'string') out.message = s.message;
    return out;
  } catch {
    return body ? { message: body.slice(0, 200) } : {};
  }
}

/** RFC 3339 with microseconds, as metav1.MicroTime is written (the API server refuses less). */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

// ---- paths ------------------------------------------------------------------------------------

export function corePath(plural: string, namespace?: string, name?: string): string {
  const ns = namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `/api/v1${ns}/${plural}${name ? `/${encodeURIComponent(name)}` : ''}`;
}

/** Which custom object: namespaced when `namespace` is set, else cluster-scoped. */
export interface CustomObjectRef {
  group: string;
  version: string;
  plural: string;
  name: string;
  namespace?: string;
}

/** The path of a custom object, or of its status subresource. */
export function customObjectPath(ref: CustomObjectRef, status = false): string {
  return (
    groupPath(ref.group, ref.version, ref.plural, ref.namespace, ref.name) +
    (status ? '/status' : '')
  );
}

export function groupPath(
  group: string,
  version: string,
  plural: string,
  namespace?: string,
  name?: string,
): string {
  const ns = namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `/apis/${group}/${version}${ns}/${plural}${name ? `/${encodeURIComponent(name)}` : ''}`;
}
