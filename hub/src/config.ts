// The hub's configuration from the environment (main.ts only; read once at start-up).
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { HubConfig } from './hub.js';

export type EnvConfig = Omit<HubConfig, 'kubeConfig' | 'logger' | 'version'> & {
  healthPort: number;
};

/**
 * MIRRORHUB_NAMESPACE (hub namespace, default mirrorhub-system), MIRRORHUB_AGENT_NAMESPACE
 * (default: the hub namespace), MIRRORHUB_CLUSTER_NAME (default hub), PORT (default 8080),
 * POD_NAME (identity; default the host name), MIRRORHUB_CONCURRENCY, MIRRORHUB_LEADER_ELECTION
 * ("false" to run without). LOG_LEVEL / LOG_FORMAT are read by the logger (logConfigFromEnv).
 */
export function configFromEnv(env: Record<string, string | undefined>): EnvConfig {
  const namespace = env['MIRRORHUB_NAMESPACE']?.trim() || 'mirrorhub-system';
  const port = intFrom(env, 'PORT', 8080, 0, 65535);
  const concurrency = intFrom(env, 'MIRRORHUB_CONCURRENCY', 4, 1, 256);
  const le = env['MIRRORHUB_LEADER_ELECTION']?.trim().toLowerCase();
  if (le !== undefined && le !== '' && le !== 'true' && le !== 'false') {
    throw new Error(`MIRRORHUB_LEADER_ELECTION must be true or false; got "${le}"`);
  }
  // A pod restarted in place keeps its name: a suffix keeps two lives of it apart in the Lease.
  const identity = `${env['POD_NAME']?.trim() || hostname()}_${randomBytes(4).toString('hex')}`;
  return {
    namespace,
    agentNamespace: env['MIRRORHUB_AGENT_NAMESPACE']?.trim() || namespace,
    clusterName: env['MIRRORHUB_CLUSTER_NAME']?.trim() || 'hub',
    identity,
    healthPort: port,
    concurrency,
    ...(le === 'false' ? { leaderElection: false as const } : {}),
  };
}

function intFrom(
  env: Record<string, string | undefined>,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Error(`${name} must be an integer from ${min} to ${max}; got "${raw}"`);
  }
  return n;
}
