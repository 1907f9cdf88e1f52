import { describe, expect, it } from 'vitest';
import type { MirrorDelivery } from '@mirrorhub/shared/api/types.gen';
import { DeliveryNote, DeliveryNotes } from './notes.js';
import type { Outcome } from './plan.js';

function delivery(uid: string, generation = 1, namespaces = ['team-.+']): MirrorDelivery {
  return {
    apiVersion: 'mirrorhub.io/v1alpha1',
    kind: 'MirrorDelivery',
    metadata: { name: 'd-1', namespace: 'mirrorhub-system', uid, generation },
    spec: {
      mirror: { kind: 'SecretMirror', namespace: 'apps', name: 'tls', uid: 'u1' },
      originCluster: 'hub',
      payloadSecretName: 'd-1',
      target: { kind: 'Secret', name: 'tls' },
      namespaces,
      contentHash: 'h1',
    },
  };
}

const failed = (namespace: string, message = '403 Forbidden'): Outcome => ({
  namespace,
  op: 'create',
  result: 'failed',
  message,
});
const conflict = (namespace: string): Outcome => ({
  namespace,
  op: 'create',
  result: 'conflict',
  message: 'a Secret mirrorhub does not own',
  adoptable: true,
});
const ok = (namespace: string): Outcome => ({ namespace, op: 'create', result: 'ok' });
const retry = (namespace: string): Outcome => ({
  namespace,
  op: 'update',
  result: 'retry',
  message: '409',
});
const entries = (...names: string[]) => names.map((name) => ({ name }));

describe('DeliveryNote.remember', () => {
  it('keeps failures and conflicts until a write there works', () => {
    const note = new DeliveryNote();
    note.remember([failed('a'), conflict('b'), ok('c')], entries('a', 'b', 'c'), 1000);
    expect([...note.failures]).toEqual([['a', '403 Forbidden']]);
    expect([...note.conflictsAt(1000, 300_000)]).toEqual([
      ['b', { message: 'a Secret mirrorhub does not own', adoptable: true }],
    ]);
    // A race changes nothing; a write that works clears the namespace.
    note.remember([retry('a'), ok('b')], entries('a', 'b'), 2000);
    expect([...note.failures.keys()]).toEqual(['a']);
    expect(note.conflicts.size).toBe(0);
    // A conflict replaces a failure.
    note.remember([conflict('a')], entries('a'), 3000);
    expect(note.failures.size).toBe(0);
    expect([...note.conflicts.keys()]).toEqual(['a']);
  });

  it('forgets namespaces the plan no longer reports on', () => {
    const note = new DeliveryNote();
    note.remember([failed('a'), failed('b'), conflict('c')], entries('a', 'b', 'c'), 0);
    note.remember([], entries('a'), 0);
    expect([...note.failures.keys()]).toEqual(['a']);
    expect(note.conflicts.size).toBe(0);
  });

  it('rechecks a conflict once it is a resync old', () => {
    const note = new DeliveryNote();
    note.remember([conflict('a')], entries('a'), 1000);
    expect(note.conflictsAt(1000 + 299_999, 300_000).size).toBe(1);
    expect(note.conflictsAt(1000 + 300_000, 300_000).size).toBe(0);
    expect(note.conflicts.size).toBe(0);
  });
});

describe('DeliveryNotes', () => {
  it('starts clean for a delivery re-created under the same name', () => {
    const notes = new DeliveryNotes();
    notes.of(delivery('u-1')).remember([failed('a'), conflict('b')], entries('a', 'b'), 0);
    expect(notes.totals()).toEqual({ conflicts: 1, failures: 1, denied: 0 });
    expect(notes.of(delivery('u-1')).failures.size).toBe(1);
    expect(notes.of(delivery('u-2')).failures.size).toBe(0);
    expect(notes.totals()).toEqual({ conflicts: 0, failures: 0, denied: 0 });
    notes.of(delivery('u-2')).remember([failed('a')], entries('a'), 0);
    notes.forget('d-1');
    expect(notes.totals()).toEqual({ conflicts: 0, failures: 0, denied: 0 });
  });

  it("counts the namespaces the last plan found refused by the follower's policy", () => {
    const notes = new DeliveryNotes();
    const refused = (name: string) => ({ name, state: 'PolicyDenied' });
    notes
      .of(delivery('u-1'))
      .remember([], [refused('kube-system'), refused('kube-public'), { name: 'a' }], 0);
    expect(notes.totals().denied).toBe(2);
    // The next plan selects the refused namespaces no more (excludeNamespaces): none is left.
    notes.of(delivery('u-1')).remember([], entries('a'), 0);
    expect(notes.totals().denied).toBe(0);
  });

  it('compiles a matcher once per uid and generation', () => {
    const notes = new DeliveryNotes();
    const m1 = notes.matcherFor(delivery('u-1', 1));
    expect(notes.matcherFor(delivery('u-1', 1))).toBe(m1);
    const m2 = notes.matcherFor(delivery('u-1', 2, ['other']));
    expect(m2).not.toBe(m1);
    expect(m2.ok && m2.matches({ name: 'other' })).toBe(true);
    expect(notes.matcherFor(delivery('u-2', 2))).not.toBe(m2);
  });
});
