import { describe, expect, it } from 'vitest';
import type { DeliveryReport } from '@mirrorhub/shared/api/index';
import { FakeClock } from '@mirrorhub/shared/testing/index';
import { DeliveryReportStore } from './reports.js';

const report = (delivery: string, synced: number): DeliveryReport => ({
  delivery,
  mirror: `ClusterSecretMirror//${delivery}`,
  generation: 1,
  present: true,
  phase: 'Active',
  namespaces: 2,
  synced,
});

describe('DeliveryReportStore', () => {
  it('announces a burst of changes to one cluster once, then at most once per period', async () => {
    const clock = new FakeClock();
    const store = new DeliveryReportStore({ clock, coalesceMs: 1000 });
    const announced: string[] = [];
    store.onChange((c) => announced.push(c));
    store.set('a', report('d1', 1));
    store.set('a', report('d2', 1));
    store.set('b', report('d1', 1));
    await clock.advance(0);
    expect(announced).toEqual(['a', 'b']);
    store.set('a', report('d1', 2));
    store.set('a', report('d1', 2)); // the same again: nothing new
    await clock.advance(500);
    expect(announced).toEqual(['a', 'b']);
    await clock.advance(500);
    expect(announced).toEqual(['a', 'b', 'a']);
    expect(store.list('a')).toEqual([report('d1', 2), report('d2', 1)]);
  });

  it('announces nothing for a report that says what it said', async () => {
    const clock = new FakeClock();
    const store = new DeliveryReportStore({ clock });
    store.set('a', report('d1', 1));
    await clock.advance(5000);
    const announced: string[] = [];
    store.onChange((c) => announced.push(c));
    store.set('a', report('d1', 1));
    store.remove('a', 'other');
    await clock.advance(5000);
    expect(announced).toEqual([]);
  });

  it('forgets a cluster this replica no longer owns, and everything once it leads', async () => {
    const clock = new FakeClock();
    const store = new DeliveryReportStore({ clock });
    store.set('a', report('d1', 1));
    store.set('b', report('d1', 1));
    store.clear('a');
    expect(store.list('a')).toEqual([]);
    expect(store.list('b')).toHaveLength(1);
    store.clear();
    expect(store.list('b')).toEqual([]);
  });
});
