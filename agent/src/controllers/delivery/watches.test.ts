import type { KubernetesObject, V1Namespace, V1Secret } from '@kubernetes/client-node';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { MirrorDelivery } from '@mirrorhub/shared/api/types.gen';
import { FakeClock, FakeListerWatcher } from '@mirrorhub/shared/testing/fake';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import type { ResourceTarget } from '@mirrorhub/shared/kit/k8s/listwatch';
import { Reconciler } from '@mirrorhub/shared/kit/controller/reconciler';
import { createMetrics } from '@mirrorhub/shared/kit/runtime/metrics';
import {
  LABEL_DELIVERY,
  LABEL_MANAGED_BY,
  LABEL_PAYLOAD,
  MANAGED_BY_VALUE,
} from '@mirrorhub/shared/api/contract';
import { CopyKnowledge } from './knowledge.js';
import { DeliveryNotes } from './notes.js';
import { compileDeliveryMatcher } from './plan.js';
import { DeliveryWatches } from './watches.js';

const NS = 'mirrorhub-system';

function delivery(name: string, namespaces: string[], payloadSecretName = name): MirrorDelivery {
  return {
    apiVersion: 'mirrorhub.io/v1alpha1',
    kind: 'MirrorDelivery',
    metadata: { name, namespace: NS, generation: 1 },
    spec: {
      mirror: { kind: 'SecretMirror', namespace: 'apps', name: 'tls', uid: 'u1' },
      originCluster: 'hub',
      payloadSecretName,
      target: { kind: 'Secret', name: 'tls' },
      namespaces,
      contentHash: 'h1',
    },
  };
}

const namespace = (name: string, labels?: Record<string, string>): V1Namespace => ({
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name, ...(labels ? { labels } : {}) },
});

const copy = (ns: string, deliveryName: string): V1Secret => ({
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: {
    name: 'tls',
    namespace: ns,
    labels: { [LABEL_MANAGED_BY]: MANAGED_BY_VALUE, [LABEL_DELIVERY]: deliveryName },
  },
});

/** The watches on fake API servers, routing into a list of queued keys. */
async function started() {
  const fakes = new Map<string, FakeListerWatcher<KubernetesObject>>();
  const clock = new FakeClock();
  const watches = new DeliveryWatches({
    kubeConfig: {} as KubeAccess,
    namespace: NS,
    clock,
    resyncMs: 300_000,
    listerWatcher: (t: ResourceTarget) => {
      const lw = new FakeListerWatcher<KubernetesObject>();
      fakes.set(`${t.plural} ${t.labelSelector ?? ''}`, lw);
      return lw;
    },
  });
  const fake = (plural: string, selector = '') => fakes.get(`${plural} ${selector}`)!;
  const knowledge = new CopyKnowledge(watches.copies, clock);
  const writes = { relisted: 0, deleted: [] as string[] };
  const queued: string[] = [];
  const reconciler = new Reconciler({
    name: 'delivery',
    concurrency: 1,
    logger: pino({ level: 'silent' }),
    metrics: createMetrics({ component: 'agent', defaultMetrics: false }),
    reconcile: (key) => {
      queued.push(key);
      return Promise.resolve();
    },
  });
  watches.start(reconciler, {
    knowledge,
    notes: new DeliveryNotes(),
    writer: {
      observed: () => false,
      deleted: (key) => void writes.deleted.push(key),
      relisted: () => void writes.relisted++,
    },
  });
  await reconciler.synced();
  reconciler.start();
  stops.push(() => reconciler.stop());
  return {
    watches,
    knowledge,
    clock,
    writes,
    deliveries: fake('mirrordeliveries'),
    payloads: fake('secrets', `${LABEL_PAYLOAD}=true`),
    namespaces: fake('namespaces'),
    copies: fake('secrets', `${LABEL_MANAGED_BY}=${MANAGED_BY_VALUE}`),
    /** The keys queued by what `change` does (a sentinel change marks the end). */
    async queuedBy(change: () => void | Promise<void>): Promise<string[]> {
      await reconciler.idle();
      queued.length = 0;
      await change();
      const sentinel = fake('mirrordeliveries').create(delivery('sentinel', []));
      await expect.poll(() => queued.includes('sentinel')).toBe(true);
      fake('mirrordeliveries').delete(sentinel.metadata!.name!, NS);
      return [...new Set(queued.filter((k) => k !== 'sentinel'))].sort();
    },
  };
}

const stops: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

describe('DeliveryWatches routing', () => {
  it('every cache takes a fresh look at the shortest poll period of the deliveries, and hands out what its watch missed', async () => {
    const w = await started();
    expect(w.watches.freshLookMs).toBe(300_000);
    const d = delivery('d-1', ['team-.+']);
    d.spec.pollPeriodSeconds = 20;
    w.deliveries.create(d);
    w.deliveries.create(delivery('d-2', ['other-.+'])); // from an older hub: no period
    w.namespaces.create(namespace('team-a'));
    w.copies.create(copy('team-a', 'd-1'));
    await expect.poll(() => w.watches.freshLookMs).toBe(20_000);
    // Someone deletes the copy and the copy watch misses it: the next look finds it gone.
    const missed = await w.queuedBy(async () => {
      w.copies.silently(() => w.copies.delete('tls', 'team-a'));
      await w.clock.advance(24_000); // the period, jittered up to +20 %
    });
    expect(missed).toEqual(['d-1']);
    expect(w.watches.copies.Secret.get('tls', 'team-a')).toBeUndefined();
    // The fast delivery goes: back to the agent's own period.
    w.deliveries.delete('d-1', NS);
    await expect.poll(() => w.watches.freshLookMs).toBe(300_000);
  });

  it('a delivery is news when its spec, deletion, finalizers or annotations change; not its status', async () => {
    const w = await started();
    const d = w.deliveries.create(delivery('d-1', ['team-.+'])) as MirrorDelivery;
    expect(
      await w.queuedBy(() => w.deliveries.update({ ...d, status: { phase: 'Active' } })),
    ).toEqual([]);
    expect(
      await w.queuedBy(() =>
        w.deliveries.update({ ...d, metadata: { ...d.metadata, generation: 2 } }),
      ),
    ).toEqual(['d-1']);
    expect(
      await w.queuedBy(() =>
        w.deliveries.update({ ...d, metadata: { ...d.metadata, finalizers: ['f'] } }),
      ),
    ).toEqual(['d-1']);
    expect(await w.queuedBy(() => w.deliveries.delete('d-1', NS))).toEqual(['d-1']);
    expect(w.writes.deleted).toContain('d-1');
    expect(w.writes.relisted).toBe(1); // the initial list
  });

  it('a payload change queues the deliveries made of it, and settles before copies are checked', async () => {
    const w = await started();
    w.deliveries.create(delivery('d-1', [], 'p-1'));
    w.deliveries.create(delivery('d-2', [], 'p-1'));
    w.deliveries.create(delivery('d-3', [], 'p-3'));
    const p = w.payloads.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'p-1', namespace: NS },
    });
    expect(w.knowledge.payloadSettling('p-1', w.clock.now())).toBe(0); // created: nothing to settle
    expect(await w.queuedBy(() => w.payloads.update({ ...p, data: { k: 'dg==' } }))).toEqual([
      'd-1',
      'd-2',
    ]);
    expect(w.knowledge.payloadSettling('p-1', w.clock.now())).toBe(2000);
  });

  it('a namespace change queues deliveries selecting it now or before, and those with copies there', async () => {
    const w = await started();
    w.deliveries.create({
      ...delivery('by-label', []),
      spec: {
        ...delivery('by-label', []).spec,
        namespaces: undefined,
        namespaceSelector: { matchLabels: { team: 'a' } },
      },
    });
    w.deliveries.create(delivery('by-name', ['team-.+']));
    w.deliveries.create(delivery('with-copy', ['nothing']));
    w.deliveries.create(delivery('elsewhere', ['other']));
    w.copies.create(copy('team-x', 'with-copy'));
    const ns = w.namespaces.create(namespace('team-x')) as V1Namespace;
    expect(
      await w.queuedBy(() =>
        w.namespaces.update({ ...ns, metadata: { ...ns.metadata, labels: { team: 'a' } } }),
      ),
    ).toEqual(['by-label', 'by-name', 'with-copy']);
    const labelled = w.watches.namespaces.get('team-x')!;
    expect(
      await w.queuedBy(() =>
        w.namespaces.update({ ...ns, metadata: { ...labelled.metadata, annotations: { a: 'b' } } }),
      ),
    ).toEqual([]); // same labels: not news
    expect(
      await w.queuedBy(() => w.namespaces.update({ ...ns, metadata: { name: 'team-x' } })),
    ).toEqual([
      'by-label', // selected it before
      'by-name',
      'with-copy',
    ]);
  });

  it("keeps each delivery's selection in step with the namespaces, a missed delete included", async () => {
    const w = await started();
    const d = delivery('by-label', []);
    d.spec = {
      ...d.spec,
      namespaces: undefined,
      namespaceSelector: { matchLabels: { team: 'a' } },
    };
    const rule = { matcher: compileDeliveryMatcher(d) };
    const selected = () => w.watches.selections.planViews('by-label', rule, []).map((v) => v.name);
    w.namespaces.create(namespace('team-y', { team: 'a' }));
    const ns = w.namespaces.create(namespace('team-x')) as V1Namespace;
    await expect.poll(() => w.watches.namespaces.get('team-x')).toBeDefined();
    expect(selected()).toEqual(['team-y']);

    w.namespaces.update({ ...ns, metadata: { ...ns.metadata, labels: { team: 'a' } } });
    await expect.poll(() => selected().sort()).toEqual(['team-x', 'team-y']);
    w.namespaces.delete('team-y');
    await expect.poll(selected).toEqual(['team-x']);
    // The watch misses a delete: the next re-list finds it, and the selection follows.
    w.namespaces.silently(() => w.namespaces.delete('team-x'));
    await w.clock.advance(360_000); // the resync period, jittered up to +20 %
    await expect.poll(selected).toEqual([]);
  });

  it('a copy changed by someone else queues its delivery; our own writes and removals do not', async () => {
    const w = await started();
    const created = w.copies.create(copy('team-a', 'd-1')) as V1Secret;
    const cached = () => w.watches.copies.Secret.get('tls', 'team-a')!;
    await expect.poll(() => cached()).toBeDefined();

    // Drift: someone edits the copy.
    expect(await w.queuedBy(() => w.copies.update({ ...created, data: { k: 'eA==' } }))).toEqual([
      'd-1',
    ]);
    // Our write: its answer (the new resourceVersion) is known before its event arrives.
    expect(
      await w.queuedBy(() => {
        const next = String(Number(w.copies.resourceVersion) + 1);
        w.knowledge.holds('Secret', { ...cached().metadata, resourceVersion: next }, 'p-1');
        w.copies.update({ ...created, data: { k: 'dg==' } });
      }),
    ).toEqual([]);
    // Relabelled to another delivery: both look again.
    expect(
      await w.queuedBy(() =>
        w.copies.update({
          ...created,
          metadata: {
            ...created.metadata,
            labels: { ...created.metadata!.labels, [LABEL_DELIVERY]: 'd-2' },
          },
        }),
      ),
    ).toEqual(['d-1', 'd-2']);
    // Removed by us: not news.
    const uid = cached().uid!;
    expect(
      await w.queuedBy(() => {
        w.knowledge.removingCopy({ kind: 'Secret', namespace: 'team-a', name: 'tls', uid });
        w.copies.delete('tls', 'team-a');
      }),
    ).toEqual([]);
  });
});
