// The hub's egress proxy: HTTPS_PROXY / HTTP_PROXY / NO_PROXY as curl and Go's
// golang.org/x/net/http/httpproxy read them, for the hub's connections to AWS (STS, EKS) and to
// follower API servers.
//
// Why a tunnel and not a forwarding proxy: every connection is an HTTP CONNECT tunnel to the
// target, and TLS runs end to end inside it, so the proxy sees host and port, never a token,
// a key or a Secret. Plain http:// targets (emulators, never AWS itself) are tunnelled the same
// way, through HTTP_PROXY.
//
// NO_PROXY, comma- or space-separated, each entry one of:
//   `*`                      nothing is proxied
//   `example.com`            that host and every subdomain (curl, Go)
//   `.example.com`           the same (a leading dot or `*.` is dropped, as Go does)
//   `10.1.2.3`, `[fd00::1]`  that IP literal (only when the URL names the IP)
//   `10.0.0.0/8`, `fd00::/8` every IP literal in the CIDR (Go; curl >= 7.86)
//   any of those `:port`     only on that port
// Matching ignores case and a trailing dot. Unlike Go, localhost and loopback addresses are not
// exempt by themselves: list them (curl does the same), so a proxy a test puts in front of a
// loopback emulator really is used. A proxy URL's user:password goes into Proxy-Authorization and
// never into a message: describeProxy() prints it without them.
import type { AgentOptions, ClientRequestArgs } from 'node:http';
import https from 'node:https';
import { BlockList, isIP, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import { http } from '@mirrorhub/shared/kit/runtime/builtins';

/** The proxies and exemptions of one process, as read from its environment. */
export interface ProxyEnv {
  /** For https:// targets. */
  httpsProxy?: string;
  /** For http:// targets. */
  httpProxy?: string;
  /** NO_PROXY as written. */
  noProxy?: string;
}

/**
 * HTTPS_PROXY (else https_proxy), HTTP_PROXY (else http_proxy), NO_PROXY (else no_proxy): the
 * upper-case name first, as Go reads them. Empty values count as unset. A proxy URL without a
 * scheme is taken as http://, as curl and Go do.
 */
export function proxyEnvFrom(env: Record<string, string | undefined>): ProxyEnv {
  const pick = (upper: string): string | undefined =>
    env[upper]?.trim() || env[upper.toLowerCase()]?.trim() || undefined;
  const out: ProxyEnv = {};
  const httpsProxy = pick('HTTPS_PROXY');
  const httpProxy = pick('HTTP_PROXY');
  const noProxy = pick('NO_PROXY');
  for (const [name, v] of [
    ['HTTPS_PROXY', httpsProxy],
    ['HTTP_PROXY', httpProxy],
  ] as const) {
    if (v !== undefined) parseProxyUrl(v, name);
  }
  if (httpsProxy) out.httpsProxy = httpsProxy;
  if (httpProxy) out.httpProxy = httpProxy;
  if (noProxy) out.noProxy = noProxy;
  return out;
}

/** A proxy URL: http:// or https://, a host, an optional port (default 80 / 443). */
export function parseProxyUrl(raw: string, name = 'proxy URL'): URL {
  const text = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`${name} is not a URL: ${redactUserinfo(raw)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new Error(
      `${name} must be an http:// or https:// proxy; got ${url.protocol}// (SOCKS is not supported)`,
    );
  }
  if (!url.hostname) throw new Error(`${name} names no host: ${redactUserinfo(raw)}`);
  return url;
}

/** A proxy URL fit for a log line: scheme, host and port, never user or password. */
export function describeProxy(url: string | URL): string {
  try {
    const u = typeof url === 'string' ? parseProxyUrl(url) : url;
    return `${u.protocol}//${u.host}`;
  } catch {
    return '<invalid proxy URL>';
  }
}

function redactUserinfo(raw: string): string {
  return raw.replace(/\/\/[^/@]*@/, '//<redacted>@');
}

interface NoProxyRule {
  /** Lower-case domain without leading dot, or an IP literal (no brackets). */
  host?: string;
  cidr?: BlockList;
  port?: number;
}

/** NO_PROXY, parsed once: `matches(host, port)` says whether a target goes direct. */
export class NoProxy {
  private readonly all: boolean;
  private readonly rules: NoProxyRule[] = [];

  constructor(spec: string | undefined) {
    let all = false;
    for (const raw of (spec ?? '').split(/[\s,]+/)) {
      const entry = raw.trim().toLowerCase();
      if (!entry) continue;
      if (entry === '*') {
        all = true;
        continue;
      }
      const rule = parseRule(entry);
      if (rule) this.rules.push(rule);
    }
    this.all = all;
  }

  /** Whether a connection to `host`:`port` goes direct (host as in the URL; brackets allowed). */
  matches(host: string, port: number): boolean {
    if (this.all) return true;
    const h = normalHost(host);
    const family = isIP(h);
    for (const r of this.rules) {
      if (r.port !== undefined && r.port !== port) continue;
      if (r.cidr) {
        if (family && r.cidr.check(h, family === 6 ? 'ipv6' : 'ipv4')) return true;
        continue;
      }
      const rh = r.host!;
      if (isIP(rh)) {
        if (family && sameIp(h, rh)) return true;
        continue;
      }
      if (!family && (h === rh || h.endsWith(`.${rh}`))) return true;
    }
    return false;
  }
}

function normalHost(host: string): string {
  return host
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '')
    .toLowerCase();
}

function sameIp(a: string, b: string): boolean {
  if (a === b) return true;
  const list = new BlockList();
  const fam = isIP(b) === 6 ? 'ipv6' : 'ipv4';
  list.addAddress(b, fam);
  return isIP(a) === isIP(b) && list.check(a, fam);
}

function parseRule(entry: string): NoProxyRule | undefined {
  // CIDR: a.b.c.d/n or v6/n (no port: a port after a CIDR is not a form either tool reads).
  const slash = entry.indexOf('/');
  if (slash > 0) {
    const addr = entry.slice(0, slash).replace(/^\[(.*)\]$/, '$1');
    const bits = Number(entry.slice(slash + 1));
    const family = isIP(addr);
    if (!family || !Number.isInteger(bits) || bits < 0 || bits > (family === 6 ? 128 : 32)) {
      return undefined;
    }
    const cidr = new BlockList();
    cidr.addSubnet(addr, bits, family === 6 ? 'ipv6' : 'ipv4');
    return { cidr };
  }
  let host = entry;
  let port: number | undefined;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracketed) {
    host = bracketed[1]!;
    if (bracketed[2]) port = Number(bracketed[2]);
  } else if (!isIP(entry)) {
    // host:port (a bare IPv6 address has several colons and no port)
    const m = /^([^:]+):(\d+)$/.exec(entry);
    if (m) {
      host = m[1]!;
      port = Number(m[2]);
    }
  }
  host = host.replace(/^\*?\./, '').replace(/\.$/, '');
  if (!host) return undefined;
  return port === undefined ? { host } : { host, port };
}

/** Which proxy, if any, a connection to `url` goes through under `env`. */
export function proxyFor(env: ProxyEnv, target: URL | string): URL | undefined {
  const url = typeof target === 'string' ? new URL(target) : target;
  const raw = url.protocol === 'https:' ? env.httpsProxy : env.httpProxy;
  if (!raw) return undefined;
  const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
  if (new NoProxy(env.noProxy).matches(url.hostname, port)) return undefined;
  return parseProxyUrl(raw);
}

// ---- the tunnel ---------------------------------------------------------------------------------

/** A failure of the proxy itself (refused the tunnel, unreachable), never carrying credentials. */
export class ProxyError extends Error {
  override readonly name = 'ProxyError';
  constructor(
    message: string,
    readonly code: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Opens a CONNECT tunnel to `host`:`port` through `proxy` and calls back with the raw socket
 * (TLS to the target is the caller's).
 */
export function connectTunnel(
  proxy: URL,
  host: string,
  port: number,
  timeoutMs: number,
  done: (err: Error | null, socket?: Socket) => void,
): void {
  const target = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const headers: Record<string, string> = { Host: target };
  if (proxy.username || proxy.password) {
    const user = decodeURIComponent(proxy.username);
    const pass = decodeURIComponent(proxy.password);
    headers['Proxy-Authorization'] = `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
  }
  const where = describeProxy(proxy);
  const secure = proxy.protocol === 'https:';
  const req = (secure ? https : http).request({
    host: proxy.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: Number(proxy.port) || (secure ? 443 : 80),
    method: 'CONNECT',
    path: target,
    headers,
    agent: false,
    ...(secure ? { servername: isIP(proxy.hostname) ? undefined : proxy.hostname } : {}),
  });
  let settled = false;
  const finish = (err: Error | null, socket?: Socket) => {
    if (settled) return;
    settled = true;
    req.setTimeout(0);
    done(err, socket);
  };
  req.setTimeout(timeoutMs, () => {
    req.destroy();
    finish(new ProxyError(`proxy ${where}: no answer to CONNECT ${target}`, 'ETIMEDOUT'));
  });
  req.once('connect', (res, socket, head) => {
    if (res.statusCode !== 200) {
      socket.destroy();
      finish(
        new ProxyError(
          `proxy ${where} refused CONNECT ${target}: ${res.statusCode} ${res.statusMessage ?? ''}`.trim(),
          res.statusCode === 407 ? 'EPROXYAUTH' : 'EPROXYREFUSED',
        ),
      );
      return;
    }
    if (head.length > 0) socket.unshift(head);
    finish(null, socket);
  });
  req.once('error', (err: NodeJS.ErrnoException) => {
    finish(
      new ProxyError(
        `proxy ${where}: ${err.code ?? err.message} (CONNECT ${target})`,
        err.code ?? 'EPROXY',
        {
          cause: err,
        },
      ),
    );
  });
  req.end();
}

type Callback = (err: Error | null, stream: Duplex) => void;

/** A pooled tunnel idle this long is closed. */
const IDLE_TUNNEL_MS = 60_000;

/**
 * An https.Agent that reaches each target through the proxy `env` names for it (a CONNECT
 * tunnel, TLS to the target inside), or directly when NO_PROXY exempts it or no proxy is set.
 * Keep-alive pooling is https.Agent's: a pooled connection is a tunnel already open.
 */
export class ProxyHttpsAgent extends https.Agent {
  private readonly noProxy: NoProxy;
  private readonly proxy: URL | undefined;

  constructor(
    env: ProxyEnv,
    opts: https.AgentOptions & { connectTimeoutMs?: number } = {},
    /** A fixed proxy for every target (kubeconfig proxy-url): NO_PROXY is not consulted. */
    fixed?: URL,
  ) {
    super(opts);
    this.connectTimeoutMs = opts.connectTimeoutMs ?? 30_000;
    this.proxy =
      fixed ?? (env.httpsProxy ? parseProxyUrl(env.httpsProxy, 'HTTPS_PROXY') : undefined);
    this.noProxy = new NoProxy(fixed ? undefined : env.noProxy);
  }

  private readonly connectTimeoutMs: number;

  /** The proxy a connection to `host`:`port` goes through, or undefined for direct. */
  proxyFor(host: string, port: number): URL | undefined {
    if (!this.proxy || this.noProxy.matches(host, port)) return undefined;
    return this.proxy;
  }

  override createConnection(
    options: https.RequestOptions,
    callback?: Callback,
  ): Duplex | null | undefined {
    const host = String(options.host ?? 'localhost');
    const port = Number(options.port ?? 443);
    const proxy = this.proxyFor(host, port);
    if (!proxy) return super.createConnection(options, callback);
    connectTunnel(proxy, host, port, this.connectTimeoutMs, (err, socket) => {
      if (err || !socket) {
        callback?.(err ?? new Error('no tunnel'), undefined as never);
        return;
      }
      // TLS to the target, end to end: the options carry its servername, CA and client cert.
      const secure = tls.connect({ ...(options as tls.ConnectionOptions), socket });
      callback?.(null, secure);
    });
    return undefined;
  }
}

/** The same for http:// targets (emulators): a CONNECT tunnel through HTTP_PROXY, plain inside. */
export class ProxyHttpAgent extends http.Agent {
  private readonly noProxy: NoProxy;
  private readonly proxy: URL | undefined;
  private readonly connectTimeoutMs: number;

  constructor(env: ProxyEnv, opts: AgentOptions & { connectTimeoutMs?: number } = {}, fixed?: URL) {
    super(opts);
    this.connectTimeoutMs = opts.connectTimeoutMs ?? 30_000;
    this.proxy = fixed ?? (env.httpProxy ? parseProxyUrl(env.httpProxy, 'HTTP_PROXY') : undefined);
    this.noProxy = new NoProxy(fixed ? undefined : env.noProxy);
  }

  override createConnection(
    options: ClientRequestArgs,
    callback?: Callback,
  ): Duplex | null | undefined {
    const host = String(options.host ?? 'localhost');
    const port = Number(options.port ?? 80);
    const proxy = this.proxy && !this.noProxy.matches(host, port) ? this.proxy : undefined;
    if (!proxy) return super.createConnection(options, callback);
    connectTunnel(proxy, host, port, this.connectTimeoutMs, (err, socket) => {
      if (err || !socket) callback?.(err ?? new Error('no tunnel'), undefined as never);
      else callback?.(null, socket);
    });
    return undefined;
  }
}

/** Whether `env` names any proxy at all. */
export function hasProxy(env: ProxyEnv | undefined): env is ProxyEnv {
  return !!env && !!(env.httpsProxy || env.httpProxy);
}

/**
 * The agent for connections to the API server at `server`: one that tunnels through `fixed`
 * (a kubeconfig's proxy-url, which wins over the environment as in client-go) or through the
 * proxy `env` names for it; undefined when the connection goes direct, so it keeps the shared
 * HTTP/2 connection (k8s/h2.ts). A pooled agent of its own per cluster: its tunnels are reused.
 */
export function apiServerAgent(
  server: string,
  env: ProxyEnv | undefined,
  fixed?: URL,
): ProxyHttpsAgent | ProxyHttpAgent | undefined {
  const url = new URL(server);
  const secure = url.protocol === 'https:';
  // Idle tunnels close after a while, as the shared HTTP/2 connections do: an agent replaced
  // when the endpoint changes holds nothing open for long (busy sockets are not affected).
  const opts = { keepAlive: true, timeout: IDLE_TUNNEL_MS };
  if (fixed)
    return secure ? new ProxyHttpsAgent({}, opts, fixed) : new ProxyHttpAgent({}, opts, fixed);
  if (!env || !proxyFor(env, url)) return undefined;
  return secure ? new ProxyHttpsAgent(env, opts) : new ProxyHttpAgent(env, opts);
}
