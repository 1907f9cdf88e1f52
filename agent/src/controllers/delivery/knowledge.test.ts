import { describe, expect, it } from 'vitest';
import type { SourceKind } from '@mirrorhub/shared/api/types.gen';
import { FakeClock } from '@mirrorhub/shared/testing/fake';
import { LABEL_DELIVERY } from '@mirrorhub/shared/api/contract';
import { CopyObject } from './cached.js';
import { CopyKnowledge, type CopyCaches } from './knowledge.js';

/** Copy caches as the copy watchers hold them: uid -> copy. */
class Caches {
  readonly byUid = new Map<string, CopyObject>();
  readonly caches: CopyCaches;
  constructor() {
    const of = (kind: SourceKind) => ({
      get: (name: string, namespace: string) =>
        [...this.byUid.values()].find(
          (c) => c.kind === kind && c.name === name && c.namespace === namespace,
        ),
      getByUid: (uid: string) => {
        const c = this.byUid.get(uid);
        return c?.kind === kind ? c : undefined;
      },
    });
    this.caches = { Secret: of('Secret'), ConfigMap: of('ConfigMap') };
  }
  put(c: CopyObject): CopyObject {
    this.byUid.set(c.uid ?? '', c);
    return c;
  }
}

function copy(namespace: string, rv: string, delivery = 'd-1', kind: SourceKind = 'Secret') {
  return new CopyObject(
    kind,
    'tls',
    namespace,
    `uid-${namespace}`,
    rv,
    {
      [LABEL_DELIVERY]: delivery,
    },
    undefined,
  );
}

function setup(settleMs = 2000) {
  const caches = new Caches();
  const clock = new FakeClock(1_000_000);
  const knowledge = new CopyKnowledge(caches.caches, clock, settleMs);
  /** The copy appears in the cache, as the watch would show it. */
  const add = (c: CopyObject) => knowledge.added(caches.put(c));
  const update = (c: CopyObject, old: CopyObject) => knowledge.updated(caches.put(c), old);
  const verified = (delivery: string, payloadVersion: string | undefined, settling = false) =>
    Object.fromEntries(
      knowledge
        .copyViews(delivery, payloadVersion, settling)
        .copies.map((v) => [v.namespace, v.verified]),
    );
  return { caches, clock, knowledge, add, update, verified };
}

describe('CopyKnowledge', () => {
  it('counts copies it created that the cache does not show yet, per delivery', async () => {
    // A delivery deleted right after a fan-out must not lose its finalizer while copies it just
    // created are still on their way to the cache (the soak found 20 orphaned so).
    const { knowledge, clock, add } = setup();
    const created = (namespace: string, delivery: string) => ({
      uid: `uid-${namespace}`,
      name: 'tls',
      namespace,
      resourceVersion: '5',
      labels: { [LABEL_DELIVERY]: delivery },
    });
    const wrote = knowledge.observer('p1').wrote;
    wrote('Secret', { metadata: created('a', 'd-1') });
    wrote('Secret', { metadata: created('b', 'd-1') });
    wrote('Secret', { metadata: created('c', 'd-2') });
    expect(knowledge.unseenCopies('d-1')).toBe(2);
    expect(knowledge.unseenCopies('d-2')).toBe(1);
    add(copy('a', '5'));
    expect(knowledge.unseenCopies('d-1')).toBe(1);
    knowledge.deleted(copy('b', '6'));
    expect(knowledge.unseenCopies('d-1')).toBe(0);
    // An echo that never comes (the watch re-listed without it) is not waited for forever.
    await clock.advance(10 * 60_000 + 1);
    expect(knowledge.unseenCopies('d-2')).toBe(0);
    // A write to a copy the cache already shows is not a create.
    wrote('Secret', { metadata: { ...created('a', 'd-1'), resourceVersion: '7' } });
    expect(knowledge.unseenCopies('d-1')).toBe(0);
  });

  it('knows a copy it wrote, until someone else changes it', () => {
    const { knowledge, add, update, verified } = setup();
    const a = copy('a', '10');
    expect(add(a)).toBe(false); // news: nothing known about it yet
    expect(verified('d-1', 'p1')).toEqual({ a: false });

    const written = { uid: 'uid-a', name: 'tls', namespace: 'a', resourceVersion: '11' };
    knowledge.observer('p1').wrote('Secret', { metadata: written });
    // The cache still shows rv 10, but we wrote rv 11 from this payload (its echo is on the way).
    expect(verified('d-1', 'p1')).toEqual({ a: true });
    const echo = copy('a', '11');
    expect(update(echo, a)).toBe(true); // our own write coming back: not news
    expect(verified('d-1', 'p1')).toEqual({ a: true });

    expect(update(copy('a', '12'), echo)).toBe(false); // kubectl edit: news
    expect(verified('d-1', 'p1')).toEqual({ a: false });
  });

  it('a copy written but not yet echoed is up to date for the same payload and spec', () => {
    const { knowledge, add, update } = setup();
    const a = copy('a', '10');
    add(a);
    const written = { uid: 'uid-a', name: 'tls', namespace: 'a', resourceVersion: '11' };
    knowledge.observer('p1', 3).wrote('Secret', { metadata: written });
    const view = () => knowledge.copyViews('d-1', 'p1', false, 3).copies[0];
    // The cache still shows rv 10: planning from it would write again, conditional on rv 10.
    expect(view()).toMatchObject({ resourceVersion: '11', verified: true, echoPending: true });
    // Another spec (generation) or payload since: planned from the cache as usual.
    expect(knowledge.copyViews('d-1', 'p1', false, 4).copies[0]?.echoPending).toBeUndefined();
    expect(knowledge.copyViews('d-1', 'p2', false, 3).copies[0]?.echoPending).toBeUndefined();
    // The echo arrives: the cache is the truth again, and nothing is kept of the write.
    update(copy('a', '11'), a);
    expect(view()).toMatchObject({ resourceVersion: '11', verified: true });
    expect(view()?.echoPending).toBeUndefined();
    expect(knowledge.pendingEchoes).toBe(0);
    // A create answered before its watch event: forgotten when the event arrives.
    const created = { uid: 'uid-b', name: 'tls', namespace: 'b', resourceVersion: '12' };
    knowledge.observer('p1', 3).wrote('Secret', { metadata: created });
    expect(knowledge.pendingEchoes).toBe(1);
    expect(add(copy('b', '12'))).toBe(true);
    expect(knowledge.pendingEchoes).toBe(0);
  });

  it('shows a copy it created to the plan before the cache has it, as the answer showed it', () => {
    // A second reconcile between a create's answer and its watch event planned the create
    // again: 409, a read and a rewrite per copy whose watch event was still on its way.
    const { knowledge, add } = setup();
    const created = {
      uid: 'uid-a',
      name: 'tls',
      namespace: 'a',
      resourceVersion: '5',
      labels: { [LABEL_DELIVERY]: 'd-1', team: 'x' },
      annotations: { 'mirrorhub.io/content-hash': 'h1', note: 'y' },
    };
    knowledge.observer('p1', 2).wrote('Secret', { metadata: created });
    expect(knowledge.copyViews('d-1', 'p1', false, 2).copies).toEqual([
      {
        kind: 'Secret',
        namespace: 'a',
        name: 'tls',
        uid: 'uid-a',
        resourceVersion: '5',
        // the cache's shape: only mirrorhub.io/ marks
        labels: { [LABEL_DELIVERY]: 'd-1' },
        annotations: { 'mirrorhub.io/content-hash': 'h1' },
        verified: true,
      },
    ]);
    expect(knowledge.copyViews('d-2', 'p1', false, 2).copies).toEqual([]);
    // A payload changed since: not verified, so the plan looks at it again.
    expect(knowledge.copyViews('d-1', 'p2', false, 2).copies[0]?.verified).toBe(false);
    // Its watch event arrives: the cache's copy is shown, once.
    add(copy('a', '5'));
    expect(knowledge.copyViews('d-1', 'p1', false, 2).copies).toHaveLength(1);
    expect(knowledge.copyViews('d-1', 'p1', false, 2).copies[0]?.labels).toEqual({
      [LABEL_DELIVERY]: 'd-1',
    });
  });

  it('a re-list without a copy it created says the copy is gone', () => {
    const { knowledge, add } = setup();
    const wrote = knowledge.observer('p1').wrote;
    for (const [namespace, resourceVersion, delivery] of [
      ['a', '5', 'd-1'],
      ['b', '9', 'd-1'],
      ['c', '5', 'd-2'],
    ] as const) {
      const labels = { [LABEL_DELIVERY]: delivery };
      wrote('Secret', {
        metadata: { uid: `uid-${namespace}`, name: 'tls', namespace, resourceVersion, labels },
      });
    }
    add(copy('c', '5', 'd-2'));
    // Listed at 7: 'a' (rv 5) should have been in it and was not; 'b' (rv 9) is newer than the
    // list, its event still to come; 'c' is in the cache. A ConfigMap list says nothing of them.
    expect(knowledge.relisted('ConfigMap', '7')).toEqual([]);
    expect(knowledge.relisted('Secret', '7')).toEqual(['d-1']);
    const names = (d: string) => knowledge.copyViews(d, 'p1', false).copies.map((c) => c.namespace);
    expect(names('d-1')).toEqual(['b']);
    expect(names('d-2')).toEqual(['c']);
    expect(knowledge.unseenCopies('d-1')).toBe(1);
    expect(knowledge.relisted('Secret', '9')).toEqual(['d-1']);
    expect(names('d-1')).toEqual([]);
    expect(knowledge.pendingEchoes).toBe(0); // nothing kept of the copies gone
  });

  it('a write answered before its watch event makes the event an echo', () => {
    const { knowledge, add } = setup();
    knowledge.holds(
      'Secret',
      { uid: 'uid-b', name: 'tls', namespace: 'b', resourceVersion: '5' },
      'p1',
    );
    expect(add(copy('b', '5'))).toBe(true);
  });

  it('a payload change unverifies every copy, except while it settles (then deferred)', async () => {
    const { knowledge, add, verified, clock } = setup(2000);
    for (const ns of ['a', 'b']) {
      const c = copy(ns, '7');
      knowledge.holds('Secret', c, 'p1');
      add(c);
    }
    expect(verified('d-1', 'p1')).toEqual({ a: true, b: true });
    expect(verified('d-1', 'p2')).toEqual({ a: false, b: false });

    knowledge.payloadChanged('payload-1');
    expect(knowledge.payloadSettling('payload-1', clock.now())).toBe(2000);
    const views = knowledge.copyViews('d-1', 'p2', true);
    expect(views.deferred).toBe(true);
    expect(views.copies.map((c) => c.verified)).toEqual([true, true]);
    expect(knowledge.copyViews('d-1', 'p1', true).deferred).toBe(false); // nothing moved

    await clock.advance(1500);
    expect(knowledge.payloadSettling('payload-1', clock.now())).toBe(500);
    await clock.advance(500);
    expect(knowledge.payloadSettling('payload-1', clock.now())).toBe(0);
    knowledge.payloadChanged('payload-2');
    knowledge.payloadDeleted('payload-2');
    expect(knowledge.payloadSettling('payload-2', clock.now())).toBe(0);
  });

  it('a copy we remove is our doing when it goes; one removed by others is news', () => {
    const { knowledge, add, caches } = setup();
    const [a, b] = [copy('a', '1'), copy('b', '1')];
    add(a);
    add(b);
    knowledge.observer('p1').removing('Secret', {
      kind: 'Secret',
      namespace: 'a',
      name: 'tls',
      uid: 'uid-a',
    });
    caches.byUid.delete('uid-a');
    caches.byUid.delete('uid-b');
    expect(knowledge.deleted(a)).toBe(true);
    expect(knowledge.deleted(b)).toBe(false);
    expect(knowledge.copyViews('d-1', 'p1', false).copies).toEqual([]);
  });

  it('once the cache shows what it wrote, keeps what it knows on the cached copies alone', () => {
    // A hundred thousand copies: what the agent knows of each must not be a map entry and a
    // string of its own beside the cached object.
    const { knowledge, add, update, verified } = setup();
    const wrote = knowledge.observer('p1').wrote;
    const namespaces = ['a', 'b', 'c'];
    for (const ns of namespaces) {
      const labels = { [LABEL_DELIVERY]: 'd-1' };
      wrote('Secret', {
        metadata: { uid: `uid-${ns}`, name: 'tls', namespace: ns, resourceVersion: '5', labels },
      });
    }
    expect(knowledge.pendingKnowledge).toBe(3);
    const cached = namespaces.map((ns) => copy(ns, '5'));
    for (const c of cached) expect(add(c)).toBe(true);
    expect(knowledge.pendingKnowledge).toBe(0);
    expect(verified('d-1', 'p1')).toEqual({ a: true, b: true, c: true });
    // A read that compared the cached version equal (verify) needs no entry either.
    const [a] = cached as [CopyObject];
    const edited = copy('a', '6');
    expect(update(edited, a)).toBe(false);
    expect(verified('d-1', 'p1')).toMatchObject({ a: false });
    knowledge.holds('Secret', edited, 'p1');
    expect(knowledge.pendingKnowledge).toBe(0);
    expect(verified('d-1', 'p1')).toEqual({ a: true, b: true, c: true });
  });

  it("an older change arriving between its write and the write's echo leaves the write known", () => {
    const { knowledge, add, update, verified } = setup();
    const a = copy('a', '10');
    add(a);
    knowledge.observer('p1').wrote('Secret', {
      metadata: { uid: 'uid-a', name: 'tls', namespace: 'a', resourceVersion: '12' },
    });
    // Someone else's write (11) before ours (12): news, but what we wrote is still on its way.
    const theirs = copy('a', '11');
    expect(update(theirs, a)).toBe(false);
    const ours = copy('a', '12');
    expect(update(ours, theirs)).toBe(true);
    expect(verified('d-1', 'p1')).toEqual({ a: true });
    // A change after ours: what we knew is gone with it.
    knowledge.observer('p1').wrote('Secret', {
      metadata: { uid: 'uid-a', name: 'tls', namespace: 'a', resourceVersion: '13' },
    });
    expect(update(copy('a', '14'), ours)).toBe(false);
    expect(verified('d-1', 'p1')).toEqual({ a: false });
    expect(knowledge.pendingKnowledge).toBe(0);
  });

  it('a copy it starts removing is no longer known to hold the payload', () => {
    const { knowledge, add, verified } = setup();
    const a = copy('a', '3');
    knowledge.holds('Secret', a, 'p1');
    add(a);
    expect(verified('d-1', 'p1')).toEqual({ a: true });
    knowledge.removingCopy({ kind: 'Secret', namespace: 'a', name: 'tls', uid: 'uid-a' });
    expect(verified('d-1', 'p1')).toEqual({ a: false });
  });

  it('indexes copies by their delivery label, and follows a relabel', () => {
    const { knowledge, add, update } = setup();
    const a = copy('a', '1', 'd-1');
    add(a);
    add(copy('b', '1', 'd-2', 'ConfigMap'));
    const names = (d: string) =>
      knowledge.copyViews(d, undefined, false).copies.map((c) => `${c.kind}/${c.namespace}`);
    expect(names('d-1')).toEqual(['Secret/a']);
    expect(names('d-2')).toEqual(['ConfigMap/b']);

    update(copy('a', '2', 'd-2'), a);
    expect(names('d-1')).toEqual([]);
    expect(names('d-2')).toEqual(['ConfigMap/b', 'Secret/a']);
  });
});
