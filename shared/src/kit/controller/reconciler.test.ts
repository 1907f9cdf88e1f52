import type { V1ConfigMap } from '@kubernetes/client-node';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../runtime/metrics.js';
import { FakeClock, FakeListerWatcher } from '../../testing/fake.js';
import { Watcher } from '../k8s/watcher.js';
import { Reconciler } from './reconciler.js';

const logger = pino({ level: 'silent' });

function cm(name: string): V1ConfigMap {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ns' } };
}

/** A reconciler that notes the keys it reconciles in `seen`. */
function recording(name: string): { r: Reconciler; seen: string[] } {
  const seen: string[] = [];
  const r = new Reconciler({
    name,
    logger,
    metrics: createMetrics({ component: 'hub', defaultMetrics: false }),
    reconcile: (key) => {
      seen.push(key);
      return Promise.resolve();
    },
  });
  return { r, seen };
}

describe('Reconciler', () => {
  it('routes watch changes to keys and reconciles each, observed in metrics', async () => {
    const seen: string[] = [];
    const metrics = createMetrics({ component: 'hub', defaultMetrics: false });
    const r = new Reconciler({
      name: 'things',
      logger,
      metrics,
      reconcile: (key) => {
        seen.push(key);
        return Promise.resolve();
      },
    });
    const lw = new FakeListerWatcher<V1ConfigMap>();
    lw.create(cm('a'));
    const listings: { reason: string; resourceVersion: string }[] = [];
    r.watch(new Watcher<V1ConfigMap>({ resource: 'configmaps', listerWatcher: lw }), {
      onAdd: (o) => r.add(`ns/${o.metadata?.name}`),
      onUpdate: (o) => r.add(`ns/${o.metadata?.name}`),
      onListed: (l) => void listings.push(l),
    });
    await r.synced();
    expect(r.hasSynced()).toBe(true);
    // Once, with why and at which resourceVersion (what a cache's user compares its writes to).
    expect(listings).toEqual([{ reason: 'initial', resourceVersion: expect.any(String) }]);
    expect(Number(listings[0]!.resourceVersion)).toBeGreaterThan(0);
    r.start();
    await r.idle();
    lw.create(cm('b'));
    await expect.poll(() => seen).toEqual(['ns/a', 'ns/b']);
    expect(await metrics.render()).toContain(
      'mirrorhub_reconcile_total{controller="things",result="success",component="hub"} 2',
    );
    await r.stop();
  });

  it('unwatch stops a watcher and its routing; synced() no longer waits for it', async () => {
    const { r, seen } = recording('unwatched');
    const kept = new FakeListerWatcher<V1ConfigMap>();
    const dropped = new FakeListerWatcher<V1ConfigMap>();
    const route = (prefix: string) => ({
      onAdd: (o: V1ConfigMap) => r.add(`${prefix}/${o.metadata?.name}`),
    });
    r.watch(new Watcher<V1ConfigMap>({ resource: 'kept', listerWatcher: kept }), route('kept'));
    const w = r.watch(
      new Watcher<V1ConfigMap>({ resource: 'dropped', listerWatcher: dropped }),
      route('dropped'),
    );
    await r.synced();
    r.start();
    await r.unwatch(w);
    await r.unwatch(w); // once is enough
    dropped.create(cm('late'));
    kept.create(cm('a'));
    await expect.poll(() => seen).toEqual(['kept/a']);
    expect(w.hasSynced()).toBe(true);
    await r.synced();
    await r.stop();
    await r.unwatch(w); // after stop: nothing left to do
  });

  it('runs per term: keys added between terms wait, each term starts with its keys', async () => {
    const { r, seen } = recording('terms');
    const first = new AbortController();
    const prepared: string[] = [];
    const term1 = r.run(first.signal, {
      prepare: () => {
        prepared.push('term1');
        return Promise.resolve();
      },
      keys: () => ['x'],
    });
    await expect.poll(() => seen).toEqual(['x']);
    first.abort();
    await term1;
    r.add('y'); // no term running: kept for the next
    expect(seen).toEqual(['x']);
    const second = new AbortController();
    const term2 = r.run(second.signal, { keys: () => ['z'] });
    await expect.poll(() => [...seen].sort()).toEqual(['x', 'y', 'z']);
    expect(prepared).toEqual(['term1']);
    await r.stop(); // ends the running term too
    await term2;
  });

  it('a term that begins while the last one winds down waits for it, then runs', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const seen: string[] = [];
    const r = new Reconciler({
      name: 'overlap',
      logger,
      metrics: createMetrics({ component: 'agent', defaultMetrics: false }),
      reconcile: (key) => {
        seen.push(key);
        return key === 'slow' ? held : Promise.resolve();
      },
    });
    const first = new AbortController();
    const term1 = r.run(first.signal, { keys: () => ['slow'] });
    await expect.poll(() => seen).toEqual(['slow']);
    first.abort(); // leadership lost: term 1 waits for 'slow'
    const term2 = r.run(new AbortController().signal, { keys: () => ['next'] });
    release();
    await term1;
    await expect.poll(() => seen).toEqual(['slow', 'next']);
    await r.stop();
    await term2;
  });

  it('sums the queues of reconcilers sharing a name (one per cluster) in the gauges', async () => {
    const metrics = createMetrics({ component: 'hub', defaultMetrics: false });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const one = () =>
      new Reconciler({ name: 'per-cluster', logger, metrics, reconcile: () => held });
    const [a, b] = [one(), one()];
    a.start();
    b.start();
    a.add('x');
    b.add('y');
    b.add('z');
    const gauges = async () =>
      (await metrics.render())
        .split('\n')
        .filter((l) => l.includes('controller="per-cluster"') && l.includes('workqueue_'));
    await expect
      .poll(gauges)
      .toEqual([
        'mirrorhub_workqueue_depth{controller="per-cluster",component="hub"} 0',
        'mirrorhub_workqueue_inflight{controller="per-cluster",component="hub"} 3',
      ]);
    release();
    await a.stop();
    await expect
      .poll(gauges)
      .toContain('mirrorhub_workqueue_inflight{controller="per-cluster",component="hub"} 0');
    await b.stop();
  });

  it("backs off as configured; forget starts a key's backoff over", async () => {
    const delays: (number | undefined)[] = [];
    const r = new Reconciler({
      name: 'slow',
      logger,
      metrics: createMetrics({ component: 'hub', defaultMetrics: false }),
      clock: new FakeClock(),
      backoff: { initialMs: 1000, maxMs: 4000, jitter: 0 },
      reconcile: () => Promise.reject(new Error('not yet')),
      afterReconcile: (o) => void delays.push(o.retryInMs),
    });
    r.start();
    r.add('k');
    await expect.poll(() => delays).toEqual([1000]);
    r.add('k');
    await expect.poll(() => delays).toEqual([1000, 2000]);
    r.forget('k');
    r.add('k');
    await expect.poll(() => delays).toEqual([1000, 2000, 1000]);
    await r.stop();
  });

  it('retries a failing key with backoff until it succeeds', async () => {
    let calls = 0;
    const r = new Reconciler({
      name: 'flaky',
      logger,
      metrics: createMetrics({ component: 'hub', defaultMetrics: false }),
      reconcile: () => (++calls < 3 ? Promise.reject(new Error('not yet')) : Promise.resolve()),
    });
    r.start();
    r.add('k');
    await expect.poll(() => calls, { timeout: 5_000 }).toBe(3);
    await r.stop();
  });

  it('a watch begun after stop() is stopped, never started', async () => {
    const r = new Reconciler({
      name: 'late',
      logger,
      metrics: createMetrics({ component: 'hub', defaultMetrics: false }),
      reconcile: () => Promise.resolve(),
    });
    await r.stop();
    const lw = new FakeListerWatcher<V1ConfigMap>();
    const w = r.watch(new Watcher<V1ConfigMap>({ resource: 'configmaps', listerWatcher: lw }));
    await Promise.resolve();
    expect(w.running).toBe(false);
    expect(lw.lists).toEqual([]);
  });

  it('a second stop() resolves only once the first one is done', async () => {
    // The hub stops its controllers on abort and again in its finally; if the second call
    // returned at once, a new leadership term could start while the old one still tore down
    // (the soak saw the old term remove the clusters the new term had just registered).
    let finish: (() => void) | undefined;
    const r = new Reconciler({
      name: 'slow',
      logger,
      metrics: createMetrics({ component: 'hub', defaultMetrics: false }),
      reconcile: () => new Promise<void>((resolve) => (finish = resolve)),
    });
    const lw = new FakeListerWatcher<V1ConfigMap>();
    lw.create(cm('a'));
    r.watch(new Watcher<V1ConfigMap>({ resource: 'configmaps', listerWatcher: lw }), {
      onAdd: (o) => r.add(`ns/${o.metadata?.name}`),
    });
    await r.synced();
    r.start();
    await expect.poll(() => finish).toBeDefined();
    const done: string[] = [];
    const first = r.stop().then(() => done.push('first'));
    const second = r.stop().then(() => done.push('second'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(done).toEqual([]); // the reconcile in flight holds the stop
    finish!();
    await Promise.all([first, second]);
    expect(done).toEqual(['first', 'second']);
  });
});
