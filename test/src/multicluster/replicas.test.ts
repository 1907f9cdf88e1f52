// Hub replicas that share the fleet, as a platform team runs them: `helm install` of the hub chart
// with shareFollowers=true on a real API server, and its Deployment run as three pods would run
// (support/deployment.ts: the chart's entry point, env, signing key volume and ServiceAccount
// token, so the chart's RBAC is what the replicas have). Six EKS followers, each its own AWS
// account, role with ExternalId and API server, with its agent.
//
// Two replicas split the followers, then a third joins and takes its share, then one is killed
// (SIGKILL: no goodbye) and the others take its followers over. Throughout, each follower is
// written by one replica at a time (the replicas' own logs: when each claimed a follower, when it
// stopped writing to it, and every delivery write), its AWS role is assumed only by the replica
// that writes to it, and the mirror's status is written by the leader alone.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { CoordinationV1Api } from '@kubernetes/client-node';
import type { Snapshot } from '@mirrorhub/hub/dashboard/types';
import { assignment } from '@mirrorhub/hub/shards/shards';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { chartsDir } from '../support/crds.js';
import {
  deploymentRunner,
  type DeploymentRunner,
  type RunningDeployment,
} from '../support/deployment.js';
import { eventually } from '../support/eventually.js';
import { isolatedHelm, type Helm } from '../support/helm.js';
import {
  clusterSecretMirror,
  HUB,
  hubAwsEnv,
  MultiCluster,
  SYSTEM_NS,
  type FollowerSpec,
} from '../support/multicluster.js';
import { TEST_HUB_KEY } from '../support/signing.js';
import { clusterViewerToken } from '../support/viewers.js';

const RELEASE = 'mirrorhub-hub';
const FOLLOWERS: FollowerSpec[] = ['a', 'b', 'c', 'd', 'e', 'f'].map((x) => ({
  name: `follower-${x}`,
  labels: { env: 'prod' },
}));
const NAMES = FOLLOWERS.map((f) => f.name);

let m: MultiCluster;
let helm: Helm;
let work: string;
let deployments: DeploymentRunner;
const replicas = new Map<string, RunningDeployment>();
let killed: { pod: string; at: number } | undefined;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'mirrorhub-replicas-'));
  helm = await isolatedHelm();
  // The followers are registered once two replicas run, so each is claimed by its own replica
  // from the start (a replica alone at first would claim them all, and give half up later).
  m = await MultiCluster.start({ followers: FOLLOWERS, startHub: false, registerFollowers: false });
  deployments = deploymentRunner(m.kit, SYSTEM_NS, work);
  await m.putSecret(HUB, SYSTEM_NS, 'mirrorhub-hub-signing', {
    'private.pem': TEST_HUB_KEY.privateKeyPem,
  });
  await helm([
    'install',
    RELEASE,
    join(chartsDir, 'mirrorhub-hub'),
    '--namespace',
    SYSTEM_NS,
    '--kubeconfig',
    m.kit.cluster(HUB).kubeconfigPath,
    '--set',
    'signing.existingSecret=mirrorhub-hub-signing',
    '--set',
    'shareFollowers=true',
  ]);
  await m.ensureNamespace(HUB, 'certs');
  for (const f of NAMES) await m.ensureNamespace(f, 'team-a');
  await m.putSecret(HUB, 'certs', 'tls', { v: '0' });
  await m.applyMirror(
    clusterSecretMirror('tls', {
      source: { kind: 'Secret', name: 'tls', namespace: 'certs' },
      destination: {
        clusters: { selector: { matchLabels: { env: 'prod' } } },
        namespaces: ['team-a'],
      },
    }),
  );
}, 20 * 60_000);

afterAll(async () => {
  await deployments?.stop();
  await m?.stop();
  await helm?.cleanup();
  if (work) await rm(work, { recursive: true, force: true });
});

/** A replica: the chart's pod under its own name, with the AWS credentials IRSA would give it. */
async function startReplica(pod: string): Promise<void> {
  replicas.set(
    pod,
    await deployments.run(HUB, RELEASE, {
      POD_NAME: pod,
      LOG_LEVEL: 'debug',
      ...hubAwsEnv(m.kit, m.hubUser),
      MIRRORHUB_CLUSTER_HEALTH_INTERVAL_SECONDS: '1',
      MIRRORHUB_CLUSTER_REQUEST_TIMEOUT_SECONDS: '3',
    }),
  );
}

interface Shards {
  /** Pod name -> identity, of the live members. */
  members: Map<string, string>;
  /** Follower -> the pod whose replica holds its Lease. */
  holders: Map<string, string>;
  leader: string | undefined;
}

const podOf = (identity: string) => identity.replace(/_[0-9a-f]{8}$/, '');

async function shards(): Promise<Shards> {
  const api = m.kc(HUB).makeApiClient(CoordinationV1Api);
  const list = await api.listNamespacedLease({
    namespace: SYSTEM_NS,
    labelSelector: 'mirrorhub.io/shards=mirrorhub-hub',
  });
  const members = new Map<string, string>();
  const holders = new Map<string, string>();
  for (const l of list.items) {
    const holder = l.spec?.holderIdentity ?? '';
    if (!holder) continue;
    if (l.metadata?.labels?.['mirrorhub.io/shard-role'] === 'replica') {
      members.set(podOf(holder), holder);
    } else {
      holders.set(l.metadata!.annotations!['mirrorhub.io/follower']!, podOf(holder));
    }
  }
  const election = await api.readNamespacedLease({ namespace: SYSTEM_NS, name: 'mirrorhub-hub' });
  const leader = election.spec?.holderIdentity;
  return { members, holders, leader: leader ? podOf(leader) : undefined };
}

/** Every follower held by the live replica that ranks highest for it (and only those live). */
async function expectBalanced(pods: string[]): Promise<Shards> {
  let seen: Shards | undefined;
  await eventually(
    async () => {
      const s = await shards();
      expect([...s.members.keys()].sort()).toEqual([...pods].sort());
      const want = assignment(NAMES, [...s.members.values()]);
      expect(Object.fromEntries(s.holders)).toEqual(
        Object.fromEntries([...want].map(([f, id]) => [f, podOf(id)])),
      );
      seen = s;
    },
    // A killed replica's member Lease is removed twice its duration after its last renewal.
    { timeoutMs: 120_000 },
  );
  return seen!;
}

async function expectEverywhere(v: string): Promise<void> {
  await eventually(
    async () => {
      for (const f of NAMES) expect(await m.secretData(f, 'team-a', 'tls'), f).toEqual({ v });
    },
    { timeoutMs: 90_000 },
  );
}

/** The mirror's status, as the leader wrote it: every follower synced. */
async function expectMirrorActive(): Promise<void> {
  await eventually(
    async () => {
      const mirror = await m.getMirror('ClusterSecretMirror', 'tls');
      expect(mirror?.status?.phase).toBe('Active');
      const clusters = mirror?.status?.clusters ?? [];
      expect(clusters.map((c) => c.name).sort()).toEqual(NAMES);
      for (const c of clusters) expect(c, c.name).toMatchObject({ phase: 'Active', synced: 1 });
    },
    { timeoutMs: 90_000 },
  );
}

/** mirrorhub_writes_total{kind="ClusterSecretMirror"}: the mirror status and finalizer writes. */
async function mirrorWrites(pod: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${replicas.get(pod)!.port}/metrics`)).text();
  return text
    .split('\n')
    .filter(
      (l) => l.startsWith('mirrorhub_writes_total{') && l.includes('kind="ClusterSecretMirror"'),
    )
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

describe('hub replicas sharing six followers', () => {
  it("two replicas split the followers; each AWS role is assumed by its follower's replica only", async () => {
    await startReplica('hub-r1');
    await startReplica('hub-r2');
    await eventually(async () => expect((await shards()).members.size).toBe(2), {
      timeoutMs: 30_000,
    });
    for (const f of FOLLOWERS) await m.registerEks(f.name, f.labels);
    const s = await expectBalanced(['hub-r1', 'hub-r2']);
    await expectEverywhere('0');
    await expectMirrorActive();
    const calls = m.kit.aws!.calls();
    for (const f of NAMES) {
      expect(calls.assumeRole[m.access.get(f)!.roleArn], f).toBe(1);
      expect(calls.describeCluster[f], f).toBe(1);
    }
    // The mirror's status is the leader's alone.
    const leader = s.leader!;
    const other = leader === 'hub-r1' ? 'hub-r2' : 'hub-r1';
    expect(await mirrorWrites(leader)).toBeGreaterThan(0);
    expect(await mirrorWrites(other)).toBe(0);
    // The leader's dashboard shows every follower synced, those the other replica delivers to
    // included: it holds no delivery of theirs, only their holder's reports.
    const token = await clusterViewerToken(m.kc(HUB), SYSTEM_NS, 'platform');
    await eventually(async () => {
      const res = await fetch(`http://127.0.0.1:${replicas.get(leader)!.port}/api/v1/snapshot`, {
        headers: { authorization: `Bearer ${token}` },
      });
      const { matrix } = (await res.json()) as Snapshot;
      const row = matrix.rows.find((r) => r.key === 'ClusterSecretMirror//tls');
      const cells = matrix.columns.map((c, i) => [c.cluster, row?.cells[i]?.state]);
      expect(Object.fromEntries(cells)).toEqual(
        Object.fromEntries(NAMES.map((f) => [f, 'synced'])),
      );
    });
  });

  it('a third replica takes its share and nothing else moves', async () => {
    const before = await shards();
    await startReplica('hub-r3');
    const after = await expectBalanced(['hub-r1', 'hub-r2', 'hub-r3']);
    for (const f of NAMES) {
      if (after.holders.get(f) !== before.holders.get(f))
        expect(after.holders.get(f), f).toBe('hub-r3');
    }
    await m.putSecret(HUB, 'certs', 'tls', { v: '1' });
    await expectEverywhere('1');
    await expectMirrorActive();
  });

  it("a killed replica's followers are taken over and converge, the leader's role too", async () => {
    const s = await shards();
    // The leader when it holds followers (its death moves both), else the one holding the most.
    const count = (pod: string) => [...s.holders.values()].filter((p) => p === pod).length;
    const pods = [...replicas.keys()];
    const victim =
      s.leader && count(s.leader) > 0
        ? s.leader
        : pods.reduce((a, b) => (count(b) > count(a) ? b : a));
    expect(count(victim)).toBeGreaterThan(0);
    replicas.get(victim)!.child.kill('SIGKILL');
    killed = { pod: victim, at: Date.now() };
    const survivors = pods.filter((p) => p !== victim);
    await m.putSecret(HUB, 'certs', 'tls', { v: '2' });
    // Its member Lease expires (the lease duration), then the survivors claim what it held.
    const after = await expectBalanced(survivors);
    expect(survivors).toContain(after.leader);
    await expectEverywhere('2');
    await expectMirrorActive();
    // Non-leaders that never led wrote no mirror status.
    for (const p of survivors) {
      if (p !== after.leader && p !== s.leader) expect(await mirrorWrites(p), p).toBe(0);
    }
  });

  it('no follower was ever written by two replicas at once', async () => {
    expect(killed).toBeDefined();
    /** Per follower: each replica's spans of holding it, and its delivery writes there. */
    const spans: { pod: string; follower: string; from: number; to: number }[] = [];
    const writes: { pod: string; follower: string; at: number }[] = [];
    for (const [pod, r] of replicas) {
      const open = new Map<string, number>();
      const end = pod === killed!.pod ? killed!.at : Infinity;
      for (const line of (await readFile(r.log, 'utf8')).split('\n')) {
        if (!line.startsWith('{')) continue;
        const l = JSON.parse(line) as {
          time: string;
          msg: string;
          follower?: string;
          cluster?: string;
        };
        const at = Date.parse(l.time);
        if (l.msg === 'follower claimed: this replica writes to it') open.set(l.follower!, at);
        if (l.msg === 'follower given up: nothing writes to it any more') {
          spans.push({ pod, follower: l.follower!, from: open.get(l.follower!)!, to: at });
          open.delete(l.follower!);
        }
        if (l.msg === 'delivery written') writes.push({ pod, follower: l.cluster!, at });
      }
      for (const [follower, from] of open) spans.push({ pod, follower, from, to: end });
    }
    expect(writes.length).toBeGreaterThan(0);
    expect(new Set(writes.map((w) => w.follower))).toEqual(new Set(NAMES));
    for (const w of writes) {
      const mine = spans.filter((s) => s.pod === w.pod && s.follower === w.follower);
      expect(
        mine.some((s) => s.from <= w.at && w.at <= s.to),
        `${w.pod} wrote to ${w.follower} at ${new Date(w.at).toISOString()} while not holding it`,
      ).toBe(true);
    }
    for (const a of spans) {
      for (const b of spans) {
        if (a === b || a.follower !== b.follower || a.pod === b.pod) continue;
        expect(
          a.to < b.from || b.to < a.from,
          `${a.pod} and ${b.pod} both held ${a.follower}`,
        ).toBe(true);
      }
    }
    expect(new Set(spans.map((s) => s.follower))).toEqual(new Set(NAMES));
  });
});
