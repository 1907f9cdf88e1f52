// What a Vault poll means for the mirrors reading the path, with no I/O: the observation a
// failure becomes, Vault data as a Secret's, and a digest that says whether anything changed.
// Shared by the KV poller (poller.ts) and the dynamic sources (../vault-dynamic/).
import { crypto } from '@mirrorhub/shared/kit/runtime/builtins';
import type { VaultSourceRef, VaultValueEncoding } from '@mirrorhub/shared/api/index';
import type { SourceObject } from '@mirrorhub/shared/mirror/index';
import { errorMessage } from '@mirrorhub/shared/kit/runtime/index';
import { ConnectionConfigError, isTransient, PathRefused } from '../../../vault/decide.js';
import type { SourceObservation } from '../../status.js';

const { createHash } = crypto;

/**
 * What a failed poll means for the mirrors reading the source: an unreadable observation, `denied`
 * (the mirror is in Error) unless a retry can fix it (`retry`: the mirror keeps its copies,
 * Degraded, and the poller retries with backoff).
 */
export function failedObservation(
  err: unknown,
  connection: VaultSourceRef['connection'],
): { observation: SourceObservation; retry: boolean } {
  const retry = isTransient(err);
  const error =
    err instanceof ConnectionConfigError
      ? `${connection.kind} ${connection.name}: ${err.message}`
      : err instanceof PathRefused
        ? err.message
        : `Vault: ${errorMessage(err)}`;
  return {
    observation: { state: 'unreadable', error, ...(retry ? {} : { denied: true }) },
    retry,
  };
}

/**
 * Vault data the source's encoding cannot read (source.vault.encoding Base64). Not a Vault
 * failure: the connection is fine, the mirror is in Error until the data or the spec changes, and
 * the copies are kept. The message names keys, never values.
 */
export class EncodingError extends Error {}

/**
 * Standard base64 with its padding, as Go's encoding/json writes a []byte (KTS mirrors' writes).
 * Line breaks are ignored, as Go's decoder ignores them; anything else that is not base64 is
 * refused, where Node's decoder would silently skip it and hand over corrupted bytes.
 */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The bytes `text` encodes in base64, or undefined when it is not base64. */
export function decodeBase64(text: string): Buffer | undefined {
  const compact = text.replace(/[\r\n]/g, '');
  return BASE64.test(compact) ? Buffer.from(compact, 'base64') : undefined;
}

/**
 * Vault data as a Secret (values base64 encoded, as a Secret's data is). Plain: each value's text
 * (non-strings as JSON). Base64 (KTS mirrors' encoding): each value is the base64 of the bytes;
 * throws an EncodingError naming every key that is not.
 */
export function secretOf(
  raw: Record<string, unknown>,
  encoding: VaultValueEncoding = 'Plain',
): SourceObject {
  const data: Record<string, string> = {};
  if (encoding === 'Base64') {
    const bad: string[] = [];
    for (const [k, v] of Object.entries(ktsLayout(raw))) {
      const bytes = typeof v === 'string' ? decodeBase64(v) : undefined;
      if (bytes === undefined) bad.push(k);
      else data[k] = bytes.toString('base64');
    }
    if (bad.length > 0) {
      const one = bad.length === 1;
      throw new EncodingError(
        `key${one ? '' : 's'} ${bad.map((k) => JSON.stringify(k)).join(', ')} of the Vault secret ${one ? 'is' : 'are'} not base64, which source.vault.encoding Base64 (KTS mirrors' encoding) expects: write ${one ? 'it' : 'them'} base64-encoded, or set encoding Plain if the secret holds plain text`,
      );
    }
    return { type: 'Opaque', data };
  }
  for (const [k, v] of Object.entries(raw)) {
    const text = typeof v === 'string' ? v : JSON.stringify(v);
    data[k] = Buffer.from(text, 'utf8').toString('base64');
  }
  return { type: 'Opaque', data };
}

/**
 * KTS mirrors writes `{"data": {...}}` to the path it is given: on KV v2 that is the secret's data,
 * on KV v1 a secret whose one key `data` holds the values, which KTS reads back from under that
 * key. Such a secret is read the way KTS reads it.
 */
function ktsLayout(raw: Record<string, unknown>): Record<string, unknown> {
  const keys = Object.keys(raw);
  const inner = raw['data'];
  if (keys.length === 1 && typeof inner === 'object' && inner !== null && !Array.isArray(inner)) {
    return inner as Record<string, unknown>;
  }
  return raw;
}

/**
 * What mirrors plan from, as a digest (never logged; data only hashed): equal digests mean the
 * mirrors need not be told. KV v1 has no versions, so a read is a change only when it differs.
 */
export function fingerprint(o: SourceObservation): string {
  if (o.state === 'found') {
    const h = createHash('sha256');
    for (const k of Object.keys(o.object.data ?? {}).sort()) {
      h.update(k)
        .update('\0')
        .update(o.object.data?.[k] ?? '')
        .update('\0');
    }
    return `found:${h.digest('hex')}`;
  }
  if (o.state === 'missing') return 'missing';
  return `unreadable:${o.denied ? 'denied' : ''}:${o.error}`;
}
