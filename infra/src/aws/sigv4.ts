// SigV4 verification primitives for the emulators. Deliberately written from the spec with
// node:crypto rather than with @smithy/signature-v4, so that tests which sign with the SDK and
// verify here compare two independent implementations.
// https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv-create-signed-request.html
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export const SIGV4_ALGORITHM = 'AWS4-HMAC-SHA256';
export const EMPTY_PAYLOAD_SHA256 = createHash('sha256').update('').digest('hex');

export interface CredentialScope {
  /** yyyymmdd */
  date: string;
  region: string;
  service: string;
}

export interface SigV4Input {
  method: string;
  /** The canonical URI, already escaped as the service expects (see canonicalUri). */
  canonicalUri: string;
  /** Decoded query parameters, X-Amz-Signature excluded by the caller or here. */
  query: ReadonlyArray<readonly [string, string]>;
  /** Lower-case header name -> value, for every signed header. */
  headers: Readonly<Record<string, string>>;
  signedHeaders: readonly string[];
  payloadHash: string;
  /** yyyymmddThhmmssZ */
  amzDate: string;
  scope: CredentialScope;
  secretAccessKey: string;
}

/** RFC 3986 unreserved characters stay, everything else is %XX (upper case). */
export function uriEscape(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/**
 * Canonical URI for every service but S3: the path as sent on the wire (labels already
 * percent-encoded by the client), normalised, then escaped once more with '/' kept.
 */
export function canonicalUri(rawPath: string): string {
  const segments: string[] = [];
  for (const s of rawPath.split('/')) {
    if (s === '' || s === '.') continue;
    if (s === '..') segments.pop();
    else segments.push(s);
  }
  const trailing = segments.length > 0 && rawPath.endsWith('/') ? '/' : '';
  return uriEscape(`/${segments.join('/')}${trailing}`).replace(/%2F/g, '/');
}

export function canonicalQuery(query: ReadonlyArray<readonly [string, string]>): string {
  return query
    .filter(([k]) => k !== 'X-Amz-Signature')
    .map(([k, v]) => [uriEscape(k), uriEscape(v)] as const)
    .sort(([ak, av], [bk, bv]) => (ak < bk ? -1 : ak > bk ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
}

/** Parses a raw query string without turning '+' into a space (SigV4 treats it literally). */
export function parseRawQuery(raw: string): Array<[string, string]> | undefined {
  if (raw.startsWith('?')) raw = raw.slice(1);
  if (raw === '') return [];
  const out: Array<[string, string]> = [];
  for (const part of raw.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const k = eq < 0 ? part : part.slice(0, eq);
    const v = eq < 0 ? '' : part.slice(eq + 1);
    try {
      out.push([decodeURIComponent(k), decodeURIComponent(v)]);
    } catch {
      return undefined;
    }
  }
  return out;
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}

export function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

export function canonicalRequest(i: SigV4Input): string {
  const names = [...i.signedHeaders].map((h) => h.toLowerCase()).sort();
  const headerLines = names.map((n) => `${n}:${(i.headers[n] ?? '').trim().replace(/\s+/g, ' ')}`);
  return [
    i.method.toUpperCase(),
    i.canonicalUri,
    canonicalQuery(i.query),
    ...headerLines,
    '',
    names.join(';'),
    i.payloadHash,
  ].join('\n');
}

export function signatureV4(i: SigV4Input): string {
  const scope = `${i.scope.date}/${i.scope.region}/${i.scope.service}/aws4_request`;
  const stringToSign = [SIGV4_ALGORITHM, i.amzDate, scope, sha256Hex(canonicalRequest(i))].join(
    '\n',
  );
  let key = hmac(`AWS4${i.secretAccessKey}`, i.scope.date);
  key = hmac(key, i.scope.region);
  key = hmac(key, i.scope.service);
  key = hmac(key, 'aws4_request');
  return createHmac('sha256', key).update(stringToSign, 'utf8').digest('hex');
}

export function hexEquals(a: string, b: string): boolean {
  if (!/^[0-9a-f]{64}$/.test(a) || !/^[0-9a-f]{64}$/.test(b)) return false;
  return timingSafeEqual(Buffer.from(a, 'hex'), Buffer.from(b, 'hex'));
}

const AMZ_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;

/** yyyymmddThhmmssZ -> Date, or undefined when malformed. */
export function parseAmzDate(s: string): Date | undefined {
  const m = AMZ_DATE.exec(s);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, se] = m.map(Number) as [number, ...number[]];
  const t = Date.UTC(y!, mo! - 1, d!, h!, mi!, se!);
  const date = new Date(t);
  // Reject 20240231 and friends instead of letting Date roll them over.
  if (date.getUTCMonth() !== mo! - 1 || date.getUTCDate() !== d! || date.getUTCHours() !== h!) {
    return undefined;
  }
  return date;
}

export interface ParsedCredential {
  accessKeyId: string;
  scope: CredentialScope;
}

/** "AKID/20240102/eu-west-1/sts/aws4_request" */
export function parseCredential(s: string): ParsedCredential | undefined {
  const parts = s.split('/');
  if (parts.length !== 5 || parts[4] !== 'aws4_request') return undefined;
  const [accessKeyId, date, region, service] = parts as [string, string, string, string];
  if (!/^[A-Z0-9]{16,128}$/.test(accessKeyId) || !/^\d{8}$/.test(date) || !region || !service) {
    return undefined;
  }
  return { accessKeyId, scope: { date, region, service } };
}

export interface ParsedAuthorization extends ParsedCredential {
  signedHeaders: string[];
  signature: string;
}

/** `AWS4-HMAC-SHA256 Credential=..., SignedHeaders=a;b, Signature=hex` */
export function parseAuthorizationHeader(h: string | undefined): ParsedAuthorization | undefined {
  if (!h?.startsWith(`${SIGV4_ALGORITHM} `)) return undefined;
  const fields = new Map<string, string>();
  for (const part of h.slice(SIGV4_ALGORITHM.length + 1).split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) fields.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  const cred = parseCredential(fields.get('Credential') ?? '');
  const signedHeaders = (fields.get('SignedHeaders') ?? '').split(';').filter(Boolean);
  const signature = fields.get('Signature') ?? '';
  if (!cred || signedHeaders.length === 0 || !/^[0-9a-f]{64}$/.test(signature)) return undefined;
  return { ...cred, signedHeaders, signature };
}
