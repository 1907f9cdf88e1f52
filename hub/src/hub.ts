// The hub as a library: createHub(config) registers the hub's peers (dashboard, hash key,
// MirrorCluster controller, Vault connections, mirror controller) with a Manager (shared/kit/controller/manager.ts), which
// wires the health/metrics server, readiness, leader election and the ordered stop. main.ts is
// a thin shell around it, and tests run several hubs in one process (no globals: logger,
// metrics registry, clients and caches all belong to one Hub).
import {
  Backoff,
  childLogger,
  createLogger,
  createMetrics,
  errorMessage,
  realClock,
  sleep,
  type ControllerMetrics,
  type Logger,
  type ReadinessCheck,
} from '@mirrorhub/shared/kit/runtime/index';
import { createManager, type Manager, type Runnable } from '@mirrorhub/shared/kit/controller/index';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { corePath, isForbidden, isNotFound, RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import { ClusterRegistry } from './clusters/registry.js';
import { localTarget, type ClusterTarget } from './clusters/target.js';
import { ClusterController, type HubAwsConfig } from './clusters/controller.js';
import { EksSessions } from './clusters/eks-sessions.js';
import type { ProxyEnv } from './clusters/egress-proxy.js';
import { PendingCleanups } from './clusters/pending.js';
import { DeliveryReportStore } from './clusters/reports.js';
import { MirrorController } from './mirrors/controller.js';
import { VaultConnections, vaultRequests } from './vault/connections.js';
import type { Tenancy } from './mirrors/destinations/clusters/plan.js';
import { compilePattern } from '@mirrorhub/shared/mirror/namespaces';
import { createSigner, type Signer } from '@mirrorhub/shared/mirror/signing';
import { ensureHashKey } from './hashkey.js';
import { ALWAYS_LEADING, OWN_EVERYTHING, type Ownership, type Role } from './shards/ownership.js';
import { ElectedRole } from './shards/role.js';
import { FleetShards } from './shards/shards.js';
import { DEFAULT_LEASE_NAME, validateClusterName } from './names.js';
import { USER_AGENT } from '@mirrorhub/shared/api/contract';
import { DashboardFeed, RecentEvents } from './dashboard/feed.js';
import { podLeaderLocator, type LeaderLocator } from './dashboard/proxy.js';
import { serveDashboard, type Dashboard } from './dashboard/server.js';
import type { ViewInput } from './dashboard/view.js';

export interface LeaderElectionConfig {
  /** Lease name in `namespace` (default mirrorhub-hub). */
  leaseName?: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /**
   * How often the leader renews the Lease (default: a third of leaseDuration, see
   * shared/kit/controller/leader.ts). A standby takes over leaseDuration after the last
   * renewal whatever this is; a shorter one only writes the Lease more often.
   */
  renewPeriodMs?: number;
}

export interface HubConfig {
  /**
   * The hub's own cluster (mirrors, sources, Lease, hash key; also a delivery target): any
   * KubeAccess (loadKubeAccess), or a client-node KubeConfig.
   */
  kubeConfig: KubeAccess;
  /** Name of the hub's own cluster, in status and delivery names (default `hub`). */
  clusterName?: string;
  /** The hub's own namespace: Lease and hash key Secret (default mirrorhub-system). */
  namespace?: string;
  /** The agent namespace in the hub's own cluster (default mirrorhub-system). */
  agentNamespace?: string;
  /** Unique per process (pod name): Lease holder and Event reporting instance. */
  identity: string;
  version: string;
  logger?: Logger;
  /** Serve /healthz, /readyz and /metrics on this port (0: any free port). Default: none. */
  healthPort?: number;
  /** Address to listen on (default 0.0.0.0). */
  healthHost?: string;
  /**
   * More readiness checks on /readyz, by name: the agent that runs in the same process
   * (standalone/) adds its caches, so the pod is ready only when both halves are.
   */
  readinessChecks?: Readonly<Record<string, ReadinessCheck>>;
  /**
   * Serve the dashboard (page and API) on the health port (default true when healthPort is
   * set). Viewers sign in with a Kubernetes token: the hub needs create on tokenreviews and
   * subjectaccessreviews.
   */
  dashboard?: boolean;
  /** Dashboard: how long a token's review is trusted (default 30 s). */
  dashboardAuthTtlMs?: number;
  /**
   * This replica's pod (POD_NAME): a standby finds the leader's pod (same Deployment) and passes
   * dashboard API requests to it, so a Service or Ingress in front of every replica works.
   */
  podName?: string;
  /** Where the leader's dashboard is, by Lease holder (default: from podName's pods). */
  dashboardLeader?: LeaderLocator;
  /** Mirrors reconciled at once (default 4). */
  concurrency?: number;
  /** Writes in flight at once per cluster (default 4). */
  deliveryConcurrency?: number;
  /** A cluster failing this long is reported unreachable in mirror status (default 30 s). */
  unreachableAfterMs?: number;
  /** How the hub reaches EKS followers (MirrorCluster spec.eks). Default: the AWS default chain. */
  aws?: HubAwsConfig;
  /**
   * The egress proxy (HTTPS_PROXY / NO_PROXY, config.ts) for STS, EKS and follower API servers.
   * Default: every connection direct.
   */
  proxy?: ProxyEnv;
  /**
   * Health probe of each MirrorCluster, jittered by ±10% (default 10 s); a healthy cluster every
   * third interval, and at once when a request to it fails.
   */
  clusterHealthIntervalMs?: number;
  /** An agent heartbeat older than this makes the cluster's AgentHealthy Unknown (default 90 s). */
  agentHeartbeatGraceMs?: number;
  /**
   * A healthy agent's heartbeat is written to MirrorCluster status this often, not on every
   * renewal (default 5 min).
   */
  agentHeartbeatReportMs?: number;
  /** Deadline of every request to a delivery cluster: writes, list pages, probes (default 10 s). */
  clusterRequestTimeoutMs?: number;
  /**
   * A watch that passes nothing, not even a bookmark, for this long is presumed stalled and
   * resumed (default 150 s; the API server bookmarks every watch about once a minute).
   */
  watchProgressDeadlineMs?: number;
  /**
   * A mirror being deleted waits this long for clusters it cannot clean up, then its finalizer
   * is released and the cleanup happens when they return (default 2 min).
   */
  cleanupGraceMs?: number;
  /** false: run the controllers at once (one replica, tests). Default: elect with defaults. */
  leaderElection?: false | LeaderElectionConfig;
  /**
   * The replicas share the followers (docs/multicluster.md, "Hub replicas"): every replica runs
   * the controllers with warm caches, each MirrorCluster is written by one replica at a time
   * (shards/), and the elected leader writes what has one writer (mirror status, the hub's own
   * cluster, Vault). Needs leader election. Default false: the leader does everything and the
   * other replicas stand by.
   */
  shareFollowers?: boolean;
  /**
   * The hub's Ed25519 private key (PKCS#8 PEM): every MirrorDelivery and payload Secret is
   * signed with it, and agents act only on what verifies against their hubPublicKeys.
   */
  signingKey: string;
  /**
   * Anchored regexes of namespaces whose SecretMirrors may deliver to clusters other than the
   * hub's own (default none: only ClusterSecretMirrors reach followers).
   */
  remoteNamespaces?: readonly string[];
  /**
   * Copies of a SecretMirror from namespace N land only in namespaces labelled
   * accept.mirrorhub.io/N=true (default false).
   */
  requireAcceptance?: boolean;
  /**
   * The hub's own ServiceAccount: Kubernetes auth of a ClusterVaultConnection without
   * serviceAccountRef logs in with a TokenRequest token of it.
   */
  serviceAccount?: { namespace: string; name: string };
  /**
   * Whether Vault connections may name ServiceAccounts whose tokens the hub requests (needs
   * cluster-wide serviceaccounts/token create; default false).
   */
  vaultServiceAccountTokens?: boolean;
  /** Per Vault request (default 10 s). */
  vaultRequestTimeoutMs?: number;
  /** First retry of a failed Vault poll, doubling up to the poll period (default 1 s). */
  vaultRetryInitialMs?: number;
}

export interface Hub {
  /** Resolves once leading with caches synced, or standing by behind another leader. */
  start(): Promise<void>;
  /** Stops the controllers and releases the Lease. Idempotent. */
  stop(): Promise<void>;
  /** Runs the hub's controllers; the agent half of standalone/ follows its election. */
  readonly manager: Manager;
  /** The clusters the hub delivers to: its own, and one per MirrorCluster while leading. */
  readonly registry: ClusterRegistry;
  isLeader(): boolean;
  /** Port of the health/metrics server and the dashboard, once started (healthPort given). */
  readonly port: number | undefined;
  readonly metrics: ControllerMetrics;
}

export const HUB_DEFAULTS = {
  clusterName: 'hub',
  namespace: 'mirrorhub-system',
  agentNamespace: 'mirrorhub-system',
  leaderElection: {
    leaseDurationMs: 15_000,
    renewDeadlineMs: 10_000,
    retryPeriodMs: 2_000,
    renewPeriodMs: 5_000,
  },
} as const;

export function createHub(config: HubConfig): Hub {
  const p = hubParts(config);
  const { log, metrics, feed } = p;
  const le = config.leaderElection;
  const election = le || HUB_DEFAULTS.leaderElection;
  const leaseName = (le && le.leaseName) || DEFAULT_LEASE_NAME;
  if (config.shareFollowers) {
    if (le === false) {
      throw new Error(
        'hub: replicas sharing the followers need leader election (MIRRORHUB_LEADER_ELECTION=true)',
      );
    }
    const role = new ElectedRole();
    p.role = role;
    p.ownership = p.shards = new FleetShards({
      kubeConfig: config.kubeConfig,
      namespace: p.namespace,
      leaseName,
      identity: config.identity,
      leaseDurationMs: election.leaseDurationMs,
      renewDeadlineMs: election.renewDeadlineMs,
      retryPeriodMs: election.retryPeriodMs,
      renewPeriodMs: election.renewPeriodMs,
      watchProgressDeadlineMs: config.watchProgressDeadlineMs,
      logger: p.logger,
      metrics,
    });
  }
  const manager = createManager({
    logger: log,
    metrics,
    ...(config.healthPort !== undefined
      ? {
          health: {
            port: config.healthPort,
            ...(config.healthHost ? { host: config.healthHost } : {}),
            registry: metrics.registry,
          },
        }
      : {}),
    ...(config.readinessChecks ? { readinessChecks: config.readinessChecks } : {}),
    leaderElection:
      le === false
        ? undefined
        : {
            namespace: p.namespace,
            name: leaseName,
            identity: config.identity,
            kubeConfig: config.kubeConfig,
            leaseDurationMs: election.leaseDurationMs,
            renewDeadlineMs: election.renewDeadlineMs,
            retryPeriodMs: election.retryPeriodMs,
            ...(election.renewPeriodMs !== undefined
              ? { renewPeriodMs: election.renewPeriodMs }
              : {}),
          },
    onNewLeader: (holder) => {
      p.leaderIdentity = holder;
      feed.changed();
    },
    onLeading: (leading) => {
      p.running = leading;
      feed.changed();
      log.info(leading ? 'controllers running' : 'controllers stopped');
    },
  });

  // The hub's peers, in start order; each stops before the ones registered above it.
  manager
    .add(dashboardPeer(p, manager))
    .add({ name: 'AWS sessions', start() {}, stop: () => p.eksSessions.close() });
  if (p.shards) manager.add(replicasPeer(p, p.shards));
  manager
    .add({
      name: 'hash key',
      needLeaderElection: !p.shards,
      start: async (signal) => void (p.hubSecret = await readHashKey(p, signal)),
      stop() {},
    })
    // MirrorClusters first: the mirrors' first plans see every registered cluster.
    .add(clusterPeer(p))
    .add(vaultPeer(p))
    .add(mirrorPeer(p, mirrorController));
  if (p.shards) manager.add(leaderRolePeer(p.role as ElectedRole));

  /** One term's mirror controller (its options are one block, rebuilt with the mirror path). */
  function mirrorController(
    hubSecret: Buffer,
    vaultConnections: VaultConnections,
  ): MirrorController {
    const { registry, clusterName, signer, tenancy, logger, pending, recentEvents } = p;
    const { namespace } = p;
    const c = new MirrorController({
      kubeConfig: config.kubeConfig,
      registry,
      originCluster: clusterName,
      hubSecret,
      signer,
      tenancy,
      identity: config.identity,
      logger,
      metrics,
      ownership: p.ownership,
      role: p.role,
      reports: p.reports,
      ...(config.concurrency ? { concurrency: config.concurrency } : {}),
      ...(config.deliveryConcurrency ? { deliveryConcurrency: config.deliveryConcurrency } : {}),
      ...(config.unreachableAfterMs !== undefined
        ? { unreachableAfterMs: config.unreachableAfterMs }
        : {}),
      ...(config.clusterRequestTimeoutMs !== undefined
        ? { requestTimeoutMs: config.clusterRequestTimeoutMs }
        : {}),
      ...(config.cleanupGraceMs !== undefined ? { cleanupGraceMs: config.cleanupGraceMs } : {}),
      watchProgressDeadlineMs: config.watchProgressDeadlineMs,
      onCleanupAbandoned: (cluster, name, key) => pending.add(cluster, name, key),
      onObserved: () => feed.changed(),
      onEvent: (key, e) =>
        recentEvents.add(key, {
          type: e.type,
          reason: e.reason,
          message: e.message,
          time: new Date().toISOString(),
        }),
      vaultConnections,
      vault: { retryInitialMs: config.vaultRetryInitialMs, leaseNamespace: namespace },
    });
    return c;
  }

  let stopped = false;
  let startPromise: Promise<void> | undefined;
  let stopPromise: Promise<void> | undefined;
  return {
    registry: p.registry,
    metrics,
    manager,
    get port() {
      return manager.port;
    },
    isLeader: () => manager.isLeader(),
    start() {
      if (stopped) return Promise.reject(new Error('hub: stopped'));
      startPromise ??= (async () => {
        await preflight(p);
        if (stopped) return;
        await manager.start();
        // Leading with caches synced, or standing by behind another leader.
        await manager.settled;
      })();
      return startPromise;
    },
    stop() {
      stopPromise ??= (async () => {
        stopped = true;
        await manager.stop(); // a start() waiting for leadership returns
        await startPromise?.catch(() => undefined);
        p.rest.close();
        log.info('hub stopped');
      })();
      return stopPromise;
    },
  };
}

/** What lives as long as the Hub, and what the current term's controllers share with it. */
interface HubParts {
  config: HubConfig;
  clusterName: string;
  namespace: string;
  agentNamespace: string;
  signer: Signer;
  tenancy: Tenancy;
  logger: Logger;
  log: Logger;
  metrics: ControllerMetrics;
  implicitLocal: ClusterTarget;
  registry: ClusterRegistry;
  pending: PendingCleanups;
  /** AWS sessions to EKS clusters, kept by the process across leadership terms. */
  eksSessions: EksSessions;
  /** Which followers this replica writes to (all of them, unless replicas share the fleet). */
  ownership: Ownership;
  /** Whether this replica writes what has one writer (always, unless replicas share the fleet). */
  role: Role;
  /** The Leases replicas share the followers with (shareFollowers). */
  shards?: FleetShards | undefined;
  /**
   * What this replica reports to the leader about its followers' deliveries (their MirrorCluster
   * status), shared by the MirrorCluster controller (writes it) and the mirror controller.
   */
  reports: DeliveryReportStore;
  rest: RestClient;
  feed: DashboardFeed;
  recentEvents: RecentEvents;
  /** The term's controllers, once started (undefined between terms). */
  clusters?: ClusterController | undefined;
  mirrors?: MirrorController | undefined;
  vault?: VaultConnections | undefined;
  hubSecret?: Buffer | undefined;
  running: boolean;
  leaderIdentity?: string | undefined;
}

/** Checks the configuration (throwing what to fix) and makes what outlives every term. */
function hubParts(config: HubConfig): HubParts {
  const clusterName = config.clusterName ?? HUB_DEFAULTS.clusterName;
  const namespace = config.namespace ?? HUB_DEFAULTS.namespace;
  const agentNamespace = config.agentNamespace ?? HUB_DEFAULTS.agentNamespace;
  const invalid = validateClusterName(clusterName);
  if (invalid) throw new Error(`hub: ${invalid}`);
  if (!config.identity) throw new Error('hub: identity must not be empty');
  const signer = createSigner(
    config.signingKey ?? '',
    'hub: the signing key (MIRRORHUB_SIGNING_KEY_FILE)',
  );
  const remoteNamespaces = (config.remoteNamespaces ?? []).map((p, i) =>
    compilePattern(p, `remoteNamespaces[${i}] (MIRRORHUB_REMOTE_NAMESPACES)`),
  );
  const badPattern = remoteNamespaces.find((m) => !m.ok);
  if (badPattern && !badPattern.ok) throw new Error(`hub: ${badPattern.error}`);
  const tenancy: Tenancy = {
    remoteNamespaces,
    requireAcceptance: config.requireAcceptance ?? false,
  };

  const logger =
    config.logger ?? createLogger({ base: { component: 'hub', version: config.version } });
  const log = childLogger(logger, { controller: 'hub', cluster: clusterName });
  const metrics = createMetrics({ component: 'hub' });
  metrics
    .gauge('build_info', 'Version of the running hub (always 1).', ['version'])
    .set({ version: config.version }, 1);
  const implicitLocal = localTarget({
    name: clusterName,
    agentNamespace,
    kubeConfig: config.kubeConfig,
  });
  return {
    config,
    clusterName,
    namespace,
    agentNamespace,
    signer,
    tenancy,
    logger,
    log,
    metrics,
    implicitLocal,
    registry: new ClusterRegistry([implicitLocal]),
    pending: new PendingCleanups(),
    eksSessions: new EksSessions(),
    ownership: OWN_EVERYTHING,
    role: ALWAYS_LEADING,
    reports: new DeliveryReportStore(),
    rest: new RestClient(config.kubeConfig, { userAgent: USER_AGENT.hub }),
    feed: new DashboardFeed(),
    recentEvents: new RecentEvents(),
    running: false,
  };
}

/** The hub's namespace must exist: its Lease and hash key live there. */
async function preflight({ rest, namespace, log }: HubParts): Promise<void> {
  try {
    await rest.get(corePath('namespaces', undefined, namespace));
  } catch (err) {
    if (isNotFound(err)) {
      throw new Error(
        `hub: namespace "${namespace}" does not exist; create it (the hub keeps its Lease and hash key there)`,
        { cause: err },
      );
    }
    if (!isForbidden(err)) log.warn({ err: errorMessage(err) }, 'cannot check the hub namespace');
  }
}

/** The hash key, retried until read or `signal` aborts (the term ended). */
async function readHashKey(p: HubParts, signal: AbortSignal): Promise<Buffer | undefined> {
  const backoff = new Backoff({ initialMs: 500, maxMs: 30_000 });
  while (!signal.aborted) {
    try {
      // Every replica may create it (hashkey.ts): one waiting for the leader's would wait
      // forever on a fresh install, where the controllers start before anyone leads.
      return await ensureHashKey(p.rest, p.namespace);
    } catch (err) {
      const retryInMs = backoff.next();
      p.log.error({ err, retryInMs }, 'cannot read or create the hash key Secret');
      await sleep(realClock, retryInMs, signal);
    }
  }
  return undefined;
}

/** The page and API on the health port (when there is one), for as long as the hub runs. */
function dashboardPeer(p: HubParts, manager: Manager): Runnable {
  const { config, rest, feed, log, metrics, namespace } = p;
  const locateLeader: LeaderLocator | undefined =
    config.dashboardLeader ??
    (config.podName && config.healthPort
      ? podLeaderLocator({
          rest,
          namespace,
          selfPod: config.podName,
          port: config.healthPort,
        })
      : undefined);
  let dashboard: Dashboard | undefined;
  return {
    name: 'dashboard',
    start() {
      const server = manager.health;
      if (!server || config.dashboard === false) return;
      dashboard = serveDashboard({
        server,
        rest,
        feed,
        hub: { cluster: p.clusterName, version: config.version },
        logger: log,
        viewers: metrics.gauge('dashboard_viewers', 'Dashboards open (event streams).'),
        identity: config.identity,
        source: {
          input: () => dashboardInput(p, manager),
          leader: () => p.running,
          leaderUrl: async () => {
            const holder = p.leaderIdentity;
            if (!holder || holder === config.identity || p.running) return undefined;
            return locateLeader?.(holder);
          },
        },
        ...(config.dashboardAuthTtlMs !== undefined
          ? { authTtlMs: config.dashboardAuthTtlMs }
          : {}),
      });
    },
    stop() {
      dashboard?.close();
      feed.close();
    },
  };
}

/** What the dashboard shows: the leader's caches; a standby says where the leader is. */
function dashboardInput(p: HubParts, manager: Manager): ViewInput | string {
  const { mirrors, clusters, config } = p;
  if (!p.running || !mirrors || !clusters) {
    // The identity is <pod name>_<random suffix> (config.ts).
    const leader = p.leaderIdentity?.replace(/_[0-9a-f]{8}$/, '');
    if (leader && p.leaderIdentity !== config.identity) {
      return (
        `this hub replica (${config.identity}) is standing by; the dashboard is served by the leader, ` +
        `${leader}: kubectl -n ${p.namespace} port-forward pod/${leader} ${manager.port ?? 8080}`
      );
    }
    return 'the hub is starting: its caches are not synced yet';
  }
  return {
    now: Date.now(),
    clusters: clusters.list(),
    mirrors: mirrors.mirrors(),
    deliveries: mirrors.deliveries(),
    events: p.recentEvents.map,
    heldBy: new Map(
      p.registry.list().flatMap((t) => (t.remote ? [[t.name, t.remote.owner ?? ''] as const] : [])),
    ),
  };
}

/** The MirrorCluster controller of each term: registers the clusters the mirrors deliver to. */
function clusterPeer(p: HubParts): Runnable {
  const { config } = p;
  return {
    name: 'MirrorCluster controller',
    needLeaderElection: !p.shards,
    async start(signal) {
      const clusters = (p.clusters = new ClusterController({
        kubeConfig: config.kubeConfig,
        registry: p.registry,
        localTarget: p.implicitLocal,
        hubClusterName: p.clusterName,
        identity: config.identity,
        logger: p.logger,
        metrics: p.metrics,
        pending: p.pending,
        holds: (cluster, name) => p.mirrors?.clusterHolds(cluster, name),
        ownership: p.ownership,
        reports: p.reports,
        onObserved: () => p.feed.changed(),
        ...(config.aws ? { aws: config.aws } : {}),
        ...(config.proxy ? { proxy: config.proxy } : {}),
        eksSessions: p.eksSessions,
        ...(config.clusterHealthIntervalMs !== undefined
          ? { healthIntervalMs: config.clusterHealthIntervalMs }
          : {}),
        ...(config.agentHeartbeatGraceMs !== undefined
          ? { heartbeatGraceMs: config.agentHeartbeatGraceMs }
          : {}),
        ...(config.agentHeartbeatReportMs !== undefined
          ? { heartbeatReportMs: config.agentHeartbeatReportMs }
          : {}),
        ...(config.clusterRequestTimeoutMs !== undefined
          ? { requestTimeoutMs: config.clusterRequestTimeoutMs }
          : {}),
        watchProgressDeadlineMs: config.watchProgressDeadlineMs,
      }));
      await clusters.start();
      if (signal.aborted) return;
      const dropped = p.eksSessions.dropUnclaimed();
      if (dropped > 0)
        p.log.info({ sessions: dropped }, 'dropped the AWS sessions of clusters gone');
    },
    async stop() {
      const clusters = p.clusters;
      await clusters?.stop();
      if (p.clusters === clusters) p.clusters = undefined;
    },
    ready: () => (p.clusters?.hasSynced() ? true : 'MirrorCluster cache not synced'),
  };
}

/** The VaultConnections and ClusterVaultConnections of each term: clients and Ready status. */
function vaultPeer(p: HubParts): Runnable {
  const { config } = p;
  return {
    name: 'Vault connections',
    needLeaderElection: !p.shards,
    async start() {
      const vault = (p.vault = new VaultConnections({
        kubeConfig: config.kubeConfig,
        watchProgressDeadlineMs: config.watchProgressDeadlineMs,
        serviceAccount: config.serviceAccount,
        tenantServiceAccountTokens: config.vaultServiceAccountTokens,
        ownNamespaces: [p.namespace, p.agentNamespace],
        requestTimeoutMs: config.vaultRequestTimeoutMs,
        identity: config.identity,
        role: p.role,
        logger: p.logger,
        metrics: p.metrics,
        requests: vaultRequests(p.metrics),
        onChange: (connKey) => p.mirrors?.vaultConnectionChanged(connKey),
      }));
      await vault.start();
    },
    async stop() {
      const vault = p.vault;
      await vault?.stop();
      if (p.vault === vault) p.vault = undefined;
    },
  };
}

/** The mirror controller of each term, made with the hash key the term read. */
function mirrorPeer(
  p: HubParts,
  make: (hubSecret: Buffer, vault: VaultConnections) => MirrorController,
): Runnable {
  return {
    name: 'mirror controller',
    needLeaderElection: !p.shards,
    async start() {
      if (!p.hubSecret) throw new Error('hub: no hash key');
      if (!p.vault) throw new Error('hub: no Vault connections');
      await (p.mirrors = make(p.hubSecret, p.vault)).start();
    },
    async stop() {
      const mirrors = p.mirrors;
      await mirrors?.stop();
      if (p.mirrors === mirrors) p.mirrors = undefined;
    },
    ready: () => (p.mirrors?.hasSynced() ? true : 'mirror caches not synced'),
  };
}

/**
 * Shared followers: joins the replicas before the controllers start (they ask it what they own),
 * and leaves after they stopped, so every follower is given up only once nothing writes to it.
 */
function replicasPeer(p: HubParts, shards: FleetShards): Runnable {
  return {
    name: 'hub replicas',
    start: () => shards.start(),
    stop: () => shards.stop(),
    ready: () => shards.ready(),
  };
}

/** Shared followers: the controllers run on every replica; this one's term makes it lead. */
function leaderRolePeer(role: ElectedRole): Runnable {
  return {
    name: 'leader role',
    needLeaderElection: true,
    start() {
      role.set(true);
    },
    stop() {
      role.set(false);
    },
  };
}
