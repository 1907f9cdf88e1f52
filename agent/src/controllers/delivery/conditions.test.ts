import { describe, expect, it } from 'vitest';

import type { MirrorDeliveryStatus } from '@mirrorhub/shared/api/types.gen';
import { findCondition, reasonClass } from '@mirrorhub/shared/mirror/index';

import { deliveryReadyReason, withDeliveryConditions, type DeliveryStop } from './conditions.js';

const none: DeliveryStop = {
  signatureInvalid: false,
  replayed: false,
  memory: false,
  suspended: false,
  invalidSpec: false,
  payloadMissing: false,
  refused: false,
};
const t0 = new Date('2026-01-01T00:00:00Z');
const t1 = new Date('2026-01-01T00:05:00Z');
const counts = (c: Partial<NonNullable<MirrorDeliveryStatus['counts']>>) => ({
  namespaces: 2,
  synced: 0,
  failed: 0,
  conflicts: 0,
  ...c,
});

// Every Ready reason a delivery can report, with what kstatus should make of it. A new reason
// in deliveryReadyReason needs a row here, and REASON_CLASS (shared) must classify it.
const cases: [
  string,
  MirrorDeliveryStatus,
  Partial<DeliveryStop>,
  'ready' | 'retrying' | 'terminal' | 'suspended',
][] = [
  ['Synced', { phase: 'Active', counts: counts({ synced: 2 }) }, {}, 'ready'],
  ['Progressing', { phase: 'Pending', counts: counts({}) }, {}, 'retrying'],
  ['SyncError', { phase: 'Degraded', counts: counts({ failed: 1, denied: 1 }) }, {}, 'retrying'],
  ['PolicyDenied', { phase: 'Degraded', counts: counts({ synced: 1, denied: 1 }) }, {}, 'terminal'],
  ['Conflict', { phase: 'Degraded', counts: counts({ synced: 1, conflicts: 1 }) }, {}, 'terminal'],
  ['SignatureInvalid', { phase: 'Error' }, { signatureInvalid: true }, 'terminal'],
  ['Replayed', { phase: 'Error' }, { replayed: true }, 'retrying'],
  ['SyncError', { phase: 'Error' }, { memory: true }, 'retrying'],
  ['Suspended', { phase: 'Active' }, { suspended: true }, 'suspended'],
  ['InvalidSpec', { phase: 'Error' }, { invalidSpec: true, payloadMissing: true }, 'terminal'],
  ['PayloadMissing', { phase: 'Error' }, { payloadMissing: true }, 'retrying'],
  ['PolicyDenied', { phase: 'Error' }, { refused: true }, 'terminal'],
];

describe('delivery conditions', () => {
  it.each(cases)('%s', (reason, status, stop, cls) => {
    expect(deliveryReadyReason(status, { ...none, ...stop })).toBe(reason);
    expect(reasonClass(reason)).toBe(cls);
    const out = withDeliveryConditions(
      status,
      { ...none, ...stop },
      {
        now: t0,
        generation: 4,
        previous: undefined,
      },
    );
    const ready = findCondition(out.conditions, 'Ready');
    expect(ready).toMatchObject({
      reason,
      status: cls === 'ready' ? 'True' : 'False',
      observedGeneration: 4,
    });
    expect(findCondition(out.conditions, 'Stalled')?.status).toBe(
      cls === 'terminal' ? 'True' : undefined,
    );
    expect(findCondition(out.conditions, 'Reconciling')?.status).toBe(
      cls === 'retrying' ? 'True' : undefined,
    );
  });

  it('a steady delivery keeps its conditions, lastTransitionTime included', () => {
    const status: MirrorDeliveryStatus = { phase: 'Pending', counts: counts({}) };
    const first = withDeliveryConditions(status, none, {
      now: t0,
      generation: 1,
      previous: undefined,
    });
    const again = withDeliveryConditions(status, none, {
      now: t1,
      generation: 1,
      previous: first.conditions,
    });
    expect(again.conditions).toEqual(first.conditions);
  });
});
