/**
 * What the soak runs: a kit with the hub cluster and N EKS followers (each its own API server,
 * AWS account, role with ExternalId and access entry), two hub replicas with leader election,
 * and an agent per cluster (the hub's own included), each a process of its own started as its
 * chart starts it. Every component reaches every API server through a loopback TCP proxy the
 * fault injector can stall (the hub reaches followers at the address DescribeCluster answers:
 * the proxy's). Processes log JSON at info to their own file in `logs/`.
 */
import { type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';

import { findFreePort } from '@mirrorhub/infra/components/cache';
import { createUserWithAccessKey } from '@mirrorhub/infra/aws/moto';
import { startKit, type Kit } from '@mirrorhub/infra/kit/index';

import { installCrds } from '../support/crds.js';
import { hubAwsEnv, prepareFollower } from '../support/multicluster.js';
import { registerCluster, SYSTEM_NS } from '../support/objects.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { startMain, stopAll, waitHttp } from '../bench/procs.js';

export { SYSTEM_NS };
export const SOURCE_NS = 'platform-sources';
/** Namespaces the agents' policy denies (the checker knows it as the follower's owner would). */
export const LOCKED = /^soak-locked-/;
export const POLICY = { namespaces: { deny: ['soak-locked-.+'] } };
/**
 * Every watch's progress deadline in the soak, the shortest the environment allows (the API
 * server's bookmarks come about once a minute). Stalls are injected shorter and longer.
 */
export const DEADLINE_S = 90;

export interface WorldOptions {
  followers: number;
  root: string;
  dir: string;
  /** AWS sessions and EKS tokens live this long (kit `awsLifetimeSeconds`). */
  awsLifetimeSeconds: number;
  log: (line: string) => void;
}

/** A hub or agent process that the injector may kill and restart on the same port. */
export class Proc {
  child: ChildProcess | undefined;
  starts = 0;
  constructor(
    readonly name: string,
    private readonly root: string,
    private readonly component: 'hub' | 'agent',
    private readonly env: Record<string, string>,
    readonly port: number,
    readonly logFile: string,
  ) {}

  get pid(): number | undefined {
    return this.running() ? this.child?.pid : undefined;
  }

  running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  /**
   * This life's pod name: the name and the start count, as a restarted pod gets a new name. The
   * hub's Lease holder identity starts with it, so a dead life's Lease is never taken for this one's.
   */
  podName(): string {
    return `${this.name.replace(' ', '-')}-${this.starts}`;
  }

  async start(): Promise<void> {
    this.starts++;
    const child = startMain(
      this.root,
      this.component,
      { ...this.env, PORT: String(this.port), POD_NAME: this.podName() },
      this.logFile,
    );
    this.child = child;
    await waitHttp(`http://127.0.0.1:${this.port}/healthz`, 60_000);
  }

  /** kill -9: no shutdown handler runs, the Lease is not released. */
  async kill9(): Promise<void> {
    const c = this.child;
    if (!c || !this.running()) return;
    const exited = new Promise((resolve) => c.once('exit', resolve));
    c.kill('SIGKILL');
    await exited;
  }

  async stop(): Promise<void> {
    if (this.child) await stopAll([this.child]);
  }

  log(): string {
    try {
      return readFileSync(this.logFile, 'utf8');
    } catch {
      return '';
    }
  }
}

export interface World {
  kit: Kit;
  hubs: Proc[];
  /** By cluster name, the hub's own ("hub") first. */
  agents: Map<string, Proc>;
  /** Between each agent and its API server, by cluster name. */
  agentProxies: Map<string, TcpProxy>;
  /** Between each hub replica and the hub's API server, in `hubs` order. */
  hubProxies: TcpProxy[];
  /**
   * In front of each follower's API server for the hub: DescribeCluster answers its address, so
   * every hub request and watch in that follower passes through it. By follower name.
   */
  followerProxies: Map<string, TcpProxy>;
  clusters: string[];
  followers: string[];
  logDir: string;
  core(cluster: string): CoreV1Api;
  /** Custom objects on the hub cluster. */
  custom: CustomObjectsApi;
  customIn(cluster: string): CustomObjectsApi;
  stop(): Promise<void>;
}

/** A copy of the cluster's admin kubeconfig that reaches it through `port`. */
function proxiedKubeconfig(kit: Kit, cluster: string, port: number, file: string): string {
  const c = kit.cluster(cluster);
  const yaml = readFileSync(c.kubeconfigPath, 'utf8').replace(
    `server: ${c.server}`,
    `server: https://127.0.0.1:${port}`,
  );
  writeFileSync(file, yaml, { mode: 0o600 });
  return file;
}

export async function startWorld(o: WorldOptions): Promise<World> {
  const followers = Array.from({ length: o.followers }, (_, i) => `follower-${i + 1}`);
  const clusters = ['hub', ...followers];
  const logDir = join(o.dir, 'logs');
  mkdirSync(logDir, { recursive: true });
  const kit = await startKit({
    clusters,
    dir: join(o.dir, 'kit'),
    // Aggressive compaction: a watch resuming from an old resourceVersion meets 410 Gone.
    apiserverArgs: ['--etcd-compaction-interval=20s'],
    awsLifetimeSeconds: o.awsLifetimeSeconds,
    log: o.log,
  });
  const proxies: TcpProxy[] = [];
  const procs: Proc[] = [];
  const stop = async () => {
    await Promise.all(procs.map((p) => p.stop()));
    for (const p of proxies) await p.cut();
    await kit.stop();
  };
  try {
    const hubKc = kit.cluster('hub').kubeConfig();
    const api = <T>(make: new (c: never) => T) =>
      new Map(
        clusters.map((c) => [
          c,
          kit
            .cluster(c)
            .kubeConfig()
            .makeApiClient(make as never) as T,
        ]),
      );
    const core = api(CoreV1Api);
    const customs = api(CustomObjectsApi);
    const custom = customs.get('hub')!;
    await installCrds(hubKc, 'mirrorhub-hub');
    for (const ns of [SYSTEM_NS, SOURCE_NS])
      await core.get('hub')!.createNamespace({ body: { metadata: { name: ns } } });
    const hubUser = await createUserWithAccessKey(kit.aws!.stsEndpoint, {
      accountId: kit.cluster('hub').accountId,
      userName: 'mirrorhub-hub',
    });
    const access = new Map<string, { roleArn: string; externalId: string }>();
    for (const f of followers) access.set(f, await prepareFollower(kit, f, hubUser.arn));

    const proxy = async (cluster: string) => {
      const p = new TcpProxy(kit.cluster(cluster).port);
      await p.open();
      proxies.push(p);
      return p;
    };
    const followerProxies = new Map<string, TcpProxy>();
    for (const f of followers) {
      const p = await proxy(f);
      followerProxies.set(f, p);
      kit.aws!.describeEndpoint(f, `https://127.0.0.1:${p.port}`);
      o.log(`the hub reaches ${f} through 127.0.0.1:${p.port}`);
    }
    const fast = {
      LOG_LEVEL: 'info',
      MIRRORHUB_WATCH_PROGRESS_DEADLINE_SECONDS: String(DEADLINE_S),
    };
    const agents = new Map<string, Proc>();
    const agentProxies = new Map<string, TcpProxy>();
    for (const c of clusters) {
      const p = await proxy(c);
      agentProxies.set(c, p);
      const agent = new Proc(
        `agent ${c}`,
        o.root,
        'agent',
        {
          ...fast,
          KUBECONFIG: proxiedKubeconfig(kit, c, p.port, join(o.dir, `agent-${c}.kubeconfig`)),
          MIRRORHUB_CLUSTER_NAME: c,
          MIRRORHUB_POLICY: JSON.stringify(POLICY),
          MIRRORHUB_RESYNC_SECONDS: '60',
        },
        await findFreePort(),
        join(logDir, `agent-${c}.log`),
      );
      procs.push(agent);
      agents.set(c, agent);
      await agent.start();
    }
    const hubs: Proc[] = [];
    const hubProxies: TcpProxy[] = [];
    for (const i of [0, 1]) {
      const p = await proxy('hub');
      hubProxies.push(p);
      const hub = new Proc(
        `hub-${i}`,
        o.root,
        'hub',
        {
          ...fast,
          KUBECONFIG: proxiedKubeconfig(kit, 'hub', p.port, join(o.dir, `hub-${i}.kubeconfig`)),
          MIRRORHUB_CLUSTER_NAME: 'hub',
          MIRRORHUB_LEADER_ELECTION: 'true',
          MIRRORHUB_CLUSTER_HEALTH_INTERVAL_SECONDS: '2',
          MIRRORHUB_AGENT_HEARTBEAT_GRACE_SECONDS: '30',
          MIRRORHUB_CLUSTER_REQUEST_TIMEOUT_SECONDS: '5',
          MIRRORHUB_ROLE_DURATION_SECONDS: '900',
          ...hubAwsEnv(kit, hubUser),
        },
        await findFreePort(),
        join(logDir, `hub-${i}.log`),
      );
      procs.push(hub);
      hubs.push(hub);
      await hub.start();
    }
    await registerCluster(custom, 'hub', clusterLabels(0), { inCluster: true });
    for (const [i, f] of followers.entries()) {
      const a = access.get(f)!;
      await registerCluster(custom, f, clusterLabels(i + 1), {
        eks: { name: f, region: kit.aws!.region, roleArn: a.roleArn, externalId: a.externalId },
      });
    }
    return {
      kit,
      hubs,
      agents,
      agentProxies,
      hubProxies,
      followerProxies,
      clusters,
      followers,
      logDir,
      core: (c) => core.get(c)!,
      custom,
      customIn: (c) => customs.get(c)!,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Every cluster is soak=true; rings a and b alternate, so mirrors can pick some clusters. */
export function clusterLabels(i: number): Record<string, string> {
  return { soak: 'true', ring: i % 2 === 0 ? 'a' : 'b' };
}
