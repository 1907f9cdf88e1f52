// EKS bearer tokens, minted exactly like `aws eks get-token` / aws-iam-authenticator:
// a presigned STS GetCallerIdentity URL whose signature covers the header
// `x-k8s-aws-id: <cluster name>`, encoded as `k8s-aws-v1.` + base64url(url) without padding.
//
// The apiserver's authenticator replays the URL against STS with that header set to *its*
// cluster name, so a token minted for one cluster is useless on another. STS accepts the URL for
// 15 minutes after X-Amz-Date whatever X-Amz-Expires says; like the CLI we send 60 (old
// authenticators rejected anything above 60) and track the real 15 minute lifetime ourselves.
import { crypto } from '@mirrorhub/shared/kit/runtime/builtins';
import { Sha256 } from '@aws-crypto/sha256-js';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { apiServerAgent, type ProxyEnv } from '../egress-proxy.js';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';

const { createHash } = crypto;

export const EKS_TOKEN_PREFIX = 'k8s-aws-v1.';
export const EKS_CLUSTER_ID_HEADER = 'x-k8s-aws-id';
/** How long STS honours a presigned GetCallerIdentity URL after its X-Amz-Date. */
export const EKS_TOKEN_LIFETIME_MS = 15 * 60_000;
/** X-Amz-Expires as the CLI sends it. Ignored by STS, checked (<= 900) by the authenticator. */
export const EKS_TOKEN_PRESIGN_EXPIRES_S = 60;

/** Structurally the SDK's AwsCredentialIdentity; `expiration` caps the token's lifetime. */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}
/** Structurally the SDK's AwsCredentialIdentityProvider (e.g. fromTemporaryCredentials()). */
export type AwsCredentialsProvider = () => Promise<AwsCredentials>;

export interface MintEksTokenOptions {
  clusterName: string;
  region: string;
  credentials: AwsCredentials | AwsCredentialsProvider;
  /** Default: the regional endpoint https://sts.<region>.amazonaws.com/ (what the CLI uses). */
  stsEndpoint?: string;
  /** Signing time; default the wall clock. */
  now?: () => Date;
}

export interface EksToken {
  token: string;
  /** When the apiserver will stop accepting the token (signing time + 15 min, or earlier if
   *  the credentials that signed it expire first). */
  expiresAt: Date;
  /** The X-Amz-Date the URL was signed with. */
  signedAt: Date;
}

// Query keys in the order `aws eks get-token` emits them; keeps tokens byte-stable.
const QUERY_ORDER = [
  'Action',
  'Version',
  'X-Amz-Algorithm',
  'X-Amz-Credential',
  'X-Amz-Date',
  'X-Amz-Expires',
  'X-Amz-SignedHeaders',
  'X-Amz-Security-Token',
  'X-Amz-Signature',
];

/** RFC 3986 encoding, the one SigV4 canonicalises with (encodeURIComponent leaves !'()* alone). */
export function rfc3986(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

export function defaultStsEndpoint(region: string): string {
  return `https://sts.${region}.amazonaws.com/`;
}

async function resolveCredentials(
  credentials: AwsCredentials | AwsCredentialsProvider,
): Promise<AwsCredentials> {
  return typeof credentials === 'function' ? credentials() : credentials;
}

/** Presign GetCallerIdentity for `clusterName` and wrap it as an EKS bearer token. */
export async function mintEksToken(opts: MintEksTokenOptions): Promise<EksToken> {
  if (!opts.clusterName) throw new Error('mintEksToken: clusterName is required');
  if (!opts.region) throw new Error('mintEksToken: region is required');
  const credentials = await resolveCredentials(opts.credentials);
  const endpoint = new URL(opts.stsEndpoint ?? defaultStsEndpoint(opts.region));
  const signedAt = new Date(Math.floor((opts.now ?? (() => new Date()))().getTime() / 1000) * 1000);

  const request = new HttpRequest({
    method: 'GET',
    protocol: endpoint.protocol,
    hostname: endpoint.hostname,
    ...(endpoint.port ? { port: Number(endpoint.port) } : {}),
    path: '/',
    query: { Action: 'GetCallerIdentity', Version: '2011-06-15' },
    headers: { host: endpoint.host, [EKS_CLUSTER_ID_HEADER]: opts.clusterName },
  });
  const signer = new SignatureV4({
    service: 'sts',
    region: opts.region,
    credentials: {
      accessKeyId: credentials.accessKeyId,
      secretAccessKey: credentials.secretAccessKey,
      ...(credentials.sessionToken ? { sessionToken: credentials.sessionToken } : {}),
    },
    sha256: Sha256,
  });
  const presigned = await signer.presign(request, {
    signingDate: signedAt,
    expiresIn: EKS_TOKEN_PRESIGN_EXPIRES_S,
  });

  const query = presigned.query as Record<string, string>;
  const keys = [
    ...QUERY_ORDER.filter((k) => k in query),
    ...Object.keys(query).filter((k) => !QUERY_ORDER.includes(k)),
  ];
  const qs = keys.map((k) => `${rfc3986(k)}=${rfc3986(String(query[k]))}`).join('&');
  const url = `${endpoint.protocol}//${endpoint.host}/?${qs}`;
  const token = EKS_TOKEN_PREFIX + Buffer.from(url, 'utf8').toString('base64url');

  let expiresAt = signedAt.getTime() + EKS_TOKEN_LIFETIME_MS;
  if (credentials.expiration) expiresAt = Math.min(expiresAt, credentials.expiration.getTime());
  return { token, expiresAt: new Date(expiresAt), signedAt };
}

/** The presigned URL inside a token (no verification; for diagnostics and tests). */
export function decodeEksToken(token: string): URL {
  if (!token.startsWith(EKS_TOKEN_PREFIX)) {
    throw new Error(`token is missing the ${EKS_TOKEN_PREFIX} prefix`);
  }
  return new URL(Buffer.from(token.slice(EKS_TOKEN_PREFIX.length), 'base64url').toString('utf8'));
}

export interface EksTokenSourceOptions extends Omit<MintEksTokenOptions, 'now'> {
  /** Re-mint when no more than this is left of the token's life. Default 60 s (re-mint at 14 min). */
  refreshBeforeMs?: number;
  now?: () => Date;
}

/**
 * Hands out a cached token and re-mints it when it is about to expire or when the credentials
 * behind it changed (e.g. an AssumeRole provider rotated its session). Concurrent callers share
 * one mint.
 */
export class EksTokenSource {
  readonly clusterName: string;
  private readonly opts: EksTokenSourceOptions;
  private readonly refreshBeforeMs: number;
  private readonly now: () => Date;
  private cached: { token: EksToken; credentialsId: string } | undefined;
  private inflight: Promise<EksToken> | undefined;

  constructor(opts: EksTokenSourceOptions) {
    this.opts = opts;
    this.clusterName = opts.clusterName;
    this.refreshBeforeMs = opts.refreshBeforeMs ?? 60_000;
    this.now = opts.now ?? (() => new Date());
  }

  getToken(): Promise<EksToken> {
    this.inflight ??= this.next().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  /** Forget the cached token (e.g. after the apiserver answered 401). */
  invalidate(): void {
    this.cached = undefined;
  }

  private async next(): Promise<EksToken> {
    // Resolve every time: SDK providers memoise, and this is how rotation is noticed.
    const credentials = await resolveCredentials(this.opts.credentials);
    const credentialsId = fingerprint(credentials);
    const cached = this.cached;
    if (
      cached &&
      cached.credentialsId === credentialsId &&
      cached.token.expiresAt.getTime() - this.now().getTime() > this.refreshBeforeMs
    ) {
      return cached.token;
    }
    const token = await mintEksToken({ ...this.opts, credentials, now: this.now });
    this.cached = { token, credentialsId };
    return token;
  }
}

// A one-way fingerprint, so the cache never holds a second copy of the secret in clear.
function fingerprint(c: AwsCredentials): string {
  return createHash('sha256')
    .update(`${c.accessKeyId}\0${c.secretAccessKey}\0${c.sessionToken ?? ''}`)
    .digest('hex');
}

export interface ClusterKubeConfigOptions {
  /** EKS cluster name; also the kubeconfig's cluster/context name. */
  name: string;
  /** API server URL (DescribeCluster `endpoint`). */
  server: string;
  /** The cluster CA as PEM (DescribeCluster `certificateAuthority.data`, base64-decoded). */
  caPem: string;
  /** Where bearer tokens come from: an EksTokenSource or any async function. */
  token: EksTokenSource | (() => Promise<string>);
  /** The egress proxy (HTTPS_PROXY / NO_PROXY): the API server is reached through it. */
  proxy?: ProxyEnv;
}

/** `token` as a function that answers the current bearer token. */
export function bearerTokens(token: ClusterKubeConfigOptions['token']): () => Promise<string> {
  if (typeof token === 'function') return token;
  return async () => (await token.getToken()).token;
}

/**
 * A KubeAccess for the cluster, without client-node: the server, its CA, and a bearer token
 * from `token` set on every request (so a long-lived REST client or watch always sends a
 * current token). Tests wanting a client-node KubeConfig instead: kubeConfigForCluster
 * (testing/eks.ts).
 */
export function kubeAccessForCluster(opts: ClusterKubeConfigOptions): KubeAccess {
  const getToken = bearerTokens(opts.token);
  const server = opts.server;
  const ca = Buffer.from(opts.caPem, 'utf8');
  const agent = apiServerAgent(server, opts.proxy);
  return {
    getCurrentCluster: () => ({ server }),
    async applyToHTTPSOptions(reqOpts) {
      if (agent) reqOpts.agent = agent;
      reqOpts.ca = ca;
      reqOpts.rejectUnauthorized = true;
      const token = await getToken();
      reqOpts.headers = { ...(reqOpts.headers ?? {}), Authorization: `Bearer ${token}` };
    },
  };
}
