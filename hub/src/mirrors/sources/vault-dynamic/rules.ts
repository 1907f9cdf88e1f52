// Dynamic Vault sources (source.vault.dynamic), decided with no I/O: when to read new
// credentials, when to renew, when to rotate ahead of expiry, which old leases are due for
// revocation, and how a lease is recorded in the hub's Secret mirrorhub-leases. dynamic.ts acts.
//
// Rules (docs/vault.md, "Dynamic secrets"):
// - Renew, don't re-mint: while a lease can be renewed far enough, every poll renews it and the
//   credentials stay the same.
// - Rotate ahead of expiry: when the lease cannot last beyond the rotation window (the old
//   credentials' grace + two poll periods, so a failed poll or two still leaves the workload its
//   whole grace), new credentials are read and delivered, and the old lease is revoked after the
//   grace (or when it expires, whichever is first).
// - A lease that expired anyway (Vault was down too long) or that Vault no longer knows: new
//   credentials at once. Whether a renewable lease is still alive is Vault's to say: it is renewed
//   even when the recorded expiry has passed (the record keeps the expiry of the issue, not of
//   every renewal, so it is written only when a lease changes).
import type { VaultSourceRef } from '@mirrorhub/shared/api/index';
import { connectionKey } from '../../../vault/decide.js';

/** What the hub keeps of one mirror's dynamic source (a secret: lease id and credentials). */
export interface LeaseRecord {
  /** connectionKey|path the lease was read from: another source means another lease. */
  source: string;
  leaseId: string;
  data: Record<string, string>;
  renewable: boolean;
  /** Epoch ms. */
  issuedAt: number;
  expiresAt: number;
  /** Earlier leases waiting to be revoked. */
  retiring: RetiringLease[];
}

export interface RetiringLease {
  leaseId: string;
  /**
   * connectionKey|path the lease was issued through (as LeaseRecord.source): it is revoked
   * through that connection, not the mirror's current one, which may be another Vault. Records
   * written before it existed lack it: their lease goes through the record's connection.
   */
  source?: string;
  /** Epoch ms: revoke from then on. */
  revokeAt: number;
  expiresAt: number;
  /** The last revocation attempt failed with this (retried at every poll). */
  error?: string;
}

export type DynamicPolicy = NonNullable<VaultSourceRef['dynamic']>;

export function leaseSource(ref: VaultSourceRef): string {
  return `${connectionKey(ref.connection)}|${ref.path}`;
}

/** The connection and path of a recorded lease (the inverse of leaseSource). */
export function parseLeaseSource(source: string): {
  connection: VaultSourceRef['connection'];
  path: string;
} {
  const bar = source.indexOf('|');
  const [kind, a, b] = source.slice(0, bar).split('/');
  const path = source.slice(bar + 1);
  return kind === 'VaultConnection'
    ? { connection: { kind, namespace: a ?? '', name: b ?? '' }, path }
    : { connection: { kind: 'ClusterVaultConnection', name: a ?? '' }, path };
}

/**
 * Seconds before expiry at which the lease is rotated: the grace plus two poll periods, but at
 * most half the renewal increment (a lease renewed by 1 h with a 2 h window would rotate at
 * every poll).
 */
export function rotationWindowMs(policy: DynamicPolicy, periodMs: number): number {
  return Math.min(
    policy.revokeGraceSeconds * 1000 + 2 * periodMs,
    (policy.renewIncrementSeconds * 1000) / 2,
  );
}

export type LeaseStep =
  | { action: 'issue'; why: 'first' | 'expired' | 'source-changed' }
  | { action: 'renew' }
  | { action: 'rotate' }
  /** Not renewable and not due yet: nothing to ask Vault. */
  | { action: 'wait' };

/** What a poll does with the mirror's lease. */
export function nextStep(
  record: LeaseRecord | undefined,
  ref: VaultSourceRef,
  now: number,
  periodMs: number,
): LeaseStep {
  if (!record) return { action: 'issue', why: 'first' };
  if (record.source !== leaseSource(ref)) return { action: 'issue', why: 'source-changed' };
  // Renewable: Vault says how long it lasts (a record read back after a restart holds the expiry
  // it was issued with, not the renewals since); afterRenewal decides whether to rotate.
  if (record.renewable) return { action: 'renew' };
  if (now >= record.expiresAt) return { action: 'issue', why: 'expired' };
  const policy = ref.dynamic!;
  if (record.expiresAt - now <= rotationWindowMs(policy, periodMs)) return { action: 'rotate' };
  return { action: 'wait' };
}

/** After a renewal granted `grantedSeconds`: the new expiry, and whether to rotate now anyway. */
export function afterRenewal(
  record: LeaseRecord,
  grantedSeconds: number,
  now: number,
  policy: DynamicPolicy,
  periodMs: number,
): { expiresAt: number; rotate: boolean } {
  const expiresAt = now + grantedSeconds * 1000;
  return { expiresAt, rotate: expiresAt - now <= rotationWindowMs(policy, periodMs) };
}

/** The record after new credentials replaced `old` (which retires, if there was one). */
export function rotated(
  old: LeaseRecord | undefined,
  fresh: Omit<LeaseRecord, 'retiring'>,
  now: number,
  policy: DynamicPolicy,
  /** Revoke the old lease at once (its source changed, or it is already unusable). */
  immediately = false,
): LeaseRecord {
  const retiring = [...(old?.retiring ?? [])];
  if (old && old.expiresAt > now) {
    retiring.push({
      leaseId: old.leaseId,
      source: old.source,
      revokeAt: immediately ? now : Math.min(now + policy.revokeGraceSeconds * 1000, old.expiresAt),
      expiresAt: old.expiresAt,
    });
  }
  return { ...fresh, retiring };
}

/**
 * The connection and path a retiring lease is revoked through: where it was issued, or (a record
 * from before retiring leases named it) the record's own source, which issued it unless the
 * connection changed in between.
 */
export function retiringSource(r: RetiringLease, record: Pick<LeaseRecord, 'source'>): string {
  return r.source ?? record.source;
}

/** Old leases due for revocation now (an expired one too: revoking it is harmless). */
export function dueRevocations(record: LeaseRecord, now: number): RetiringLease[] {
  return record.retiring.filter((r) => now >= r.revokeAt);
}

/** When the poller must wake up next: the period, or earlier for a revocation or the expiry. */
export function nextWakeMs(record: LeaseRecord | undefined, now: number, periodMs: number): number {
  let next = periodMs;
  for (const r of record?.retiring ?? []) {
    // One that failed is tried again at the next poll, not in a loop.
    if (r.error === undefined) next = Math.min(next, Math.max(0, r.revokeAt - now));
  }
  if (record) {
    const policyless = record.expiresAt - now; // never sleep past the expiry
    next = Math.min(next, Math.max(0, policyless));
  }
  return next;
}

// ---- the Secret mirrorhub-leases ----------------------------------------------------------------

/**
 * The data key of a mirror in mirrorhub-leases: `<kind>.<namespace>.<name>` (Secret keys allow
 * `[-._a-zA-Z0-9]`; kind and namespace hold no dots, so the name may).
 */
export function recordKey(mirrorKey: string): string {
  return mirrorKey.replace(/\//g, '.');
}

export function encodeRecord(r: LeaseRecord): string {
  return Buffer.from(JSON.stringify(r), 'utf8').toString('base64');
}

/** A stored record, or undefined when it is not one (a hand edit): the lease is then read anew. */
export function decodeRecord(b64: string | undefined): LeaseRecord | undefined {
  if (!b64) return undefined;
  try {
    const r = JSON.parse(Buffer.from(b64, 'base64').toString('utf8')) as Partial<LeaseRecord>;
    if (
      typeof r.leaseId !== 'string' ||
      typeof r.source !== 'string' ||
      typeof r.expiresAt !== 'number' ||
      typeof r.issuedAt !== 'number' ||
      !r.data ||
      typeof r.data !== 'object'
    ) {
      return undefined;
    }
    return {
      source: r.source,
      leaseId: r.leaseId,
      data: r.data,
      renewable: r.renewable === true,
      issuedAt: r.issuedAt,
      expiresAt: r.expiresAt,
      retiring: Array.isArray(r.retiring)
        ? r.retiring
            .filter(
              (x): x is RetiringLease =>
                typeof x?.leaseId === 'string' &&
                typeof x.revokeAt === 'number' &&
                typeof x.expiresAt === 'number',
            )
            .map(({ source, ...x }) => (typeof source === 'string' ? { ...x, source } : x))
        : [],
    };
  } catch {
    return undefined;
  }
}
