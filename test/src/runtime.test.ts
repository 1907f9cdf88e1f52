/**
 * The shared runtime against a real kube-apiserver: leader election on a real Lease, and the
 * watcher through the failures a controller meets in production — a dropped connection, a
 * 410 Gone for an expired resourceVersion, an API server restart, and watches sharing one
 * HTTP/2 connection that goes dead.
 */
import { readFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import { join } from 'node:path';

import {
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  type V1ConfigMap,
  type V1Secret,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startKit, type Kit, type KitCluster } from '@mirrorhub/infra/kit/index';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { configureHttp2, http2Stats } from '@mirrorhub/shared/kit/k8s/h2';
import {
  ACCEPT_METADATA,
  CONTENT_TYPE,
  corePath,
  createWatcher,
  kubeListerWatcher,
  LeaderElector,
  RestClient,
  type Watcher,
  type WatcherEvent,
} from '@mirrorhub/shared';

const NS = 'runtime-test';

async function eventually<T>(
  fn: () => T | Promise<T>,
  timeoutMs = 20_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== false && v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A TCP proxy in front of the API server that can cut every connection, and refuse new ones. */
async function startProxy(upstream: URL) {
  const sockets = new Set<net.Socket>();
  /** Every socket, stalled ones too: close() ends them all (a paused one never sees its peer go). */
  const all = new Set<net.Socket>();
  let refusing = false;
  const server = net.createServer((client) => {
    if (refusing) return void client.destroy();
    const up = net.connect(Number(upstream.port), upstream.hostname);
    sockets.add(client).add(up);
    all.add(client).add(up);
    const drop = (): void => {
      client.destroy();
      up.destroy();
      sockets.delete(client);
      sockets.delete(up);
      all.delete(client);
      all.delete(up);
    };
    client.on('error', drop).on('close', drop);
    up.on('error', drop).on('close', drop);
    client.pipe(up);
    up.pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `https://127.0.0.1:${port}`,
    connections: () => sockets.size / 2,
    /** Cut every open connection (watches see a reset mid-stream). */
    dropAll(): void {
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    /**
     * Stall every open connection: it stays open but passes nothing more, in either direction
     * (no close, no error). New connections pass as before.
     */
    stallAll(): void {
      for (const s of sockets) {
        s.unpipe();
        s.pause();
      }
      sockets.clear();
    },
    /** Cut everything and refuse new connections until resume(). */
    cut(): void {
      refusing = true;
      this.dropAll();
    },
    resume(): void {
      refusing = false;
    },
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        for (const s of all) s.destroy();
      }),
  };
}

function viaProxy(kc: KubeConfig, url: string): KubeConfig {
  const out = new KubeConfig();
  out.loadFromOptions({
    clusters: kc.clusters.map((c) => ({ ...c, server: url })),
    users: kc.users,
    contexts: kc.contexts,
    currentContext: kc.currentContext,
  });
  return out;
}

function cm(name: string, data: Record<string, string> = {}): V1ConfigMap {
  return { metadata: { name, namespace: NS, labels: { 'runtime-test/watched': 'yes' } }, data };
}

/** A started watcher of the test namespace's ConfigMaps with `labelSelector`, quick to retry. */
function watchConfigMaps(
  access: KubeAccess,
  labelSelector: string,
  opts: { progressDeadlineMs?: number } = {},
): Watcher<V1ConfigMap> {
  return createWatcher<V1ConfigMap>(
    access,
    { version: 'v1', plural: 'configmaps', namespace: NS, labelSelector },
    { backoff: { initialMs: 100, maxMs: 1000 }, ...opts },
  ).start();
}

/** Record handler calls and lifecycle events of a watcher. */
function record<T extends V1ConfigMap>(w: Watcher<T>) {
  const calls: string[] = [];
  const events: WatcherEvent[] = [];
  w.addHandler({
    onAdd: (o) => void calls.push(`add ${o.metadata?.name}`),
    onUpdate: (o) => void calls.push(`update ${o.metadata?.name}`),
    onDelete: (o, i) =>
      void calls.push(`delete ${o.metadata?.name}${i.finalStateUnknown ? ' (missed)' : ''}`),
  });
  w.onEvent((e) => events.push(e));
  const ofType = <K extends WatcherEvent['type']>(t: K) =>
    events.filter((e): e is Extract<WatcherEvent, { type: K }> => e.type === t);
  return { calls, events, ofType };
}

describe('runtime on a real API server', () => {
  let kit: Kit;
  let cluster: KitCluster;
  let kc: KubeConfig;
  let core: CoreV1Api;

  beforeAll(async () => {
    kit = await startKit({
      clusters: ['runtime'],
      aws: false,
      // Serve watches from etcd and compact every second, so a watcher that was away answers
      // 410 Gone for real (a watch cache would keep replaying from memory in a quiet test
      // cluster). Production API servers do the same once the watch window has moved on.
      apiserverArgs: ['--watch-cache=false', '--etcd-compaction-interval=1s'],
    });
    cluster = kit.cluster('runtime');
    kc = cluster.kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: NS } } });
  });

  afterAll(async () => {
    await kit?.stop();
  });

  describe('leader election', () => {
    const timings = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 250 };

    function candidate(
      identity: string,
      name: string,
      log: string[],
      releaseOnStop = true,
    ): LeaderElector {
      return new LeaderElector({
        namespace: NS,
        name,
        identity,
        kubeConfig: cluster.kubeConfig(),
        releaseOnStop,
        ...timings,
        onStartedLeading: (signal) => {
          log.push(`${identity} started`);
          signal.addEventListener('abort', () => log.push(`${identity} aborted`));
        },
        onStoppedLeading: () => log.push(`${identity} stopped`),
      });
    }

    it('elects one of two candidates; the other takes over quickly when the leader stops', async () => {
      const log: string[] = [];
      const a = candidate('hub-a', 'hub-graceful', log).start();
      await eventually(() => a.isLeader(), 10_000, 'a to lead');
      const b = candidate('hub-b', 'hub-graceful', log).start();
      await new Promise((r) => setTimeout(r, 1500)); // several retry periods
      expect(b.isLeader()).toBe(false);
      expect(b.leader).toBe('hub-a');

      const leases = kc.makeApiClient(CoordinationV1Api);
      const held = await leases.readNamespacedLease({ namespace: NS, name: 'hub-graceful' });
      expect(held.spec?.holderIdentity).toBe('hub-a');

      const stoppedAt = Date.now();
      await a.stop();
      expect(log).toEqual(['hub-a started', 'hub-a aborted', 'hub-a stopped']);
      await eventually(() => b.isLeader(), 10_000, 'b to lead');
      // released lease: far quicker than waiting out leaseDuration
      expect(Date.now() - stoppedAt).toBeLessThan(timings.leaseDurationMs);
      const taken = await leases.readNamespacedLease({ namespace: NS, name: 'hub-graceful' });
      expect(taken.spec?.holderIdentity).toBe('hub-b');
      expect(taken.spec?.leaseTransitions).toBe(1);
      await b.stop();
    });

    it('keeps its lease when its connection stalls: the stuck renewal times out early and the next goes over a new one', async () => {
      const proxy = await startProxy(new URL(cluster.server));
      const log: string[] = [];
      const a = new LeaderElector({
        namespace: NS,
        name: 'hub-stall',
        identity: 'hub-a',
        kubeConfig: viaProxy(kc, proxy.url),
        leaseDurationMs: 6_000,
        renewDeadlineMs: 4_000,
        retryPeriodMs: 250,
        onStartedLeading: () => void log.push('started'),
        onStoppedLeading: () => void log.push('stopped'),
      }).start();
      try {
        await eventually(() => a.isLeader(), 10_000, 'a to lead');
        proxy.stallAll();
        // Three renew deadlines: a renewal stuck for the whole deadline would have lost it.
        await new Promise((r) => setTimeout(r, 12_000));
        expect(log).toEqual(['started']);
        expect(a.isLeader()).toBe(true);
        const lease = await kc
          .makeApiClient(CoordinationV1Api)
          .readNamespacedLease({ namespace: NS, name: 'hub-stall' });
        const renewed = new Date(lease.spec!.renewTime as unknown as string).getTime();
        expect(Date.now() - renewed).toBeLessThan(3_000);
      } finally {
        await a.stop();
        await proxy.close();
      }
    });

    it('takes over a lease its holder abandoned once it expires', async () => {
      const log: string[] = [];
      const a = candidate('hub-a', 'hub-crash', log, false).start();
      await eventually(() => a.isLeader(), 10_000, 'a to lead');
      const b = candidate('hub-b', 'hub-crash', log).start();
      await new Promise((r) => setTimeout(r, 500));
      const crashedAt = Date.now();
      await a.stop(); // no release: like a killed pod
      await eventually(() => b.isLeader(), 15_000, 'b to lead');
      expect(Date.now() - crashedAt).toBeGreaterThanOrEqual(timings.leaseDurationMs - 600);
      await b.stop();
    });
  });

  describe('rest client', () => {
    it('gets metadata-only answers to writes when it asks for them', async () => {
      const rest = new RestClient(kc);
      type Answer = {
        kind?: string;
        data?: unknown;
        metadata?: { uid?: string; resourceVersion?: string; name?: string };
      };
      try {
        const body = { metadata: { name: 'meta-answer', namespace: NS }, stringData: { k: 'v' } };
        const path = corePath('secrets', NS, 'meta-answer');
        const created = await rest.post<Answer>(corePath('secrets', NS), body, {}, ACCEPT_METADATA);
        const replaced = await rest.put<Answer>(
          path,
          {
            ...body,
            metadata: { ...body.metadata, resourceVersion: created.metadata?.resourceVersion },
          },
          {},
          ACCEPT_METADATA,
        );
        const patched = await rest.patch<Answer>(
          path,
          { metadata: { labels: { a: 'b' } } },
          CONTENT_TYPE.merge,
          {},
          ACCEPT_METADATA,
        );
        for (const a of [created, replaced, patched]) {
          expect(a.kind).toBe('PartialObjectMetadata');
          expect(a.data).toBeUndefined();
          expect(a.metadata?.name).toBe('meta-answer');
          expect(a.metadata?.uid).toBe(created.metadata?.uid);
        }
        expect(patched.metadata?.resourceVersion).not.toBe(created.metadata?.resourceVersion);
        // The default is the whole object.
        const full = await rest.get<Answer>(path);
        expect(full.kind).toBe('Secret');
        expect(full.metadata?.resourceVersion).toBe(patched.metadata?.resourceVersion);
        expect(full.data).toEqual({ k: Buffer.from('v').toString('base64') });
      } finally {
        rest.close();
      }
    });
  });

  describe('watcher', () => {
    it('holds only the label-selected objects, and can watch metadata only', async () => {
      for (let i = 0; i < 40; i++) {
        await core.createNamespacedSecret({
          namespace: NS,
          body: { metadata: { name: `unrelated-${i}` }, stringData: { k: 'v' } },
        });
      }
      for (const name of ['selected-1', 'selected-2']) {
        await core.createNamespacedSecret({
          namespace: NS,
          body: {
            metadata: { name, labels: { 'mirrorhub.io/managed-by': 'mirrorhub' } },
            stringData: { k: 'v' },
          },
        });
      }
      const full = createWatcher<V1Secret>(kc, {
        version: 'v1',
        plural: 'secrets',
        namespace: NS,
        labelSelector: 'mirrorhub.io/managed-by=mirrorhub',
      }).start();
      const meta = createWatcher<V1Secret>(kc, {
        version: 'v1',
        plural: 'secrets',
        namespace: NS,
        labelSelector: 'mirrorhub.io/managed-by=mirrorhub',
        metadataOnly: true,
      }).start();
      try {
        await Promise.all([full.synced, meta.synced]);
        expect(full.size).toBe(2);
        expect(full.get('selected-1', NS)?.data?.['k']).toBe(Buffer.from('v').toString('base64'));
        expect(full.get('selected-1', NS)?.metadata?.managedFields).toBeUndefined();
        const m = meta.get('selected-1', NS) as unknown as { kind?: string; data?: unknown };
        expect(m.kind).toBe('PartialObjectMetadata');
        expect(m.data).toBeUndefined();

        await core.createNamespacedSecret({
          namespace: NS,
          body: {
            metadata: { name: 'selected-3', labels: { 'mirrorhub.io/managed-by': 'mirrorhub' } },
            stringData: { k: 'v' },
          },
        });
        await core.createNamespacedSecret({
          namespace: NS,
          body: { metadata: { name: 'unrelated-late' } },
        });
        await eventually(() => meta.size === 3 && full.size === 3, 10_000, 'selected-3');
        await new Promise((r) => setTimeout(r, 200));
        expect(full.size).toBe(3);
      } finally {
        await full.stop();
        await meta.stop();
      }
    });

    it('resumes after a dropped connection from its resourceVersion, without re-listing', async () => {
      const proxy = await startProxy(new URL(cluster.server));
      const w = watchConfigMaps(viaProxy(kc, proxy.url), 'runtime-test/watched=drop');
      const r = record(w);
      try {
        await w.synced;
        await eventually(() => r.ofType('connected').length === 1, 10_000, 'watch connected');
        proxy.dropAll();
        await eventually(() => r.ofType('connected').length === 2, 10_000, 'watch reconnected');
        await core.createNamespacedConfigMap({
          namespace: NS,
          body: { metadata: { name: 'after-drop', labels: { 'runtime-test/watched': 'drop' } } },
        });
        await eventually(() => w.get('after-drop', NS), 10_000, 'after-drop in the cache');
        expect(r.ofType('restarted').map((e) => e.reason)).toContain('error');
        expect(r.ofType('listed').map((e) => e.reason)).toEqual(['initial']);
        expect(r.calls).toEqual(['add after-drop']);
      } finally {
        await w.stop();
        await proxy.close();
      }
    });

    it('re-lists on a real 410 Gone and hands out exactly what it missed', async () => {
      for (const n of ['keep', 'change', 'remove'])
        await core.createNamespacedConfigMap({ namespace: NS, body: cm(n) });
      const proxy = await startProxy(new URL(cluster.server));
      const w = createWatcher<V1ConfigMap>(
        viaProxy(kc, proxy.url),
        {
          version: 'v1',
          plural: 'configmaps',
          namespace: NS,
          labelSelector: 'runtime-test/watched=yes',
        },
        { backoff: { initialMs: 100, maxMs: 500 } },
      ).start();
      const r = record(w);
      try {
        await w.synced;
        expect(w.size).toBe(3);
        await eventually(() => r.ofType('connected').length === 1, 10_000, 'watch connected');
        const rvBefore = Number(w.resourceVersion);
        r.calls.length = 0;

        // The watcher is cut off while things change, and stays away until etcd has compacted
        // past its resourceVersion: its resumed watch is answered 410 Gone.
        proxy.cut();
        await core.deleteNamespacedConfigMap({ namespace: NS, name: 'remove' });
        await core.replaceNamespacedConfigMap({
          namespace: NS,
          name: 'change',
          body: cm('change', { v: '2' }),
        });
        await core.createNamespacedConfigMap({ namespace: NS, body: cm('new') });
        await eventually(() => compactedPast(rvBefore), 15_000, 'etcd compaction');
        proxy.resume();

        await eventually(
          () => r.ofType('listed').some((e) => e.reason === 'gone'),
          15_000,
          'a relist after 410',
        );
        expect(r.ofType('restarted').map((e) => e.reason)).toContain('gone');
        expect(r.calls.sort()).toEqual(['add new', 'delete remove (missed)', 'update change']);
        expect(w.get('change', NS)?.data).toEqual({ v: '2' });
        expect(w.size).toBe(3);

        // and it keeps watching from the relist's resourceVersion
        await core.createNamespacedConfigMap({ namespace: NS, body: cm('after-410') });
        await eventually(() => w.get('after-410', NS), 10_000, 'after-410 in the cache');
      } finally {
        await w.stop();
        await proxy.close();
      }

      /** True once a watch from `rv` is refused as too old. */
      async function compactedPast(rv: number): Promise<boolean> {
        const lw = kubeListerWatcher<V1ConfigMap>(kc, {
          version: 'v1',
          plural: 'configmaps',
          namespace: NS,
        });
        return new Promise<boolean>((resolve) => {
          const h = lw.watch(
            { resourceVersion: String(rv), timeoutSeconds: 1, allowWatchBookmarks: false },
            {
              onEvent: (e) => {
                h.abort();
                resolve(e.type === 'ERROR' && (e.object as { code?: number }).code === 410);
              },
              onClose: (err) => resolve((err as { code?: number } | undefined)?.code === 410),
            },
          );
        });
      }
    });

    it('notices a silent watch stall by itself and resumes from where the stall began', async () => {
      const proxy = await startProxy(new URL(cluster.server));
      // This API server has no watch cache, so no bookmarks: a short deadline is enough here.
      const w = watchConfigMaps(viaProxy(kc, proxy.url), 'runtime-test/watched=stall', {
        progressDeadlineMs: 3_000,
      });
      const r = record(w);
      try {
        await w.synced;
        await eventually(() => r.ofType('connected').length === 1, 10_000, 'watch connected');
        proxy.stallAll();
        await core.createNamespacedConfigMap({
          namespace: NS,
          body: { metadata: { name: 'during-stall', labels: { 'runtime-test/watched': 'stall' } } },
        });
        await eventually(() => w.get('during-stall', NS), 20_000, 'during-stall in the cache');
        expect(r.ofType('restarted').map((e) => e.reason)).toContain('stalled');
        // It resumes from its resourceVersion; this API server compacts every second, so the
        // resumed watch may be answered 410 and re-list. Either way the missed add comes once.
        expect(r.ofType('listed').map((e) => e.reason)).not.toContain('periodic');
        expect(r.calls).toEqual(['add during-stall']);
      } finally {
        await w.stop();
        await proxy.close();
      }
    });

    it('repairs what a stalled watch missed at the next periodic look, reading metadata until then', async () => {
      await core.createNamespacedConfigMap({
        namespace: NS,
        body: { metadata: { name: 'looked-at', labels: { 'runtime-test/watched': 'look' } } },
      });
      const proxy = await startProxy(new URL(cluster.server));
      const w = createWatcher<V1ConfigMap>(
        viaProxy(kc, proxy.url),
        {
          version: 'v1',
          plural: 'configmaps',
          namespace: NS,
          labelSelector: 'runtime-test/watched=look',
        },
        {
          backoff: { initialMs: 100, maxMs: 1000 },
          // No stall detection: only the periodic look can repair the cache.
          progressDeadlineMs: 0,
          resyncPeriodMs: 2_000,
          transport: { listTimeoutMs: 5_000 },
        },
      ).start();
      const r = record(w);
      try {
        await w.synced;
        await eventually(
          () => r.ofType('listed').some((e) => e.reason === 'checked'),
          15_000,
          'a periodic look that finds the cache current',
        );
        expect(r.ofType('listed').filter((e) => e.reason === 'periodic')).toHaveLength(0);
        await eventually(() => r.ofType('connected').length >= 2, 10_000, 'watch connected');
        proxy.stallAll();
        await core.replaceNamespacedConfigMap({
          namespace: NS,
          name: 'looked-at',
          body: {
            metadata: { name: 'looked-at', labels: { 'runtime-test/watched': 'look' } },
            data: { v: '2' },
          },
        });
        await eventually(
          () => w.get('looked-at', NS)?.data?.['v'] === '2',
          15_000,
          'the missed update in the cache',
        );
        expect(r.ofType('listed').at(-1)).toMatchObject({ reason: 'periodic', updated: 1 });
        expect(r.calls).toContain('update looked-at');
      } finally {
        await w.stop();
        await proxy.close();
      }
    });

    it('carries watches as streams of one HTTP/2 connection, a second past the server stream limit', async () => {
      const proxy = await startProxy(new URL(cluster.server));
      const origin = proxy.url;
      const n = 150;
      const watchers = Array.from({ length: n }, (_, i) =>
        createWatcher<V1ConfigMap>(
          viaProxy(kc, proxy.url),
          {
            version: 'v1',
            plural: 'configmaps',
            namespace: NS,
            fieldSelector: `metadata.name=h2-${i}`,
          },
          { backoff: { initialMs: 100, maxMs: 1000 } },
        ).start(),
      );
      try {
        await Promise.all(watchers.map((w) => w.synced));
        // kube-apiserver allows 100 streams per connection: 150 watches need two connections.
        await eventually(() => http2Stats(origin).streams === n, 10_000, `${n} streams`);
        expect(http2Stats(origin)).toEqual({ sessions: 2, streams: n });
        for (let i = 0; i < n; i++)
          await core.createNamespacedConfigMap({
            namespace: NS,
            body: { metadata: { name: `h2-${i}` } },
          });
        await eventually(
          () => watchers.every((w, i) => w.get(`h2-${i}`, NS) !== undefined),
          20_000,
          'every watcher to get its own ConfigMap',
        );
        // Over HTTP/1.1 each of them would hold a TLS connection of its own.
        expect(proxy.connections()).toBeLessThan(10);
      } finally {
        await Promise.all(watchers.map((w) => w.stop()));
        await proxy.close();
      }
    });

    it('a stalled HTTP/2 connection: the quiet watch resumes on a new one at once, the PING unanswered ends the old one and brings back every watch on it', async () => {
      const proxy = await startProxy(new URL(cluster.server));
      // No watch cache here, so no bookmarks: the deadlines only have to outlast the test.
      const watch = (selector: string, progressDeadlineMs: number) =>
        watchConfigMaps(viaProxy(kc, proxy.url), selector, { progressDeadlineMs });
      const quick = watch('runtime-test/h2=quick', 3_000);
      const slow = watch('runtime-test/h2=slow', 120_000);
      const rq = record(quick);
      const rs = record(slow);
      try {
        await Promise.all([quick.synced, slow.synced]);
        await eventually(
          () => rq.ofType('connected').length === 1 && rs.ofType('connected').length === 1,
          10_000,
          'both watches connected',
        );
        expect(http2Stats(proxy.url)).toEqual({ sessions: 1, streams: 2 });
        proxy.stallAll();
        for (const who of ['quick', 'slow'])
          await core.createNamespacedConfigMap({
            namespace: NS,
            body: { metadata: { name: `h2-stall-${who}`, labels: { 'runtime-test/h2': who } } },
          });
        // The quick one notices by its deadline and resumes on a new connection at once.
        await eventually(() => quick.get('h2-stall-quick', NS), 10_000, 'quick resumed');
        // (Then maybe 'gone': this API server compacts every second, so a resumed watch may be
        // answered 410 and re-list. Either way the missed add comes once.)
        expect(rq.ofType('restarted')[0]?.reason).toBe('stalled');
        // The slow one, 2 minutes from its own deadline, comes back when the PING the quick one
        // sent goes unanswered for 15 s and the connection is ended under it.
        await eventually(() => slow.get('h2-stall-slow', NS), 30_000, 'slow back');
        expect(rs.ofType('restarted')[0]?.reason).toBe('error');
        expect(rq.calls).toEqual(['add h2-stall-quick']);
        expect(rs.calls).toEqual(['add h2-stall-slow']);
      } finally {
        await Promise.all([quick.stop(), slow.stop()]);
        await proxy.close();
      }
    });

    it('watches over HTTP/1.1 a server that does not offer HTTP/2', async () => {
      // An HTTP/1.1-only TLS front (node's https, the cluster's own serving certificate) that
      // passes requests on to the API server as the admin.
      const pki = (f: string) => readFileSync(join(cluster.dir, 'pki', f));
      const api = new URL(cluster.server);
      const front = https.createServer(
        { cert: pki('serving.crt'), key: pki('serving.key') },
        (req, res) => {
          const up = https.request(
            {
              host: api.hostname,
              port: api.port,
              path: req.url,
              method: req.method,
              headers: { accept: req.headers.accept ?? 'application/json' },
              ca: cluster.caPem,
              cert: pki('admin.crt'),
              key: pki('admin.key'),
            },
            (r) => {
              res.writeHead(r.statusCode ?? 502, r.headers);
              res.flushHeaders(); // a watch's headers come before its first event
              r.pipe(res);
            },
          );
          res.on('close', () => up.destroy());
          req.pipe(up);
        },
      );
      await new Promise<void>((r) => front.listen(0, '127.0.0.1', () => r()));
      const origin = `https://127.0.0.1:${(front.address() as net.AddressInfo).port}`;
      const access: KubeAccess = {
        getCurrentCluster: () => ({ server: origin }),
        applyToHTTPSOptions: (o) => {
          o.ca = cluster.caPem;
          return Promise.resolve();
        },
      };
      const w = watchConfigMaps(access, 'runtime-test/h1=front');
      const r = record(w);
      try {
        await w.synced;
        await eventually(() => r.ofType('connected').length === 1, 10_000, 'watch connected');
        await core.createNamespacedConfigMap({
          namespace: NS,
          body: { metadata: { name: 'via-front', labels: { 'runtime-test/h1': 'front' } } },
        });
        await eventually(() => w.get('via-front', NS), 10_000, 'via-front in the cache');
        expect(http2Stats(origin)).toEqual({ sessions: 0, streams: 0 });
        expect(r.ofType('error')).toEqual([]);
      } finally {
        await w.stop();
        front.closeAllConnections();
        await new Promise<void>((r) => front.close(() => r()));
      }
    });

    it('with MIRRORHUB_HTTP2=false, watches over HTTP/1.1 as before', async () => {
      configureHttp2({ enabled: false });
      const proxy = await startProxy(new URL(cluster.server));
      const w = watchConfigMaps(viaProxy(kc, proxy.url), 'runtime-test/h1=yes');
      try {
        await w.synced;
        await core.createNamespacedConfigMap({
          namespace: NS,
          body: { metadata: { name: 'over-h1', labels: { 'runtime-test/h1': 'yes' } } },
        });
        await eventually(() => w.get('over-h1', NS), 10_000, 'over-h1 in the cache');
        expect(http2Stats(proxy.url)).toEqual({ sessions: 0, streams: 0 });
      } finally {
        configureHttp2({ enabled: true });
        await w.stop();
        await proxy.close();
      }
    });

    it('rides out an API server restart', async () => {
      const w = createWatcher<V1ConfigMap>(
        kc,
        {
          version: 'v1',
          plural: 'configmaps',
          namespace: NS,
          labelSelector: 'runtime-test/watched=restart',
        },
        { backoff: { initialMs: 200, maxMs: 1000 } },
      ).start();
      const r = record(w);
      try {
        await w.synced;
        await cluster.stopApiServer();
        await eventually(() => r.ofType('error').length > 0, 10_000, 'the watcher to notice');
        await cluster.startApiServer();
        const core2 = cluster.kubeConfig().makeApiClient(CoreV1Api);
        await core2.createNamespacedConfigMap({
          namespace: NS,
          body: {
            metadata: { name: 'after-restart', labels: { 'runtime-test/watched': 'restart' } },
          },
        });
        await eventually(() => w.get('after-restart', NS), 30_000, 'after-restart in the cache');
        expect(r.calls).toContain('add after-restart');
        expect(w.running).toBe(true);
      } finally {
        await w.stop();
      }
    });
  });
});
