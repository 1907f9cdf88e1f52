// One TLS secure context per distinct CA / client certificate / key, shared by every connection
// that uses them. Given `ca`, `cert` and `key`, node builds a new secure context for each new
// TLS connection: it parses the CA bundle and the key again and loads them into a fresh OpenSSL
// context, which costs CPU every time. A hub with a watch or three per cluster on 100 clusters
// opens many: every watch timeout, every list that does not find an idle socket. So the
// clients (rest.ts, listwatch.ts) pass one prebuilt context instead; the options keep `ca` and
// the rest, so connection pools still tell apart connections with different credentials.
import { crypto } from '../runtime/builtins.js';
import type https from 'node:https';
import { createSecureContext, type SecureContext } from 'node:tls';

const { createHash } = crypto;

/** Options that go into a context besides ca, cert and key: with any of them, node builds it. */
const OTHER_CONTEXT_OPTIONS = [
  'pfx',
  'passphrase',
  'ciphers',
  'sigalgs',
  'crl',
  'dhparam',
  'ecdhCurve',
  'honorCipherOrder',
  'minVersion',
  'maxVersion',
  'secureOptions',
  'secureProtocol',
  'sessionIdContext',
  'ticketKeys',
  'sessionTimeout',
  'privateKeyEngine',
  'privateKeyIdentifier',
  'clientCertEngine',
  'allowPartialTrustChain',
] as const;

/** Request options as node passes them on to tls.connect, which takes a prebuilt context. */
export type TlsRequestOptions = https.RequestOptions & { secureContext?: SecureContext };

/** Contexts kept (least recently used dropped first): far more than distinct API servers. */
const MAX_CONTEXTS = 256;
const contexts = new Map<string, SecureContext>();

type Material = string | Buffer | readonly (string | Buffer)[];

function isMaterial(v: unknown): v is Material | undefined {
  if (v === undefined || typeof v === 'string' || Buffer.isBuffer(v)) return true;
  return Array.isArray(v) && v.every((x) => typeof x === 'string' || Buffer.isBuffer(x));
}

/**
 * Digests of Buffers by identity. mirrorhub's accesses (access.ts, eks-token.ts) read their CA,
 * certificate and key once and hand out the same Buffers on every request, so each is hashed
 * once, not on every request (most of which reuse a pooled connection and need no context).
 */
const bufferDigests = new WeakMap<Buffer, string>();

const sha256 = (data: string | Buffer): string =>
  createHash('sha256').update(data).digest('base64');

/** One material's digest: the same for a string and a Buffer of the same bytes. */
function digest(v: Material | undefined): string {
  if (v === undefined) return '-';
  if (typeof v === 'string') return sha256(v);
  if (Buffer.isBuffer(v)) {
    let d = bufferDigests.get(v);
    if (d === undefined) bufferDigests.set(v, (d = sha256(v)));
    return d;
  }
  const h = createHash('sha256');
  for (const p of v) h.update(`${Buffer.byteLength(p)}:`).update(p);
  return `[${h.digest('base64')}`;
}

/**
 * Set `opts.secureContext` to the shared context for its `ca`, `cert` and `key`. Left as is:
 * options that already have a context, carry none of the three, or use anything else that goes
 * into a context (pfx, a passphrase, ciphers, key objects, ...): those get node's own per
 * connection, as before.
 */
export function shareSecureContext(opts: TlsRequestOptions): void {
  const { ca, cert, key } = opts;
  if (opts.secureContext !== undefined) return;
  const all = opts as Record<string, unknown>;
  if (OTHER_CONTEXT_OPTIONS.some((o) => all[o] !== undefined)) return;
  if (ca === undefined && cert === undefined && key === undefined) return;
  if (!isMaterial(ca) || !isMaterial(cert) || !isMaterial(key)) return;
  const id = `${digest(ca)}|${digest(cert)}|${digest(key)}`;
  let context = contexts.get(id);
  if (context) {
    contexts.delete(id); // most recently used last
  } else {
    context = createSecureContext({ ca, cert, key });
    const oldest = contexts.keys().next();
    if (contexts.size >= MAX_CONTEXTS && !oldest.done) contexts.delete(oldest.value);
  }
  contexts.set(id, context);
  opts.secureContext = context;
}

/** How many contexts are kept (tests). */
export function sharedSecureContexts(): number {
  return contexts.size;
}
