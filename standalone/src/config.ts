// The one-process configuration from the environment (main.ts only; read once at start-up).
//
// The hub reads its variables as `node hub/dist/main.js` does (hub/src/config.ts). The agent half
// reads the agent's (agent/src/config.ts: MIRRORHUB_POLICY, MIRRORHUB_RESYNC_SECONDS, ...), except
// the ones that must agree with the hub and are taken from it:
//
//   MIRRORHUB_NAMESPACE        the hub's MIRRORHUB_AGENT_NAMESPACE (default: the hub namespace)
//   MIRRORHUB_CLUSTER_NAME     the hub's (default hub)
//   MIRRORHUB_HUB_PUBLIC_KEYS  the public half of the hub's signing key: the agent trusts
//                              exactly the hub it shares the process with
//   MIRRORHUB_LEADER_ELECTION  the hub's setting: with leader election (the default) the agent
//                              half runs only while leading, as a separate agent with
//                              replicaCount > 1 does; createStandalone makes that the hub's
//                              election (one Lease per process), not a second one
//
// and two of its own:
//
//   MIRRORHUB_LOCAL_AGENT_PORT             the agent half's /healthz, /readyz and /metrics
//                                          (default 8081; the hub's stay on PORT)
//   MIRRORHUB_LOCAL_AGENT_SERVICE_ACCOUNT  a ServiceAccount in the agent namespace the agent
//                                          half acts as, with tokens this process requests
//                                          (the hub chart sets it with localAgent.inProcess);
//                                          unset: the agent half uses the process's own
//                                          credentials (a laptop's kubeconfig, the benchmarks)
import { readConfig, type MainConfig } from '@mirrorhub/agent/config';
import { configFromEnv, type EnvConfig } from '@mirrorhub/hub/config';
import { createSigner } from '@mirrorhub/shared/mirror/signing';

export interface StandaloneEnvConfig {
  hub: EnvConfig;
  agent: Omit<MainConfig, 'kubeconfigPath'>;
  /** The agent half's ServiceAccount in the agent namespace, if it is not this process's. */
  agentServiceAccount: string | undefined;
}

export function standaloneConfigFromEnv(
  env: Record<string, string | undefined>,
): StandaloneEnvConfig {
  const hub = configFromEnv(env);
  const agentNamespace = hub.agentNamespace ?? hub.namespace ?? 'mirrorhub-system';
  const sa = env['MIRRORHUB_LOCAL_AGENT_SERVICE_ACCOUNT']?.trim() || undefined;
  if (sa !== undefined && !/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(sa)) {
    throw new Error(
      `MIRRORHUB_LOCAL_AGENT_SERVICE_ACCOUNT must be a ServiceAccount name; got "${sa}"`,
    );
  }
  const agentPort = env['MIRRORHUB_LOCAL_AGENT_PORT']?.trim() || '8081';
  if (hub.healthPort !== 0 && String(hub.healthPort) === agentPort) {
    throw new Error(
      `MIRRORHUB_LOCAL_AGENT_PORT (${agentPort}) must differ from PORT: the hub and the agent half each serve /healthz, /readyz and /metrics`,
    );
  }
  const { publicKeyPem } = createSigner(hub.signingKey, 'MIRRORHUB_SIGNING_KEY_FILE');
  const { kubeconfigPath: _ignored, ...agent } = readConfig([], {
    ...env,
    MIRRORHUB_NAMESPACE: agentNamespace,
    MIRRORHUB_CLUSTER_NAME: hub.clusterName ?? 'hub',
    MIRRORHUB_HUB_PUBLIC_KEYS: publicKeyPem,
    MIRRORHUB_LEADER_ELECTION: hub.leaderElection === false ? 'false' : 'true',
    PORT: agentPort,
  });
  return { hub, agent, agentServiceAccount: sa };
}
