import { describe, expect, it } from 'vitest';

import type { MirrorStatus } from '@mirrorhub/shared/api/index';
import {
  findCondition,
  reasonClass,
  setCondition,
  TERMINAL_REASONS,
} from '@mirrorhub/shared/mirror/index';

import { CLUSTER_REASON } from '../clusters/plan.js';
import type { ReadyReason } from '../vault/decide.js';
import { REASON, withMirrorProgress, type SourceObservation } from './status.js';

const t0 = new Date('2026-01-01T00:00:00Z');
const t1 = new Date('2026-01-01T00:05:00Z');
const found: SourceObservation = { state: 'found', object: { kind: 'Secret' } as never };

function statusWith(
  ready: { status: 'True' | 'False'; reason: string },
  extra: Partial<MirrorStatus> = {},
): MirrorStatus {
  return {
    ...extra,
    conditions: setCondition(
      [],
      { type: 'Ready', ...ready, message: 'why', observedGeneration: 3 },
      t0,
    ),
  };
}

function states(s: MirrorStatus) {
  const r = findCondition(s.conditions, 'Reconciling');
  const st = findCondition(s.conditions, 'Stalled');
  return {
    reconciling: r ? `${r.status}:${r.reason}` : undefined,
    stalled: st ? `${st.status}:${st.reason}` : undefined,
  };
}

describe('every reason the hub emits is classified terminal or not', () => {
  // A new reason added to one of these lists fails here until shared/src/mirror/status.ts
  // REASON_CLASS says whether it is terminal (and docs/gitops.md lists it).
  const vaultReasons: Record<ReadyReason, true> = {
    Authenticated: true,
    InvalidConfig: true,
    TLSError: true,
    Unavailable: true,
    LoginFailed: true,
  };
  it.each([
    ...Object.values(REASON),
    ...Object.values(CLUSTER_REASON),
    ...Object.keys(vaultReasons),
    'Deleting',
  ])('%s', (reason) => {
    expect(reasonClass(reason)).toBeDefined();
  });

  it('names the terminal ones', () => {
    expect(TERMINAL_REASONS).toEqual([
      'Conflict',
      'Forbidden',
      'InvalidConfig',
      'InvalidSpec',
      'LoginFailed',
      'PolicyDenied',
      'SignatureInvalid',
      'TLSError',
      'Unauthorized',
      'VaultPermissionDenied',
    ]);
  });
});

describe('withMirrorProgress', () => {
  const cluster = (e: Record<string, unknown>) => ({ name: 'a', ...e });
  it.each<[string, MirrorStatus, SourceObservation, ReturnType<typeof states>]>([
    ['Active', statusWith({ status: 'True', reason: 'Synced' }), found, {} as never],
    [
      'rolling out',
      statusWith({ status: 'False', reason: 'Progressing' }),
      found,
      { reconciling: 'True:Progressing', stalled: undefined },
    ],
    [
      'source missing',
      statusWith({ status: 'False', reason: 'SourceNotFound' }),
      { state: 'missing' },
      { reconciling: 'True:SourceNotFound', stalled: undefined },
    ],
    [
      'invalid spec',
      statusWith({ status: 'False', reason: 'InvalidSpec' }),
      found,
      { reconciling: undefined, stalled: 'True:InvalidSpec' },
    ],
    [
      'Vault refuses the path',
      statusWith({ status: 'False', reason: 'SourceUnreadable' }),
      { state: 'unreadable', error: 'permission denied', denied: true },
      { reconciling: undefined, stalled: 'True:VaultPermissionDenied' },
    ],
    [
      'Vault unavailable',
      statusWith({ status: 'False', reason: 'SourceUnreadable' }),
      { state: 'unreadable', error: 'connection refused' },
      { reconciling: 'True:SourceUnreadable', stalled: undefined },
    ],
    [
      'suspended',
      statusWith({ status: 'False', reason: 'Suspended' }),
      found,
      { reconciling: undefined, stalled: undefined },
    ],
    [
      'every namespace refused by policy',
      statusWith(
        { status: 'False', reason: 'SyncError' },
        {
          counts: { clusters: 1, namespaces: 2, synced: 0, failed: 0, conflicts: 0, denied: 2 },
          clusters: [cluster({ phase: 'Error', namespaces: 2, synced: 0, denied: 2 })],
        },
      ),
      found,
      { reconciling: undefined, stalled: 'True:PolicyDenied' },
    ],
    [
      'a conflict left, the rest synced',
      statusWith(
        { status: 'False', reason: 'Degraded' },
        {
          counts: { clusters: 1, namespaces: 2, synced: 1, failed: 0, conflicts: 1 },
          clusters: [cluster({ phase: 'Degraded', namespaces: 2, synced: 1, conflicts: 1 })],
        },
      ),
      found,
      { reconciling: undefined, stalled: 'True:Conflict' },
    ],
    [
      'refused in one cluster, another still copying',
      statusWith(
        { status: 'False', reason: 'Degraded' },
        {
          counts: { clusters: 2, namespaces: 4, synced: 0, failed: 0, conflicts: 0, denied: 2 },
          clusters: [
            cluster({ phase: 'Error', namespaces: 2, synced: 0, denied: 2 }),
            cluster({ name: 'b', phase: 'Pending', namespaces: 2, synced: 0 }),
          ],
        },
      ),
      found,
      { reconciling: 'True:Degraded', stalled: undefined },
    ],
    [
      'a failed write is retried',
      statusWith(
        { status: 'False', reason: 'SyncError' },
        {
          counts: { clusters: 1, namespaces: 2, synced: 0, failed: 1, conflicts: 0, denied: 1 },
          clusters: [cluster({ phase: 'Error', namespaces: 2, synced: 0, failed: 1, denied: 1 })],
        },
      ),
      found,
      { reconciling: 'True:SyncError', stalled: undefined },
    ],
  ])('%s', (_name, status, source, expected) => {
    const out = withMirrorProgress(status, { source, generation: 3, now: t0 });
    expect(states(out)).toEqual({ reconciling: undefined, stalled: undefined, ...expected });
    for (const c of out.conditions ?? []) expect(c.observedGeneration).toBe(3);
  });

  it('keeps lastTransitionTime while the state stays, so a steady mirror is not rewritten', () => {
    const first = withMirrorProgress(statusWith({ status: 'False', reason: 'SourceNotFound' }), {
      source: { state: 'missing' },
      generation: 3,
      now: t0,
    });
    const again = withMirrorProgress(first, {
      source: { state: 'missing' },
      generation: 3,
      now: t1,
    });
    expect(again.conditions).toEqual(first.conditions);
  });

  it('moves lastTransitionTime when Reconciling gives way to Stalled', () => {
    const first = withMirrorProgress(statusWith({ status: 'False', reason: 'Progressing' }), {
      source: found,
      generation: 3,
      now: t0,
    });
    const next = withMirrorProgress(
      {
        ...first,
        conditions: setCondition(
          first.conditions,
          {
            type: 'Ready',
            status: 'False',
            reason: 'InvalidSpec',
            message: 'bad',
            observedGeneration: 4,
          },
          t1,
        ),
      },
      { source: found, generation: 4, now: t1 },
    );
    expect(findCondition(next.conditions, 'Reconciling')).toBeUndefined();
    expect(findCondition(next.conditions, 'Stalled')).toMatchObject({
      status: 'True',
      reason: 'InvalidSpec',
      message: 'bad',
      observedGeneration: 4,
      lastTransitionTime: '2026-01-01T00:05:00Z',
    });
  });
});
