// Caches that miss nothing for long, without a restart. The hub and the agent each talk to the
// API server through a proxy of their own that can stall every open connection silently (no
// close, no error), as a load balancer that stops passing a watch's events does.
// - pollPeriodSeconds is a fresh look: with the progress deadline (150 s) far away, what a
//   stalled watch missed is repaired within one poll period.
// - The progress deadline notices a stall by itself: with a deadline of seconds and the poll
//   period at its default 300 s, a stalled watch is resumed and passes what it withheld.
//
// Both are mechanisms of one watch, so this file runs its watches over HTTP/1.1, one connection
// each (MIRRORHUB_HTTP2=false): the proxy's stall lifts from a connection as soon as the client
// sends on it, and over HTTP/2 every watch shares one connection, so one watch's restart would
// lift the stall of all of them. What a stalled HTTP/2 connection does (PING, a new connection
// for the stalled watch, every watch back) is test/src/runtime.test.ts's.
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { configureHttp2 } from '@mirrorhub/shared/kit/k8s/h2';

import type { AgentConfig } from '@mirrorhub/agent/agent';

import { Engine, secretMirror } from '../support/engine.js';
import { eventually } from '../support/eventually.js';
import { TcpProxy } from '../support/tcp-proxy.js';

/**
 * How long a repair may take: a poll period (10 s, jittered +20 %) or a stall deadline, plus
 * the REST client's 30 s timeout, which a write in flight when the stall began waits out.
 */
const REPAIR_MS = 50_000;
/** Three rounds at most (see inSomeRound), each a settle and a repair. */
const ROUNDS_TIMEOUT_MS = 300_000;

/** What the caches did in `log` (lists, watch ends and stalls): a failure's explanation. */
function cacheLines(log: string): string {
  return log
    .split('\n')
    .filter((l) => /"msg":"(listed|watch ended|watch stalled|watch failed)/.test(l))
    .slice(-40)
    .join('\n');
}

/**
 * Waits until `resource`'s cache has taken a look that found it current and is watching again
 * (so a stall now catches its watch open, not between two watches).
 */
async function lookedAndWatching(e: Engine, resource: string): Promise<void> {
  await eventually(
    () => {
      const lines = e.logs.lines.filter((l) => l.includes(`"resource":"${resource}"`));
      expect(lines.join('\n')).toMatch(/"reason":"checked"/);
      expect(lines.at(-1)).toMatch(/"msg":"watch connected"/);
    },
    { timeoutMs: 30_000 },
  );
}

/**
 * Runs `round` (stall, change, wait for the repair) until one round's log shows the repair
 * came the way `proven` says. A stall can miss a watch that is reconnecting at that instant:
 * that watch then passes the change at once, which is right but proves nothing, so the round
 * is run again (at most 3 times).
 */
async function inSomeRound(
  e: Engine,
  round: (n: number) => Promise<void>,
  proven: (log: string) => boolean,
): Promise<void> {
  let since = '';
  for (let n = 1; n <= 3; n++) {
    const before = e.logs.lines.length;
    await round(n);
    since = e.logs.lines.slice(before).join('\n');
    if (proven(since)) return;
  }
  expect.fail(`no round repaired it the expected way; the caches did:\n${cacheLines(since)}`);
}

beforeAll(() => configureHttp2({ enabled: false }));
afterAll(() => configureHttp2({ enabled: true }));

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

/**
 * An engine whose agent and hub each reach the API server through a stall proxy of their own,
 * with source src/cfg {v: 1} mirrored to the namespaces `copiesIn`, which hold it on return.
 */
async function behindProxies(o: {
  agent?: Partial<AgentConfig>;
  pollPeriodSeconds?: number;
  copiesIn: string[];
}): Promise<BehindProxies> {
  const e = await Engine.start();
  const port = Number(new URL(e.kit.cluster('hub').server).port);
  const [agentProxy, hubProxy] = [new TcpProxy(port), new TcpProxy(port)];
  await agentProxy.open();
  await hubProxy.open();
  const via = (p: TcpProxy) =>
    through(e.kit.cluster('hub').kubeConfig(), `https://127.0.0.1:${p.port}`);
  await e.stopHub();
  await e.stopAgent();
  await e.startAgent({ kubeConfig: via(agentProxy), ...o.agent });
  await e.startHub({ kubeConfig: via(hubProxy) });
  for (const ns of ['src', ...o.copiesIn]) await e.ensureNamespace(ns);
  await e.putSecret('src', 'cfg', { v: '1' });
  await e.applyMirror(
    secretMirror('src', 'cfg', {
      source: { kind: 'Secret', name: 'cfg' },
      destination: { namespaces: ['app-.*'] },
      ...(o.pollPeriodSeconds ? { pollPeriodSeconds: o.pollPeriodSeconds } : {}),
    }),
  );
  await eventually(
    async () => {
      for (const ns of o.copiesIn) expect(await e.secretData(ns, 'cfg')).toEqual({ v: '1' });
    },
    { timeoutMs: 30_000 },
  );
  return {
    e,
    agentProxy,
    hubProxy,
    async stop() {
      await e.stop();
      await agentProxy.cut();
      await hubProxy.cut();
    },
  };
}

interface BehindProxies {
  e: Engine;
  agentProxy: TcpProxy;
  hubProxy: TcpProxy;
  stop(): Promise<void>;
}

/** Stalls the agent's connections, deletes the copy in app-1 and waits until it is back. */
async function stallAndDeleteCopy(f: BehindProxies): Promise<void> {
  expect(f.agentProxy.stall()).toBeGreaterThan(0);
  await f.e.core().deleteNamespacedSecret({ namespace: 'app-1', name: 'cfg' });
  await eventually(async () => expect(await f.e.secretData('app-1', 'cfg')).toEqual({ v: '1' }), {
    timeoutMs: REPAIR_MS,
  });
}

describe('a fresh look at every poll period', () => {
  let f: BehindProxies;
  let e: Engine;

  beforeAll(async () => {
    f = await behindProxies({ pollPeriodSeconds: 10, copiesIn: ['app-1', 'app-2'] });
    e = f.e;
  });

  afterAll(async () => {
    await f?.stop();
  });

  it(
    "brings back a copy deleted while the agent's watches were stalled, within a poll period",
    async () => {
      await inSomeRound(
        e,
        async () => {
          // Let the agent settle, so a look is behind it and every watch is open.
          await lookedAndWatching(e, 'copy-secrets');
          // 10 s, jittered up to +20 %, then the re-list and the copy's re-creation.
          await stallAndDeleteCopy(f);
        },
        // The periodic look found the copy gone (not a stall detection, not a restart).
        (log) =>
          /"resource":"copy-secrets".*"reason":"periodic".*"deleted":1/.test(log) &&
          !/watch stalled/.test(log),
      );
      expect(await e.secretData('app-2', 'cfg')).toEqual({ v: '1' });
    },
    ROUNDS_TIMEOUT_MS,
  );

  it(
    "delivers a source change the hub's stalled source watch missed, within a poll period",
    async () => {
      await inSomeRound(
        e,
        async (n) => {
          await lookedAndWatching(e, 'sources');
          expect(f.hubProxy.stall()).toBeGreaterThan(0);
          await e.putSecret('src', 'cfg', { v: `${n + 1}` });
          await eventually(
            async () => {
              for (const ns of ['app-1', 'app-2'])
                expect(await e.secretData(ns, 'cfg')).toEqual({ v: `${n + 1}` });
            },
            { timeoutMs: REPAIR_MS },
          );
        },
        // The source's look saw a resourceVersion its cache did not have, and read it in full.
        (log) =>
          /"resource":"sources","reason":"periodic","total":1,"added":0,"updated":1/.test(log) &&
          !/watch stalled/.test(log),
      );
    },
    ROUNDS_TIMEOUT_MS,
  );
});

describe('a stalled watch, noticed by its progress deadline', () => {
  let f: BehindProxies;

  beforeAll(async () => {
    // A deadline of seconds (production: 150 s against the API server's one-minute bookmarks);
    // the mirror's poll period stays at its default 300 s, so no periodic look can help.
    f = await behindProxies({
      agent: { watchProgressDeadlineSeconds: 3 },
      copiesIn: ['app-1'],
    });
  });

  afterAll(async () => {
    await f?.stop();
  });

  it(
    'brings back a copy deleted during the stall, without a restart and long before any poll',
    async () => {
      await inSomeRound(
        f.e,
        () => stallAndDeleteCopy(f),
        (log) =>
          /"resource":"copy-secrets".*"msg":"watch stalled/.test(log) &&
          !/"resource":"copy-secrets","reason":"(periodic|checked)"/.test(log),
      );
    },
    ROUNDS_TIMEOUT_MS,
  );
});
