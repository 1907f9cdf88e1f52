/**
 * A hub and N EKS followers as the benchmarks run them: each follower its own AWS account, IAM
 * role with ExternalId, EKS cluster and access entry, namespaces and agent process; the hub a
 * process of its own assuming each role. Followers become MirrorClusters one `register` at a
 * time, so a benchmark can grow the fleet and watch what that costs.
 *
 * A follower has its own kube-apiserver, or (`confined`, the 100-follower benchmark) shares one
 * with others (the kit's `sharing`): then it lives in its own corner of that API server, as an
 * agent chart installed per follower would put it: agent namespace mh-<follower>, the hub's
 * access entry mapped to a group of its own bound only there, namespaces <follower>-team-NNN,
 * and an agent policy that lets the agent write nowhere else.
 */
import { type ChildProcess } from 'node:child_process';
import { setPriority } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';

import { findFreePort } from '@mirrorhub/infra/components/cache';
import { createUserWithAccessKey } from '@mirrorhub/infra/aws/moto';
import type { Kit } from '@mirrorhub/infra/kit/index';

import { installCrds } from '../support/crds.js';
import { HUB_GROUP, hubAwsEnv, prepareFollower } from '../support/multicluster.js';
import { registerCluster } from '../support/objects.js';
import { pool, watchCopies, type CopyWatch } from './util.js';
import { startMain, stopAll, until, waitHttp } from './procs.js';
import type { ProcessNodeOptions } from './node-options.js';

export const SYSTEM_NS = 'mirrorhub-system';

export interface FleetOptions {
  followers: string[];
  /** Namespaces team-000, team-001, ... in each follower. */
  namespacesPerFollower: number;
  /** NODE_OPTIONS of the hub and of every agent (the charts', or `--node-options`). */
  nodeOptions: ProcessNodeOptions;
  /** Followers share API servers: give each its own corner of it (see the header). */
  confined?: boolean;
  /** Append every process's log lines here instead of this process's output. */
  logFile?: string;
  /**
   * Run the followers' side, agents and follower API servers, at this nice value (default 0).
   * In a real fleet they have their clusters' own machines; here a hundred agents and twenty API
   * servers share the hub's 2 cores, and at the same priority their bursts starve the hub and
   * its own API server (the hub's leader Lease renewal missed its 10 s deadline). The CPU they
   * use is the same; only who waits for whom changes. (etcd, shared by all, stays at 0.)
   */
  followerNice?: number;
  root: string;
  log: (line: string) => void;
}

/** Where a follower's agent, hub access and team namespaces live in its API server. */
export function followerLayout(
  follower: string,
  confined: boolean,
): { namespace: string; group: string; teamPrefix: string } {
  return confined
    ? {
        namespace: `mh-${follower}`,
        group: `mirrorhub-hub-${follower}`,
        teamPrefix: `${follower}-team-`,
      }
    : { namespace: SYSTEM_NS, group: HUB_GROUP, teamPrefix: 'team-' };
}

export interface Fleet extends FleetBase {
  hub: ChildProcess;
  hubPort: number;
  /** Each follower's agent process. */
  agents: Map<string, ChildProcess>;
  stop(): Promise<void>;
}

/**
 * The hub's side of a fleet before any process runs: CRDs, the hub's AWS user, the agent CRDs on
 * every API server; followers are prepared (`prepare`) and registered (`register`) when a
 * benchmark wants them, so one can grow its fleet step by step.
 */
export interface FleetBase {
  core: CoreV1Api;
  custom: CustomObjectsApi;
  /** The hub's AWS identity (its processes' environment: `hubAwsEnv`). */
  hubUser: Awaited<ReturnType<typeof createUserWithAccessKey>>;
  confined: boolean;
  /** The API servers holding the followers, by the name of the cluster each belongs to. */
  hosts: string[];
  /**
   * Each follower's role, access entry, RBAC and `namespacesPerFollower` team namespaces (a few
   * followers at a time).
   */
  prepare(followers: readonly string[], namespacesPerFollower: number): Promise<void>;
  /** Register `follower` (prepared) as a MirrorCluster labelled bench=true. */
  register(follower: string): Promise<void>;
  /** The IAM role the hub assumes for `follower`. */
  roleArn(follower: string): string;
  /**
   * Every copy in every follower, through one metadata-only watch per API server, keyed
   * `<host>/<namespace>/<name>`. Resolves once every watch has listed.
   */
  watchCopies(): Promise<CopyWatch>;
}

/** Prepares the hub's side for `followers` (every one the benchmark may use); see FleetBase. */
export async function prepareFleet(
  kit: Kit,
  o: Pick<FleetOptions, 'followers' | 'confined' | 'followerNice'>,
): Promise<FleetBase> {
  const hubCluster = kit.cluster('hub');
  const kc = hubCluster.kubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  await installCrds(kc, 'mirrorhub-hub');
  for (const ns of [SYSTEM_NS, 'platform'])
    await core.createNamespace({ body: { metadata: { name: ns } } });
  const hubUser = await createUserWithAccessKey(kit.aws!.stsEndpoint, {
    accountId: hubCluster.accountId,
    userName: 'mirrorhub-hub',
  });
  const confined = o.confined ?? false;
  const access = new Map<string, { roleArn: string; externalId: string }>();
  // The agent CRDs once per API server, before followers sharing it are prepared at once.
  const hosts = [...new Set(o.followers.map((f) => kit.cluster(f).host))];
  for (const h of hosts) {
    await installCrds(kit.cluster(h).kubeConfig(), 'mirrorhub-agent');
    const pid = kit.cluster(h).apiServerPid();
    if (o.followerNice && pid !== undefined) setPriority(pid, o.followerNice);
  }
  return {
    core,
    custom,
    hubUser,
    confined,
    hosts,
    async prepare(followers, namespacesPerFollower) {
      await pool(followers, 4, async (f) => {
        const { namespace, group, teamPrefix } = followerLayout(f, confined);
        access.set(
          f,
          await prepareFollower(kit, f, hubUser.arn, { namespace, group, crds: false }),
        );
        const fcore = kit.cluster(f).kubeConfig().makeApiClient(CoreV1Api);
        const names = Array.from(
          { length: namespacesPerFollower },
          (_, i) => `${teamPrefix}${String(i).padStart(3, '0')}`,
        );
        await pool(names, 16, (name) => fcore.createNamespace({ body: { metadata: { name } } }));
      });
    },
    roleArn: (f) => access.get(f)!.roleArn,
    async watchCopies() {
      const into = { seen: new Map(), listeners: new Set<() => void>() };
      const watches: CopyWatch[] = [];
      try {
        for (const h of hosts) {
          const kc = kit.cluster(h).kubeConfig();
          watches.push(await watchCopies(kc, { resource: `bench-${h}`, prefix: `${h}/`, into }));
        }
      } catch (err) {
        for (const w of watches) await w.stop();
        throw err;
      }
      return {
        ...into,
        stop: async () => {
          for (const w of watches) await w.stop().catch(() => undefined);
        },
      };
    },
    async register(f) {
      const a = access.get(f)!;
      await registerCluster(
        custom,
        f,
        { bench: 'true' },
        {
          eks: { name: f, region: kit.aws!.region, roleArn: a.roleArn, externalId: a.externalId },
          agentNamespace: followerLayout(f, confined).namespace,
        },
      );
    },
  };
}

/** `n` distinct free ports, taken before any process binds one (a port is free until bound). */
export async function freePorts(n: number): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < n) {
    const p = await findFreePort();
    if (!ports.includes(p)) ports.push(p);
  }
  return ports;
}

/** The agent's environment for `follower`, in its corner of the API server when confined. */
export function agentEnv(kit: Kit, follower: string, confined: boolean): Record<string, string> {
  const { namespace, teamPrefix } = followerLayout(follower, confined);
  return {
    KUBECONFIG: kit.cluster(follower).kubeconfigPath,
    MIRRORHUB_CLUSTER_NAME: follower,
    MIRRORHUB_NAMESPACE: namespace,
    ...(confined
      ? { MIRRORHUB_POLICY: JSON.stringify({ namespaces: { allow: [`${teamPrefix}.+`] } }) }
      : {}),
  };
}

/**
 * One agent process per follower (`node agent/dist/main.js`), a few started at a time (each lists
 * its caches at start-up); each started one is also pushed to `procs` at once, so a caller can
 * stop them whatever happens here. Throws when one exited at start-up.
 */
export async function startAgentProcesses(
  kit: Kit,
  followers: readonly string[],
  ports: readonly number[],
  procs: ChildProcess[],
  o: Pick<FleetOptions, 'nodeOptions' | 'confined' | 'logFile' | 'followerNice' | 'root'>,
): Promise<Map<string, ChildProcess>> {
  const agents = new Map<string, ChildProcess>();
  const portOf = new Map(followers.map((f, i) => [f, ports[i]!]));
  await pool(followers, 4, async (f) => {
    const port = portOf.get(f)!;
    const agent = startMain(
      o.root,
      'agent',
      {
        NODE_OPTIONS: o.nodeOptions.agent,
        ...agentEnv(kit, f, o.confined ?? false),
        PORT: String(port),
      },
      o.logFile,
    );
    if (o.followerNice) setPriority(agent.pid!, o.followerNice);
    procs.push(agent);
    agents.set(f, agent);
    await waitHttp(`http://127.0.0.1:${port}/readyz`);
  });
  // An agent that lost its port to another process exits, while /readyz answers for that one.
  await sleep(1_000);
  const dead = [...agents].filter(([, p]) => p.exitCode !== null || p.signalCode !== null);
  if (dead.length > 0) {
    throw new Error(
      `the agents of ${dead.map(([f]) => f).join(', ')} exited at start-up (their log: ${o.logFile ?? 'above'})`,
    );
  }
  return agents;
}

/**
 * The hub's processes (`node hub/dist/main.js`), one per port: one replica as the chart's
 * default runs it; with more, each its own POD_NAME and MIRRORHUB_SHARE_FOLLOWERS=true (they
 * share the followers on Leases). Resolves once each answers /readyz.
 */
export async function startHubReplicas(
  kit: Kit,
  base: Pick<FleetBase, 'hubUser'>,
  ports: readonly number[],
  procs: ChildProcess[],
  o: Pick<FleetOptions, 'nodeOptions' | 'logFile' | 'root'>,
): Promise<ChildProcess[]> {
  const shared = ports.length > 1;
  const hubs = ports.map((port, i) => {
    const hub = startMain(
      o.root,
      'hub',
      {
        NODE_OPTIONS: o.nodeOptions.hub,
        KUBECONFIG: kit.cluster('hub').kubeconfigPath,
        MIRRORHUB_CLUSTER_NAME: 'hub',
        PORT: String(port),
        ...hubAwsEnv(kit, base.hubUser),
        ...(shared ? { POD_NAME: `hub-bench-${i}`, MIRRORHUB_SHARE_FOLLOWERS: 'true' } : {}),
      },
      o.logFile,
    );
    procs.push(hub);
    return hub;
  });
  for (const port of ports) await waitHttp(`http://127.0.0.1:${port}/readyz`);
  return hubs;
}

/** Prepares every follower, starts its agent, then the hub; nothing is registered yet. */
export async function startFleet(kit: Kit, o: FleetOptions): Promise<Fleet> {
  const base = await prepareFleet(kit, o);
  o.log(
    `preparing ${o.followers.length} followers (role, access entry, RBAC) and ${o.namespacesPerFollower} namespaces each`,
  );
  await base.prepare(o.followers, o.namespacesPerFollower);

  const procs: ChildProcess[] = [];
  try {
    const ports = await freePorts(o.followers.length + 1);
    const hubPort = ports.pop()!;
    const agents = await startAgentProcesses(kit, o.followers, ports, procs, o);
    const [hub] = await startHubReplicas(kit, base, [hubPort], procs, o);
    return { ...base, hub: hub!, hubPort, agents, stop: () => stopAll(procs) };
  } catch (err) {
    await stopAll(procs);
    throw err;
  }
}

/**
 * The ClusterSecretMirror the fleet benchmarks deliver: platform/shared-tls to `namespaces`
 * (default team-.+) in bench=true clusters.
 */
export async function createSharedTls(
  fleet: Pick<FleetBase, 'core' | 'custom'>,
  namespaces = ['team-.+'],
): Promise<void> {
  await fleet.core.createNamespacedSecret({
    namespace: 'platform',
    body: { metadata: { name: 'shared-tls' }, stringData: { 'tls.crt': 'v0' } },
  });
  await fleet.custom.createClusterCustomObject({
    group: 'mirrorhub.io',
    version: 'v1alpha1',
    plural: 'clustersecretmirrors',
    body: {
      apiVersion: 'mirrorhub.io/v1alpha1',
      kind: 'ClusterSecretMirror',
      metadata: { name: 'shared-tls' },
      spec: {
        source: { kind: 'Secret', name: 'shared-tls', namespace: 'platform' },
        destination: {
          clusters: { selector: { matchLabels: { bench: 'true' } } },
          namespaces,
        },
      },
    },
  });
}

/**
 * Changes platform/shared-tls to `v<version>` and waits until every copy in `old` (copy key ->
 * its content hash before) has changed in `watch`: how long from the source write to the last
 * of them.
 */
export async function changeSharedTls(
  core: CoreV1Api,
  version: number,
  old: Map<string, string | undefined>,
  watch: Omit<CopyWatch, 'stop'>,
  timeoutMs: number,
): Promise<number> {
  const t0 = Date.now();
  const cur = await core.readNamespacedSecret({ name: 'shared-tls', namespace: 'platform' });
  await core.replaceNamespacedSecret({
    name: 'shared-tls',
    namespace: 'platform',
    body: { ...cur, data: undefined, stringData: { 'tls.crt': `v${version}` } },
  });
  const { seen, listeners } = watch;
  const changed = () =>
    [...old.keys()].filter((key) => seen.get(key)?.hash !== old.get(key)).length;
  await until(
    () => changed() >= old.size,
    listeners,
    timeoutMs,
    () => `${changed()}/${old.size} copies updated`,
  );
  return Math.max(...[...old.keys()].map((key) => seen.get(key)!.at)) - t0;
}
