// The pure half of the TokenReview webhook: checks an EKS bearer token the way
// aws-iam-authenticator's verifier (pkg/token/token.go) does before it calls STS, plus the checks
// STS itself makes when it receives the replayed URL (credential scope, signature).
// Nothing here does I/O; the webhook supplies the secret key it got from moto.
import { EKS_CLUSTER_ID_HEADER, EKS_TOKEN_PREFIX } from '@mirrorhub/hub/clusters/aws/eks-token';
import {
  EMPTY_PAYLOAD_SHA256,
  SIGV4_ALGORITHM,
  hexEquals,
  parseAmzDate,
  parseCredential,
  signatureV4,
  type CredentialScope,
} from './sigv4.js';

export const MAX_TOKEN_BYTES = 4096;
export const TOKEN_LIFETIME_MS = 15 * 60_000;

// aws-iam-authenticator's parameterWhitelist (compared case-insensitively, like it does).
const ALLOWED_QUERY_KEYS = new Set([
  'action',
  'version',
  'x-amz-algorithm',
  'x-amz-credential',
  'x-amz-date',
  'x-amz-expires',
  'x-amz-security-token',
  'x-amz-signature',
  'x-amz-signedheaders',
]);

// Headers the authenticator's replayed GET carries, and so the only ones STS could verify.
const REPLAYED_HEADERS = new Set(['host', EKS_CLUSTER_ID_HEADER, 'accept']);

export interface ParsedEksToken {
  /** The presigned URL (never log it: it is a bearer credential for 15 minutes). */
  url: URL;
  /** Decoded query parameters as they appear, signature included. */
  query: Array<[string, string]>;
  accessKeyId: string;
  scope: CredentialScope;
  amzDate: string;
  signedAt: Date;
  expiresSeconds: number;
  signedHeaders: string[];
  securityToken: string | undefined;
  signature: string;
}

export type TokenCheck = { ok: true; token: ParsedEksToken } | { ok: false; reason: string };

export interface ParseOptions {
  now: Date;
  /** Extra STS hosts (host[:port]) accepted besides sts[.<region>].amazonaws.com. */
  allowedStsHosts?: readonly string[];
  /** How far in the future X-Amz-Date may be (clock skew). Default 5 minutes. */
  maxFutureSkewMs?: number;
  /** How long after X-Amz-Date the token is accepted. Default TOKEN_LIFETIME_MS (15 minutes). */
  lifetimeMs?: number;
}

const REGION = /^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d+$/;

/** The region a host pins the credential scope to; null = any (custom host); undefined = refused. */
export function stsHostRegion(
  host: string,
  extra: readonly string[] = [],
): string | null | undefined {
  if (extra.includes(host)) return null;
  if (host === 'sts.amazonaws.com') return 'us-east-1';
  const m = /^sts\.([a-z0-9-]+)\.amazonaws\.com$/.exec(host);
  if (m && REGION.test(m[1]!)) return m[1]!;
  return undefined;
}

const fail = (reason: string): TokenCheck => ({ ok: false, reason });

/** Everything that can be checked without the secret key. */
export function parseEksToken(token: string, opts: ParseOptions): TokenCheck {
  if (token.length > MAX_TOKEN_BYTES) return fail('token is too large');
  if (!token.startsWith(EKS_TOKEN_PREFIX)) {
    return fail(`token is missing the expected "${EKS_TOKEN_PREFIX}" prefix`);
  }
  const body = token.slice(EKS_TOKEN_PREFIX.length);
  // Buffer's base64url decoder skips junk silently; the authenticator's RawURLEncoding does not.
  if (!/^[A-Za-z0-9_-]*$/.test(body) || body.length % 4 === 1) {
    return fail('token is not valid unpadded base64url');
  }
  let url: URL;
  try {
    url = new URL(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    return fail('token does not contain a URL');
  }
  if (url.protocol !== 'https:')
    return fail(`unexpected scheme "${url.protocol.slice(0, -1)}" in pre-signed URL`);
  const hostRegion = stsHostRegion(url.host, opts.allowedStsHosts);
  if (hostRegion === undefined) return fail(`unexpected hostname "${url.host}" in pre-signed URL`);
  if (url.pathname !== '/') return fail('unexpected path in pre-signed URL');
  if (url.hash !== '' || url.username !== '' || url.password !== '') {
    return fail('unexpected URL parts in pre-signed URL');
  }

  const query: Array<[string, string]> = [];
  const lower = new Map<string, string>();
  for (const [k, v] of new URLSearchParams(url.search)) {
    if (!ALLOWED_QUERY_KEYS.has(k.toLowerCase())) {
      return fail(`non-whitelisted query parameter "${k}"`);
    }
    if (lower.has(k.toLowerCase()))
      return fail('query parameter with multiple values not supported');
    lower.set(k.toLowerCase(), v);
    query.push([k, v]);
  }
  // URLSearchParams turns '+' into ' '; SigV4 and Go's url.ParseQuery disagree on that, so a
  // literal '+' would make the signature ambiguous. SDKs always encode it as %2B.
  if (url.search.includes('+')) return fail('malformed query parameter');

  if (lower.get('action') !== 'GetCallerIdentity') {
    return fail('unexpected action parameter in pre-signed URL');
  }
  if (lower.get('version') !== '2011-06-15') {
    return fail('unexpected version parameter in pre-signed URL');
  }
  const signedHeaders = (lower.get('x-amz-signedheaders') ?? '').split(';').filter(Boolean);
  if (!signedHeaders.some((h) => h.toLowerCase() === EKS_CLUSTER_ID_HEADER)) {
    return fail(`client did not sign the ${EKS_CLUSTER_ID_HEADER} header in the pre-signed URL`);
  }
  const expiresRaw = lower.get('x-amz-expires') ?? '';
  const expires = /^\d{1,6}$/.test(expiresRaw) ? Number(expiresRaw) : NaN;
  if (!(expires >= 0 && expires <= 900)) {
    return fail(`invalid X-Amz-Expires parameter in pre-signed URL: ${expiresRaw || '(missing)'}`);
  }
  const amzDate = lower.get('x-amz-date') ?? '';
  if (!amzDate) return fail('X-Amz-Date parameter must be present in pre-signed URL');
  const signedAt = parseAmzDate(amzDate);
  if (!signedAt) return fail(`X-Amz-Date parameter "${amzDate}" is not yyyymmddThhmmssZ`);
  const now = opts.now.getTime();
  const lifetimeMs = opts.lifetimeMs ?? TOKEN_LIFETIME_MS;
  if (now > signedAt.getTime() + lifetimeMs) {
    const lifetime =
      lifetimeMs % 60_000 === 0 ? `${lifetimeMs / 60_000} minute` : `${lifetimeMs / 1000} second`;
    return fail(
      `X-Amz-Date parameter is expired (${lifetime} expiration) ${signedAt.toISOString()}`,
    );
  }
  if (signedAt.getTime() > now + (opts.maxFutureSkewMs ?? 5 * 60_000)) {
    return fail(`X-Amz-Date parameter is in the future ${signedAt.toISOString()}`);
  }

  // What STS checks when the authenticator replays the URL.
  if (lower.get('x-amz-algorithm') !== SIGV4_ALGORITHM) {
    return fail(`unsupported X-Amz-Algorithm, expected ${SIGV4_ALGORITHM}`);
  }
  const cred = parseCredential(lower.get('x-amz-credential') ?? '');
  if (!cred) return fail('malformed X-Amz-Credential parameter');
  if (cred.scope.service !== 'sts') return fail('credential scope is not for the sts service');
  if (cred.scope.date !== amzDate.slice(0, 8)) {
    return fail('credential scope date does not match X-Amz-Date');
  }
  if (hostRegion !== null && cred.scope.region !== hostRegion) {
    return fail(
      `credential should be scoped to region "${hostRegion}", not "${cred.scope.region}"`,
    );
  }
  for (const h of signedHeaders) {
    if (!REPLAYED_HEADERS.has(h.toLowerCase())) {
      return fail(`signed header "${h}" is not sent when the token is verified`);
    }
  }
  if (!signedHeaders.some((h) => h.toLowerCase() === 'host')) {
    return fail('the host header is not signed');
  }
  const signature = lower.get('x-amz-signature') ?? '';
  if (!/^[0-9a-f]{64}$/.test(signature)) return fail('malformed X-Amz-Signature parameter');

  return {
    ok: true,
    token: {
      url,
      query,
      accessKeyId: cred.accessKeyId,
      scope: cred.scope,
      amzDate,
      signedAt,
      expiresSeconds: expires,
      signedHeaders,
      securityToken: lower.get('x-amz-security-token'),
      signature,
    },
  };
}

/**
 * Recomputes the signature STS would compute for the replayed request: GET of the URL with
 * `x-k8s-aws-id: <clusterName>` (and `accept: application/json`) and an empty body. Every known
 * minter hashes the empty body for this presigned GET (botocore, i.e. `aws eks get-token`; the Go
 * SDK, i.e. aws-iam-authenticator; the JS SDK, i.e. this repo), so nothing else is accepted.
 */
export function presignedSignatureMatches(
  t: ParsedEksToken,
  clusterName: string,
  secretAccessKey: string,
): boolean {
  const expected = signatureV4({
    method: 'GET',
    canonicalUri: '/',
    query: t.query,
    headers: { host: t.url.host, [EKS_CLUSTER_ID_HEADER]: clusterName, accept: 'application/json' },
    signedHeaders: t.signedHeaders,
    payloadHash: EMPTY_PAYLOAD_SHA256,
    amzDate: t.amzDate,
    scope: t.scope,
    secretAccessKey,
  });
  return hexEquals(expected, t.signature);
}

export interface CallerIdentity {
  arn: string;
  account: string;
  userId: string;
}

export interface CanonicalIdentity extends CallerIdentity {
  /** arn:aws:iam::ACCT:role/NAME or arn:aws:iam::ACCT:user/NAME */
  canonicalArn: string;
  /** STS session name for assumed roles, '' otherwise. */
  sessionName: string;
  principalId: string;
}

/**
 * Like aws-iam-authenticator's arn.Canonicalize: an assumed-role session becomes the role it
 * came from; IAM users and roles stay as they are (paths stripped, as EKS matches on name).
 */
export function canonicalizeIdentity(id: CallerIdentity): CanonicalIdentity | { error: string } {
  const m = /^arn:(aws[a-z-]*):(iam|sts)::(\d{12}):(.+)$/.exec(id.arn);
  if (!m) return { error: `unrecognised ARN "${id.arn}"` };
  const [, partition, service, account, resource] = m as unknown as [
    string,
    string,
    string,
    string,
    string,
  ];
  const [principalId = '', sessionName = ''] = id.userId.split(':');
  if (service === 'sts') {
    const r = /^assumed-role\/([^/]+)\/(.+)$/.exec(resource);
    if (!r) return { error: `unsupported STS principal "${id.arn}"` };
    return {
      ...id,
      canonicalArn: `arn:${partition}:iam::${account}:role/${r[1]}`,
      sessionName: r[2]!,
      principalId,
    };
  }
  const r = /^(role|user)\/(?:.*\/)?([^/]+)$/.exec(resource);
  if (!r) return { error: `unsupported IAM principal "${id.arn}"` };
  return {
    ...id,
    canonicalArn: `arn:${partition}:iam::${account}:${r[1]}/${r[2]}`,
    sessionName,
    principalId,
  };
}

/** An access entry's principalArn in the form a canonical identity is compared with. */
export function canonicalPrincipalArn(principalArn: string): string | undefined {
  const m = /^arn:(aws[a-z-]*):iam::(\d{12}):(role|user)\/(?:.*\/)?([^/]+)$/.exec(principalArn);
  return m ? `arn:${m[1]}:iam::${m[2]}:${m[3]}/${m[4]}` : undefined;
}

/** Expands the username templates EKS and aws-iam-authenticator support. */
export function expandUsername(
  template: string,
  id: CanonicalIdentity & { accessKeyId: string },
): string {
  return template
    .replaceAll('{{AccountID}}', id.account)
    .replaceAll('{{SessionNameRaw}}', id.sessionName)
    .replaceAll('{{SessionName}}', id.sessionName.replaceAll('@', '-'))
    .replaceAll('{{AccessKeyID}}', id.accessKeyId);
}
