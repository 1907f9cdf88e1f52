import type { KubernetesObject } from '@kubernetes/client-node';
import { Watcher, type ResolvedSource } from '@mirrorhub/shared';
import { FakeClock, FakeListerWatcher, settle } from '@mirrorhub/shared/testing/index';
import { afterEach, describe, expect, it } from 'vitest';
import { SourceWatches, sourceKey } from './object-watches.js';

const tls: ResolvedSource = { kind: 'Secret', namespace: 'src', name: 'tls' };
const cfg: ResolvedSource = { kind: 'ConfigMap', namespace: 'src', name: 'cfg' };

/** One fake API per source, and the watchers built on them (started by SourceWatches). */
function harness(clock?: FakeClock) {
  const apis = new Map<string, FakeListerWatcher<KubernetesObject>>();
  const watchers: Watcher<KubernetesObject>[] = [];
  const changes: string[][] = [];
  const api = (s: ResolvedSource) => {
    let a = apis.get(sourceKey(s));
    if (!a) apis.set(sourceKey(s), (a = new FakeListerWatcher<KubernetesObject>()));
    return a;
  };
  const sources = new SourceWatches({
    onChange: (keys) => changes.push([...keys].sort()),
    factory: (s) => {
      const w = new Watcher<KubernetesObject>({
        resource: sourceKey(s),
        listerWatcher: api(s),
        backoff: { initialMs: 1, maxMs: 1 },
        ...(clock ? { clock, random: () => 0 } : {}),
      });
      watchers.push(w);
      return w;
    },
  });
  return { sources, api, watchers, changes };
}

let h: ReturnType<typeof harness>;
afterEach(async () => {
  await h?.sources.stop();
});

describe('SourceWatches', () => {
  it('shares one watch per source among mirrors and stops it with the last one', async () => {
    h = harness();
    h.sources.set('m1', tls);
    h.sources.set('m2', tls);
    h.sources.set('m3', cfg);
    expect(h.sources.size).toBe(2);
    expect(h.watchers).toHaveLength(2);
    h.sources.set('m1', cfg); // m1 switches source
    expect(h.sources.size).toBe(2);
    h.sources.set('m2', undefined); // last reader of tls
    expect(h.sources.size).toBe(1);
    await settle();
    expect(h.watchers[0]!.running).toBe(false);
    expect(h.watchers[1]!.running).toBe(true);
    h.sources.set('m1', undefined);
    h.sources.set('m3', undefined);
    expect(h.sources.size).toBe(0);
  });

  it('takes a fresh look at a source at the shortest poll period of the mirrors reading it', async () => {
    const clock = new FakeClock();
    h = harness(clock);
    h.sources.set('slow', tls, 600_000);
    h.sources.set('fast', tls, 20_000);
    await settle();
    const lists = () => h.api(tls).lists.length;
    expect(lists()).toBe(1);
    await clock.advance(20_000);
    await settle();
    expect(lists()).toBe(2);
    h.sources.set('fast', undefined); // the fast reader lets go: back to the slow one's period
    await clock.advance(300_000);
    await settle();
    expect(lists()).toBe(2);
    await clock.advance(300_000);
    await settle();
    expect(lists()).toBe(3);
  });

  it('is unknown until listed, then missing or found, and tells the mirrors each time', async () => {
    h = harness();
    h.sources.set('m1', tls);
    h.sources.set('m2', tls);
    expect(h.sources.get(tls)).toEqual({ state: 'unknown' });
    await h.watchers[0]!.synced;
    await settle();
    expect(h.sources.get(tls)).toEqual({ state: 'missing' });
    expect(h.changes).toEqual([['m1', 'm2']]); // the first list, even though it found nothing
    h.api(tls).create({
      metadata: { name: 'tls', namespace: 'src' },
      data: { a: 'YQ==' },
    } as KubernetesObject);
    await settle();
    const seen = h.sources.get(tls);
    expect(seen.state).toBe('found');
    expect(h.changes).toHaveLength(2);
    h.api(tls).delete('tls', 'src');
    await settle();
    expect(h.sources.get(tls)).toEqual({ state: 'missing' });
    expect(h.changes).toHaveLength(3);
  });

  it('reports a source it cannot read after repeated failures', async () => {
    h = harness();
    const forbidden = Object.assign(new Error('403 Forbidden: secrets is forbidden'), {
      code: 403,
    });
    h.api(tls).listErrors.push(...Array.from({ length: 10_000 }, () => forbidden));
    h.sources.set('m1', tls);
    await new Promise((r) => setTimeout(r, 30));
    expect(h.sources.get(tls)).toEqual({
      state: 'unreadable',
      error: '403 Forbidden: secrets is forbidden',
    });
    expect(h.changes).toEqual([['m1']]); // told once, not on every retry
    h.api(tls).listErrors.length = 0;
    await h.watchers[0]!.synced;
    await settle();
    expect(h.sources.get(tls)).toEqual({ state: 'missing' });
  });
});
