// Comparing and patching status objects: skip a patch when only timestamps would change, and
// build the JSON merge patch from what a controller last wrote to what it wants now.

/** Fields that only say "when": a status that differs only in these needs no patch. */
export const TIME_FIELDS: readonly string[] = ['lastTransitionTime', 'lastSyncTime'];

/**
 * Deep equality that skips the given keys at every depth (by default TIME_FIELDS) and treats a
 * member set to undefined like a missing one. Arrays compare in order. Use it to decide whether
 * to patch status: `if (!equalIgnoringTime(observed.status, desired)) patch(...)`. Keep the
 * observed timestamps in the patch when nothing else changed, so a steady object gets no write.
 */
export function equalIgnoringTime(
  a: unknown,
  b: unknown,
  ignore: readonly string[] = TIME_FIELDS,
): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((v, i) => equalIgnoringTime(v, b[i], ignore));
  }
  const skip = new Set(ignore);
  const keys = (o: object) =>
    Object.entries(o)
      .filter(([k, v]) => v !== undefined && !skip.has(k))
      .map(([k]) => k);
  const ka = keys(a);
  const kb = new Set(keys(b));
  if (ka.length !== kb.size) return false;
  return ka.every(
    (k) =>
      kb.has(k) &&
      equalIgnoringTime(
        (a as Record<string, unknown>)[k],
        (b as Record<string, unknown>)[k],
        ignore,
      ),
  );
}

/**
 * A JSON merge patch from `prev` to `next`: every field of next, and null for every field (at
 * any depth of plain objects) that next no longer has. Arrays are replaced as a whole.
 */
export function mergePatchBody(prev: unknown, next: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const p = isPlain(prev) ? prev : {};
  const n = isPlain(next) ? next : {};
  for (const [k, v] of Object.entries(n)) {
    if (v === undefined) continue;
    out[k] = isPlain(v) && isPlain(p[k]) ? mergePatchBody(p[k], v) : v;
  }
  for (const k of Object.keys(p)) if (!(k in out)) out[k] = null;
  return out;
}

function isPlain(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
