import { setTimeout as sleep } from 'node:timers/promises';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine, secretMirror, SYSTEM_NS } from '../support/engine.js';
import { eventually } from '../support/eventually.js';

describe('steady state and restarts', () => {
  let e: Engine;

  beforeAll(async () => {
    e = await Engine.start();
    for (const ns of ['src', 'app-1', 'app-2']) await e.ensureNamespace(ns);
    await e.putSecret('src', 'cfg', { v: '1' });
    // A short poll period: full resyncs happen during the test and must still write nothing.
    await e.applyMirror(
      secretMirror('src', 'cfg', {
        source: { kind: 'Secret', name: 'cfg' },
        destination: { namespaces: ['app-.*'] },
        pollPeriodSeconds: 10,
      }),
    );
    await e.mirrorStatus('SecretMirror', 'cfg', 'src', (m) =>
      expect(m.status?.phase).toBe('Active'),
    );
  });

  afterAll(async () => {
    await e?.stop();
  });

  async function versions(): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const ns of ['app-1', 'app-2'])
      out[`copy/${ns}`] = (await e.readSecret(ns, 'cfg'))!.metadata!.resourceVersion!;
    for (const d of await e.deliveries())
      out[`delivery/${d.metadata!.name}`] = d.metadata!.resourceVersion!;
    const payloads = await e
      .core()
      .listNamespacedSecret({ namespace: SYSTEM_NS, labelSelector: 'mirrorhub.io/payload=true' });
    for (const p of payloads.items)
      out[`payload/${p.metadata!.name}`] = p.metadata!.resourceVersion!;
    out.mirror = (await e.getMirror('SecretMirror', 'cfg', 'src'))!.metadata!.resourceVersion!;
    return out;
  }

  it('writes nothing when nothing changed, across full resyncs', async () => {
    // Let status settle (lastSyncTime etc.), then nothing may move for longer than a poll period.
    await sleep(2_000);
    const before = await versions();
    await sleep(13_000);
    expect(await versions()).toEqual(before);
  });

  it('converges after hub and agent restart, with no duplicate or lost copy', async () => {
    await e.stopHub();
    await e.stopAgent();
    await e.putSecret('src', 'cfg', { v: '2' });
    await e.core().deleteNamespacedSecret({ name: 'cfg', namespace: 'app-1' });
    await e.ensureNamespace('app-3');
    await e.startAgent();
    await e.startHub();
    await eventually(async () => {
      for (const ns of ['app-1', 'app-2', 'app-3'])
        expect(await e.secretData(ns, 'cfg'), ns).toEqual({ v: '2' });
    });
    expect((await e.deliveries()).length).toBe(1);
    const copies = await e
      .core()
      .listSecretForAllNamespaces({ labelSelector: 'mirrorhub.io/managed-by=mirrorhub' });
    expect(copies.items.map((s) => `${s.metadata!.namespace}/${s.metadata!.name}`).sort()).toEqual([
      'app-1/cfg',
      'app-2/cfg',
      'app-3/cfg',
    ]);
  });
});

describe('leader election', () => {
  let e: Engine;

  beforeAll(async () => {
    e = await Engine.start({
      hub: {
        leaderElection: {
          leaseName: 'mirrorhub-hub',
          leaseDurationMs: 3_000,
          renewDeadlineMs: 2_000,
          retryPeriodMs: 500,
        },
      },
    });
    for (const ns of ['src', 'app-1']) await e.ensureNamespace(ns);
    await e.putSecret('src', 'x', { v: '1' });
  });

  afterAll(async () => {
    await e?.stop();
  });

  it('lets exactly one of two hubs act, and the standby takes over when the leader stops', async () => {
    const first = e.hub!;
    const second = await (async () => {
      const { createHub } = await import('@mirrorhub/hub/hub');
      const h = createHub(e.hubConfig({ identity: 'hub-2' }));
      await h.start();
      return h;
    })();
    try {
      await eventually(() =>
        expect([first.isLeader(), second.isLeader()].filter(Boolean)).toHaveLength(1),
      );
      const leader = first.isLeader() ? first : second;
      const standby = leader === first ? second : first;
      await e.applyMirror(
        secretMirror('src', 'x', {
          source: { kind: 'Secret', name: 'x' },
          destination: { namespaces: ['app-.*'] },
          pollPeriodSeconds: 3600,
        }),
      );
      await eventually(async () => expect(await e.secretData('app-1', 'x')).toEqual({ v: '1' }));
      await leader.stop();
      await eventually(() => expect(standby.isLeader()).toBe(true), { timeoutMs: 10_000 });
      await e.putSecret('src', 'x', { v: '2' });
      await eventually(async () => expect(await e.secretData('app-1', 'x')).toEqual({ v: '2' }));
      e.hub = standby;
    } finally {
      await second.stop().catch(() => {});
    }
  });
});
