// How the hub reaches one EKS follower: its own (base) credentials -> STS AssumeRole into the
// follower's role -> EKS DescribeCluster (as that role) for endpoint and CA -> a KubeAccess
// (no client-node) whose bearer token is minted from the assumed-role credentials per request.
//
// Every step is cached and refreshed before it runs out, and every failure is reported with the
// call that failed and what to check, so a MirrorCluster's status can say it in one line:
//
//   credentials  cached until `refreshBeforeMs` before they expire; one AssumeRole at a time;
//                on failure, backoff, and the last good credentials are used until they really
//                expire.
//   endpoint+CA  cached for `describeTtlMs`, re-described sooner after invalidateEndpoint():
//                after a failure that says the answer may have changed (a certificate the CA
//                does not verify, a name that no longer resolves) at most once per
//                `describeMinIntervalMs`, the wait doubling up to `describeMaxIntervalMs` while
//                re-describes keep answering what the cache held, until the endpoint works
//                again (endpointWorked()) or the answer changes; after one that says only that
//                the cluster is unreachable (refused, reset, timed out) at most once per
//                `describeMaxIntervalMs`: EKS gives a new cluster a new endpoint name, so the
//                cached one is still right while it is down.
//   token        EksTokenSource: re-minted at 14 of its 15 minutes and whenever the credentials
//                behind it change; asked for on every request and watch (re)connect.
//
// Nothing here writes to disk, and no error message carries a key, a session token or a bearer
// token.
import { crypto } from '@mirrorhub/shared/kit/runtime/builtins';
import { hostname } from 'node:os';
import { DescribeClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { fromNodeProviderChain } from '@aws-sdk/credential-providers';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { Backoff } from '@mirrorhub/shared/kit/runtime/backoff';
import {
  ProxyHttpAgent,
  ProxyHttpsAgent,
  describeProxy,
  hasProxy,
  proxyFor,
  type ProxyEnv,
} from '../egress-proxy.js';
import { endpointFor, type AwsEndpointOverrides } from './endpoints.js';
import {
  EksTokenSource,
  kubeAccessForCluster,
  type AwsCredentials,
  type AwsCredentialsProvider,
} from './eks-token.js';

const { createHash } = crypto;

/** `MirrorCluster.spec.eks`. */
export interface EksClusterRef {
  /** EKS cluster name (also what tokens are bound to via x-k8s-aws-id). */
  name: string;
  region: string;
  /** The follower role the hub assumes; it describes its own cluster and has the access entry. */
  roleArn: string;
  externalId?: string;
}

export type EksAccessStep = 'AssumeRole' | 'DescribeCluster' | 'Token';

export interface EksClusterAccessOptions {
  cluster: EksClusterRef;
  /**
   * The STS clients AssumeRole goes through, shared with the process's other EksClusterAccess
   * (StsClients): then their base credentials and endpoint are used, and `baseCredentials` and
   * `stsEndpoint` must not be given. Default: a client of its own.
   */
  stsClients?: StsClients;
  /**
   * The hub's own identity. Default: the SDK's default chain (IRSA web identity, EKS Pod
   * Identity, env, profile), one instance shared by every EksClusterAccess in the process.
   */
  baseCredentials?: AwsCredentials | AwsCredentialsProvider;
  /**
   * STS endpoint for AssumeRole (emulators, VPC endpoints), for every region. Not used for
   * tokens. `stsEndpoints` names one per region, which wins for its region.
   */
  stsEndpoint?: string;
  stsEndpoints?: Readonly<Record<string, string>>;
  /**
   * STS URL the bearer token is presigned for. Default the cluster region's public endpoint
   * (what `aws eks get-token` uses): the apiserver's authenticator replays the URL itself and
   * accepts only https STS hostnames it knows, so an AssumeRole override must not leak here.
   */
  tokenStsEndpoint?: string;
  /** EKS endpoint for DescribeCluster (emulators, VPC endpoints), for every region. */
  eksEndpoint?: string;
  /** EKS endpoint by region (interface VPC endpoints); wins over `eksEndpoint` for its region. */
  eksEndpoints?: Readonly<Record<string, string>>;
  /**
   * The egress proxy (HTTPS_PROXY / NO_PROXY) for DescribeCluster and the follower's API server;
   * AssumeRole takes the StsClients' own. Default: none, every connection direct.
   */
  proxy?: ProxyEnv;
  /** Region of the AssumeRole call. Default: the cluster's region. */
  stsRegion?: string;
  /** Default `mirrorhub-hub-<short host id>`. Must contain "mirrorhub" ([\w+=,.@-], 2-64). */
  roleSessionName?: string;
  /** Default 3600; clamped to [900, 3600] (see ROLE_DURATION_MAX_S). */
  roleDurationSeconds?: number;
  /**
   * Re-assume when this much of the session is left. Default 5 minutes; at most half of the
   * session STS answered (which may be shorter than asked).
   */
  refreshBeforeMs?: number;
  /** Re-mint the bearer token when this much of its life is left. Default 60 s (at 14 min). */
  tokenRefreshBeforeMs?: number;
  /** Re-describe the cluster this often even when nothing failed. Default 6 hours. */
  describeTtlMs?: number;
  /** invalidateEndpoint() does not re-describe more often than this. Default 30 s. */
  describeMinIntervalMs?: number;
  /**
   * Nor, while re-describes keep answering the same endpoint and CA, more often than this: the
   * wait doubles from `describeMinIntervalMs` to it. A cluster that is only unreachable waits
   * this long from the start. Default 1 hour (a hundred unreachable clusters cost an account a
   * DescribeCluster each per hour, not each per 30 s).
   */
  describeMaxIntervalMs?: number;
  /** Backoff between failed AssumeRole / DescribeCluster calls. Default 1 s doubling to 5 min. */
  backoff?: { initialMs?: number; maxMs?: number; random?: () => number };
  /** AWS SDK request timeout per attempt. Default 10 s. */
  requestTimeoutMs?: number;
  now?: () => Date;
}

export interface EksClusterEndpoint {
  server: string;
  caPem: string;
  /** Kubernetes minor version as EKS reports it ("1.33"). */
  version?: string;
  arn?: string;
  describedAt: Date;
}

export interface EksAccessErrorInfo {
  step: EksAccessStep;
  message: string;
  at: Date;
}

export interface EksClusterAccessHealth {
  credentialsExpireAt?: Date;
  tokenExpiresAt?: Date;
  /** The assumed-role session, as STS named it (what Kubernetes calls the hub). */
  identityArn?: string;
  server?: string;
  kubernetesVersion?: string;
  /** The most recent failure of a step that has not succeeded since. */
  lastError?: EksAccessErrorInfo;
}

/** A failed step, worded for a status line: which call, what AWS said, what to check. */
export class EksAccessError extends Error {
  override readonly name = 'EksAccessError';
  constructor(
    readonly step: EksAccessStep,
    message: string,
    /** AWS error code (AccessDenied, ResourceNotFoundException, ...) or Node's (ECONNREFUSED). */
    readonly code: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** AWS's maximum for a session obtained with role chaining (base credentials that are
 *  themselves a role session: IRSA, Pod Identity, an assumed role on a laptop). AssumeRole with
 *  more than this fails with ValidationError, so longer settings are clamped rather than passed. */
export const ROLE_DURATION_MAX_S = 3600;
/** AWS's minimum DurationSeconds for AssumeRole. */
export const ROLE_DURATION_MIN_S = 900;
const SESSION_NAME = /^[\w+=,.@-]{2,64}$/;
const SESSION_PREFIX = 'mirrorhub-hub-';
const DEFAULT_DESCRIBE_TTL_MS = 6 * 3600_000;
const MAX_MESSAGE = 600;

/**
 * `mirrorhub-hub-<host>`: the host part is the pod name (or the machine's name), cut to fit 64
 * characters with a short hash so two long pod names never collide. CloudTrail shows it as the
 * session name, so every call the hub makes in a follower account says who made it.
 */
export function defaultRoleSessionName(host: string = hostname()): string {
  const clean = host.replace(/[^\w+=,.@-]/g, '-') || 'unknown';
  const room = 64 - SESSION_PREFIX.length;
  if (clean.length <= room) return SESSION_PREFIX + clean;
  const hash = createHash('sha256').update(host).digest('hex').slice(0, 8);
  return `${SESSION_PREFIX}${clean.slice(0, room - 9)}-${hash}`;
}

let defaultChain: AwsCredentialsProvider | undefined;
let proxiedChain: { proxy: ProxyEnv; chain: AwsCredentialsProvider } | undefined;
/**
 * One default chain per process: it memoises and refreshes, so N clusters cost one IRSA call.
 * Behind an egress proxy its own STS call (IRSA's AssumeRoleWithWebIdentity) goes through the
 * proxy too; EKS Pod Identity's agent is link-local and never proxied.
 */
function defaultBaseCredentials(proxy?: ProxyEnv): AwsCredentialsProvider {
  if (!hasProxy(proxy)) {
    defaultChain ??= fromNodeProviderChain();
    return defaultChain;
  }
  if (proxiedChain?.proxy !== proxy) {
    proxiedChain = {
      proxy,
      chain: fromNodeProviderChain({
        clientConfig: { requestHandler: awsRequestHandler(10_000, proxy) },
      }),
    };
  }
  return proxiedChain.chain;
}

interface StsClientOptions {
  baseCredentials?: AwsCredentials | AwsCredentialsProvider;
  /** Every region's AssumeRole endpoint, unless `stsEndpoints` names the region. */
  stsEndpoint?: string;
  stsEndpoints?: Readonly<Record<string, string>>;
  /** The egress proxy (HTTPS_PROXY / NO_PROXY); default none. */
  proxy?: ProxyEnv;
  requestTimeoutMs?: number;
}

/** The endpoints `global` / `byRegion` as overrides (undefined when neither is set). */
function overrides(
  global: string | undefined,
  byRegion: Readonly<Record<string, string>> | undefined,
): AwsEndpointOverrides | undefined {
  if (!global && !byRegion) return undefined;
  return { ...(global ? { global } : {}), ...(byRegion ? { byRegion } : {}) };
}

/**
 * The SDK's request handler options: its timeouts, and with a proxy, agents that tunnel through
 * it (NO_PROXY hosts direct). Each client gets agents of its own: destroying a client destroys
 * its agents.
 */
export function awsRequestHandler(
  requestTimeoutMs: number,
  proxy: ProxyEnv | undefined,
): {
  requestTimeout: number;
  connectionTimeout: number;
  httpsAgent?: ProxyHttpsAgent;
  httpAgent?: ProxyHttpAgent;
} {
  const base = { requestTimeout: requestTimeoutMs, connectionTimeout: 5000 };
  if (!hasProxy(proxy)) return base;
  // Idle tunnels close: STS is called seldom, and a tunnel held open between calls holds a
  // proxy connection for nothing.
  const agentOpts = { keepAlive: true, connectTimeoutMs: 5000, timeout: 60_000 };
  return {
    ...base,
    httpsAgent: new ProxyHttpsAgent(proxy, agentOpts),
    httpAgent: new ProxyHttpAgent(proxy, agentOpts),
  };
}

/** Where a call to `endpoint` goes, for a hint: the endpoint, and the proxy it went through. */
function via(endpoint: string, proxy: ProxyEnv | undefined): string {
  let p: URL | undefined;
  try {
    p = proxy ? proxyFor(proxy, endpoint) : undefined;
  } catch {
    p = undefined;
  }
  return p ? `${endpoint} through the proxy ${describeProxy(p)}` : endpoint;
}

/**
 * The STS clients of every EksClusterAccess in a process, one per region, with the hub's own
 * credentials: one connection pool to STS and one client's memory, not one per cluster (a client
 * per cluster holds its own heap and keep-alive connection, so both would grow with clusters).
 */
export class StsClients {
  readonly baseCredentials: AwsCredentials | AwsCredentialsProvider;
  readonly proxy: ProxyEnv | undefined;
  private readonly clients = new Map<string, STSClient>();
  private readonly opts: StsClientOptions;

  constructor(opts: StsClientOptions = {}) {
    this.opts = opts;
    this.baseCredentials = opts.baseCredentials ?? defaultBaseCredentials(opts.proxy);
    this.proxy = opts.proxy;
  }

  /** The AssumeRole endpoint for `region`: its own, the global one, or undefined (the SDK's). */
  endpoint(region: string): string | undefined {
    return endpointFor(overrides(this.opts.stsEndpoint, this.opts.stsEndpoints), region);
  }

  /** The client for AssumeRole calls in `region`. */
  get(region: string): STSClient {
    let client = this.clients.get(region);
    if (!client) {
      const endpoint = this.endpoint(region);
      client = new STSClient({
        region,
        credentials: this.baseCredentials,
        ...(endpoint ? { endpoint } : {}),
        requestHandler: awsRequestHandler(this.opts.requestTimeoutMs ?? 10_000, this.opts.proxy),
      });
      this.clients.set(region, client);
    }
    return client;
  }

  /** How many clients (regions) there are. */
  get size(): number {
    return this.clients.size;
  }

  /** Releases every client's sockets. */
  destroy(): void {
    for (const client of this.clients.values()) client.destroy();
    this.clients.clear();
  }
}

interface Cached<T> {
  value: T;
  /** When it must be renewed (ms). */
  refreshAt: number;
  /** When it stops being usable at all (ms). */
  expiresAt: number;
}

interface Failure {
  error: EksAccessError;
  retryAt: number;
}

/**
 * The hub's access to one EKS follower. Cheap to call often: kubeAccess() and credentials()
 * hit AWS only when something is due. Call destroy() when the MirrorCluster goes away.
 */
export class EksClusterAccess {
  readonly cluster: Readonly<EksClusterRef>;
  readonly roleSessionName: string;
  readonly roleDurationSeconds: number;
  /** The assumed-role credentials as an SDK-style provider (e.g. for other AWS clients). */
  readonly credentialsProvider: AwsCredentialsProvider = () => this.credentials();

  private readonly opts: EksClusterAccessOptions;
  private readonly now: () => Date;
  private readonly refreshBeforeMs: number;
  private readonly describeTtlMs: number;
  private readonly describeMinIntervalMs: number;
  private readonly describeMaxIntervalMs: number;
  /** How long invalidateEndpoint() waits after the last describe (see describeMaxIntervalMs). */
  private describeIntervalMs: number;
  private readonly sts: STSClient;
  /** Where AssumeRole goes (for hints). */
  private readonly stsWhere: string;
  /** The agent of the follower's API server connections when a proxy applies to it. */
  private readonly apiProxy: ProxyEnv | undefined;
  /** The STS clients made for this access alone (no `stsClients` given): destroyed with it. */
  private readonly ownStsClients: StsClients | undefined;
  private readonly tokens: EksTokenSource;
  private readonly backoff: Record<'AssumeRole' | 'DescribeCluster', Backoff>;

  private creds: (Cached<AwsCredentials> & { identityArn?: string }) | undefined;
  /** `invalid`: why the next kubeAccess() describes again (invalidateEndpoint), false if not. */
  private endpointCache:
    (Cached<EksClusterEndpoint> & { invalid: false | 'moved' | 'unreachable' }) | undefined;
  private access: { access: KubeAccess; server: string; caPem: string } | undefined;
  private inflightAssume: Promise<AwsCredentials> | undefined;
  private inflightDescribe: Promise<EksClusterEndpoint> | undefined;
  private readonly failures = new Map<EksAccessStep, Failure>();
  private readonly errors = new Map<EksAccessStep, EksAccessErrorInfo>();
  private tokenExpiresAt: Date | undefined;
  private readonly staticSecrets: string[];

  constructor(opts: EksClusterAccessOptions) {
    const { name, region, roleArn } = opts.cluster;
    if (!name || !region || !roleArn) {
      throw new Error(
        'EksClusterAccess: cluster.name, cluster.region and cluster.roleArn are required',
      );
    }
    this.opts = opts;
    this.cluster = { ...opts.cluster };
    this.now = opts.now ?? (() => new Date());
    this.roleSessionName = opts.roleSessionName ?? defaultRoleSessionName();
    if (!SESSION_NAME.test(this.roleSessionName) || !/mirrorhub/i.test(this.roleSessionName)) {
      throw new Error(
        `EksClusterAccess: roleSessionName "${this.roleSessionName}" must be 2-64 characters of [A-Za-z0-9_+=,.@-] and contain "mirrorhub"`,
      );
    }
    this.roleDurationSeconds = Math.min(
      ROLE_DURATION_MAX_S,
      Math.max(ROLE_DURATION_MIN_S, Math.floor(opts.roleDurationSeconds ?? ROLE_DURATION_MAX_S)),
    );
    // Never so close to the session's length that every call would re-assume.
    this.refreshBeforeMs = Math.min(
      opts.refreshBeforeMs ?? 5 * 60_000,
      this.roleDurationSeconds * 1000 - 1000,
    );
    this.describeTtlMs = opts.describeTtlMs ?? DEFAULT_DESCRIBE_TTL_MS;
    this.describeMinIntervalMs = opts.describeMinIntervalMs ?? 30_000;
    this.describeMaxIntervalMs = Math.max(
      this.describeMinIntervalMs,
      opts.describeMaxIntervalMs ?? 3600_000,
    );
    this.describeIntervalMs = this.describeMinIntervalMs;
    const backoff = {
      initialMs: opts.backoff?.initialMs ?? 1000,
      maxMs: opts.backoff?.maxMs ?? 5 * 60_000,
      jitter: 0.2,
      ...(opts.backoff?.random ? { random: opts.backoff.random } : {}),
    };
    this.backoff = { AssumeRole: new Backoff(backoff), DescribeCluster: new Backoff(backoff) };

    if (opts.stsClients && (opts.baseCredentials || opts.stsEndpoint || opts.stsEndpoints)) {
      throw new Error(
        'EksClusterAccess: with stsClients, give baseCredentials and stsEndpoint to the StsClients (stsEndpoints too)',
      );
    }
    const clients =
      opts.stsClients ??
      new StsClients({
        baseCredentials: opts.baseCredentials,
        stsEndpoint: opts.stsEndpoint,
        ...(opts.stsEndpoints ? { stsEndpoints: opts.stsEndpoints } : {}),
        ...(opts.proxy ? { proxy: opts.proxy } : {}),
        requestTimeoutMs: opts.requestTimeoutMs,
      });
    this.apiProxy = opts.proxy;
    const stsRegion = opts.stsRegion ?? region;
    this.stsWhere = via(
      clients.endpoint(stsRegion) ?? `https://sts.${stsRegion}.amazonaws.com`,
      clients.proxy,
    );
    this.ownStsClients = clients === opts.stsClients ? undefined : clients;
    const base = clients.baseCredentials;
    this.staticSecrets = typeof base === 'function' ? [] : secretsOf(base);
    this.sts = clients.get(opts.stsRegion ?? region);
    this.tokens = new EksTokenSource({
      clusterName: name,
      region,
      credentials: this.credentialsProvider,
      ...(opts.tokenStsEndpoint ? { stsEndpoint: opts.tokenStsEndpoint } : {}),
      ...(opts.tokenRefreshBeforeMs !== undefined
        ? { refreshBeforeMs: opts.tokenRefreshBeforeMs }
        : {}),
      now: this.now,
    });
  }

  /**
   * How to reach the follower, without client-node: a KubeAccess with its endpoint and CA. The
   * same object is returned for as long as the endpoint and CA stay the same, so callers may
   * build REST clients and watches once: every request and watch (re)connect asks for a current
   * bearer token. (Tests that need a client-node KubeConfig: testing/eks.ts, eksKubeConfig.)
   */
  async kubeAccess(): Promise<KubeAccess> {
    const ep = await this.endpoint();
    const cur = this.access;
    if (cur && cur.server === ep.server && cur.caPem === ep.caPem) return cur.access;
    const access = kubeAccessForCluster({
      name: this.cluster.name,
      server: ep.server,
      caPem: ep.caPem,
      token: () => this.bearerToken(),
      ...(this.apiProxy ? { proxy: this.apiProxy } : {}),
    });
    this.access = { access, server: ep.server, caPem: ep.caPem };
    return access;
  }

  /** The assumed-role credentials: cached, refreshed before expiry, one AssumeRole at a time. */
  async credentials(): Promise<AwsCredentials> {
    const now = this.now().getTime();
    const c = this.creds;
    if (c && now < c.refreshAt) return c.value;
    const usable = () => (c && this.now().getTime() < c.expiresAt ? c.value : undefined);
    const failed = this.failures.get('AssumeRole');
    if (failed && now < failed.retryAt) {
      const v = usable();
      if (v) return v;
      throw failed.error;
    }
    this.inflightAssume ??= this.assumeRole().finally(() => {
      this.inflightAssume = undefined;
    });
    try {
      return await this.inflightAssume;
    } catch (err) {
      // Keep working on the last good session while it lasts; health() carries the error.
      const v = usable();
      if (v) return v;
      throw err;
    }
  }

  /** Endpoint and CA from DescribeCluster, cached. */
  async endpoint(): Promise<EksClusterEndpoint> {
    const now = this.now().getTime();
    const e = this.endpointCache;
    if (e && !e.invalid && now < e.refreshAt) return e.value;
    // A scheduled re-describe that fails keeps the old answer; one asked for because the old
    // answer stopped working (invalidateEndpoint) reports the failure instead.
    const fallback = () => (e && !e.invalid ? e.value : undefined);
    const failed = this.failures.get('DescribeCluster');
    if (failed && now < failed.retryAt) {
      const v = fallback();
      if (v) return v;
      throw failed.error;
    }
    this.inflightDescribe ??= this.describeCluster().finally(() => {
      this.inflightDescribe = undefined;
    });
    try {
      return await this.inflightDescribe;
    } catch (err) {
      const v = fallback();
      if (v) return v;
      throw err;
    }
  }

  /**
   * The endpoint or CA did not work: describe the cluster again on the next kubeAccess(). For
   * `moved` (TLS failure, unknown name) unless it was described less than describeMinIntervalMs
   * ago (or longer, see describeMaxIntervalMs); for `unreachable` (refused, reset, timed out:
   * down, not moved) unless it was described less than describeMaxIntervalMs ago.
   */
  invalidateEndpoint(reason: 'moved' | 'unreachable' = 'moved'): void {
    const e = this.endpointCache;
    if (!e) return;
    const wait = reason === 'unreachable' ? this.describeMaxIntervalMs : this.describeIntervalMs;
    if (this.now().getTime() - e.value.describedAt.getTime() < wait) return;
    e.invalid = reason;
  }

  /** A request through the endpoint succeeded: its next failure re-describes after the minimum. */
  endpointWorked(): void {
    this.describeIntervalMs = this.describeMinIntervalMs;
  }

  /**
   * Assume the role again on the next call (e.g. the follower's sessions were revoked, or
   * 401s persist with fresh tokens). The current session stays the fallback while it lasts.
   */
  invalidateCredentials(): void {
    if (this.creds) this.creds.refreshAt = Number.NEGATIVE_INFINITY;
  }

  /** The apiserver answered 401: mint a new token for the next request. */
  invalidateToken(): void {
    this.tokens.invalidate();
  }

  /**
   * Feed a failed request's error here: a 401 drops the token, a TLS failure or an unknown name
   * the endpoint (`endpoint`), a connection failure the endpoint after an hour (`unreachable`,
   * see invalidateEndpoint). Returns which.
   */
  reportRequestError(err: unknown): 'token' | 'endpoint' | 'unreachable' | undefined {
    if (httpStatus(err) === 401) {
      this.invalidateToken();
      return 'token';
    }
    const failure = endpointFailure(err);
    if (!failure) return undefined;
    this.invalidateEndpoint(failure);
    return failure === 'moved' ? 'endpoint' : failure;
  }

  health(): EksClusterAccessHealth {
    let lastError: EksAccessErrorInfo | undefined;
    for (const e of this.errors.values()) {
      if (!lastError || e.at.getTime() >= lastError.at.getTime()) lastError = e;
    }
    const c = this.creds;
    const ep = this.endpointCache?.value;
    return {
      ...(c ? { credentialsExpireAt: new Date(c.expiresAt) } : {}),
      ...(this.tokenExpiresAt ? { tokenExpiresAt: this.tokenExpiresAt } : {}),
      ...(c?.identityArn ? { identityArn: c.identityArn } : {}),
      ...(ep ? { server: ep.server } : {}),
      ...(ep?.version ? { kubernetesVersion: ep.version } : {}),
      ...(lastError ? { lastError: { ...lastError } } : {}),
    };
  }

  /** Releases the STS client's sockets (its own; shared StsClients are their owner's). */
  destroy(): void {
    this.ownStsClients?.destroy();
  }

  // ---- the three steps ------------------------------------------------------------------------

  private async assumeRole(): Promise<AwsCredentials> {
    const { roleArn, externalId } = this.cluster;
    try {
      const out = await this.sts.send(
        new AssumeRoleCommand({
          RoleArn: roleArn,
          RoleSessionName: this.roleSessionName,
          DurationSeconds: this.roleDurationSeconds,
          ...(externalId ? { ExternalId: externalId } : {}),
        }),
      );
      const c = out.Credentials;
      if (!c?.AccessKeyId || !c.SecretAccessKey || !c.SessionToken || !c.Expiration) {
        throw Object.assign(new Error('the response carried no credentials'), {
          name: 'EmptyResponse',
        });
      }
      const value: AwsCredentials = {
        accessKeyId: c.AccessKeyId,
        secretAccessKey: c.SecretAccessKey,
        sessionToken: c.SessionToken,
        expiration: c.Expiration,
      };
      const expiresAt = c.Expiration.getTime();
      // STS may answer a session shorter than the refresh margin: then renew halfway through
      // it, not on every call. A margin shorter than the session is kept as asked.
      const left = expiresAt - this.now().getTime();
      const margin = this.refreshBeforeMs < left ? this.refreshBeforeMs : left / 2;
      this.creds = {
        value,
        expiresAt,
        refreshAt: expiresAt - margin,
        ...(out.AssumedRoleUser?.Arn ? { identityArn: out.AssumedRoleUser.Arn } : {}),
      };
      this.succeeded('AssumeRole');
      return value;
    } catch (err) {
      throw this.failed('AssumeRole', err);
    }
  }

  private async describeCluster(): Promise<EksClusterEndpoint> {
    // An AssumeRole failure surfaces as itself, not as a DescribeCluster failure.
    const credentials = await this.credentials();
    const { name, region } = this.cluster;
    const endpoint = this.eksEndpoint();
    const eks = new EKSClient({
      region,
      credentials,
      ...(endpoint ? { endpoint } : {}),
      requestHandler: awsRequestHandler(this.opts.requestTimeoutMs ?? 10_000, this.opts.proxy),
    });
    try {
      const { cluster } = await eks.send(new DescribeClusterCommand({ name }));
      const server = cluster?.endpoint;
      const ca = cluster?.certificateAuthority?.data;
      if (!server || !ca) {
        throw Object.assign(
          new Error(
            `the cluster has no ${server ? 'certificate authority' : 'endpoint'} yet (status ${cluster?.status ?? 'unknown'})`,
          ),
          { name: 'ClusterNotReady' },
        );
      }
      const caPem = Buffer.from(ca, 'base64').toString('utf8');
      if (!caPem.includes('-----BEGIN CERTIFICATE-----')) {
        throw Object.assign(new Error('certificateAuthority.data is not a base64 PEM'), {
          name: 'InvalidCertificateAuthority',
        });
      }
      const describedAt = this.now();
      const old = this.endpointCache;
      if (old?.invalid === 'moved' && old.value.server === server && old.value.caPem === caPem) {
        // Asked again because it seemed to have moved, and it has not: its certificate or name
        // fails for another reason, which describing sooner will not mend.
        this.describeIntervalMs = Math.min(this.describeIntervalMs * 2, this.describeMaxIntervalMs);
      } else if (old && (old.value.server !== server || old.value.caPem !== caPem)) {
        this.describeIntervalMs = this.describeMinIntervalMs;
      }
      const value: EksClusterEndpoint = {
        server,
        caPem,
        describedAt,
        ...(cluster.version ? { version: cluster.version } : {}),
        ...(cluster.arn ? { arn: cluster.arn } : {}),
      };
      this.endpointCache = {
        value,
        refreshAt: describedAt.getTime() + this.describeTtlMs,
        expiresAt: Number.POSITIVE_INFINITY,
        invalid: false,
      };
      this.succeeded('DescribeCluster');
      return value;
    } catch (err) {
      throw this.failed('DescribeCluster', err);
    } finally {
      eks.destroy();
    }
  }

  /** DescribeCluster's endpoint for the cluster's region, or undefined for the SDK's. */
  private eksEndpoint(): string | undefined {
    return endpointFor(
      overrides(this.opts.eksEndpoint, this.opts.eksEndpoints),
      this.cluster.region,
    );
  }

  private async bearerToken(): Promise<string> {
    try {
      const t = await this.tokens.getToken();
      this.tokenExpiresAt = t.expiresAt;
      this.errors.delete('Token');
      return t.token;
    } catch (err) {
      if (err instanceof EksAccessError) throw err; // AssumeRole, already recorded
      throw this.failed('Token', err);
    }
  }

  // ---- bookkeeping ----------------------------------------------------------------------------

  private succeeded(step: 'AssumeRole' | 'DescribeCluster'): void {
    this.failures.delete(step);
    this.errors.delete(step);
    this.backoff[step].reset();
  }

  private failed(step: EksAccessStep, err: unknown): EksAccessError {
    const code = errorCode(err);
    const detail = [code, errorMessage(err)].filter(Boolean).join(': ');
    const hint = this.hint(step, code, err);
    const message = this.scrub(`${this.what(step)} failed: ${detail}; ${hint}`);
    const error = new EksAccessError(step, message, code, { cause: err });
    const at = this.now();
    this.errors.set(step, { step, message: error.message, at });
    if (step !== 'Token') {
      this.failures.set(step, {
        error,
        retryAt: at.getTime() + this.backoff[step].next(),
      });
    }
    return error;
  }

  private what(step: EksAccessStep): string {
    const { name, region, roleArn } = this.cluster;
    if (step === 'AssumeRole') return `AssumeRole ${roleArn}`;
    if (step === 'DescribeCluster') return `DescribeCluster ${name} in ${region}`;
    return `EKS token for ${name}`;
  }

  private hint(step: EksAccessStep, code: string | undefined, err: unknown): string {
    const { name, region, roleArn } = this.cluster;
    const account = roleArn.split(':')[4] || 'the role’s account';
    if (isNetworkError(err)) {
      const where =
        step === 'DescribeCluster'
          ? via(this.eksEndpoint() ?? `https://eks.${region}.amazonaws.com`, this.opts.proxy)
          : this.stsWhere;
      return `check that the hub can reach ${where} (network, proxy, VPC endpoint)`;
    }
    if (step === 'AssumeRole') {
      switch (code) {
        case 'CredentialsProviderError':
        case 'InvalidClientTokenId':
        case 'ExpiredToken':
        case 'ExpiredTokenException':
        case 'SignatureDoesNotMatch':
        case 'UnrecognizedClientException':
          return "the hub's own AWS credentials are missing or invalid; check IRSA / EKS Pod Identity on the hub's service account (or AWS_* env / profile)";
        case 'RegionDisabledException':
          return `STS is not activated in ${this.opts.stsRegion ?? region} for the hub's account; activate it or set another STS region`;
        case 'ValidationError':
          return 'check eks.roleArn is a role ARN (arn:aws:iam::<account>:role/<name>)';
        case 'AccessDenied':
        default:
          return 'check the role exists, its trust policy allows the hub role and the externalId matches, and the hub role may call sts:AssumeRole on it';
      }
    }
    if (step === 'DescribeCluster') {
      switch (code) {
        case 'ResourceNotFoundException':
          return `check eks.name and eks.region (the cluster must be in account ${account}, the account of eks.roleArn)`;
        case 'AccessDeniedException':
        case 'AccessDenied':
          return `check the role ${roleArn} may call eks:DescribeCluster on arn:aws:eks:${region}:${account}:cluster/${name}`;
        case 'ClusterNotReady':
        case 'InvalidCertificateAuthority':
          return 'wait for the cluster to become ACTIVE';
        case 'UnrecognizedClientException':
        case 'InvalidSignatureException':
          return `EKS in ${region} refused the assumed-role credentials; check eks.region and the hub's clock`;
        default:
          return 'check eks.name, eks.region and eks.roleArn';
      }
    }
    return 'check the assumed-role credentials (see the AssumeRole step)';
  }

  /** Belt and braces: AWS error text should never echo secrets, but make sure of it. */
  private scrub(text: string): string {
    let out = text;
    const secrets = [...this.staticSecrets, ...(this.creds ? secretsOf(this.creds.value) : [])];
    for (const s of secrets) if (s.length >= 8) out = out.split(s).join('<redacted>');
    out = out
      .replace(/k8s-aws-v1\.[A-Za-z0-9_-]+/g, 'k8s-aws-v1.<redacted>')
      .replace(/(X-Amz-(?:Security-Token|Signature|Credential)=)[^&\s"']+/gi, '$1<redacted>')
      .replace(/(Bearer\s+)\S+/gi, '$1<redacted>');
    return out.length > MAX_MESSAGE ? `${out.slice(0, MAX_MESSAGE - 1)}…` : out;
  }
}

function secretsOf(c: AwsCredentials): string[] {
  return [c.secretAccessKey, c.sessionToken ?? ''].filter(Boolean);
}

// ---- error inspection ---------------------------------------------------------------------------

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'EPIPE',
  'TimeoutError',
  'RequestTimeout',
]);
const TLS_CODES = new Set([
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_SIGNATURE_FAILURE',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'ERR_SSL_WRONG_VERSION_NUMBER',
]);

/** Codes of `err` and its causes (Node's `code`, the SDK's `name`, fetch's `errno`). */
function codesOf(err: unknown): string[] {
  const out: string[] = [];
  let e: unknown = err;
  for (let i = 0; i < 5 && e && typeof e === 'object'; i++) {
    const o = e as { code?: unknown; errno?: unknown; name?: unknown; cause?: unknown };
    for (const v of [o.code, o.errno, o.name]) if (typeof v === 'string') out.push(v);
    e = o.cause;
  }
  return out;
}

function isNetworkError(err: unknown): boolean {
  return codesOf(err).some((c) => NETWORK_CODES.has(c));
}

/**
 * What a failure to reach the apiserver says about the endpoint and CA DescribeCluster gave:
 * `moved` when they may no longer be right (the certificate does not verify against the CA, the
 * name does not resolve: a deleted cluster's name goes, a new one gets a new name), `unreachable`
 * when they are right but the cluster is down or cut off (refused, reset, timed out).
 */
export function endpointFailure(err: unknown): 'moved' | 'unreachable' | undefined {
  const codes = codesOf(err);
  if (codes.some((c) => TLS_CODES.has(c) || c === 'ENOTFOUND')) return 'moved';
  if (codes.some((c) => NETWORK_CODES.has(c))) return 'unreachable';
  return undefined;
}

function httpStatus(err: unknown): number | undefined {
  const o = err as { code?: unknown; statusCode?: unknown } | undefined;
  if (typeof o?.code === 'number') return o.code;
  if (typeof o?.statusCode === 'number') return o.statusCode;
  return undefined;
}

function errorCode(err: unknown): string | undefined {
  const o = err as { name?: unknown; code?: unknown; Code?: unknown } | undefined;
  for (const v of [o?.Code, typeof o?.code === 'string' ? o.code : undefined, o?.name]) {
    if (typeof v === 'string' && v && v !== 'Error') return v;
  }
  const nested = codesOf(err).find((c) => c !== 'Error');
  return nested;
}

function errorMessage(err: unknown): string {
  const m = err instanceof Error ? err.message : String(err);
  return m.replace(/\s+/g, ' ').trim() || 'no message';
}
