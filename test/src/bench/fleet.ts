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

export interface Fleet {
  core: CoreV1Api;
  custom: CustomObjectsApi;
  hub: ChildProcess;
  hubPort: number;
  /** Each follower's agent process. */
  agents: Map<string, ChildProcess>;
  /** Register `follower` as a MirrorCluster labelled bench=true. */
  register(follower: string): Promise<void>;
  /** The IAM role the hub assumes for `follower`. */
  roleArn(follower: string): string;
  /** The API servers holding the followers, by the name of the cluster each belongs to. */
  hosts: string[];
  /**
   * Every copy in every follower, through one metadata-only watch per API server, keyed
   * `<host>/<namespace>/<name>`. Resolves once every watch has listed.
   */
  watchCopies(): Promise<CopyWatch>;
  stop(): Promise<void>;
}

/** Prepares every follower, starts its agent, then the hub; nothing is registered yet. */
export async function startFleet(kit: Kit, o: FleetOptions): Promise<Fleet> {
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

  o.log(
    `preparing ${o.followers.length} followers (role, access entry, RBAC) and ${o.namespacesPerFollower} namespaces each`,
  );
  const confined = o.confined ?? false;
  const access = new Map<string, { roleArn: string; externalId: string }>();
  // The agent CRDs once per API server, before followers sharing it are prepared at once.
  const hosts = [...new Set(o.followers.map((f) => kit.cluster(f).host))];
  for (const h of hosts) {
    await installCrds(kit.cluster(h).kubeConfig(), 'mirrorhub-agent');
    const pid = kit.cluster(h).apiServerPid();
    if (o.followerNice && pid !== undefined) setPriority(pid, o.followerNice);
  }
  await pool(o.followers, 4, async (f) => {
    const { namespace, group, teamPrefix } = followerLayout(f, confined);
    access.set(f, await prepareFollower(kit, f, hubUser.arn, { namespace, group, crds: false }));
    const fcore = kit.cluster(f).kubeConfig().makeApiClient(CoreV1Api);
    const names = Array.from(
      { length: o.namespacesPerFollower },
      (_, i) => `${teamPrefix}${String(i).padStart(3, '0')}`,
    );
    await pool(names, 16, (name) => fcore.createNamespace({ body: { metadata: { name } } }));
  });

  const procs: ChildProcess[] = [];
  const agents = new Map<string, ChildProcess>();
  try {
    // Distinct ports, taken before any process binds one (a free port is free until bound).
    const ports: number[] = [];
    while (ports.length <= o.followers.length) {
      const p = await findFreePort();
      if (!ports.includes(p)) ports.push(p);
    }
    const hubPort = ports.pop()!;
    const portOf = new Map(o.followers.map((f, i) => [f, ports[i]!]));
    // A few at a time: each lists its caches at start-up.
    await pool(o.followers, 4, async (f) => {
      const port = portOf.get(f)!;
      const { namespace, teamPrefix } = followerLayout(f, confined);
      const agent = startMain(
        o.root,
        'agent',
        {
          NODE_OPTIONS: o.nodeOptions.agent,
          KUBECONFIG: kit.cluster(f).kubeconfigPath,
          MIRRORHUB_CLUSTER_NAME: f,
          MIRRORHUB_NAMESPACE: namespace,
          PORT: String(port),
          ...(confined
            ? { MIRRORHUB_POLICY: JSON.stringify({ namespaces: { allow: [`${teamPrefix}.+`] } }) }
            : {}),
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
    const hub = startMain(
      o.root,
      'hub',
      {
        NODE_OPTIONS: o.nodeOptions.hub,
        KUBECONFIG: hubCluster.kubeconfigPath,
        MIRRORHUB_CLUSTER_NAME: 'hub',
        PORT: String(hubPort),
        ...hubAwsEnv(kit, hubUser),
      },
      o.logFile,
    );
    procs.push(hub);
    await waitHttp(`http://127.0.0.1:${hubPort}/readyz`);
    return {
      core,
      custom,
      hub,
      hubPort,
      agents,
      roleArn: (f) => access.get(f)!.roleArn,
      hosts,
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
      stop: () => stopAll(procs),
    };
  } catch (err) {
    await stopAll(procs);
    throw err;
  }
}

/**
 * The ClusterSecretMirror the fleet benchmarks deliver: platform/shared-tls to `namespaces`
 * (default team-.+) in bench=true clusters.
 */
export async function createSharedTls(fleet: Fleet, namespaces = ['team-.+']): Promise<void> {
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
