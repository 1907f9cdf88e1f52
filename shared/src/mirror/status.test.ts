import { describe, expect, it } from 'vitest';
import type { Condition, DeliveryNamespaceStatus } from '../api/types.gen.js';
import {
  findCondition,
  isConditionTrue,
  k8sTime,
  limitProblems,
  namespaceReport,
  phaseFromCounts,
  reportedNamespaces,
  removeCondition,
  setCondition,
  syncedSummary,
  isTerminalReason,
  reasonClass,
  TERMINAL_REASONS,
  withProgressConditions,
  type ConditionUpdate,
  type SyncCounts,
} from './status.js';
import { equalIgnoringTime, mergePatchBody } from '../kit/controller/patch.js';

const t0 = new Date('2026-01-01T00:00:00.123Z');
const t1 = new Date('2026-01-01T00:05:00.000Z');
const ready = (status: Condition['status'], extra: Partial<Condition> = {}): Condition => ({
  type: 'Ready',
  status,
  reason: 'Synced',
  message: '',
  lastTransitionTime: '2026-01-01T00:00:00Z',
  ...extra,
});

describe('setCondition', () => {
  it.each<[string, Condition[] | undefined, ConditionUpdate, Condition[], Date?]>([
    [
      'new condition: transition now, whole seconds',
      undefined,
      { type: 'Ready', status: 'True', reason: 'Synced' },
      [ready('True')],
      t0,
    ],
    [
      'same status: transition time kept, message updated',
      [ready('True')],
      { type: 'Ready', status: 'True', reason: 'Synced', message: '3/3', observedGeneration: 2 },
      [ready('True', { message: '3/3', observedGeneration: 2 })],
    ],
    [
      'status changes: transition time moves',
      [ready('True')],
      { type: 'Ready', status: 'False', reason: 'SourceNotFound', message: 'no Secret x' },
      [
        ready('False', {
          reason: 'SourceNotFound',
          message: 'no Secret x',
          lastTransitionTime: '2026-01-01T00:05:00Z',
        }),
      ],
    ],
    [
      'other conditions keep their place',
      [ready('True'), { ...ready('True'), type: 'SourceFound' }],
      { type: 'Ready', status: 'False', reason: 'Failed' },
      [
        ready('False', { reason: 'Failed', lastTransitionTime: '2026-01-01T00:05:00Z' }),
        { ...ready('True'), type: 'SourceFound' },
      ],
    ],
  ])('%s', (_, before, update, after, now = t1) => {
    const input = before ? structuredClone(before) : undefined;
    expect(setCondition(input, update, now)).toEqual(after);
    expect(input).toEqual(before); // not modified
  });

  it('find, isTrue, remove', () => {
    const list = [ready('True'), { ...ready('False'), type: 'SourceFound' }];
    expect(findCondition(list, 'SourceFound')?.status).toBe('False');
    expect(isConditionTrue(list, 'Ready')).toBe(true);
    expect(isConditionTrue(list, 'SourceFound')).toBe(false);
    expect(isConditionTrue(undefined, 'Ready')).toBe(false);
    expect(removeCondition(list, 'Ready').map((c) => c.type)).toEqual(['SourceFound']);
  });

  it('k8sTime drops fractions of a second', () => {
    expect(k8sTime(t0)).toBe('2026-01-01T00:00:00Z');
  });
});

describe('equalIgnoringTime', () => {
  const status = {
    phase: 'Active',
    lastSyncTime: '2026-01-01T00:00:00Z',
    counts: { namespaces: 2, synced: 2, failed: 0, conflicts: 0 },
    conditions: [ready('True')],
  };
  it.each<[string, unknown, unknown, boolean]>([
    ['identical', status, structuredClone(status), true],
    [
      'only lastSyncTime differs',
      status,
      { ...status, lastSyncTime: '2026-02-01T00:00:00Z' },
      true,
    ],
    [
      'only a transition time differs',
      status,
      { ...status, conditions: [ready('True', { lastTransitionTime: 'x' })] },
      true,
    ],
    ['undefined member equals a missing one', { ...status, message: undefined }, status, true],
    ['a count differs', status, { ...status, counts: { ...status.counts, synced: 1 } }, false],
    ['a condition status differs', status, { ...status, conditions: [ready('False')] }, false],
    ['a member is added', status, { ...status, message: 'x' }, false],
    ['array order matters', { a: [1, 2] }, { a: [2, 1] }, false],
    ['array vs object', { a: [] }, { a: {} }, false],
    ['null vs object', { a: null }, { a: {} }, false],
    ['nothing vs empty', undefined, {}, false],
  ])('%s -> %s', (_, a, b, expected) => {
    expect(equalIgnoringTime(a, b)).toBe(expected);
    expect(equalIgnoringTime(b, a)).toBe(expected);
  });

  it('takes its own list of fields to ignore', () => {
    expect(equalIgnoringTime({ lastHeartbeat: 'a' }, { lastHeartbeat: 'b' })).toBe(false);
    expect(
      equalIgnoringTime({ lastHeartbeat: 'a' }, { lastHeartbeat: 'b' }, ['lastHeartbeat']),
    ).toBe(true);
  });
});

describe('summaries', () => {
  const counts = (namespaces: number, synced: number, failed = 0, conflicts = 0): SyncCounts => ({
    namespaces,
    synced,
    failed,
    conflicts,
  });
  it.each<[string, SyncCounts, string | undefined, string]>([
    ['all synced', counts(3, 3), undefined, 'Active'],
    ['nothing selected', counts(0, 0), undefined, 'Active'],
    ['in progress', counts(3, 1), undefined, 'Pending'],
    ['a failure', counts(3, 2, 1), undefined, 'Degraded'],
    ['a conflict', counts(3, 2, 0, 1), undefined, 'Degraded'],
    ['an error wins', counts(3, 3), 'invalid pattern', 'Error'],
  ])('phase: %s', (_, c, error, phase) => {
    expect(phaseFromCounts(c, error)).toBe(phase);
  });

  it('synced summary', () => {
    expect(syncedSummary(counts(12, 11))).toBe('11/12');
  });

  it.each<[string, DeliveryNamespaceStatus[], number, string[], string[], boolean]>([
    [
      'problems first, then by name; the synced ones by name only',
      [
        { name: 'b', state: 'Synced' },
        { name: 'z', state: 'Conflict', message: 'taken' },
        { name: 'a', state: 'Synced' },
        { name: 'y', state: 'Failed', message: '403' },
      ],
      10,
      ['y', 'z'],
      ['a', 'b'],
      false,
    ],
    [
      'truncated keeps the problems',
      [
        { name: 'a', state: 'Synced' },
        { name: 'b', state: 'Failed' },
        { name: 'c', state: 'Synced' },
      ],
      2,
      ['b'],
      ['a'],
      true,
    ],
    [
      'only problems, truncated',
      [
        { name: 'b', state: 'PolicyDenied' },
        { name: 'a', state: 'Failed' },
        { name: 'c', state: 'Synced' },
      ],
      2,
      ['a', 'b'],
      [],
      true,
    ],
  ])('namespace report: %s', (_, entries, max, problems, synced, truncated) => {
    const r = namespaceReport(entries, max);
    expect(r.namespaces.map((n) => n.name)).toEqual(problems);
    expect(r.namespaces.every((n) => n.state !== 'Synced')).toBe(true);
    expect(r.syncedNamespaces).toEqual(synced);
    expect(r.truncated).toBe(truncated);
    // Read back as one list: what was listed, problems with their messages.
    expect(reportedNamespaces(r)).toEqual([
      ...entries
        .filter((e) => problems.includes(e.name))
        .sort((x, y) => problems.indexOf(x.name) - problems.indexOf(y.name)),
      ...synced.map((name) => ({ name, state: 'Synced' })),
    ]);
  });

  it('reads the synced namespaces an earlier agent listed as entries', () => {
    expect(
      reportedNamespaces({
        namespaces: [
          { name: 'a', state: 'Failed', message: '403' },
          { name: 'b', state: 'Synced' },
        ],
      }),
    ).toEqual([
      { name: 'a', state: 'Failed', message: '403' },
      { name: 'b', state: 'Synced' },
    ]);
    expect(reportedNamespaces(undefined)).toEqual([]);
  });

  it('problems: failures first, at most max', () => {
    const problems = limitProblems(
      [
        { cluster: 'b', namespace: 'x', state: 'Conflict' },
        { cluster: 'b', namespace: 'y', state: 'Failed' },
        { cluster: 'a', namespace: 'z', state: 'Failed' },
      ],
      2,
    );
    expect(problems.map((p) => `${p.cluster}/${p.namespace}`)).toEqual(['a/z', 'b/y']);
  });
});

describe('mergePatchBody', () => {
  it('sends every field and null for fields gone at any depth; arrays as a whole', () => {
    const prev = {
      reachable: true,
      lastError: 'down',
      agent: { present: true, version: '1', lastHeartbeat: 't' },
      conditions: [{ type: 'A' }, { type: 'B' }],
    };
    const next = { reachable: false, agent: { present: false }, conditions: [{ type: 'A' }] };
    expect(mergePatchBody(prev, next)).toEqual({
      reachable: false,
      lastError: null,
      agent: { present: false, version: null, lastHeartbeat: null },
      conditions: [{ type: 'A' }],
    });
  });
});

describe('withProgressConditions', () => {
  const ready = (status: 'True' | 'False' | 'Unknown', reason: string) =>
    setCondition([], { type: 'Ready', status, reason, message: reason, observedGeneration: 5 }, t0);
  const types = (list: Condition[]) =>
    list.map((c) => `${c.type}=${c.status}:${c.reason}:${c.observedGeneration}`);

  it.each<[string, Condition[], string[]]>([
    ['Ready', ready('True', 'Synced'), ['Ready=True:Synced:5']],
    [
      'retrying',
      ready('False', 'SourceNotFound'),
      ['Ready=False:SourceNotFound:5', 'Reconciling=True:SourceNotFound:5'],
    ],
    [
      'not probed yet',
      ready('Unknown', 'Probing'),
      ['Ready=Unknown:Probing:5', 'Reconciling=True:Probing:5'],
    ],
    [
      'terminal',
      ready('False', 'InvalidSpec'),
      ['Ready=False:InvalidSpec:5', 'Stalled=True:InvalidSpec:5'],
    ],
    ['suspended', ready('False', 'Suspended'), ['Ready=False:Suspended:5']],
  ])('%s', (_, conditions, expected) => {
    expect(types(withProgressConditions(conditions, { now: t1 }))).toEqual(expected);
  });

  it('never leaves Reconciling beside Stalled, and drops both once Ready', () => {
    const retrying = withProgressConditions(ready('False', 'Progressing'), { now: t0 });
    const stalled = withProgressConditions(
      setCondition(retrying, { type: 'Ready', status: 'False', reason: 'PolicyDenied' }, t1),
      { now: t1, generation: 6 },
    );
    expect(types(stalled)).toEqual([
      'Ready=False:PolicyDenied:undefined',
      'Stalled=True:PolicyDenied:6',
    ]);
    const healed = withProgressConditions(
      setCondition(stalled, { type: 'Ready', status: 'True', reason: 'Synced' }, t1),
      { now: t1 },
    );
    expect(healed.map((c) => c.type)).toEqual(['Ready']);
  });

  it('classifies every terminal reason as terminal and nothing else', () => {
    for (const r of TERMINAL_REASONS) expect(isTerminalReason(r)).toBe(true);
    expect(isTerminalReason('SourceNotFound')).toBe(false);
    expect(reasonClass('NoSuchReason')).toBeUndefined();
  });
});
