// The Vault/OpenBao HTTP transport: node:https (node:http for an http:// address) with one
// keep-alive pool per client, a per-request timeout, `X-Vault-Token` and `X-Vault-Namespace`,
// and TLS that is always verified, against the system roots or against the CA bundle given
// (which then replaces them, as VAULT_CACERT does). There is no switch to skip verification.
//
// Like shared/src/kit/k8s/rest.ts, no HTTP library: a pool over node's agent is all it takes, and
// the hub's memory budget has no room for one.
//
// Every non-2xx answer and every network failure becomes a VaultError whose message says what
// is wrong and what to do, and carries nothing secret (see errors.ts): the request's `secrets`
// (token, secret_id, JWT, lease id, data values) are scrubbed from what Vault says back, and
// neither bodies nor headers are ever copied into an error.

import { http } from '@mirrorhub/shared/kit/runtime/builtins';
import type { Agent } from 'node:http';
import https from 'node:https';
import type { Logger } from 'pino';
import { redact, VaultError, type VaultErrorKind } from './errors.js';

export interface VaultHttpOptions {
  /** `https://vault.example.com:8200` (a path prefix, for Vault behind a proxy, is kept). */
  address: string;
  /** Vault Enterprise / OpenBao namespace sent as `X-Vault-Namespace` on every request. */
  namespace?: string | undefined;
  /** PEM bundle of the CA(s) that issued Vault's certificate; replaces the system roots. */
  caPem?: string | undefined;
  /** Per request (default 30 s). */
  timeoutMs?: number | undefined;
  /** Connections at most (default 16). */
  maxSockets?: number | undefined;
  /** `User-Agent` (default `mirrorhub`). */
  userAgent?: string | undefined;
  /** Debug lines per request (method, path, status, duration): never bodies or headers. */
  logger?: Logger | undefined;
}

export type VaultMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface VaultRequest {
  method: VaultMethod;
  /** API path after `/v1/`, segments already encoded (see `apiPath`). */
  path: string;
  query?: Record<string, string> | undefined;
  body?: unknown;
  /** Sent as `X-Vault-Token` (absent for logins). */
  token?: string | undefined;
  /** Overrides the client's namespace; `''` sends none (the root namespace). */
  namespace?: string | undefined;
  /** Strings that must never appear in an error: token, secret_id, JWT, lease id, data. */
  secrets?: readonly string[] | undefined;
  /** Whose policy decides, for a 403 message: e.g. `the token of AppRole login at auth/approle`. */
  who?: string | undefined;
  /** Statuses answered with `{ status, body }` instead of an error (e.g. 404 of a KV read). */
  accept?: readonly number[] | undefined;
  /** `Content-Type` of the body (default application/json). */
  contentType?: string | undefined;
}

export interface VaultResponse<T> {
  status: number;
  /** The parsed JSON answer; undefined for 204 or an empty body. */
  body: T | undefined;
}

/** Vault's answer envelope (the fields this client reads). */
export interface VaultEnvelope<D = Record<string, unknown>> {
  data?: D | null;
  lease_id?: string;
  lease_duration?: number;
  renewable?: boolean;
  auth?: VaultAuthBlock | null;
  warnings?: string[] | null;
  errors?: string[];
}

export interface VaultAuthBlock {
  client_token: string;
  accessor?: string;
  policies?: string[] | null;
  lease_duration: number;
  renewable: boolean;
}

/** Encodes each segment of a logical path for a URL, keeping the slashes. */
export function apiPath(...parts: string[]): string {
  return parts
    .filter((p) => p !== '')
    .join('/')
    .split('/')
    .map((s) => encodeURIComponent(s))
    .join('/');
}

/** Which capability a Vault policy needs for a method (for 403 messages). */
export function capabilityFor(method: VaultMethod, query?: Record<string, string>): string {
  if (query?.list === 'true') return 'list';
  switch (method) {
    case 'GET':
      return 'read';
    case 'DELETE':
      return 'delete';
    case 'PATCH':
      return 'patch';
    default:
      return 'create" or "update';
  }
}

const TLS_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'ERR_SSL_WRONG_VERSION_NUMBER',
  'EPROTO',
]);

export class VaultHttp {
  readonly address: string;
  readonly namespace: string | undefined;
  private readonly origin: string;
  /** Path prefix of the address ('' or e.g. `/vault`). */
  private readonly prefix: string;
  private readonly agent: Agent;
  private readonly isHttps: boolean;
  private readonly timeoutMs: number;
  private readonly userAgent: string;
  private readonly logger: Logger | undefined;

  constructor(opts: VaultHttpOptions) {
    let url: URL;
    try {
      url = new URL(opts.address);
    } catch {
      throw new VaultError({
        kind: 'usage',
        message: `the Vault address "${opts.address}" is not a URL: give it as https://<host>:<port>`,
      });
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new VaultError({
        kind: 'usage',
        message: `the Vault address "${opts.address}" must start with https:// (or http:// for a dev server)`,
      });
    }
    if (url.username || url.password || url.search || url.hash) {
      throw new VaultError({
        kind: 'usage',
        message: `the Vault address must be scheme, host, port and an optional path prefix, with no credentials, query or fragment`,
      });
    }
    this.origin = url.origin;
    this.prefix = url.pathname.replace(/\/+$/, '');
    this.address = this.origin + this.prefix;
    this.isHttps = url.protocol === 'https:';
    if (opts.caPem !== undefined && !/-----BEGIN CERTIFICATE-----/.test(opts.caPem)) {
      throw new VaultError({
        kind: 'usage',
        message: `the Vault CA bundle is not PEM: give the CA certificate(s) that issued Vault's certificate, each starting with -----BEGIN CERTIFICATE-----`,
      });
    }
    if (opts.caPem !== undefined && !this.isHttps) {
      throw new VaultError({
        kind: 'usage',
        message: `a CA bundle was given for ${this.address}, which is not https://: use the https:// address of Vault`,
      });
    }
    const agentOptions = { keepAlive: true, maxSockets: opts.maxSockets ?? 16 };
    this.agent = this.isHttps
      ? new https.Agent({
          ...agentOptions,
          ...(opts.caPem !== undefined ? { ca: opts.caPem } : {}),
          rejectUnauthorized: true,
        })
      : new http.Agent(agentOptions);
    this.namespace = opts.namespace ? opts.namespace.replace(/^\/+|\/+$/g, '') : undefined;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.userAgent = opts.userAgent ?? 'mirrorhub';
    this.logger = opts.logger;
  }

  /** Closes every connection, in-flight requests too (VaultClient.close waits for them first). */
  close(): void {
    this.agent.destroy();
  }

  /** The request; a non-2xx status (unless in `accept`) or a network failure throws VaultError. */
  async request<T = VaultEnvelope>(req: VaultRequest): Promise<VaultResponse<T>> {
    const url = new URL(`${this.origin}${this.prefix}/v1/${req.path.replace(/^\/+/, '')}`);
    for (const [k, v] of Object.entries(req.query ?? {})) url.searchParams.set(k, v);
    const payload = req.body === undefined ? undefined : JSON.stringify(req.body);
    const namespace = req.namespace ?? this.namespace;
    const headers: Record<string, string> = {
      Accept: 'application/json',
      'User-Agent': this.userAgent,
      'X-Vault-Request': 'true',
    };
    if (req.token !== undefined) headers['X-Vault-Token'] = req.token;
    if (namespace) headers['X-Vault-Namespace'] = namespace;
    if (payload !== undefined) {
      headers['Content-Type'] = req.contentType ?? 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(payload));
    }
    const started = performance.now();
    const where = { method: req.method, path: req.path, namespace: namespace || undefined };
    let status: number;
    let text: string;
    try {
      ({ status, text } = await this.send(url, req.method, headers, payload));
    } catch (err) {
      throw this.networkError(err, req, namespace);
    }
    this.logger?.debug(
      { ...where, status, ms: Math.round(performance.now() - started) },
      'vault request',
    );
    const ok = status >= 200 && status < 300;
    if (!ok && !req.accept?.includes(status)) {
      throw this.statusError(status, text, req, namespace);
    }
    if (text === '') return { status, body: undefined };
    try {
      return { status, body: JSON.parse(text) as T };
    } catch {
      // No cause: a JSON SyntaxError quotes the text it choked on, which may be secret data.
      throw new VaultError({
        kind: 'unexpected-response',
        message: `${req.method} ${req.path}${nsText(namespace)}: Vault at ${this.address} answered ${status} with a body that is not JSON: is the address that of Vault (not a proxy or UI page)?`,
        ...where,
        status,
      });
    }
  }

  private send(
    url: URL,
    method: string,
    headers: Record<string, string>,
    payload: string | undefined,
  ): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const lib = this.isHttps ? https : http;
      const req = lib.request(url, { method, headers, agent: this.agent }, (res) => {
        res.setEncoding('utf8');
        let data = '';
        res.on('data', (c: string) => (data += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: data }));
        res.on('error', reject);
      });
      req.setTimeout(this.timeoutMs, () =>
        req.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT', timeout: true })),
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  private networkError(err: unknown, req: VaultRequest, namespace: string | undefined): VaultError {
    const code = (err as NodeJS.ErrnoException | undefined)?.code ?? 'unknown';
    const where = {
      method: req.method,
      path: req.path,
      namespace: namespace || undefined,
      code,
    };
    const what = `${req.method} ${req.path}${nsText(namespace)}`;
    if ((err as { timeout?: boolean } | undefined)?.timeout) {
      return new VaultError({
        kind: 'timeout',
        message: `${what}: no answer from Vault at ${this.address} within ${this.timeoutMs} ms: check that Vault is up and not overloaded, or raise the request timeout`,
        ...where,
      });
    }
    if (TLS_CODES.has(code)) {
      let hint: string;
      if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
        hint = `its certificate does not name ${new URL(this.origin).hostname}: use an address whose host the certificate lists`;
      } else if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID') {
        hint = `its certificate is outside its validity period: renew Vault's certificate (or check the clocks)`;
      } else if (code === 'EPROTO' || code === 'ERR_SSL_WRONG_VERSION_NUMBER') {
        hint = `it does not speak TLS there: check the port, or use http:// for a server without TLS`;
      } else {
        hint = `its certificate is not signed by a CA this client trusts: give the PEM of the CA that issued it as the Vault CA bundle (TLS is always verified; there is no switch to skip it)`;
      }
      return new VaultError({
        kind: 'tls',
        message: `${what}: TLS verification of ${this.address} failed (${code}): ${hint}`,
        ...where,
      });
    }
    return new VaultError({
      kind: 'unreachable',
      message: `${what}: cannot reach Vault at ${this.address} (${code}): check the address and that Vault runs and is reachable from the hub`,
      ...where,
    });
  }

  private statusError(
    status: number,
    text: string,
    req: VaultRequest,
    namespace: string | undefined,
  ): VaultError {
    const secrets = [...(req.secrets ?? []), ...(req.token !== undefined ? [req.token] : [])];
    const errors = parseErrors(text).map((e) => redact(e, secrets));
    const said = errors.length ? `: ${errors.join('; ')}` : '';
    const what = `${req.method} ${req.path}${nsText(namespace)}`;
    let kind: VaultErrorKind;
    let message: string;
    if (status === 403) {
      kind = 'permission-denied';
      const cap = capabilityFor(req.method, req.query);
      message = `permission denied on ${what}: the Vault policy of ${req.who ?? 'the token in use'} does not allow "${cap}" on "${req.path}"; grant it in that policy${namespace ? ` (in namespace ${namespace})` : ''}`;
    } else if (status === 400 && errors.some((e) => /check-and-set/i.test(e))) {
      kind = 'cas-mismatch';
      message = `check-and-set refused ${what}${said}: the secret changed since it was read; read it again and retry`;
    } else if (status === 400) {
      kind = 'invalid-request';
      message = `Vault refused ${what} as invalid (400)${said}`;
    } else if (status === 404) {
      kind = 'not-found';
      message = `${what}: not found (404)${said}: check the path and that a mount exists there${namespace ? ` in namespace ${namespace}` : ''}`;
    } else if (status === 405) {
      kind = 'invalid-request';
      message = `${what}: the mount at this path does not support ${req.method} (405)${said}: is it the right kind of mount?`;
    } else if (status === 429) {
      kind = 'rate-limited';
      message = `${what}: Vault is rate limiting this client (429)${said}: retry later or raise the quota`;
    } else if (status === 503 || status === 412) {
      kind = 'unavailable';
      const sealed = /sealed/i.test(said);
      message = `${what}: Vault at ${this.address} is unavailable (${status})${said}: ${sealed ? 'unseal it' : 'it may be sealed or a standby; unseal it or point at the active node'}`;
    } else if (status >= 500) {
      kind = 'server';
      message = `${what}: Vault failed (${status})${said}: retry later and see the Vault server log`;
    } else {
      kind = 'unexpected-response';
      message = `${what}: unexpected answer ${status}${said}`;
    }
    return new VaultError({
      kind,
      message,
      method: req.method,
      path: req.path,
      namespace: namespace || undefined,
      status,
      errors,
    });
  }
}

function nsText(namespace: string | undefined): string {
  return namespace ? ` (namespace ${namespace})` : '';
}

/** Vault's `errors` array, or nothing (never the raw body: a proxy page, or echoed input). */
function parseErrors(text: string): string[] {
  try {
    const body = JSON.parse(text) as { errors?: unknown };
    if (Array.isArray(body.errors)) {
      return body.errors
        .filter((e): e is string => typeof e === 'string')
        .map((e) =>
          e
            .replace(/\s+/g, ' ')
            .replace(/^1 error occurred: \* /, '')
            .trim(),
        )
        .filter((e) => e !== '');
    }
  } catch {
    // not JSON
  }
  return [];
}
