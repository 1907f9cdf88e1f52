// Who signed an AWS API request, checked the way the real service checks it: the SigV4 signature
// (Authorization header or presigned query) is recomputed with the key's secret from moto's state
// dump (an accessKeyLookup), a session key must come with exactly its session token, and the key is
// named by moto's GetCallerIdentity. Shared by the EKS emulator and the STS gate; each maps a
// failure to its own protocol's error code and wording.
import {
  getCallerIdentity,
  isMotoFallbackIdentity,
  type AccessKeyLookup,
  type CallerIdentity,
} from './moto.js';
import {
  SIGV4_ALGORITHM,
  canonicalUri,
  hexEquals,
  parseAmzDate,
  parseAuthorizationHeader,
  parseCredential,
  sha256Hex,
  signatureV4,
  type CredentialScope,
} from './sigv4.js';

export interface SignedRequest {
  method: string;
  /** The path as sent on the wire, without the query. */
  rawPath: string;
  /** Decoded query parameters in order (see parseRawQuery). */
  query: ReadonlyArray<readonly [string, string]>;
  /** A request header by (any-case) name; repeated headers joined with ','. */
  header(name: string): string | undefined;
  body: Buffer;
}

export type RequestAuthFailure =
  /** Neither an Authorization header nor X-Amz-Signature in the query. */
  | { kind: 'missing' }
  /** Authorization/X-Amz-* present but malformed. */
  | { kind: 'incomplete'; message: string }
  /** Header-signed too long ago (or too far ahead), or a presigned URL past X-Amz-Expires. */
  | { kind: 'expired'; amzDate: string; signedAt: Date; presigned: boolean; future: boolean }
  | { kind: 'wrong-service'; service: string }
  /** moto does not know the key, it is inactive, or the session token does not belong to it. */
  | { kind: 'unknown-key' }
  | { kind: 'signature' };

export interface AuthenticatedCaller extends CallerIdentity {
  accessKeyId: string;
  /** True for STS session keys (the caller is an assumed role). */
  session: boolean;
  scope: CredentialScope;
}

export type RequestAuthResult =
  { ok: true; caller: AuthenticatedCaller } | { ok: false; failure: RequestAuthFailure };

export interface RequestAuthOptions {
  /** The service the credential scope must name ('sts', 'eks'). */
  service: string;
  now: Date;
  /** How far X-Amz-Date of a header-signed request may be from now. */
  maxSkewMs: number;
  /** How to find a key's secret: the caller's accessKeyLookup on moto. */
  lookupKey: AccessKeyLookup;
}

const fail = (failure: RequestAuthFailure): RequestAuthResult => ({ ok: false, failure });

/** Checks a request's SigV4 signature against moto's keys and names the caller. */
export async function authenticateRequest(
  motoEndpoint: string,
  req: SignedRequest,
  opts: RequestAuthOptions,
): Promise<RequestAuthResult> {
  const authHeader = req.header('authorization');
  const q = new Map(req.query.map(([k, v]) => [k.toLowerCase(), v]));
  const presigned = authHeader === undefined && q.has('x-amz-signature');
  let accessKeyId: string;
  let scope: CredentialScope;
  let signedHeaders: string[];
  let signature: string;
  let amzDate: string;
  let sessionToken: string | undefined;
  let expiresS = 0;
  if (presigned) {
    if (q.get('x-amz-algorithm') !== SIGV4_ALGORITHM) {
      return fail({ kind: 'incomplete', message: `X-Amz-Algorithm must be ${SIGV4_ALGORITHM}` });
    }
    const cred = parseCredential(q.get('x-amz-credential') ?? '');
    if (!cred) return fail({ kind: 'incomplete', message: 'malformed X-Amz-Credential' });
    const expires = q.get('x-amz-expires') ?? '';
    if (!/^\d{1,6}$/.test(expires) || Number(expires) > 604_800) {
      return fail({ kind: 'incomplete', message: 'X-Amz-Expires must be 0 to 604800 seconds' });
    }
    signature = q.get('x-amz-signature') ?? '';
    if (!/^[0-9a-f]{64}$/.test(signature)) {
      return fail({ kind: 'incomplete', message: 'malformed X-Amz-Signature' });
    }
    ({ accessKeyId, scope } = cred);
    signedHeaders = (q.get('x-amz-signedheaders') ?? '').split(';').filter(Boolean);
    amzDate = q.get('x-amz-date') ?? '';
    sessionToken = q.get('x-amz-security-token');
    expiresS = Number(expires);
  } else {
    if (authHeader === undefined) return fail({ kind: 'missing' });
    const auth = parseAuthorizationHeader(authHeader);
    if (!auth) return fail({ kind: 'incomplete', message: 'malformed Authorization header' });
    ({ accessKeyId, scope, signedHeaders, signature } = auth);
    amzDate = req.header('x-amz-date') ?? '';
    sessionToken = req.header('x-amz-security-token');
  }
  const signedAt = parseAmzDate(amzDate);
  if (!signedAt) return fail({ kind: 'incomplete', message: 'missing or malformed X-Amz-Date' });
  const now = opts.now.getTime();
  const future = signedAt.getTime() > now + opts.maxSkewMs;
  const past = presigned
    ? now > signedAt.getTime() + expiresS * 1000
    : signedAt.getTime() < now - opts.maxSkewMs;
  if (future || past) return fail({ kind: 'expired', amzDate, signedAt, presigned, future });
  if (scope.service !== opts.service) {
    return fail({ kind: 'wrong-service', service: opts.service });
  }

  const key = await opts.lookupKey(accessKeyId);
  if (!key || !key.active || key.sessionToken !== sessionToken)
    return fail({ kind: 'unknown-key' });
  const headers: Record<string, string> = {};
  for (const h of signedHeaders) headers[h.toLowerCase()] = req.header(h) ?? '';
  const expected = signatureV4({
    method: req.method,
    canonicalUri: canonicalUri(req.rawPath),
    query: req.query,
    headers,
    signedHeaders,
    payloadHash: req.header('x-amz-content-sha256') ?? sha256Hex(req.body),
    amzDate,
    scope,
    secretAccessKey: key.secretAccessKey,
  });
  if (!hexEquals(expected, signature)) return fail({ kind: 'signature' });

  const id = await getCallerIdentity(motoEndpoint, {
    accessKeyId: key.accessKeyId,
    secretAccessKey: key.secretAccessKey,
    ...(key.sessionToken ? { sessionToken: key.sessionToken } : {}),
  });
  if (isMotoFallbackIdentity(id)) return fail({ kind: 'unknown-key' });
  return {
    ok: true,
    caller: { ...id, accessKeyId, session: key.sessionToken !== undefined, scope },
  };
}
