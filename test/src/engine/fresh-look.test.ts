// pollPeriodSeconds is a fresh look: what a watch missed is repaired within one poll period,
// without a restart. The hub and the agent each talk to the API server through a proxy of
// their own that stalls every open connection silently (no close, no error), as a load
// balancer that stops passing a watch's events does; their progress deadline (150 s) is far
// away, so only the periodic look can help.
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine, secretMirror } from '../support/engine.js';
import { eventually } from '../support/eventually.js';
import { TcpProxy } from '../support/tcp-proxy.js';

/** `kc` with its server replaced by `server`. */
function through(kc: KubeConfig, server: string): KubeConfig {
  const out = new KubeConfig();
  out.loadFromOptions({
    clusters: kc.clusters.map((c) => ({ ...c, server })),
    users: kc.users,
    contexts: kc.contexts,
    currentContext: kc.currentContext,
  });
  return out;
}

describe('a fresh look at every poll period', () => {
  let e: Engine;
  let proxy: TcpProxy;
  let hubProxy: TcpProxy;

  beforeAll(async () => {
    e = await Engine.start();
    proxy = new TcpProxy(Number(new URL(e.kit.cluster('hub').server).port));
    await proxy.open();
    hubProxy = new TcpProxy(Number(new URL(e.kit.cluster('hub').server).port));
    await hubProxy.open();
    const via = (p: TcpProxy) =>
      through(e.kit.cluster('hub').kubeConfig(), `https://127.0.0.1:${p.port}`);
    await e.stopHub();
    await e.stopAgent();
    await e.startAgent({ kubeConfig: via(proxy) });
    await e.startHub({ kubeConfig: via(hubProxy) });
    for (const ns of ['src', 'app-1', 'app-2']) await e.ensureNamespace(ns);
    await e.putSecret('src', 'cfg', { v: '1' });
    await e.applyMirror(
      secretMirror('src', 'cfg', {
        source: { kind: 'Secret', name: 'cfg' },
        destination: { namespaces: ['app-.*'] },
        pollPeriodSeconds: 10,
      }),
    );
    await eventually(async () => {
      for (const ns of ['app-1', 'app-2'])
        expect(await e.secretData(ns, 'cfg')).toEqual({ v: '1' });
    });
  });

  afterAll(async () => {
    await e?.stop();
    await proxy?.cut();
    await hubProxy?.cut();
  });

  it("brings back a copy deleted while the agent's watches were stalled, within a poll period", async () => {
    // Let the agent settle, so its first look is behind it and every watch is open.
    await eventually(
      () => expect(e.logs.text()).toMatch(/"resource":"copy-secrets","reason":"checked"/),
      {
        timeoutMs: 30_000,
      },
    );
    expect(proxy.stall()).toBeGreaterThan(0);
    const lookedBefore = e.logs.lines.length;
    await e.core().deleteNamespacedSecret({ namespace: 'app-1', name: 'cfg' });

    // 10 s, jittered up to +20 %, then the re-list and the copy's re-creation.
    await eventually(async () => expect(await e.secretData('app-1', 'cfg')).toEqual({ v: '1' }), {
      timeoutMs: 25_000,
    });
    const since = e.logs.lines.slice(lookedBefore).join('\n');
    // The periodic look found the copy gone (not a stall detection, not a restart).
    expect(since).toMatch(/"resource":"copy-secrets".*"reason":"periodic".*"deleted":1/);
    expect(since).not.toMatch(/watch stalled/);
    expect(await e.secretData('app-2', 'cfg')).toEqual({ v: '1' });
  });

  it("delivers a source change the hub's stalled source watch missed, within a poll period", async () => {
    await eventually(
      () => expect(e.logs.text()).toMatch(/"resource":"sources","reason":"checked"/),
      { timeoutMs: 30_000 },
    );
    expect(hubProxy.stall()).toBeGreaterThan(0);
    const lookedBefore = e.logs.lines.length;
    await e.putSecret('src', 'cfg', { v: '2' });

    await eventually(
      async () => {
        for (const ns of ['app-1', 'app-2'])
          expect(await e.secretData(ns, 'cfg')).toEqual({ v: '2' });
      },
      { timeoutMs: 25_000 },
    );
    const since = e.logs.lines.slice(lookedBefore).join('\n');
    // The source's look saw a resourceVersion its cache did not have, and read it in full.
    expect(since).toMatch(
      /"resource":"sources","reason":"periodic","total":1,"added":0,"updated":1/,
    );
    expect(since).not.toMatch(/watch stalled/);
  });
});

describe('a stalled watch, noticed by its progress deadline', () => {
  let e: Engine;
  let proxy: TcpProxy;

  beforeAll(async () => {
    e = await Engine.start();
    proxy = new TcpProxy(Number(new URL(e.kit.cluster('hub').server).port));
    await proxy.open();
    await e.stopAgent();
    // A deadline of seconds (production: 150 s against the API server's one-minute bookmarks);
    // the mirror's poll period stays at its default 300 s, so no periodic look can help.
    await e.startAgent({
      kubeConfig: through(e.kit.cluster('hub').kubeConfig(), `https://127.0.0.1:${proxy.port}`),
      watchProgressDeadlineSeconds: 3,
    });
    for (const ns of ['src', 'app-1']) await e.ensureNamespace(ns);
    await e.putSecret('src', 'cfg', { v: '1' });
    await e.applyMirror(
      secretMirror('src', 'cfg', {
        source: { kind: 'Secret', name: 'cfg' },
        destination: { namespaces: ['app-.*'] },
      }),
    );
    await eventually(async () => expect(await e.secretData('app-1', 'cfg')).toEqual({ v: '1' }));
  });

  afterAll(async () => {
    await e?.stop();
    await proxy?.cut();
  });

  it('brings back a copy deleted during the stall, without a restart and long before any poll', async () => {
    expect(proxy.stall()).toBeGreaterThan(0);
    const before = e.logs.lines.length;
    await e.core().deleteNamespacedSecret({ namespace: 'app-1', name: 'cfg' });
    await eventually(async () => expect(await e.secretData('app-1', 'cfg')).toEqual({ v: '1' }), {
      timeoutMs: 20_000,
    });
    const since = e.logs.lines.slice(before).join('\n');
    expect(since).toMatch(/"resource":"copy-secrets".*"msg":"watch stalled/);
    expect(since).not.toMatch(/"resource":"copy-secrets","reason":"(periodic|checked)"/);
  });
});
