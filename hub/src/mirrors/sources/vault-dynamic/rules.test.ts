import { describe, expect, it } from 'vitest';
import type { VaultSourceRef } from '@mirrorhub/shared/api/index';
import {
  afterRenewal,
  decodeRecord,
  dueRevocations,
  encodeRecord,
  leaseSource,
  nextStep,
  nextWakeMs,
  parseLeaseSource,
  recordKey,
  retiringSource,
  rotated,
  rotationWindowMs,
  type LeaseRecord,
} from './rules.js';

const S = 1000;
const ref: VaultSourceRef = {
  kind: 'Vault',
  connection: { kind: 'ClusterVaultConnection', name: 'vault' },
  path: 'db/creds/app',
  dynamic: { method: 'GET', renewIncrementSeconds: 3600, revokeGraceSeconds: 30 },
};
const PERIOD = 60 * S;
const record = (over: Partial<LeaseRecord> = {}): LeaseRecord => ({
  source: leaseSource(ref),
  leaseId: 'db/creds/app/abc',
  data: { username: 'v-app-1', password: 'pw' },
  renewable: true,
  issuedAt: 0,
  expiresAt: 3600 * S,
  retiring: [],
  ...over,
});

describe('rotationWindowMs', () => {
  it('is the grace plus two poll periods', () => {
    expect(rotationWindowMs(ref.dynamic!, PERIOD)).toBe(150 * S);
  });
  it('is at most half the renewal increment', () => {
    expect(
      rotationWindowMs(
        { ...ref.dynamic!, renewIncrementSeconds: 120, revokeGraceSeconds: 300 },
        PERIOD,
      ),
    ).toBe(60 * S);
  });
});

describe('nextStep', () => {
  it.each<[string, LeaseRecord | undefined, number, string]>([
    ['no lease yet: issue', undefined, 0, 'issue'],
    ['a renewable lease far from expiry: renew', record(), 100 * S, 'renew'],
    ['renewable, within the window: renew first (Vault knows best)', record(), 3500 * S, 'renew'],
    ['renewable, past the recorded expiry: renew first', record(), 3600 * S, 'renew'],
    ['not renewable, expired: issue', record({ renewable: false }), 3600 * S, 'issue'],
    ['not renewable, not due: wait', record({ renewable: false }), 100 * S, 'wait'],
    ['not renewable, due: rotate', record({ renewable: false }), 3500 * S, 'rotate'],
    ['read from another path: issue', record({ source: 'x|y' }), 100 * S, 'issue'],
  ])('%s', (_, r, now, action) => {
    expect(nextStep(r, ref, now, PERIOD).action).toBe(action);
  });
});

describe('afterRenewal', () => {
  it('moves the expiry; rotates when Vault granted less than the window (max TTL)', () => {
    expect(afterRenewal(record(), 3600, 10 * S, ref.dynamic!, PERIOD)).toEqual({
      expiresAt: 3610 * S,
      rotate: false,
    });
    expect(afterRenewal(record(), 100, 10 * S, ref.dynamic!, PERIOD)).toEqual({
      expiresAt: 110 * S,
      rotate: true,
    });
  });
});

describe('rotated', () => {
  const fresh = { ...record({ leaseId: 'new', issuedAt: 500 * S, expiresAt: 4100 * S }) };
  it('retires the old lease after the grace, never later than its expiry', () => {
    const r = rotated(record(), fresh, 500 * S, ref.dynamic!);
    expect(r.leaseId).toBe('new');
    expect(r.retiring).toEqual([
      {
        leaseId: 'db/creds/app/abc',
        source: leaseSource(ref),
        revokeAt: 530 * S,
        expiresAt: 3600 * S,
      },
    ]);
    const late = rotated(record({ expiresAt: 510 * S }), fresh, 500 * S, ref.dynamic!);
    expect(late.retiring[0]!.revokeAt).toBe(510 * S);
  });
  it('revokes at once when asked (lost or moved), and drops an expired one', () => {
    expect(rotated(record(), fresh, 500 * S, ref.dynamic!, true).retiring[0]!.revokeAt).toBe(
      500 * S,
    );
    expect(rotated(record({ expiresAt: 400 * S }), fresh, 500 * S, ref.dynamic!).retiring).toEqual(
      [],
    );
  });
  it('keeps older retiring leases', () => {
    const old = record({ retiring: [{ leaseId: 'older', revokeAt: 10, expiresAt: 20 }] });
    expect(rotated(old, fresh, 500 * S, ref.dynamic!).retiring.map((r) => r.leaseId)).toEqual([
      'older',
      'db/creds/app/abc',
    ]);
  });
});

describe('the issuing connection of a retiring lease', () => {
  const moved: VaultSourceRef = {
    ...ref,
    connection: { kind: 'ClusterVaultConnection', name: 'b' },
  };
  it('is recorded with it, so a switch of connection revokes it where it was issued', () => {
    const fresh = { ...record({ source: leaseSource(moved), leaseId: 'new' }) };
    const r = rotated(record(), fresh, 500 * S, ref.dynamic!, true);
    expect(r.source).toBe(leaseSource(moved));
    expect(retiringSource(r.retiring[0]!, r)).toBe(leaseSource(ref));
    expect(parseLeaseSource(retiringSource(r.retiring[0]!, r)).connection.name).toBe('vault');
    expect(decodeRecord(encodeRecord(r))).toEqual(r);
  });
  it("an old record without it is still read, its leases going through the record's connection", () => {
    const old = Buffer.from(
      JSON.stringify({
        ...record(),
        retiring: [{ leaseId: 'older', revokeAt: 10, expiresAt: 20 }],
      }),
    ).toString('base64');
    const r = decodeRecord(old)!;
    expect(r.retiring).toEqual([{ leaseId: 'older', revokeAt: 10, expiresAt: 20 }]);
    expect(retiringSource(r.retiring[0]!, r)).toBe(leaseSource(ref));
  });
});

describe('revocations and wake-ups', () => {
  const r = record({
    retiring: [
      { leaseId: 'a', revokeAt: 100 * S, expiresAt: 200 * S },
      { leaseId: 'b', revokeAt: 300 * S, expiresAt: 400 * S },
    ],
  });
  it('revokes what is due', () => {
    expect(dueRevocations(r, 150 * S).map((x) => x.leaseId)).toEqual(['a']);
  });
  it('wakes up for the next revocation, the expiry, or the period', () => {
    expect(nextWakeMs(r, 50 * S, PERIOD)).toBe(50 * S);
    expect(nextWakeMs(r, 250 * S, PERIOD)).toBe(0); // "a" is overdue
    const failed = { ...r, retiring: [{ ...r.retiring[0]!, error: 'Vault: down' }] };
    expect(nextWakeMs(failed, 250 * S, PERIOD)).toBe(PERIOD); // retried at the next poll
    expect(nextWakeMs(undefined, 0, PERIOD)).toBe(PERIOD);
    expect(nextWakeMs(record({ expiresAt: 10 * S }), 0, PERIOD)).toBe(10 * S);
  });
});

describe('the stored record', () => {
  it('round-trips, and a hand-edited one reads as none', () => {
    expect(decodeRecord(encodeRecord(record()))).toEqual(record());
    expect(decodeRecord(Buffer.from('{"leaseId":1}').toString('base64'))).toBeUndefined();
    expect(decodeRecord('not base64 json')).toBeUndefined();
    expect(decodeRecord(undefined)).toBeUndefined();
  });
  it('keys are Secret data keys; sources parse back to their connection', () => {
    expect(recordKey('SecretMirror/team-a/db.creds')).toBe('SecretMirror.team-a.db.creds');
    expect(recordKey('ClusterSecretMirror//db')).toBe('ClusterSecretMirror..db');
    expect(parseLeaseSource(leaseSource(ref))).toEqual({
      connection: { kind: 'ClusterVaultConnection', name: 'vault' },
      path: 'db/creds/app',
    });
    const ns: VaultSourceRef = {
      ...ref,
      connection: { kind: 'VaultConnection', namespace: 'team-a', name: 'v' },
    };
    expect(parseLeaseSource(leaseSource(ns)).connection).toEqual({
      kind: 'VaultConnection',
      namespace: 'team-a',
      name: 'v',
    });
  });
});
