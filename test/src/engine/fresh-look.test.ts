// pollPeriodSeconds is a fresh look: what a watch missed is repaired within one poll period,
// without a restart. The agent talks to its API server through a proxy that stalls every open
// connection silently (no close, no error), as a load balancer that stops passing a watch's
// events does; its progress deadline (150 s) is far away, so only the periodic look can help.
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

  beforeAll(async () => {
    e = await Engine.start();
    proxy = new TcpProxy(Number(new URL(e.kit.cluster('hub').server).port));
    await proxy.open();
    await e.stopAgent();
    await e.startAgent({
      kubeConfig: through(e.kit.cluster('hub').kubeConfig(), `https://127.0.0.1:${proxy.port}`),
    });
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
});
