// One agent: the delivery controller and its heartbeat, registered with a Manager
// (shared/kit/controller/manager.ts) that wires the health/metrics server, readiness, leader
// election (optional) and the ordered stop. No globals: several agents can run in one process
// (integration tests do), each with its own metrics registry.

import { hostname } from 'node:os';
import { crypto } from '@mirrorhub/shared/kit/runtime/builtins';
import { childLogger, createLogger, type Logger } from '@mirrorhub/shared/kit/runtime/log';
import { createMetrics, type Registry } from '@mirrorhub/shared/kit/runtime/metrics';
import { restLeaseClient } from '@mirrorhub/shared/kit/controller/leader';
import { createManager, type Manager } from '@mirrorhub/shared/kit/controller/manager';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { parsePolicy, type PolicySpec } from '@mirrorhub/agent/policy';
import { createVerifier } from '@mirrorhub/shared/mirror/signing';
import { RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import { DeliveryController } from './controllers/delivery/controller.js';
import { Heartbeat } from './heartbeat.js';
import { FIELD_MANAGER, USER_AGENT } from '@mirrorhub/shared/api/contract';

const { randomBytes } = crypto;

export interface LeaderElectionConfig {
  leaseName: string;
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

export interface AgentConfig {
  /** Any KubeAccess (`loadKubeAccess()` from shared/kit/k8s/access), or client-node's KubeConfig. */
  kubeConfig: KubeAccess;
  /** The agent namespace (MirrorDeliveries, payload Secrets, the heartbeat Lease). */
  namespace: string;
  /**
   * This cluster's name, as the hub knows it (the MirrorCluster's name): deliveries are signed
   * for it; a label on metrics, an annotation on the Lease.
   */
  clusterName: string;
  /**
   * The hub's Ed25519 public key(s), PEM: the agent acts only on deliveries and payloads signed
   * by one of them. Two during a key rotation.
   */
  hubPublicKeys: string | readonly string[];
  /**
   * What this cluster lets the agent write (the agent chart's `policy` values). Absent fields
   * take the chart's defaults; the control plane's namespaces and the agent's own are always
   * denied.
   */
  policy?: PolicySpec | undefined;
  version: string;
  logger?: Logger;
  /** Serve /healthz, /readyz and /metrics: 0 = an ephemeral port, undefined = no server. */
  healthPort?: number;
  /** Full resync of every delivery this often (default 300). */
  resyncSeconds?: number;
  /**
   * A watch that passes nothing, not even a bookmark, this long is presumed stalled and resumed
   * (default 150; the API server bookmarks every watch about once a minute).
   */
  watchProgressDeadlineSeconds?: number | undefined;
  /** Deliveries reconciled at once (default: the controller's, 16). */
  concurrency?: number;
  /** Copy writes in flight at once per delivery (default: the controller's, 16). */
  writeParallelism?: number;
  /** Run the controller only while holding this Lease (default false: always run). */
  leaderElection?: false | LeaderElectionConfig;
  /** Heartbeat Lease renewal (default every 30 s); false = no heartbeat. */
  heartbeat?: false | { intervalMs?: number };
  /** Unique per process (leader election, heartbeat holder). Default: hostname + random. */
  identity?: string;
  /** Collect Node.js process metrics into the registry (default true). */
  processMetrics?: boolean;
  /**
   * Compacts the heap, run once the agent is quiet after a burst of work, so what the burst
   * grew is given back at once (compact.ts). main.ts passes `exposedGc()` (--expose-gc).
   */
  gc?: (() => void) | undefined;
}

export interface Agent {
  /** Resolves when the caches are synced and the controller runs (or campaigns for the lease). */
  start(): Promise<void>;
  /** Stops reconciling, waits for in-flight work, stops watches and servers. Idempotent. */
  stop(): Promise<void>;
  readonly registry: Registry;
  /** Port of the health/metrics server, once started (undefined without one). */
  readonly port: number | undefined;
  /** True once every cache has listed. */
  ready(): boolean;
  /** Resolves when no delivery is queued or being reconciled (tests, benchmarks). */
  idle(): Promise<void>;
}

export interface AgentOptions {
  /**
   * Lead whenever this manager leads, instead of electing on `leaderElection`'s own Lease: the
   * agent half of standalone/ follows the hub's election, one per process.
   */
  follow?: Manager | undefined;
}

export function createAgent(config: AgentConfig, options: AgentOptions = {}): Agent {
  const identity = config.identity ?? `${hostname()}-${randomBytes(4).toString('hex')}`;
  const log = childLogger(config.logger ?? createLogger(), {
    component: 'agent',
    cluster: config.clusterName,
  });
  const metrics = createMetrics({
    component: 'agent',
    defaultLabels: { cluster: config.clusterName },
    defaultMetrics: config.processMetrics ?? true,
  });
  // Both throw a message naming what is wrong: the agent does not start on a bad configuration.
  const policy = parsePolicy(config.policy ?? {}, config.namespace);
  const verifier = createVerifier(
    config.hubPublicKeys,
    'hubPublicKeys (MIRRORHUB_HUB_PUBLIC_KEYS)',
  );
  const controller = new DeliveryController({
    kubeConfig: config.kubeConfig,
    namespace: config.namespace,
    clusterName: config.clusterName,
    policy,
    verifier,
    agentVersion: config.version,
    logger: log,
    metrics,
    resyncMs: (config.resyncSeconds ?? 300) * 1000,
    ...(config.watchProgressDeadlineSeconds !== undefined
      ? { watchProgressDeadlineMs: config.watchProgressDeadlineSeconds * 1000 }
      : {}),
    ...(config.concurrency !== undefined ? { concurrency: config.concurrency } : {}),
    ...(config.writeParallelism !== undefined ? { writeParallelism: config.writeParallelism } : {}),
    eventsInstance: identity,
    gc: config.gc,
  });
  const rest = new RestClient(config.kubeConfig, { userAgent: USER_AGENT.agent });
  const heartbeat =
    config.heartbeat === false
      ? undefined
      : () =>
          new Heartbeat({
            rest,
            fieldManager: FIELD_MANAGER.agent,
            namespace: config.namespace,
            clusterName: config.clusterName,
            version: config.version,
            identity,
            intervalMs: (config.heartbeat || undefined)?.intervalMs ?? 30_000,
            logger: log,
          });

  let heartbeatOfTerm: Heartbeat | undefined;
  let run: Promise<void> = Promise.resolve();
  const le = config.leaderElection;
  const manager = createManager({
    logger: log,
    metrics,
    ...(config.healthPort !== undefined
      ? { health: { port: config.healthPort, registry: metrics.registry } }
      : {}),
    leaderElection: options.follow
      ? { follow: options.follow }
      : le
        ? {
            client: restLeaseClient(rest),
            namespace: config.namespace,
            name: le.leaseName,
            identity,
            leaseDurationMs: le.leaseDurationMs,
            renewDeadlineMs: le.renewDeadlineMs,
            retryPeriodMs: le.retryPeriodMs,
            ...(le.renewPeriodMs !== undefined ? { renewPeriodMs: le.renewPeriodMs } : {}),
          }
        : undefined,
  });
  // The caches run always (a standby is warm); heartbeat and reconciles only while leading.
  manager
    .add({
      name: 'delivery caches',
      start: () => controller.start(),
      // Also ends a start() still waiting for caches (their `synced` rejects).
      stop: () => controller.stop(),
      ready: () => controller.hasSynced() || 'caches not synced',
    })
    .add({
      name: 'heartbeat',
      needLeaderElection: true,
      async start() {
        heartbeatOfTerm = heartbeat?.();
        await heartbeatOfTerm?.start();
      },
      stop: () => heartbeatOfTerm?.stop(),
    })
    .add({
      name: 'delivery controller',
      needLeaderElection: true,
      start(signal, fail) {
        // A failure ends the term (fail); stop only waits for the reconciles to wind down.
        run = controller.run(signal).catch(fail);
      },
      stop: () => run,
    });

  let starting: Promise<void> | undefined;
  let stopping: Promise<void> | undefined;

  async function start(): Promise<void> {
    await manager.start();
    log.info(
      {
        namespace: config.namespace,
        version: config.version,
        identity,
        port: manager.port,
        policy: policy.summary,
        trustedKeys: verifier.keyIds,
      },
      'agent started',
    );
  }

  async function stop(): Promise<void> {
    await manager.stop();
    await starting?.catch(() => undefined);
    rest.close();
    log.info('agent stopped');
  }

  return {
    start() {
      starting ??= start();
      return starting;
    },
    stop() {
      stopping ??= stop();
      return stopping;
    },
    registry: metrics.registry,
    get port() {
      return manager.port;
    },
    ready: () => controller.hasSynced(),
    idle: () => controller.idle(),
  };
}
