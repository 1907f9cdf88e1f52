// Watches and requests over HTTP/2: everything a process sends to one API server (with one set of
// TLS credentials) shares one connection, each watch or request a stream of it, as client-go does.
//
// Why: over HTTP/1.1 each watch holds a TLS connection of its own for as long as it lasts, with
// its OpenSSL state and socket buffers in resident memory; as streams of one HTTP/2 connection
// they hold next to nothing (docs/BENCHMARKS.md, Memory as the load grows). The hub watches
// every source Secret by name (memory must not grow with unrelated Secrets) and three resources
// per cluster, so its connections grew with sources and clusters; now they grow with API
// servers.
//
// Sessions: a new one when none for the origin and credentials has room (the server's
// SETTINGS_MAX_CONCURRENT_STREAMS, 100 by default in kube-apiserver); a session the server sends
// GOAWAY takes no new streams; a session without streams closes after 30 s. When a watch ends
// because nothing came for too long (its progress deadline or idle timeout, listwatch.ts), or a
// request gets no answer in its time, its session is PINGed and takes no new streams until the
// answer; without one in 15 s it is destroyed. A dead connection then fails every stream on it at
// once and they go on over a new one, while the stalled watch or request itself moves to a new
// connection at once. A server that does not offer h2 (ALPN; both protocols are offered) is
// remembered for 10 minutes and its requests go over HTTP/1.1, as before; so do plain http://
// servers and requests through a proxy agent. MIRRORHUB_HTTP2=false turns it off for the process
// (read by main.ts: configureHttp2).
import http2 from 'node:http2';
import https from 'node:https';
import { isIP } from 'node:net';
import tls, { type SecureContext } from 'node:tls';

import type { TlsRequestOptions } from './tls.js';

const PING_TIMEOUT_MS = 15_000;
/** A TLS and HTTP/2 handshake that takes longer is given up (callers wait their own deadline). */
const CONNECT_TIMEOUT_MS = 30_000;
const IDLE_CLOSE_MS = 30_000;
const NO_H2_REMEMBERED_MS = 10 * 60_000;
/** Streams per session at most (kube-apiserver's default limit). */
const DEFAULT_MAX_STREAMS = 100;
/** Our receive window: a burst of events is not held back by flow control. */
const WINDOW = 4 * 1024 * 1024;

let enabled = true;

/** Whether watches may use HTTP/2 (main.ts, from MIRRORHUB_HTTP2; default on). */
export function configureHttp2(opts: { enabled: boolean }): void {
  enabled = opts.enabled;
}

/** MIRRORHUB_HTTP2: unset, "true" or "false"; anything else is refused with its name. */
export function http2FromEnv(env: Record<string, string | undefined>): boolean {
  const v = env['MIRRORHUB_HTTP2']?.trim().toLowerCase() ?? '';
  if (v !== '' && v !== 'true' && v !== 'false')
    throw new Error(`MIRRORHUB_HTTP2 must be true or false; got "${v}"`);
  return v !== 'false';
}

interface Session {
  session: http2.ClientHttp2Session;
  streams: number;
  goingAway: boolean;
  idle?: NodeJS.Timeout | undefined;
  /** A PING is out (suspect): no second one until it is answered or the session is gone. */
  pinging?: boolean;
}

const contextIds = new WeakMap<SecureContext, number>();
let nextContextId = 1;

/** Sessions by origin and TLS identity. */
const pools = new Map<string, Session[]>();
/** Origins whose TLS handshake did not select h2, until when. */
const noH2 = new Map<string, number>();

export interface H2Stats {
  sessions: number;
  streams: number;
}

/** Open sessions and streams, to one origin (`https://host:port`) or to all (tests). */
export function http2Stats(origin?: string): H2Stats {
  let sessions = 0;
  let streams = 0;
  for (const [key, list] of pools) {
    if (origin !== undefined && !key.startsWith(`${origin}|`)) continue;
    sessions += list.length;
    for (const s of list) streams += s.streams;
  }
  return { sessions, streams };
}

/**
 * The pool key of a request, or undefined when it must go over HTTP/1.1: h2 off, not https, a
 * proxy (an agent that is not a plain https.Agent), or TLS options node would build a context of
 * its own for (shareSecureContext left them alone).
 */
function keyOf(url: URL, opts: TlsRequestOptions): string | undefined {
  if (!enabled || url.protocol !== 'https:') return undefined;
  if (opts.agent !== undefined && opts.agent !== false && !(opts.agent instanceof https.Agent))
    return undefined;
  if (opts.agent instanceof https.Agent && opts.agent.constructor !== https.Agent) return undefined;
  let ctx = 'system';
  if (opts.secureContext) {
    let id = contextIds.get(opts.secureContext);
    if (id === undefined) contextIds.set(opts.secureContext, (id = nextContextId++));
    ctx = String(id);
  } else if (opts.ca !== undefined || opts.cert !== undefined || opts.key !== undefined) {
    return undefined;
  } else if (opts.pfx !== undefined) {
    return undefined;
  }
  const verify = opts.rejectUnauthorized === false ? 'insecure' : 'verify';
  return `${url.origin}|${ctx}|${opts.servername ?? ''}|${verify}`;
}

/**
 * Streams one session takes: the server's limit, at most 100 (until its SETTINGS arrive node
 * reports an unlimited default; a server allowing more just gets a second connection sooner).
 */
function maxStreams(s: Session): number {
  return Math.min(
    s.session.remoteSettings?.maxConcurrentStreams ?? DEFAULT_MAX_STREAMS,
    DEFAULT_MAX_STREAMS,
  );
}

/** Takes a new stream: open, not going away, not suspected of being dead, below the limit. */
function usable(s: Session): boolean {
  return (
    !s.goingAway &&
    !s.pinging &&
    !s.session.closed &&
    !s.session.destroyed &&
    s.streams < maxStreams(s)
  );
}

function drop(key: string, s: Session): void {
  const list = pools.get(key);
  if (!list) return;
  const i = list.indexOf(s);
  if (i >= 0) list.splice(i, 1);
  if (list.length === 0) pools.delete(key);
  if (s.idle) clearTimeout(s.idle);
}

function connect(key: string, url: URL, opts: TlsRequestOptions): Promise<Session | undefined> {
  return new Promise((resolve, reject) => {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const session = http2.connect(url.origin, {
      settings: { initialWindowSize: WINDOW, enablePush: false },
      // Offer both protocols: a server without h2 then picks http/1.1 and we fall back, where
      // offering h2 alone would have some servers refuse the handshake.
      createConnection: () =>
        tls.connect({
          host,
          port: Number(url.port || 443),
          ALPNProtocols: ['h2', 'http/1.1'],
          ...(opts.servername
            ? { servername: opts.servername }
            : isIP(host) === 0
              ? { servername: host }
              : {}),
          ...(opts.secureContext ? { secureContext: opts.secureContext } : {}),
          ...(opts.rejectUnauthorized === false ? { rejectUnauthorized: false } : {}),
        }),
    });
    const s: Session = { session, streams: 0, goingAway: false };
    sessionOf.set(session, s);
    let settled = false;
    // A server that accepts the connection and never answers must not hold it forever; each
    // caller waits no longer than its own deadline anyway (reserve).
    const timer = setTimeout(() => {
      if (!settled)
        session.destroy(
          Object.assign(
            new Error(
              `HTTP/2 connection to ${url.origin}: no handshake in ${CONNECT_TIMEOUT_MS} ms`,
            ),
            { name: 'TimeoutError', code: 'ETIMEDOUT' },
          ),
        );
    }, CONNECT_TIMEOUT_MS);
    timer.unref();
    session.once('connect', () => {
      settled = true;
      clearTimeout(timer);
      if (session.alpnProtocol !== 'h2') {
        noH2.set(url.origin, Date.now() + NO_H2_REMEMBERED_MS);
        session.destroy();
        resolve(undefined);
        return;
      }
      session.setLocalWindowSize(WINDOW);
      const list = pools.get(key) ?? [];
      list.push(s);
      pools.set(key, list);
      resolve(s);
    });
    session.on('goaway', () => {
      s.goingAway = true;
    });
    session.on('error', (err) => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        // A server that answers TLS without ALPN h2 makes node end the session with a protocol
        // error before 'connect': try HTTP/1.1 for it.
        if ((err as NodeJS.ErrnoException).code === 'ERR_HTTP2_ERROR') {
          noH2.set(url.origin, Date.now() + NO_H2_REMEMBERED_MS);
          resolve(undefined);
          return;
        }
        reject(err);
      }
      // Streams on it get their own errors; the watch that owns each reports it.
    });
    session.on('close', () => {
      drop(key, s);
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        reject(new Error(`HTTP/2 connection to ${url.origin} closed during its handshake`));
      }
    });
  });
}

/** `p`, or a TimeoutError (code ETIMEDOUT) from `timeout()` once `ms` have passed. */
function within<T>(p: Promise<T>, ms: number, timeout: () => Error): Promise<T> {
  if (!Number.isFinite(ms)) return p;
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(timeout()), Math.max(0, ms));
    }),
  ]).finally(() => clearTimeout(timer));
}

const connecting = new Map<string, Promise<Session | undefined>>();

/**
 * A session for `key` with one stream slot taken for the caller: found and counted in one step,
 * so callers arriving together cannot all take the last slot of one session.
 */
async function reserve(
  key: string,
  url: URL,
  opts: TlsRequestOptions,
  deadline: number,
  timeout: () => Error,
): Promise<Session | undefined> {
  for (;;) {
    const found = pools.get(key)?.find(usable);
    if (found) {
      found.streams++;
      return found;
    }
    let pending = connecting.get(key);
    if (!pending) {
      pending = connect(key, url, opts).finally(() => connecting.delete(key));
      // Whoever stopped waiting (its deadline passed) must not leave the rejection unhandled.
      pending.catch(() => undefined);
      connecting.set(key, pending);
    }
    // Wait (no longer than this caller's deadline), then look again: it may be full by then.
    if ((await within(pending, deadline - Date.now(), timeout)) === undefined) return undefined;
  }
}

/**
 * A request stream for `url` over a shared HTTP/2 connection, or undefined when this request
 * must go over HTTP/1.1 (see keyOf; or the server does not offer h2). Rejects when the connection
 * cannot be made, as https.request would error. `headers`: lower-case names, no hop-by-hop ones.
 * With `body` the stream carries it and ends; without, it ends at once (GET, DELETE). Waits for
 * a connection at most `connectTimeoutMs` (then a TimeoutError, code ETIMEDOUT).
 */
export async function http2Request(
  url: URL,
  opts: TlsRequestOptions,
  headers: Record<string, string>,
  method = 'GET',
  body?: string,
  connectTimeoutMs = CONNECT_TIMEOUT_MS,
): Promise<http2.ClientHttp2Stream | undefined> {
  const key = keyOf(url, opts);
  if (key === undefined) return undefined;
  const until = noH2.get(url.origin);
  if (until !== undefined) {
    if (Date.now() < until) return undefined;
    noH2.delete(url.origin);
  }
  const s = await reserve(key, url, opts, Date.now() + connectTimeoutMs, () =>
    Object.assign(
      new Error(`${method} ${url.pathname}: no response in ${connectTimeoutMs} ms (no connection)`),
      {
        name: 'TimeoutError',
        code: 'ETIMEDOUT',
      },
    ),
  );
  if (!s) return undefined;
  let stream: http2.ClientHttp2Stream;
  try {
    stream = s.session.request(
      { ':method': method, ':path': url.pathname + url.search, ...headers },
      { endStream: body === undefined },
    );
  } catch (err) {
    s.streams--;
    throw err;
  }
  if (body !== undefined) stream.end(body);
  if (s.idle) {
    clearTimeout(s.idle);
    s.idle = undefined;
  }
  stream.once('close', () => {
    s.streams--;
    if (s.streams > 0 || s.session.destroyed || s.session.closed) return;
    s.idle = setTimeout(() => {
      if (s.streams === 0) s.session.close();
    }, IDLE_CLOSE_MS);
    s.idle.unref();
  });
  return stream;
}

/** A GET (a watch, a list) over a shared HTTP/2 connection; see http2Request. */
export function http2Get(
  url: URL,
  opts: TlsRequestOptions,
  headers: Record<string, string>,
  connectTimeoutMs?: number,
): Promise<http2.ClientHttp2Stream | undefined> {
  return http2Request(url, opts, headers, 'GET', undefined, connectTimeoutMs);
}

/** Header names for HTTP/2: lower case, and none of HTTP/1.1's connection headers. */
export function h2Headers(
  headers: Record<string, string | number | undefined>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    const name = k.toLowerCase();
    if (v === undefined || HOP_BY_HOP.has(name)) continue;
    out[name] = String(v);
  }
  return out;
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
]);

/**
 * The whole answer of a request stream: status and body, or a rejection when the stream is
 * reset, fails, or `timeoutMs` passes (then with name TimeoutError, code ETIMEDOUT, as rest.ts's
 * HTTP/1.1 deadline, and the connection is suspected as after a silent watch).
 */
export function readH2(
  stream: http2.ClientHttp2Stream,
  timeoutMs: number,
  context: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    let status = 0;
    let body = '';
    let ended = false;
    stream.setEncoding('utf8');
    stream.setTimeout(timeoutMs, () => {
      // No answer in time: the connection may be dead; check it, and send what follows elsewhere.
      suspectStream(stream);
      stream.destroy(
        Object.assign(new Error(`${context}: no answer in ${timeoutMs} ms`), {
          name: 'TimeoutError',
          code: 'ETIMEDOUT',
        }),
      );
    });
    stream.on('response', (h) => (status = Number(h[':status'] ?? 0)));
    stream.on('data', (c: string) => (body += c));
    stream.on('end', () => (ended = true));
    stream.on('error', reject);
    stream.on('close', () => {
      if (ended && stream.rstCode === http2.constants.NGHTTP2_NO_ERROR) resolve({ status, body });
      else reject(new Error(`${context}: HTTP/2 stream reset (code ${stream.rstCode ?? '?'})`));
    });
  });
}

const sessionOf = new WeakMap<http2.Http2Session, Session>();

/**
 * A watch on `stream` received nothing for too long: PING its connection, and destroy the
 * connection (failing every stream on it) unless the answer comes within 15 s.
 */
export function suspectStream(stream: http2.ClientHttp2Stream): void {
  const session = stream.session;
  if (!session || session.destroyed || session.closed) return;
  const s = sessionOf.get(session);
  if (!s || s.pinging) return;
  s.pinging = true;
  const timer = setTimeout(
    () =>
      session.destroy(
        Object.assign(
          new Error(
            `HTTP/2 connection to ${session.originSet?.[0] ?? 'the API server'}: no answer to a PING in ${PING_TIMEOUT_MS} ms after a watch on it went quiet`,
          ),
          { code: 'ESTALLED' },
        ),
      ),
    PING_TIMEOUT_MS,
  );
  timer.unref();
  const sent = session.ping((err) => {
    clearTimeout(timer);
    if (!err) s.pinging = false;
  });
  if (!sent) {
    clearTimeout(timer);
    s.pinging = false;
  }
}

/** Closes every session (tests; a process's exit closes them anyway). */
export function closeHttp2Sessions(): void {
  for (const [key, list] of [...pools])
    for (const s of [...list]) {
      drop(key, s);
      s.session.destroy();
    }
}
