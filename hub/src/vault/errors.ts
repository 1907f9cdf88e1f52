// Typed errors of the Vault client, and the redaction that keeps secrets out of them.
//
// What a VaultError carries is safe to log, put in an Event or a status message by construction:
// the HTTP method and API path, the namespace, the status code, Vault's own `errors` strings (with
// every secret of the request scrubbed out), and a sentence that says what to do. Never a
// response body, a request body, a header, a token, a secret_id, a JWT or a lease id: a request
// carries its secrets in a list, and everything Vault says back is passed through `redact()`
// with that list before it reaches a message, plus a pattern scrub for token and JWT shapes.

/** What went wrong, for callers that branch on it (retry, re-login, report). */
export type VaultErrorKind =
  /** 403: the token is valid but its policy does not allow this request. */
  | 'permission-denied'
  /** 403: the token itself is refused (revoked, expired, unknown). */
  | 'invalid-token'
  /** A login (AppRole, Kubernetes) or the static token's lookup failed. */
  | 'login-failed'
  | 'not-found'
  /** KV v2 check-and-set: the secret changed since the version the caller read. */
  | 'cas-mismatch'
  /** 400: Vault refused the request as malformed (its messages say why). */
  | 'invalid-request'
  /** 503 sealed, or standby without forwarding. */
  | 'unavailable'
  /** 429: rate limited. */
  | 'rate-limited'
  /** 5xx other than 503. */
  | 'server'
  /** No answer within the request timeout. */
  | 'timeout'
  /** Connection refused, DNS, reset... */
  | 'unreachable'
  /** The server's certificate did not verify. */
  | 'tls'
  /** The answer was not what the API promises (not JSON, missing fields). */
  | 'unexpected-response'
  /** The caller asked for something this client or mount cannot do. */
  | 'usage';

export interface VaultErrorInit {
  kind: VaultErrorKind;
  /** One sentence: what is wrong and how to fix it (already redacted). */
  message: string;
  method?: string | undefined;
  /** The API path, e.g. `secret/data/team-a/db` (no leading /v1/). */
  path?: string | undefined;
  namespace?: string | undefined;
  status?: number | undefined;
  /** Vault's `errors` strings, redacted. */
  errors?: string[] | undefined;
  /** Network-level error code (ECONNREFUSED, DEPTH_ZERO_SELF_SIGNED_CERT, ...). */
  code?: string | undefined;
}

export class VaultError extends Error {
  override readonly name = 'VaultError';
  readonly kind: VaultErrorKind;
  readonly method: string | undefined;
  readonly path: string | undefined;
  readonly namespace: string | undefined;
  /** HTTP status (when Vault answered). */
  readonly status: number | undefined;
  readonly errors: readonly string[];
  readonly code: string | undefined;

  constructor(init: VaultErrorInit) {
    super(init.message);
    this.kind = init.kind;
    this.method = init.method;
    this.path = init.path;
    this.namespace = init.namespace;
    this.status = init.status;
    this.errors = init.errors ?? [];
    this.code = init.code;
  }

  /** The same error with another message (a wrapper that knows more, e.g. the auth method). */
  withMessage(message: string, kind: VaultErrorKind = this.kind): VaultError {
    return new VaultError({
      kind,
      message,
      method: this.method,
      path: this.path,
      namespace: this.namespace,
      status: this.status,
      errors: [...this.errors],
      code: this.code,
    });
  }
}

export function isVaultError(err: unknown, kind?: VaultErrorKind): err is VaultError {
  return err instanceof VaultError && (kind === undefined || err.kind === kind);
}

// ---- redaction ---------------------------------------------------------------------------------

export const REDACTED = '[redacted]';

/**
 * Values shorter than this are not searched for in messages: scrubbing every "1" or "ok" would
 * garble the message, and a value that short gives nothing away.
 */
export const MIN_REDACTED_LENGTH = 4;

/**
 * Shapes of credentials that must never be printed even when nobody listed them: Vault and
 * OpenBao tokens (`hvs.`, `hvb.`, `hvr.`, `s.`, `b.`, `r.` + base62), JWTs (three base64url
 * parts, the first starting with `eyJ`), and anything after `Bearer `.
 */
const CREDENTIAL_PATTERNS: readonly RegExp[] = [
  /\b(?:hv[sbr]|[sbr])\.[A-Za-z0-9_-]{16,}(?:\.[A-Za-z0-9_-]+)?/g,
  /\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g,
  /\bBearer\s+\S+/gi,
];

/**
 * `text` with every listed secret (and every credential-shaped string) replaced by
 * `[redacted]`. Longer secrets first, so a secret containing another is removed whole.
 */
export function redact(text: string, secrets: Iterable<string> = []): string {
  let out = text;
  const list = [...new Set(secrets)]
    .filter((s) => s.length >= MIN_REDACTED_LENGTH)
    .sort((a, b) => b.length - a.length);
  for (const s of list) out = out.split(s).join(REDACTED);
  for (const re of CREDENTIAL_PATTERNS) out = out.replace(re, REDACTED);
  return out;
}

/**
 * Every string inside `value` (object values, array items, nested; keys are not secrets), so a
 * request body's secrets can be listed without naming them one by one.
 */
export function stringsIn(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) stringsIn(v, out);
  else if (value !== null && typeof value === 'object')
    for (const v of Object.values(value)) stringsIn(v, out);
  return out;
}
