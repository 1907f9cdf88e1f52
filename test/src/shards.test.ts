// The Leases hub replicas share the fleet with (hub/src/shards/), on a real API server: three
// replicas in one process, each reaching the API server through a proxy of its own so one can be
// cut off (a partition: it cannot renew, and nobody hears from it). Each replica's "writes" are
// the spans between the ownership listener saying it holds a follower and its release listener
// resolving; no two replicas' spans of one follower may ever overlap, through joins, a
// partition, a rejoin, a stop and a deleted follower.
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { CoordinationV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { assignment, FleetShards } from '@mirrorhub/hub/shards/shards';
import { startKit, type Kit } from '@mirrorhub/infra/kit/index';
import { createLogger } from '@mirrorhub/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { installCrds } from './support/crds.js';
import { LogSink } from './support/engine.js';
import { eventually } from './support/eventually.js';
import { ClusterObjects } from './support/objects.js';
import { TcpProxy } from './support/tcp-proxy.js';

const NS = 'mirrorhub-system';
const FOLLOWERS = Array.from({ length: 12 }, (_, i) => `cluster-${String(i + 1).padStart(2, '0')}`);
const TIMING = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 };

interface Span {
  replica: string;
  follower: string;
  from: number;
  to: number;
}

interface Replica {
  name: string;
  proxy: TcpProxy;
  shards: FleetShards;
}

let kit: Kit;
let work: string;
let custom: CustomObjectsApi;
const logs = new LogSink();
const replicas = new Map<string, Replica>();
const spans: Span[] = [];
/** Spans still open, by replica and follower. */
const open = new Map<string, number>();

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'mirrorhub-shards-'));
  kit = await startKit({ clusters: ['hub'], aws: false });
  const admin = kit.cluster('hub').kubeConfig();
  await installCrds(admin, 'mirrorhub-hub');
  await new ClusterObjects(admin).ensureNamespace(NS);
  custom = admin.makeApiClient(CustomObjectsApi);
  for (const f of FOLLOWERS) await addFollower(f);
}, 10 * 60_000);

afterAll(async () => {
  for (const r of replicas.values()) await r.shards.stop().catch(() => undefined);
  for (const r of replicas.values()) await r.proxy.cut().catch(() => undefined);
  await kit?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

function addFollower(name: string) {
  return custom.createClusterCustomObject({
    group: 'mirrorhub.io',
    version: 'v1alpha1',
    plural: 'mirrorclusters',
    body: {
      apiVersion: 'mirrorhub.io/v1alpha1',
      kind: 'MirrorCluster',
      metadata: { name },
      spec: { inCluster: true, agentNamespace: NS },
    },
  });
}

/** A replica reaching the API server through a proxy of its own. */
async function startReplica(name: string): Promise<Replica> {
  const c = kit.cluster('hub');
  const proxy = new TcpProxy(c.port);
  await proxy.open();
  const file = join(work, `${name}.kubeconfig`);
  writeFileSync(
    file,
    readFileSync(c.kubeconfigPath, 'utf8').replace(
      `server: ${c.server}`,
      `server: https://127.0.0.1:${proxy.port}`,
    ),
    { mode: 0o600 },
  );
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  const shards = new FleetShards({
    kubeConfig: kc,
    namespace: NS,
    leaseName: 'mirrorhub-hub',
    identity: name,
    ...TIMING,
    logger: createLogger({ level: 'debug', base: { component: 'hub' }, destination: logs }),
  });
  shards.onChange(async (follower, owned) => {
    const key = `${name}/${follower}`;
    if (owned) {
      open.set(key, Date.now());
      return;
    }
    // The writes to it wind down before the follower is given up.
    await sleep(200);
    spans.push({ replica: name, follower, from: open.get(key)!, to: Date.now() });
    open.delete(key);
  });
  const r = { name, proxy, shards };
  replicas.set(name, r);
  await shards.start();
  return r;
}

/** Each follower held by exactly the live replica that ranks highest for it. */
async function expectAssigned(live: string[], followers = FOLLOWERS): Promise<void> {
  const want = assignment(followers, live);
  await eventually(
    () => {
      const held = new Map<string, string[]>();
      for (const r of replicas.values())
        for (const f of r.shards.ownedFollowers()) held.set(f, [...(held.get(f) ?? []), r.name]);
      expect(Object.fromEntries(held)).toEqual(
        Object.fromEntries([...want].map(([f, r]) => [f, [r]])),
      );
    },
    { timeoutMs: 30_000 },
  );
}

function expectNoOverlap(): void {
  const all = [
    ...spans,
    ...[...open].map(([key, from]) => {
      const [replica, follower] = key.split('/') as [string, string];
      return { replica, follower, from, to: Infinity };
    }),
  ];
  for (const a of all)
    for (const b of all) {
      if (a === b || a.follower !== b.follower) continue;
      expect(
        a.to < b.from || b.to < a.from,
        `${a.replica} and ${b.replica} both held ${a.follower}`,
      ).toBe(true);
    }
}

describe('hub replicas sharing followers on Leases', () => {
  it('three replicas split twelve followers, each held by one', async () => {
    await startReplica('r1');
    await startReplica('r2');
    await startReplica('r3');
    await expectAssigned(['r1', 'r2', 'r3']);
    expectNoOverlap();
  });

  it('a fourth replica takes only its own share', async () => {
    const before = new Map(
      [...replicas.values()].flatMap((r) => r.shards.ownedFollowers().map((f) => [f, r.name])),
    );
    await startReplica('r4');
    await expectAssigned(['r1', 'r2', 'r3', 'r4']);
    for (const f of replicas.get('r4')!.shards.ownedFollowers()) expect(before.has(f)).toBe(true);
    for (const r of ['r1', 'r2', 'r3'])
      for (const f of replicas.get(r)!.shards.ownedFollowers()) expect(before.get(f)).toBe(r);
    expectNoOverlap();
  });

  it('a cut-off replica gives its followers up before the others take them, and rejoins', async () => {
    const victim = replicas.get('r2')!;
    const held = victim.shards.ownedFollowers();
    expect(held.length).toBeGreaterThan(0);
    await victim.proxy.cut();
    const cutAt = Date.now();
    // Fenced at the renew deadline: nothing held any more, with no word from the API server.
    await eventually(() => expect(victim.shards.ownedFollowers()).toEqual([]), {
      timeoutMs: 10_000,
    });
    // The others count it gone a lease duration after its last renewal, and take its followers.
    await expectAssigned(['r1', 'r3', 'r4']);
    // ... and only after it gave each one up.
    for (const f of held) {
      const given = spans.find((s) => s.replica === 'r2' && s.follower === f && s.to >= cutAt);
      expect(given, f).toBeDefined();
    }
    expectNoOverlap();
    // Reachable again: it renews, rejoins, and gets the same share back.
    await victim.proxy.open();
    await expectAssigned(['r1', 'r2', 'r3', 'r4']);
    expectNoOverlap();
  });

  it('a replica that stops gives its followers to the others at once', async () => {
    const r4 = replicas.get('r4')!;
    await r4.shards.stop();
    replicas.delete('r4');
    await expectAssigned(['r1', 'r2', 'r3']);
    expectNoOverlap();
  });

  it("a deleted follower's Lease goes with it", async () => {
    const gone = FOLLOWERS[0]!;
    await custom.deleteClusterCustomObject({
      group: 'mirrorhub.io',
      version: 'v1alpha1',
      plural: 'mirrorclusters',
      name: gone,
    });
    await expectAssigned(['r1', 'r2', 'r3'], FOLLOWERS.slice(1));
    await eventually(
      async () => {
        const leases = await kit
          .cluster('hub')
          .kubeConfig()
          .makeApiClient(CoordinationV1Api)
          .listNamespacedLease({
            namespace: NS,
            labelSelector: 'mirrorhub.io/shard-role=follower',
          });
        expect(
          leases.items.map((l) => l.metadata?.annotations?.['mirrorhub.io/follower']),
        ).not.toContain(gone);
      },
      { timeoutMs: 30_000 },
    );
    expectNoOverlap();
    // Nothing in any log line but names and identities.
    expect(logs.lines.some((l) => l.includes('follower claimed'))).toBe(true);
  });
});
