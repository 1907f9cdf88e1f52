// What a Vault poll means for the mirrors reading the path, with no I/O: the observation a
// failure becomes, Vault data as a Secret's, and a digest that says whether anything changed.
// Shared by the KV poller (poller.ts) and the dynamic sources (../vault-dynamic/).
import { crypto } from '@mirrorhub/shared/kit/runtime/builtins';
import type { VaultSourceRef } from '@mirrorhub/shared/api/index';
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

/** Vault data as a Secret: values as strings (non-strings as JSON), base64 encoded. */
export function secretOf(raw: Record<string, unknown>): SourceObject {
  const data: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) {
    const text = typeof v === 'string' ? v : JSON.stringify(v);
    data[k] = Buffer.from(text, 'utf8').toString('base64');
  }
  return { type: 'Opaque', data };
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
