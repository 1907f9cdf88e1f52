// The agent's configuration from flags and environment, read once by main.ts.

import { hostname } from 'node:os';
import { crypto, util } from '@mirrorhub/shared/kit/runtime/builtins';
import { progressDeadlineFromEnv } from '@mirrorhub/shared/kit/k8s/watcher';
import { processVersion } from '@mirrorhub/shared/kit/runtime/version';
import type { PolicySpec } from '@mirrorhub/agent/policy';
import type { AgentConfig } from './agent.js';

const { randomBytes } = crypto;
const { parseArgs } = util;

export interface MainConfig extends Omit<AgentConfig, 'kubeConfig' | 'logger'> {
  /** --kubeconfig; otherwise KUBECONFIG, ~/.kube/config or the pod's service account. */
  kubeconfigPath: string | undefined;
}

function positiveInt(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new Error(`${name} must be a whole number; got "${value}"`);
  return n;
}

/** Configuration from flags and environment, validated; throws with a clear message. */
export function readConfig(argv: string[], env: NodeJS.ProcessEnv): MainConfig {
  const { values } = parseArgs({
    args: argv,
    options: {
      kubeconfig: { type: 'string' },
      namespace: { type: 'string' },
      'cluster-name': { type: 'string' },
      port: { type: 'string' },
    },
    strict: true,
  });
  const clusterName = values['cluster-name'] ?? env['MIRRORHUB_CLUSTER_NAME'] ?? '';
  if (!clusterName) throw new Error('MIRRORHUB_CLUSTER_NAME (or --cluster-name) is required');
  const hubPublicKeys = env['MIRRORHUB_HUB_PUBLIC_KEYS']?.trim() ?? '';
  if (!hubPublicKeys) {
    throw new Error(
      "MIRRORHUB_HUB_PUBLIC_KEYS is required: the hub's Ed25519 public key(s) in PEM (the agent chart's hubPublicKeys); the agent acts only on deliveries signed by them",
    );
  }
  let policy: PolicySpec | undefined;
  const rawPolicy = env['MIRRORHUB_POLICY']?.trim();
  if (rawPolicy) {
    try {
      policy = JSON.parse(rawPolicy) as PolicySpec;
    } catch (err) {
      throw new Error(`MIRRORHUB_POLICY is not JSON (${(err as Error).message})`, { cause: err });
    }
  }
  const identity = env['POD_NAME']
    ? `${env['POD_NAME']}-${randomBytes(3).toString('hex')}`
    : `${hostname()}-${randomBytes(3).toString('hex')}`;
  // Off by default: one replica has no standby to hand over to, so its Lease writes would buy
  // nothing. Set it for replicaCount > 1.
  const leaderElection = (env['MIRRORHUB_LEADER_ELECTION'] ?? 'false').toLowerCase() === 'true';
  return {
    kubeconfigPath: values.kubeconfig,
    namespace: values.namespace ?? env['MIRRORHUB_NAMESPACE'] ?? 'mirrorhub-system',
    clusterName,
    hubPublicKeys,
    policy,
    version: processVersion(new URL('../package.json', import.meta.url), env),
    healthPort: positiveInt('PORT', values.port ?? env['PORT'], 8080),
    resyncSeconds: positiveInt('MIRRORHUB_RESYNC_SECONDS', env['MIRRORHUB_RESYNC_SECONDS'], 300),
    watchProgressDeadlineSeconds: progressDeadlineFromEnv(env) ?? 150,
    identity,
    leaderElection: leaderElection
      ? {
          leaseName: 'mirrorhub-agent-leader',
          leaseDurationMs: 15_000,
          renewDeadlineMs: 10_000,
          retryPeriodMs: 2_000,
          renewPeriodMs: 5_000,
        }
      : false,
  };
}
