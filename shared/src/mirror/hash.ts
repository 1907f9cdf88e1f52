// The content hash: one short string that changes whenever anything a copy is made of changes
// (data, type, labels, annotations, target kind), and never otherwise. The hub puts it in
// MirrorDelivery.spec.contentHash; the agent stamps it on every copy (mirrorhub.io/content-hash)
// and skips every copy that already carries it, so a steady system writes nothing.
//
// Why keyed (HMAC) and not a plain SHA-256: the hash is visible to far more people than the data
// (copy annotations, MirrorDelivery specs, `kubectl get -o yaml` by anyone who may read them).
// A plain hash of a short password or a 6-digit PIN is brute-forced offline in seconds. With an
// HMAC the attacker also needs the key, so the key must be something they cannot read: NOT the
// mirror UID alone (it sits in MirrorDelivery.spec.mirror.uid next to the hash). Use
// `deriveHashKey(hubSecret, mirrorUid)`, where hubSecret is random bytes only the hub can read
// (e.g. a Secret in the hub namespace created at install); the UID makes equal content in two
// mirrors hash differently, so hashes do not reveal which secrets are equal either.

import { crypto } from '../kit/runtime/builtins.js';
import type { SourceKind } from '../api/types.gen.js';

const { createHmac } = crypto;

/** Bytes of HMAC output kept: 16 bytes = 32 hex characters, ample against accidental collision. */
export const CONTENT_HASH_BYTES = 16;

export interface HashInput {
  targetKind: SourceKind;
  /** Payload data: base64 values keyed by the copy's keys. */
  data: Readonly<Record<string, string>>;
  /** Keys of data that become binaryData in a ConfigMap copy. */
  binaryKeys?: readonly string[] | undefined;
  /** Secret type (ignored for ConfigMaps). */
  type?: string | undefined;
  labels?: Readonly<Record<string, string>> | undefined;
  annotations?: Readonly<Record<string, string>> | undefined;
}

/**
 * The per-mirror HMAC key: HMAC-SHA256(hubSecret, context || mirrorUid). Only the hub computes
 * content hashes, so only the hub needs hubSecret; the agent compares strings.
 */
export function deriveHashKey(hubSecret: string | Uint8Array, mirrorUid: string): Buffer {
  return createHmac('sha256', hubSecret).update(`mirrorhub content-hash v1\0${mirrorUid}`).digest();
}

/** Keyed content hash (truncated hex HMAC-SHA256 over the canonical JSON of the input). */
export function contentHash(key: string | Uint8Array, input: HashInput): string {
  const canonical = canonicalJson({
    v: 1,
    kind: input.targetKind,
    type: input.targetKind === 'Secret' ? (input.type ?? 'Opaque') : null,
    data: input.data,
    binaryKeys: [...new Set(input.binaryKeys ?? [])].sort(),
    labels: input.labels ?? {},
    annotations: input.annotations ?? {},
  });
  return createHmac('sha256', key)
    .update(canonical)
    .digest()
    .subarray(0, CONTENT_HASH_BYTES)
    .toString('hex');
}

/**
 * JSON with object keys sorted at every depth and no whitespace, so equal values always give
 * equal strings. `undefined` members are dropped (as JSON.stringify does); arrays keep order.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) {
      throw new TypeError('canonicalJson: non-finite number');
    }
    return JSON.stringify(value) ?? 'null';
  }
  if (Array.isArray(value)) {
    return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  }
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}
