// One process for one cluster: the hub and the agent of the hub's own cluster, side by side.
//
// Nothing changes in the contract between them: the hub still writes a payload Secret and a
// MirrorDelivery into the agent namespace, signed; the agent still watches, verifies, fans out
// and reports in the delivery's status. What one process saves is the second Node.js runtime,
// the second copy of the code and of the shared libraries, and a second pod; what it keeps is
// every behaviour, test and kubectl view of the two-process shape, and the agent's identity:
// main.ts gives the agent half the agent's own ServiceAccount (token-request.ts), so the agent
// chart's RBAC and admission policies bind it exactly as they bind a separate agent pod.
//
// hub/ and agent/ never import each other; this package is the only place that holds both.
import {
  createAgent,
  type Agent,
  type AgentConfig,
  type AgentOptions,
} from '@mirrorhub/agent/agent';
import { createHub, type Hub, type HubConfig } from '@mirrorhub/hub/hub';
import type { Manager } from '@mirrorhub/shared/kit/controller/manager';

export interface StandaloneConfig {
  hub: HubConfig;
  /** The agent of the hub's own cluster: its namespace and cluster name must be the hub's. */
  agent: AgentConfig;
}

export interface Standalone {
  readonly hub: Hub;
  readonly agent: Agent;
  /** Starts both halves; if one fails to start, the other is stopped and the error thrown. */
  start(): Promise<void>;
  /** Stops the hub (no new deliveries), then the agent. Idempotent. */
  stop(): Promise<void>;
}

/** Refuses an agent that is not the hub's own cluster's, with the setting to fix. */
export function checkPairing(hub: HubConfig, agent: AgentConfig): void {
  const cluster = hub.clusterName ?? 'hub';
  if (agent.clusterName !== cluster) {
    throw new Error(
      `standalone: the agent's cluster name "${agent.clusterName}" is not the hub's "${cluster}": ` +
        'in one process the agent serves the hub cluster itself (MIRRORHUB_CLUSTER_NAME sets both)',
    );
  }
  const ns = hub.agentNamespace ?? 'mirrorhub-system';
  if (agent.namespace !== ns) {
    throw new Error(
      `standalone: the agent's namespace "${agent.namespace}" is not the hub's agent namespace "${ns}" (MIRRORHUB_AGENT_NAMESPACE sets both)`,
    );
  }
}

/**
 * One election for the process: when both halves would elect, the agent half leads exactly
 * while the hub does, on the hub's Lease, so the pod that plans deliveries also applies them
 * and a second Lease (its renewals, a standby's reads) adds nothing.
 */
export function agentHalf(config: StandaloneConfig, hub: Manager): AgentOptions {
  const oneElection = !!config.agent.leaderElection && config.hub.leaderElection !== false;
  return oneElection ? { follow: hub } : {};
}

export function createStandalone(config: StandaloneConfig): Standalone {
  checkPairing(config.hub, config.agent);
  const hub = createHub({
    ...config.hub,
    readinessChecks: {
      ...config.hub.readinessChecks,
      'local-agent': () => agent.ready() || "the in-process agent's caches are not synced",
    },
  });
  const agent = createAgent(config.agent, agentHalf(config, hub.manager));
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      await hub.stop();
      await agent.stop();
    })());
  return {
    hub,
    agent,
    async start() {
      const results = await Promise.allSettled([agent.start(), hub.start()]);
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) {
        await stop().catch(() => undefined);
        throw failed.reason;
      }
    },
    stop,
  };
}
