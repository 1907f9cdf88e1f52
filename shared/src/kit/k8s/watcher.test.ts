import type { V1ConfigMap } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { FakeClock, FakeListerWatcher, settle } from '../../testing/fake.js';
import { K8sHttpError } from './listwatch.js';
import { instrumentWatcher, Watcher, type WatcherEvent, type WatcherOptions } from './watcher.js';
import { createMetrics } from '../runtime/metrics.js';
import type { Logger } from '../runtime/log.js';

type CM = V1ConfigMap;

function cm(name: string, namespace = 'ns', data: Record<string, string> = {}): CM {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data };
}

function setup(over: Partial<WatcherOptions<CM>> = {}) {
  const clock = new FakeClock();
  const fake = new FakeListerWatcher<CM>();
  const calls: string[] = [];
  const events: WatcherEvent[] = [];
  const w = new Watcher<CM>({
    resource: 'configmaps',
    listerWatcher: fake,
    clock,
    random: () => 0,
    backoff: { initialMs: 100, maxMs: 1000 },
    ...over,
  });
  w.onEvent((e) => events.push(e));
  w.addHandler({
    onAdd: (o) => void calls.push(`add ${o.metadata?.name}`),
    onUpdate: (o, old) =>
      void calls.push(
        `update ${o.metadata?.name} ${old.metadata?.resourceVersion}->${o.metadata?.resourceVersion}`,
      ),
    onDelete: (o, info) =>
      void calls.push(`delete ${o.metadata?.name}${info.finalStateUnknown ? ' (unknown)' : ''}`),
  });
  const ofType = <K extends WatcherEvent['type']>(t: K) =>
    events.filter((e): e is Extract<WatcherEvent, { type: K }> => e.type === t);
  return { clock, fake, w, calls, events, ofType };
}

describe('Watcher', () => {
  it('lists in pages, syncs, then follows watch events', async () => {
    const { fake, w, calls, ofType } = setup({ pageSize: 2 });
    for (const n of ['a', 'b', 'c', 'd', 'e']) fake.create(cm(n));
    w.start();
    await w.synced;
    expect(fake.lists.map((l) => l.continue ?? '')).toEqual(['', '2', '4']);
    expect(w.size).toBe(5);
    expect(calls).toEqual(['add a', 'add b', 'add c', 'add d', 'add e']);
    expect(ofType('listed')[0]).toMatchObject({ reason: 'initial', total: 5, added: 5 });
    await settle();
    expect(ofType('connected')).toHaveLength(1);
    expect(fake.watches[0]?.opts).toMatchObject({
      resourceVersion: '105',
      allowWatchBookmarks: true,
    });

    calls.length = 0;
    const f = fake.create(cm('f'));
    fake.update(cm('a', 'ns', { k: 'v' }));
    fake.delete('b', 'ns');
    expect(calls).toEqual(['add f', 'update a 101->107', 'delete b']);
    expect(w.get('a', 'ns')?.data).toEqual({ k: 'v' });
    expect(w.get('b', 'ns')).toBeUndefined();
    expect(w.getByUid(f.metadata?.uid ?? '')?.metadata?.name).toBe('f');
    expect(w.resourceVersion).toBe('108');
    expect(ofType('event').map((e) => e.eventType)).toEqual(['ADDED', 'MODIFIED', 'DELETED']);
    await w.stop();
  });

  it('ignores a MODIFIED event that carries the resourceVersion it already has', async () => {
    const { fake, w, calls } = setup();
    const a = fake.create(cm('a'));
    w.start();
    await w.synced;
    await settle();
    calls.length = 0;
    fake.send({ type: 'MODIFIED', object: a });
    expect(calls).toEqual([]);
    await w.stop();
  });

  it('moves its resourceVersion on bookmarks', async () => {
    const { fake, w } = setup();
    w.start();
    await w.synced;
    await settle();
    fake.send({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '999' } } });
    expect(w.resourceVersion).toBe('999');
    await w.stop();
  });

  it('treats a re-created name (new uid) as delete + add, keyed by uid', async () => {
    const { fake, w, calls } = setup();
    fake.create(cm('a'));
    w.start();
    await w.synced;
    await settle();
    calls.length = 0;
    // The watch misses the delete; the re-created object arrives with a new uid.
    fake.silently(() => fake.delete('a', 'ns'));
    fake.create(cm('a'));
    expect(calls).toEqual(['delete a (unknown)', 'add a']);
    expect(w.size).toBe(1);
    await w.stop();
  });

  describe('410 Gone', () => {
    it('re-lists on an Expired ERROR event and reports what the watch missed', async () => {
      const { fake, w, calls, ofType } = setup();
      fake.create(cm('keep'));
      fake.create(cm('change'));
      fake.create(cm('remove'));
      w.start();
      await w.synced;
      await settle();
      calls.length = 0;
      fake.silently(() => {
        fake.update(cm('change', 'ns', { v: '2' }));
        fake.delete('remove', 'ns');
        fake.create(cm('new'));
      });
      fake.compactedBefore = Number(fake.resourceVersion);
      fake.expireWatch();
      await settle();
      expect(fake.lists).toHaveLength(2);
      expect(calls).toEqual(['delete remove (unknown)', 'add new', 'update change 102->104']);
      expect(ofType('restarted').at(-1)).toMatchObject({ reason: 'gone' });
      expect(ofType('listed').at(-1)).toMatchObject({
        reason: 'gone',
        added: 1,
        updated: 1,
        deleted: 1,
        total: 3,
      });
      expect(ofType('error')).toHaveLength(0);
      // and it watches again from the new list's resourceVersion
      expect(fake.watches.at(-1)?.opts.resourceVersion).toBe(fake.resourceVersion);
      await w.stop();
    });

    it('re-lists when the watch request itself answers 410', async () => {
      const { fake, w, ofType, clock } = setup();
      fake.create(cm('a'));
      w.start();
      await w.synced;
      await settle();
      fake.closeWatch(new Error('connection reset')); // drop; reconnect will be from rv 101
      fake.silently(() => fake.create(cm('b')));
      fake.compactedBefore = Number(fake.resourceVersion);
      await clock.advance(100); // backoff after the drop
      await settle();
      expect(ofType('listed').map((e) => e.reason)).toEqual(['initial', 'gone']);
      expect(ofType('restarted').map((e) => e.reason)).toEqual(['error', 'gone']);
      expect(w.get('b', 'ns')).toBeDefined();
      await w.stop();
    });

    it('backs off when every fresh watch is answered 410 at once', async () => {
      const { fake, w, clock } = setup();
      fake.compactedBefore = Number.MAX_SAFE_INTEGER; // a server that always says Gone
      w.start();
      await w.synced;
      await settle();
      expect(fake.lists).toHaveLength(2); // the first retry is immediate, the next waits
      await clock.advance(99);
      expect(fake.lists).toHaveLength(2);
      await clock.advance(1);
      expect(fake.lists).toHaveLength(3);
      await w.stop();
    });

    it('restarts a paginated list whose continue token expired', async () => {
      const { fake, w } = setup({ pageSize: 1 });
      fake.create(cm('a'));
      fake.create(cm('b'));
      const origList = fake.list.bind(fake);
      let n = 0;
      fake.list = async (o) => {
        if (o.continue && n++ === 0) throw new K8sHttpError(410, { reason: 'Expired' }, 'list');
        return origList(o);
      };
      w.start();
      await w.synced;
      expect(w.size).toBe(2);
      // page 1, (page 2 expired), page 1 again, page 2
      expect(fake.lists.map((l) => l.continue ?? '')).toEqual(['', '', '1']);
      await w.stop();
    });
  });

  describe('errors', () => {
    it('resumes a dropped watch from the last resourceVersion, with backoff, without re-listing', async () => {
      const { fake, w, calls, ofType, clock } = setup();
      fake.create(cm('a'));
      w.start();
      await w.synced;
      await settle();
      calls.length = 0;
      fake.closeWatch(new Error('socket hang up'));
      await settle();
      expect(ofType('error')[0]).toMatchObject({ phase: 'watch', attempt: 1, retryInMs: 100 });
      fake.create(cm('b')); // happens while disconnected
      expect(fake.watches).toHaveLength(1);
      await clock.advance(99);
      expect(fake.watches).toHaveLength(1);
      await clock.advance(1);
      expect(fake.watches).toHaveLength(2);
      expect(fake.watches[1]?.opts.resourceVersion).toBe('101');
      expect(calls).toEqual(['add b']); // replayed by the resumed watch
      expect(fake.lists).toHaveLength(1);
      await w.stop();
    });

    it('backs off exponentially on list failures, then syncs', async () => {
      const { fake, w, ofType, clock } = setup();
      fake.create(cm('a'));
      fake.listErrors.push(
        new Error('connect ECONNREFUSED'),
        new K8sHttpError(503, {}, 'list'),
        new Error('x'),
      );
      w.start();
      await settle();
      expect(w.hasSynced()).toBe(false);
      await clock.advance(100);
      await clock.advance(200);
      expect(w.hasSynced()).toBe(false);
      await clock.advance(400);
      expect(w.hasSynced()).toBe(true);
      expect(ofType('error').map((e) => [e.phase, e.attempt, e.retryInMs])).toEqual([
        ['list', 1, 100],
        ['list', 2, 200],
        ['list', 3, 400],
      ]);
      // success resets the backoff
      await settle();
      fake.closeWatch(new Error('drop'));
      await settle();
      expect(ofType('error').at(-1)).toMatchObject({ attempt: 1, retryInMs: 100 });
      await w.stop();
    });

    it('gives up after maxConsecutiveErrors and rejects synced', async () => {
      const { fake, w, ofType, clock } = setup({ maxConsecutiveErrors: 3 });
      fake.listErrors.push(
        ...[1, 2, 3, 4].map(() => new K8sHttpError(403, { reason: 'Forbidden' }, 'list')),
      );
      w.start();
      const synced = w.synced.then(
        () => 'synced',
        (e: Error) => e.message,
      );
      await clock.advance(10_000);
      expect(await synced).toMatch(/gave up: list: 403 Forbidden/);
      expect(ofType('gaveUp')).toHaveLength(1);
      expect(w.running).toBe(false);
      expect(fake.lists).toHaveLength(3);
    });

    it('does not spin on watches that close at once with nothing delivered', async () => {
      const { fake, w, clock } = setup();
      w.start();
      await w.synced;
      await settle();
      fake.closeWatch();
      await settle();
      expect(fake.watches).toHaveLength(1);
      await clock.advance(100);
      expect(fake.watches).toHaveLength(2);
      await w.stop();
    });

    it('rewatches at once after a clean server-side timeout', async () => {
      // (the fake sends no bookmarks: no progress deadline here)
      const { fake, w, clock, ofType } = setup({ progressDeadlineMs: 0 });
      w.start();
      await w.synced;
      await settle();
      await clock.advance(300_000);
      fake.closeWatch();
      await settle();
      expect(fake.watches).toHaveLength(2);
      expect(ofType('restarted').at(-1)).toMatchObject({ reason: 'closed' });
      await w.stop();
    });

    it('treats an ERROR event other than 410 as a watch error', async () => {
      const { fake, w, ofType } = setup();
      w.start();
      await w.synced;
      await settle();
      fake.send({
        type: 'ERROR',
        object: { kind: 'Status', code: 500, reason: 'InternalError', message: 'etcd' },
      });
      await settle();
      expect(ofType('error')[0]).toMatchObject({ phase: 'watch' });
      expect(String((ofType('error')[0]?.err as Error).message)).toContain(
        '500 InternalError: etcd',
      );
      await w.stop();
    });
  });

  describe('handlers', () => {
    it('reports a throwing or rejecting handler and keeps going', async () => {
      const { fake, w, ofType, calls } = setup();
      w.addHandler({
        onAdd: (o) => {
          if (o.metadata?.name === 'bad') throw new Error('handler bug');
        },
        onUpdate: async () => {
          throw new Error('async handler bug');
        },
      });
      w.start();
      await w.synced;
      await settle();
      fake.create(cm('bad'));
      fake.create(cm('good'));
      fake.update(cm('good', 'ns', { x: '1' }));
      await settle();
      expect(calls).toEqual(['add bad', 'add good', 'update good 102->103']);
      expect(
        ofType('handlerError').map((e) => [e.handler, e.key, (e.err as Error).message]),
      ).toEqual([
        ['add', 'ns/bad', 'handler bug'],
        ['update', 'ns/good', 'async handler bug'],
      ]);
      expect(w.size).toBe(2);
      await w.stop();
    });

    it('replays the store to a handler added late', async () => {
      const { fake, w } = setup();
      fake.create(cm('a'));
      fake.create(cm('b'));
      w.start();
      await w.synced;
      const seen: string[] = [];
      const off = w.addHandler({ onAdd: (o) => void seen.push(o.metadata?.name ?? '') });
      expect(seen.sort()).toEqual(['a', 'b']);
      off();
      await settle();
      fake.create(cm('c'));
      expect(seen).toHaveLength(2);
      await w.stop();
    });

    it('survives a lifecycle listener that throws', async () => {
      const { fake, w } = setup();
      w.onEvent(() => {
        throw new Error('listener bug');
      });
      fake.create(cm('a'));
      w.start();
      await w.synced;
      expect(w.size).toBe(1);
      await w.stop();
    });
  });

  it('re-lists periodically when asked to', async () => {
    const { fake, w, clock, ofType } = setup({ resyncPeriodMs: 60_000 });
    w.start();
    await w.synced;
    await settle();
    await clock.advance(59_999);
    expect(fake.lists).toHaveLength(1);
    await clock.advance(1);
    await settle();
    expect(fake.lists).toHaveLength(2);
    // nothing was missed: the look read the list once and found the cache current
    expect(ofType('listed').at(-1)).toMatchObject({ reason: 'checked' });
    expect(ofType('restarted').at(-1)).toMatchObject({ reason: 'resync' });
    await clock.advance(60_000);
    expect(fake.lists).toHaveLength(3);
    await w.stop();
  });

  describe('a fresh look', () => {
    it('ends a watch that passes nothing within the progress deadline and resumes it where it stopped', async () => {
      const { fake, w, clock, calls, ofType } = setup({ progressDeadlineMs: 10_000 });
      fake.create(cm('a'));
      w.start();
      await w.synced;
      await settle();
      calls.length = 0;
      fake.stall();
      fake.create(cm('missed'));
      await clock.advance(9_999);
      expect(ofType('restarted')).toHaveLength(0);
      expect(calls).toEqual([]);
      await clock.advance(1);
      await settle();
      expect(ofType('restarted').map((e) => e.reason)).toEqual(['stalled']);
      expect(calls).toEqual(['add missed']);
      // resumed from the resourceVersion it had, without re-listing or counting an error
      expect(fake.watches.map((x) => x.opts.resourceVersion)).toEqual(['101', '101']);
      expect(fake.lists).toHaveLength(1);
      expect(ofType('error')).toHaveLength(0);
      await w.stop();
    });

    it('counts bookmarks as progress, so a quiet healthy watch is left alone', async () => {
      const { fake, w, clock, ofType } = setup({ progressDeadlineMs: 10_000 });
      w.start();
      await w.synced;
      await settle();
      for (let i = 0; i < 5; i++) {
        await clock.advance(6_000);
        fake.send({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '100' } } });
      }
      expect(ofType('restarted')).toHaveLength(0);
      await clock.advance(10_000);
      expect(ofType('restarted').map((e) => e.reason)).toEqual(['stalled']);
      await w.stop();
    });

    it('reads only metadata at a periodic re-list while the cache is current', async () => {
      const { fake, w, clock, calls, ofType } = setup({ resyncPeriodMs: 60_000, pageSize: 2 });
      fake.withMetadataLists();
      for (const n of ['a', 'b', 'c']) fake.create(cm(n));
      w.start();
      await w.synced;
      await settle();
      calls.length = 0;
      await clock.advance(60_000);
      await settle();
      expect(fake.lists).toHaveLength(2); // the initial list's two pages, nothing more
      expect(fake.metadataLists).toHaveLength(2);
      expect(ofType('listed').at(-1)).toMatchObject({ reason: 'checked', total: 3 });
      expect(calls).toEqual([]);

      // The watch missed a change: the next look reads in full and hands out what it missed.
      fake.silently(() => fake.update(cm('b', 'ns', { v: '2' })));
      await clock.advance(60_000);
      await settle();
      expect(fake.lists).toHaveLength(4);
      expect(ofType('listed').at(-1)).toMatchObject({ reason: 'periodic', updated: 1 });
      expect(calls).toEqual(['update b 102->104']);
      expect(w.get('b', 'ns')?.data).toEqual({ v: '2' });
      await w.stop();
    });

    it('notices a missed delete by count, even when every remaining object is current', async () => {
      const { fake, w, clock, calls, ofType } = setup({ resyncPeriodMs: 60_000 });
      fake.withMetadataLists();
      for (const n of ['a', 'b']) fake.create(cm(n));
      w.start();
      await w.synced;
      await settle();
      calls.length = 0;
      fake.silently(() => fake.delete('b', 'ns'));
      await clock.advance(60_000);
      await settle();
      expect(ofType('listed').at(-1)).toMatchObject({ reason: 'periodic', deleted: 1 });
      expect(calls).toEqual(['delete b (unknown)']);
      await w.stop();
    });

    it('takes a new re-list period while running, counted from the last list', async () => {
      const { fake, w, clock, ofType } = setup();
      w.start();
      await w.synced;
      await settle();
      await clock.advance(100_000);
      expect(fake.lists).toHaveLength(1);
      w.setResyncPeriod(30_000); // already overdue: at once
      await clock.advance(0);
      await settle();
      expect(fake.lists).toHaveLength(2);
      await clock.advance(29_999);
      expect(fake.lists).toHaveLength(2);
      await clock.advance(1);
      await settle();
      expect(fake.lists).toHaveLength(3);
      w.setResyncPeriod(undefined);
      await clock.advance(300_000);
      expect(fake.lists).toHaveLength(3);
      expect(ofType('listed').map((e) => e.reason)).toEqual(['initial', 'checked', 'checked']);
      await w.stop();
    });
  });

  it('drops managedFields by default and applies a custom transform', async () => {
    const { fake, w } = setup();
    const withMf = cm('a');
    withMf.metadata!.managedFields = [{ manager: 'kubectl', operation: 'Apply' }];
    fake.create(withMf);
    w.start();
    await w.synced;
    expect(w.get('a', 'ns')?.metadata?.managedFields).toBeUndefined();
    await w.stop();

    const t = setup({ transform: (o) => ({ ...o, data: {} }) });
    t.fake.create(cm('b', 'ns', { big: 'x'.repeat(1000) }));
    t.w.start();
    await t.w.synced;
    expect(t.w.get('b', 'ns')?.data).toEqual({});
    await t.w.stop();
  });

  it('rejects synced when stopped first, and stops cleanly while backing off', async () => {
    const { fake, w, clock } = setup();
    fake.listErrors.push(new Error('down'));
    w.start();
    await settle();
    const r = w.synced.then(
      () => 'ok',
      (e: Error) => e.message,
    );
    await w.stop();
    expect(await r).toMatch(/stopped before sync/);
    await clock.advance(10_000);
    expect(fake.lists).toHaveLength(1);
    expect(clock.pending()).toBe(0);
  });

  it('lists per namespace from the store', async () => {
    const { fake, w } = setup();
    fake.create(cm('a', 'x'));
    fake.create(cm('b', 'y'));
    fake.create(cm('c', 'x'));
    w.start();
    await w.synced;
    expect(
      w
        .list('x')
        .map((o) => o.metadata?.name)
        .sort(),
    ).toEqual(['a', 'c']);
    expect(w.list()).toHaveLength(3);

    // The name index follows deletes and re-creates under the same name (a new uid).
    fake.delete('a', 'x');
    await settle();
    expect(w.list('x').map((o) => o.metadata?.name)).toEqual(['c']);
    expect(w.get('a', 'x')).toBeUndefined();
    const again = fake.create(cm('a', 'x', { k: 'new' }));
    fake.delete('c', 'x');
    await settle();
    expect(w.list('x').map((o) => o.metadata?.uid)).toEqual([again.metadata?.uid]);
    expect(w.get('a', 'x')?.data).toEqual({ k: 'new' });
    expect(w.list('nowhere')).toEqual([]);
    await w.stop();
  });
});

describe('instrumentWatcher', () => {
  it('counts events, relists, restarts and errors, and logs them', async () => {
    const m = createMetrics({ component: 'agent', defaultMetrics: false });
    const logged: string[] = [];
    const logger = {
      debug: (_o: object, msg: string) => void logged.push(`debug ${msg}`),
      info: (_o: object, msg: string) => void logged.push(`info ${msg}`),
      warn: (_o: object, msg: string) => void logged.push(`warn ${msg}`),
      error: (_o: object, msg: string) => void logged.push(`error ${msg}`),
    } as unknown as Logger;
    const { fake, w, clock } = setup();
    instrumentWatcher(w, { metrics: m, logger });
    fake.create(cm('a'));
    w.start();
    await w.synced;
    await settle();
    fake.create(cm('b'));
    fake.closeWatch(new Error('reset'));
    await clock.advance(100);
    fake.expireWatch();
    await settle();
    const out = await m.render();
    for (const line of [
      'mirrorhub_watch_events_total{resource="configmaps",type="ADDED",component="agent"} 1',
      'mirrorhub_watch_relists_total{resource="configmaps",reason="initial",component="agent"} 1',
      'mirrorhub_watch_relists_total{resource="configmaps",reason="gone",component="agent"} 1',
      'mirrorhub_watch_restarts_total{resource="configmaps",reason="error",component="agent"} 1',
      'mirrorhub_watch_restarts_total{resource="configmaps",reason="gone",component="agent"} 1',
      'mirrorhub_watch_errors_total{resource="configmaps",phase="watch",component="agent"} 1',
      'mirrorhub_watch_objects{resource="configmaps",component="agent"} 2',
    ]) {
      expect(out).toContain(line);
    }
    expect(logged).toContain('warn watch failed, retrying');
    expect(logged).toContain('info listed');
    await w.stop();
  });
});
