// The cluster destinations on the leading replica when other replicas own the followers: no
// connection to them, the finalizer asked for before they write, their reports counted, a new
// report re-plans the mirror it names, and a deletion waits for what they still hold.
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { describe, expect, it } from 'vitest';
import type { ClusterSecretMirror, DeliveryReport } from '@mirrorhub/shared/api/index';
import { deliveryName } from '@mirrorhub/shared/mirror/index';
import { createSigner } from '@mirrorhub/shared/mirror/signing';
import { createMetrics, realClock, silentLogger } from '@mirrorhub/shared/kit/runtime/index';
import { ClusterRegistry } from '../../../clusters/registry.js';
import type { ClusterTarget } from '../../../clusters/target.js';
import type { Ownership } from '../../../shards/ownership.js';
import { ClusterDestinations, replanDelayMs } from './index.js';

const SIGNER = createSigner(
  generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
);
const NOBODY_HERE: Ownership = {
  owns: () => false,
  ownerOf: () => 'hub-2',
  onChange: () => () => undefined,
};
const ID = { kind: 'ClusterSecretMirror' as const, name: 'tls' };
const KEY = 'ClusterSecretMirror//tls';
const NAME = deliveryName(ID, 'hub');
const MIRROR = {
  apiVersion: 'mirrorhub.io/v1alpha1',
  kind: 'ClusterSecretMirror',
  metadata: { name: 'tls', uid: 'uid-tls', generation: 1, finalizers: ['mirrorhub.io/hub'] },
  spec: {
    source: { kind: 'Secret', name: 'tls', namespace: 'src' },
    destination: { namespaces: ['app'], clusters: { names: ['b'] } },
  },
} as unknown as ClusterSecretMirror;
const SOURCE = {
  observation: {
    state: 'found' as const,
    object: { type: 'Opaque', data: { k: Buffer.from('v').toString('base64') }, metadata: {} },
  },
};

const remote = (report: DeliveryReport | undefined): ClusterTarget => ({
  name: 'b',
  agentNamespace: 'mirrorhub-system',
  labels: {},
  local: false,
  type: 'EKS',
  kubeConfig: () => Promise.reject(new Error('never connected')),
  remote: {
    owner: 'hub-2',
    report: report ? { replica: 'hub-2', items: [report] } : undefined,
  },
});

function destinations(
  registry = new ClusterRegistry([remote(undefined)]),
  ownership: Ownership = NOBODY_HERE,
) {
  const enqueued: string[] = [];
  const delays: (number | undefined)[] = [];
  const d = new ClusterDestinations({
    registry,
    originCluster: 'hub',
    hubSecret: Buffer.alloc(32, 1),
    signer: SIGNER,
    logger: silentLogger(),
    metrics: createMetrics({ component: 'hub', defaultMetrics: false }),
    clock: realClock,
    enqueue: (k, afterMs) => {
      enqueued.push(k);
      delays.push(afterMs);
    },
    enqueueAll: () => undefined,
    ownership,
  });
  return { d, registry, enqueued, delays };
}

describe('replanDelayMs: the events of a fleet are planned together', () => {
  it.each([
    [1, 100],
    [20, 100],
    [21, 200],
    [100, 500],
    [200, 1_000],
    [1_000, 1_000],
  ])('%i clusters: %i ms', (clusters, ms) => {
    expect(replanDelayMs(clusters)).toBe(ms);
  });
});

describe('ClusterDestinations on the leader, followers owned elsewhere', () => {
  it('connects to none, asks for the finalizer, and counts the owner’s current report', async () => {
    const { d, registry, enqueued, delays } = destinations();
    await d.start();
    expect(d.size).toBe(0);
    const ctx = { key: KEY, id: ID, mirror: MIRROR, now: new Date() };

    const first = await d.plan(ctx, SOURCE);
    expect(first.writes).toBe(true); // the finalizer comes before the owner writes
    expect(first.mirror?.writes).toEqual([]);
    expect(first.mirror?.status.clusters).toEqual([
      expect.objectContaining({
        name: 'b',
        phase: 'Pending',
        message: 'delivered by hub replica hub-2; waiting for its report',
      }),
    ]);

    const report: DeliveryReport = {
      delivery: NAME,
      mirror: KEY,
      generation: 1,
      contentHash: first.mirror!.contentHash!,
      present: true,
      phase: 'Active',
      namespaces: 1,
      synced: 1,
      failed: 0,
      conflicts: 0,
    };
    registry.set(remote(report));
    expect(enqueued).toEqual([KEY]); // only the mirror the report names, not every mirror
    // ... planned with the other clusters' reports of the next 100 ms, not once per report.
    expect(delays).toEqual([replanDelayMs(1)]);

    const second = await d.plan(ctx, SOURCE);
    expect(second.mirror?.status).toMatchObject({
      phase: 'Active',
      counts: { clusters: 1, namespaces: 1, synced: 1 },
    });
    await d.stop();
  });

  it('releases a deleted mirror only once the owner reports nothing left', async () => {
    const { d, registry } = destinations();
    await d.start();
    const deleting = {
      key: KEY,
      id: ID,
      mirror: MIRROR,
      held: true,
      deletingSince: new Date(),
      graceMs: 60_000,
      now: new Date(),
    };
    registry.set(
      remote({ delivery: NAME, mirror: KEY, present: true, phase: 'Pending', message: 'removing' }),
    );
    expect((await d.cleanUp(deleting)).waitMs).toBeDefined();
    registry.set(remote(undefined));
    expect((await d.cleanUp(deleting)).waitMs).toBeUndefined();
    await d.stop();
  });
});

/** A follower's API server whose writes wait until the test lets them answer. */
async function slowFollower() {
  const held: (() => void)[] = [];
  const writes: string[] = [];
  const state = { open: false };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const send = (status: number, out: unknown) => {
        res.writeHead(status, { 'Content-Type': 'application/json' });
        res.end(out === undefined ? '' : JSON.stringify(out));
      };
      if (req.method === 'GET') {
        if (url.searchParams.get('watch') === 'true') return send(200, undefined);
        if (/\/(mirrordeliveries|secrets)\/[^/]+$/.test(url.pathname)) {
          return send(404, { kind: 'Status', code: 404, reason: 'NotFound' });
        }
        return send(200, { metadata: { resourceVersion: '5' }, items: [] });
      }
      writes.push(`${req.method} ${url.pathname}`);
      const parsed = (body ? JSON.parse(body) : {}) as { metadata?: object };
      const answer = () =>
        send(201, { ...parsed, metadata: { ...parsed.metadata, resourceVersion: '6', uid: 'u' } });
      if (state.open) answer();
      else held.push(answer);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const access: KubeAccess = {
    getCurrentCluster: () => ({ server: base }),
    applyToHTTPSOptions: () => Promise.resolve(),
  };
  return {
    access,
    held,
    writes,
    /** Answer the writes held, and every later one at once. */
    open: () => {
      state.open = true;
      while (held.length > 0) held.shift()!();
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

describe('ClusterDestinations losing a follower', () => {
  it('gives it up only once the writes in flight there have ended, and writes there no more', async () => {
    const follower = await slowFollower();
    let owned = true;
    const listeners: ((name: string, owned: boolean) => void | Promise<void>)[] = [];
    const ownership: Ownership = {
      owns: () => owned,
      ownerOf: () => (owned ? 'hub-1' : 'hub-2'),
      onChange: (l) => {
        listeners.push(l);
        return () => undefined;
      },
    };
    const target: ClusterTarget = {
      name: 'b',
      agentNamespace: 'mirrorhub-system',
      labels: {},
      local: false,
      type: 'Kubeconfig',
      kubeConfig: () => Promise.resolve(follower.access),
    };
    const { d } = destinations(new ClusterRegistry([target]), ownership);
    try {
      await d.start();
      const ctx = { key: KEY, id: ID, mirror: MIRROR, now: new Date() };
      let plan = await d.plan(ctx, SOURCE);
      for (let i = 0; i < 200 && plan.mirror?.writes.length === 0; i++) {
        await tick();
        plan = await d.plan(ctx, SOURCE);
      }
      await d.apply(ctx, plan);
      for (let i = 0; i < 200 && follower.held.length === 0; i++) await tick();
      expect(follower.held.length).toBeGreaterThan(0); // a write in flight

      owned = false;
      let given = false;
      const giving = Promise.all(listeners.map((l) => l('b', false))).then(() => (given = true));
      for (let i = 0; i < 10; i++) await tick();
      expect(given).toBe(false); // the write has not ended: the claim is kept

      follower.open();
      await giving;
      const written = follower.writes.length;
      void d.apply(ctx, plan); // a late plan for b changes nothing there
      for (let i = 0; i < 10; i++) await tick();
      expect(follower.writes.length).toBe(written);
    } finally {
      await d.stop();
      await follower.close();
    }
  });
});

function tick(): Promise<void> {
  return new Promise((r) => setTimeout(r, 10));
}
