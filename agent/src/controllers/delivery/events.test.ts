import { describe, expect, it } from 'vitest';
import type { MirrorDeliveryStatus } from '@mirrorhub/shared/api/types.gen';
import { deliveryEvents } from './events.js';

const active: MirrorDeliveryStatus = { phase: 'Active', message: '3/3 namespaces synced' };
const degraded: MirrorDeliveryStatus = {
  phase: 'Degraded',
  message: '2/3 namespaces synced; 1 failed; first: team-c: 403 Forbidden',
};
const error = (message: string): MirrorDeliveryStatus => ({ phase: 'Error', message });
const denied = (n: number, phase: MirrorDeliveryStatus['phase'] = 'Degraded') => ({
  phase,
  message: `0/${n} namespaces synced; ${n} denied by policy; first: kube-system: refused`,
  counts: { namespaces: n, synced: 0, failed: 0, conflicts: 0, denied: n },
  namespaces: [
    { name: 'kube-system', state: 'PolicyDenied' as const, message: 'deniedNamespaces: kube-*' },
  ],
});

/** `type reason: message` per Event. */
const described = (before: MirrorDeliveryStatus | undefined, next: MirrorDeliveryStatus) =>
  deliveryEvents(before, next).map((e) => `${e.type} ${e.reason}: ${e.message}`);

describe('deliveryEvents', () => {
  it.each<[string, MirrorDeliveryStatus | undefined, MirrorDeliveryStatus, string[]]>([
    ['first sync', undefined, active, ['Normal Synced: 3/3 namespaces synced']],
    ['steady', active, { ...active, lastSyncTime: '2026-01-01T00:00:00Z' }, []],
    ['still Pending', undefined, { phase: 'Pending', message: '0/3 namespaces synced' }, []],
    ['no phase', undefined, {}, []],
    ['degrading', active, degraded, [`Warning Degraded: ${degraded.message}`]],
    ['still degraded, another message', degraded, { ...degraded, message: 'other' }, []],
    ['recovering', degraded, active, ['Normal Synced: 3/3 namespaces synced']],
    [
      'an error',
      active,
      error('payload Secret "p" not found'),
      ['Warning Error: payload Secret "p" not found'],
    ],
    ['another error', error('a'), error('b'), ['Warning Error: b']],
    ['the same error', error('a'), error('a'), []],
    [
      'a bad signature',
      active,
      error(
        'SignatureInvalid: nothing is written for this delivery: MirrorDelivery d: no signature',
      ),
      [
        'Warning SignatureInvalid: SignatureInvalid: nothing is written for this delivery: MirrorDelivery d: no signature',
      ],
    ],
    [
      'a replayed delivery',
      active,
      error('Replayed: nothing is written for this delivery: MirrorDelivery d: older'),
      ['Warning Replayed: Replayed: nothing is written for this delivery: MirrorDelivery d: older'],
    ],
    [
      'refused as a whole',
      undefined,
      error('PolicyDenied (policy.secretTypes): type kubernetes.io/tls is not allowed'),
      [
        'Warning PolicyDenied: PolicyDenied (policy.secretTypes): type kubernetes.io/tls is not allowed',
      ],
    ],
    ['an Error without a message', active, { phase: 'Error' }, ['Warning Error: Error']],
  ])('%s', (_, before, next, events) => {
    expect(described(before, next)).toEqual(events);
  });

  it('says when namespaces are first refused by policy, with the first one', () => {
    expect(described(active, denied(1))).toEqual([
      "Warning PolicyDenied: 1 namespace is refused by this cluster's policy; first: kube-system: deniedNamespaces: kube-*",
      `Warning Degraded: ${denied(1).message}`,
    ]);
    expect(described(denied(1), denied(2))).toEqual([]); // refusals already announced
    expect(described(degraded, denied(2))[0]).toMatch(
      /^Warning PolicyDenied: 2 namespaces are refused/,
    );
  });
});
