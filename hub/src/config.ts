// The hub's configuration from the environment (main.ts only; read once at start-up).
import { crypto, fs } from '@mirrorhub/shared/kit/runtime/builtins';
import { hostname } from 'node:os';
import { progressDeadlineFromEnv } from '@mirrorhub/shared/kit/k8s/watcher';
import type { HubConfig } from './hub.js';
import { endpointOverridesFromEnv } from './clusters/aws/endpoints.js';
import { hasProxy, proxyEnvFrom } from './clusters/egress-proxy.js';

const { randomBytes } = crypto;
const { readFileSync } = fs;

export type EnvConfig = Omit<HubConfig, 'kubeConfig' | 'logger' | 'version'> & {
  healthPort: number;
};

/**
 * MIRRORHUB_NAMESPACE (hub namespace, default mirrorhub-system), MIRRORHUB_AGENT_NAMESPACE
 * (default: the hub namespace), MIRRORHUB_CLUSTER_NAME (default hub), PORT (default 8080),
 * POD_NAME (identity; default the host name), MIRRORHUB_CONCURRENCY, MIRRORHUB_LEADER_ELECTION
 * ("false" to run without), MIRRORHUB_SHARE_FOLLOWERS ("true": the replicas share the followers;
 * needs leader election). LOG_LEVEL / LOG_FORMAT are read by the logger (logConfigFromEnv).
 *
 * Followers: MIRRORHUB_CLUSTER_HEALTH_INTERVAL_SECONDS (10), MIRRORHUB_AGENT_HEARTBEAT_GRACE_SECONDS
 * (90), MIRRORHUB_CLUSTER_REQUEST_TIMEOUT_SECONDS (10), MIRRORHUB_CLEANUP_GRACE_SECONDS (120).
 * Watches: MIRRORHUB_WATCH_PROGRESS_DEADLINE_SECONDS (150, at least 90): a watch that passes
 * nothing, not even a bookmark, this long is presumed stalled and resumed. MIRRORHUB_HTTP2
 * ("false": every watch over HTTP/1.1 on a connection of its own; read by main.ts, k8s/h2.ts).
 *
 * AWS: the hub's own credentials come from the SDK's default chain (AWS_* env, IRSA's
 * AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN, EKS Pod Identity, a profile); they are not read
 * here. MIRRORHUB_STS_ENDPOINT / MIRRORHUB_EKS_ENDPOINT point AssumeRole / DescribeCluster at an
 * emulator or a VPC endpoint for every region; MIRRORHUB_STS_ENDPOINT_<REGION> /
 * MIRRORHUB_EKS_ENDPOINT_<REGION> (REGION as EU_WEST_1) for one region, which wins for it (one
 * interface VPC endpoint per region: clusters/aws/endpoints.ts). MIRRORHUB_STS_REGION sets the
 * region of AssumeRole calls (default: each cluster's region), MIRRORHUB_ROLE_DURATION_SECONDS
 * the session length (900-3600).
 *
 * Egress proxy: HTTPS_PROXY / https_proxy, HTTP_PROXY / http_proxy (http:// endpoints only) and
 * NO_PROXY / no_proxy, as curl and Go read them (clusters/egress-proxy.ts), for the hub's calls to
 * STS and EKS and its connections to follower API servers; a follower kubeconfig's proxy-url wins
 * for its cluster. Not for the hub's own API server (the pod's service account) or Vault.
 *
 * Trust: MIRRORHUB_SIGNING_KEY_FILE (required) is the hub's Ed25519 private key in PKCS#8 PEM
 * (the hub chart mounts signing.existingSecret there). Tenancy: MIRRORHUB_REMOTE_NAMESPACES, a
 * JSON array of anchored regexes of namespaces whose SecretMirrors may reach other clusters;
 * MIRRORHUB_REQUIRE_ACCEPTANCE ("true": SecretMirror copies need accept.mirrorhub.io/<ns>=true).
 *
 * Vault: MIRRORHUB_SERVICE_ACCOUNT, the hub's own ServiceAccount name in the hub namespace (the
 * chart sets it; Kubernetes auth of ClusterVaultConnections without serviceAccountRef);
 * MIRRORHUB_VAULT_SERVICE_ACCOUNT_TOKENS ("true": the hub may request tokens of the
 * ServiceAccounts connections name; needs cluster-wide serviceaccounts/token create).
 *
 * Dashboard: MIRRORHUB_DASHBOARD ("false": do not serve the dashboard on PORT; default true).
 * POD_NAME (the chart sets it from the downward API) also lets a standby find the leader's pod
 * and pass dashboard requests to it.
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
  const acceptance = env['MIRRORHUB_REQUIRE_ACCEPTANCE']?.trim().toLowerCase() ?? '';
  if (acceptance !== '' && acceptance !== 'true' && acceptance !== 'false') {
    throw new Error(`MIRRORHUB_REQUIRE_ACCEPTANCE must be true or false; got "${acceptance}"`);
  }
  const sa = env['MIRRORHUB_SERVICE_ACCOUNT']?.trim();
  const saTokens = env['MIRRORHUB_VAULT_SERVICE_ACCOUNT_TOKENS']?.trim().toLowerCase() ?? '';
  if (saTokens !== '' && saTokens !== 'true' && saTokens !== 'false') {
    throw new Error(
      `MIRRORHUB_VAULT_SERVICE_ACCOUNT_TOKENS must be true or false; got "${saTokens}"`,
    );
  }
  const dashboard = env['MIRRORHUB_DASHBOARD']?.trim().toLowerCase() ?? '';
  if (dashboard !== '' && dashboard !== 'true' && dashboard !== 'false') {
    throw new Error(`MIRRORHUB_DASHBOARD must be true or false; got "${dashboard}"`);
  }
  const podName = env['POD_NAME']?.trim();
  const share = env['MIRRORHUB_SHARE_FOLLOWERS']?.trim().toLowerCase() ?? '';
  if (share !== '' && share !== 'true' && share !== 'false') {
    throw new Error(`MIRRORHUB_SHARE_FOLLOWERS must be true or false; got "${share}"`);
  }
  if (share === 'true' && le === 'false') {
    throw new Error(
      'MIRRORHUB_SHARE_FOLLOWERS=true needs leader election: the leader writes what has one writer (unset MIRRORHUB_LEADER_ELECTION or set it to true)',
    );
  }
  return {
    ...(share === 'true' ? { shareFollowers: true } : {}),
    ...(dashboard === 'false' ? { dashboard: false } : {}),
    ...(podName ? { podName } : {}),
    ...(sa ? { serviceAccount: { namespace, name: sa } } : {}),
    ...(saTokens === 'true' ? { vaultServiceAccountTokens: true } : {}),
    signingKey: signingKeyFrom(env),
    remoteNamespaces: remoteNamespacesFrom(env),
    requireAcceptance: acceptance === 'true',
    namespace,
    agentNamespace: env['MIRRORHUB_AGENT_NAMESPACE']?.trim() || namespace,
    clusterName: env['MIRRORHUB_CLUSTER_NAME']?.trim() || 'hub',
    identity,
    healthPort: port,
    concurrency,
    ...(le === 'false' ? { leaderElection: false as const } : {}),
    ...seconds(
      env,
      'MIRRORHUB_CLUSTER_HEALTH_INTERVAL_SECONDS',
      'clusterHealthIntervalMs',
      1,
      3600,
    ),
    ...seconds(env, 'MIRRORHUB_AGENT_HEARTBEAT_GRACE_SECONDS', 'agentHeartbeatGraceMs', 1, 86_400),
    ...seconds(env, 'MIRRORHUB_CLUSTER_REQUEST_TIMEOUT_SECONDS', 'clusterRequestTimeoutMs', 1, 600),
    ...seconds(env, 'MIRRORHUB_CLEANUP_GRACE_SECONDS', 'cleanupGraceMs', 0, 30 * 86_400),
    ...progressDeadline(env),
    ...awsFromEnv(env),
    ...proxyFromEnv(env),
  };
}

function signingKeyFrom(env: Record<string, string | undefined>): string {
  const file = env['MIRRORHUB_SIGNING_KEY_FILE']?.trim();
  if (!file) {
    throw new Error(
      "MIRRORHUB_SIGNING_KEY_FILE is required: the path of the hub's Ed25519 private key (PEM), which signs every delivery (the hub chart mounts signing.existingSecret there; create one with `openssl genpkey -algorithm ed25519`)",
    );
  }
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`MIRRORHUB_SIGNING_KEY_FILE: cannot read ${file}: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

function remoteNamespacesFrom(env: Record<string, string | undefined>): string[] {
  const raw = env['MIRRORHUB_REMOTE_NAMESPACES']?.trim();
  if (!raw) return [];
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    throw new Error(`MIRRORHUB_REMOTE_NAMESPACES must be a JSON array of patterns; got "${raw}"`, {
      cause: err,
    });
  }
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || v === '')) {
    throw new Error(`MIRRORHUB_REMOTE_NAMESPACES must be a JSON array of patterns; got "${raw}"`);
  }
  return value as string[];
}

function awsFromEnv(env: Record<string, string | undefined>): Pick<EnvConfig, 'aws'> {
  const aws: NonNullable<EnvConfig['aws']> = {};
  const url = (name: string): string | undefined => {
    const raw = env[name]?.trim();
    if (!raw) return undefined;
    if (!/^https?:\/\/[^\s/]+/.test(raw)) {
      throw new Error(`${name} must be an http(s) URL; got "${raw}"`);
    }
    return raw;
  };
  const sts = url('MIRRORHUB_STS_ENDPOINT');
  if (sts) aws.stsEndpoint = sts;
  const eks = url('MIRRORHUB_EKS_ENDPOINT');
  if (eks) aws.eksEndpoint = eks;
  const stsByRegion = endpointOverridesFromEnv(env, 'sts')?.byRegion;
  if (stsByRegion) aws.stsEndpoints = stsByRegion;
  const eksByRegion = endpointOverridesFromEnv(env, 'eks')?.byRegion;
  if (eksByRegion) aws.eksEndpoints = eksByRegion;
  const region = env['MIRRORHUB_STS_REGION']?.trim();
  if (region) aws.region = region;
  if (env['MIRRORHUB_ROLE_DURATION_SECONDS']?.trim()) {
    aws.roleDurationSeconds = intFrom(env, 'MIRRORHUB_ROLE_DURATION_SECONDS', 3600, 900, 3600);
  }
  return Object.keys(aws).length > 0 ? { aws } : {};
}

function proxyFromEnv(env: Record<string, string | undefined>): Pick<EnvConfig, 'proxy'> {
  const proxy = proxyEnvFrom(env);
  return hasProxy(proxy) ? { proxy } : {};
}

function seconds<K extends string>(
  env: Record<string, string | undefined>,
  name: string,
  key: K,
  min: number,
  max: number,
): Partial<Record<K, number>> {
  if (!env[name]?.trim()) return {};
  return { [key]: intFrom(env, name, 0, min, max) * 1000 } as Partial<Record<K, number>>;
}

function progressDeadline(
  env: Record<string, string | undefined>,
): Pick<EnvConfig, 'watchProgressDeadlineMs'> {
  const s = progressDeadlineFromEnv(env);
  return s === undefined ? {} : { watchProgressDeadlineMs: s * 1000 };
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
