// One loopback HTTP server that plays two parts of EKS for the local kit:
//
// (a) The EKS control-plane API, on the real restJson1 wire protocol, so @aws-sdk/client-eks and
//     terraform's aws provider work against it with an endpoint override. Requests must be SigV4
//     signed with keys moto knows; the signature is recomputed with the secret from moto, and the
//     caller's account (GetCallerIdentity at moto) decides which clusters exist for it.
//     Access-policy associations become RBAC bindings in the cluster (see eks-rbac.ts).
//
// (b) The TokenReview webhook each kube-apiserver calls (--authentication-token-webhook-config-file
//     pointing at POST /authenticate/<cluster>), standing in for aws-iam-authenticator + STS:
//     the token's format is checked like pkg/token/token.go does, then, instead of replaying the
//     URL to STS, the signature is recomputed here with `x-k8s-aws-id: <this cluster>` and the
//     key's secret from moto (exactly the check STS makes on the replay), and the caller is named
//     by moto's GetCallerIdentity for that key. Its access entry in this cluster gives username
//     and groups. Several emulated clusters may share one kube-apiserver (EmulatedCluster.host):
//     its webhook then takes a token minted for any of them, the one whose name the signature
//     matches, with that cluster's access entries.
//
// Tokens and secrets are never logged; denials are logged with their reason.
//
// Fault hooks for tests: setAvailable(false) is an EKS API outage ((a) answers 503
// ServiceUnavailableException, (b) keeps working, as the clusters' authenticator does in a real
// one), and `tokenLifetimeSeconds` makes (b) refuse tokens sooner than 15 minutes after signing.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  MOTO_DEFAULT_ACCOUNT,
  getCallerIdentity,
  iamCall,
  isMotoFallbackIdentity,
  accessKeyLookup,
  AwsQueryError,
} from './moto.js';
import {
  ACCESS_POLICIES,
  ACCESS_POLICY_ARN_PREFIX,
  AccessPolicyRbac,
  ENTRY_GROUP_PREFIX,
  accessEntryGroup,
  accessEntryId,
  policyName,
  type AccessScope,
} from './eks-rbac.js';
import { authenticateRequest } from './request-auth.js';
import { parseRawQuery } from './sigv4.js';
import {
  canonicalPrincipalArn,
  canonicalizeIdentity,
  expandUsername,
  parseEksToken,
  presignedSignatureMatches,
  type CanonicalIdentity,
} from './token-verifier.js';

export interface EmulatedCluster {
  name: string;
  region: string;
  accountId: string;
  /** https URL of the cluster's kube-apiserver. */
  endpoint: string;
  caPem: string;
  /** Kubernetes minor version as EKS reports it, e.g. "1.33". */
  version: string;
  /** Admin access used to write the RBAC that access policies stand for. */
  admin: KubeConfig;
  /**
   * The cluster whose kube-apiserver this one is (default: its own name). A cluster hosted by
   * another has the host's endpoint, CA and admin, and no webhook of its own: the host's webhook
   * authenticates its tokens. The host must be added first and must not be hosted itself.
   */
  host?: string;
}

export interface EksEmulatorOptions {
  /** moto's endpoint: who an access key is, and its secret. */
  stsEndpoint: string;
  /** STS hosts (host[:port]) accepted in tokens besides sts[.<region>].amazonaws.com. */
  allowedStsHosts?: string[];
  /** Clock for token expiry and request-signature skew (default: wall clock). */
  now?: () => Date;
  /**
   * The webhook refuses tokens whose X-Amz-Date is more than this many seconds old, like an
   * expired token (default: 15 minutes, as aws-iam-authenticator).
   */
  tokenLifetimeSeconds?: number;
  log?: (line: string) => void;
}

export interface EksEmulator {
  /** http://127.0.0.1:<port>: the `endpoint` of an EKS client. */
  endpoint: string;
  /**
   * The TokenReview webhook URL for one cluster's kube-apiserver. It authenticates tokens minted
   * for that cluster and for every cluster it hosts.
   */
  webhookUrl(clusterName: string): string;
  addCluster(c: EmulatedCluster): void;
  /**
   * DescribeCluster answers `endpoint` for this cluster from now on (e.g. a proxy in front of its
   * API server, as an NLB would be); tokens are still checked for the cluster's name.
   */
  setEndpoint(clusterName: string, endpoint: string): void;
  /**
   * false starts an EKS API outage: every EKS API request is answered HTTP 503
   * ServiceUnavailableException until true ends it. The TokenReview webhook keeps answering.
   * Available when started.
   */
  setAvailable(available: boolean): void;
  available(): boolean;
  /** How many EKS API requests an outage refused since the emulator started. */
  refused(): number;
  /**
   * DescribeCluster requests by cluster name since the emulator started: every one that reached
   * it, whatever its answer (refused by an outage or authentication, no such cluster, ...).
   */
  describeClusterCalls(): Record<string, number>;
  stop(): Promise<void>;
}

// ---- state ---------------------------------------------------------------------------------

interface PolicyAssociation {
  policyArn: string;
  policy: string;
  accessScope: AccessScope;
  associatedAt: Date;
  modifiedAt: Date;
}

interface AccessEntry {
  principalArn: string;
  canonicalArn: string;
  id: string;
  group: string;
  kubernetesGroups: string[];
  username: string;
  type: string;
  tags: Record<string, string>;
  accessEntryArn: string;
  createdAt: Date;
  modifiedAt: Date;
  policies: Map<string, PolicyAssociation>;
}

interface ClusterState {
  c: EmulatedCluster;
  arn: string;
  createdAt: Date;
  entries: Map<string, AccessEntry>;
  /** The clusters whose tokens this one's webhook takes: itself first, then those it hosts. */
  hosted: ClusterState[];
  rbac: AccessPolicyRbac;
  /** Serialises mutations of one cluster, so state and RBAC change in the same order. */
  queue: Promise<unknown>;
}

class AwsError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

const notFound = (message: string, extra: Record<string, unknown> = {}) =>
  new AwsError(404, 'ResourceNotFoundException', message, extra);
const invalid = (message: string, extra: Record<string, unknown> = {}) =>
  new AwsError(400, 'InvalidParameterException', message, extra);

const epoch = (d: Date) => d.getTime() / 1000;
const SIGNATURE_SKEW_MS = 5 * 60_000;
const MAX_BODY = 1 << 20;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const RESERVED_USERNAME = /^(system|eks|aws|amazon|iam):/;

/** The cluster whose kube-apiserver `c` is: its own name unless it shares another's. */
const hostOf = (c: EmulatedCluster) => c.host ?? c.name;

// ---- server --------------------------------------------------------------------------------

export async function startEksEmulator(opts: EksEmulatorOptions): Promise<EksEmulator> {
  const moto = opts.stsEndpoint.replace(/\/$/, '');
  const keys = accessKeyLookup(moto);
  const now = opts.now ?? (() => new Date());
  const log = opts.log ?? (() => {});
  const clusters = new Map<string, ClusterState>();
  const tokenLifetimeMs =
    opts.tokenLifetimeSeconds === undefined ? undefined : opts.tokenLifetimeSeconds * 1000;
  let available = true;
  let refused = 0;
  const describeClusterCalls = new Map<string, number>();

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      const e =
        err instanceof AwsError
          ? err
          : new AwsError(500, 'ServerException', err instanceof Error ? err.message : String(err));
      if (e.status >= 500)
        log(`eks-emulator: ${req.method} ${req.url?.split('?')[0]}: ${e.message}`);
      sendError(res, e);
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const [rawPath = '/', rawQuery = ''] = (req.url ?? '/').split(/\?(.*)/s, 2);
    if (req.method === 'POST' && rawPath.startsWith('/authenticate/')) {
      let name: string;
      try {
        name = decodeURIComponent(rawPath.slice('/authenticate/'.length));
      } catch {
        name = '';
      }
      sendJson(res, 200, await tokenReview(name, body));
      return;
    }
    // Counted before anything can refuse it: the count is what callers asked for.
    const described = req.method === 'GET' ? /^\/clusters\/([^/]+)$/.exec(rawPath) : null;
    if (described) {
      const name = safeDecode(described[1]!);
      describeClusterCalls.set(name, (describeClusterCalls.get(name) ?? 0) + 1);
    }
    if (!available) {
      refused++;
      sendError(
        res,
        new AwsError(
          503,
          'ServiceUnavailableException',
          'Service is unavailable. Try again later.',
        ),
      );
      return;
    }
    const query = parseRawQuery(rawQuery);
    if (!query) throw new AwsError(400, 'SerializationException', 'malformed query string');
    const caller = await authenticateApiRequest(req, rawPath, query, body);
    const segments = rawPath
      .split('/')
      .slice(1)
      .map((s) => {
        try {
          return decodeURIComponent(s);
        } catch {
          throw new AwsError(400, 'SerializationException', 'malformed path');
        }
      });
    const q = new Map(query);
    const input = body.length ? parseJson(body) : {};
    const out = await route(req.method ?? 'GET', segments, q, input, caller);
    sendJson(res, 200, out);
  }

  // ---- (a) EKS API ---------------------------------------------------------------------------

  interface Caller {
    account: string;
    region: string;
    arn: string;
  }

  async function authenticateApiRequest(
    req: IncomingMessage,
    rawPath: string,
    query: Array<[string, string]>,
    body: Buffer,
  ): Promise<Caller> {
    const r = await authenticateRequest(
      moto,
      { method: req.method ?? 'GET', rawPath, query, header: (h) => header(req, h), body },
      { service: 'eks', now: now(), maxSkewMs: SIGNATURE_SKEW_MS, lookupKey: keys },
    );
    if (r.ok)
      return { account: r.caller.account, region: r.caller.scope.region, arn: r.caller.arn };
    const f = r.failure;
    switch (f.kind) {
      case 'missing':
        throw new AwsError(
          403,
          'MissingAuthenticationTokenException',
          'Missing Authentication Token',
        );
      case 'incomplete':
        throw new AwsError(400, 'IncompleteSignatureException', f.message);
      case 'expired':
        throw new AwsError(
          403,
          'InvalidSignatureException',
          `Signature expired: ${f.amzDate} is now too far from the server time`,
        );
      case 'wrong-service':
        throw new AwsError(
          403,
          'InvalidSignatureException',
          "Credential should be scoped to correct service: 'eks'.",
        );
      case 'unknown-key':
        throw new AwsError(
          403,
          'UnrecognizedClientException',
          'The security token included in the request is invalid.',
        );
      case 'signature':
        throw new AwsError(
          403,
          'InvalidSignatureException',
          'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.',
        );
    }
  }

  function clusterFor(caller: Caller, name: string | undefined): ClusterState {
    const s = name ? clusters.get(name) : undefined;
    if (!s || s.c.accountId !== caller.account || s.c.region !== caller.region) {
      throw notFound(`No cluster found for name: ${name}.`, { clusterName: name });
    }
    return s;
  }

  function entryFor(s: ClusterState, principalArn: string | undefined): AccessEntry {
    const canonical = principalArn ? canonicalPrincipalArn(principalArn) : undefined;
    const e = canonical ? s.entries.get(canonical) : undefined;
    if (!e) {
      throw notFound(`The specified access entry resource is not found on this cluster.`, {
        clusterName: s.c.name,
        principalArn,
      });
    }
    return e;
  }

  function mutate<T>(s: ClusterState, fn: () => Promise<T>): Promise<T> {
    const next = s.queue.then(fn, fn);
    s.queue = next.catch(() => undefined);
    return next;
  }

  async function route(
    method: string,
    seg: string[],
    q: Map<string, string>,
    input: Record<string, unknown>,
    caller: Caller,
  ): Promise<unknown> {
    const [a, name, b, principal, c, policy] = seg;
    const n = seg.length;
    if (a === 'access-policies' && n === 1 && method === 'GET') {
      return page(
        Object.keys(ACCESS_POLICIES).map((p) => ({ name: p, arn: ACCESS_POLICY_ARN_PREFIX + p })),
        q,
        'accessPolicies',
      );
    }
    if (a !== 'clusters') throw unknownOperation(method, seg);
    if (n === 1 && method === 'GET') {
      const names = [...clusters.values()]
        .filter((s) => s.c.accountId === caller.account && s.c.region === caller.region)
        .map((s) => s.c.name)
        .sort();
      return page(names, q, 'clusters');
    }
    const s = clusterFor(caller, name);
    if (n === 2 && method === 'GET') return { cluster: describeCluster(s) };
    if (b !== 'access-entries') throw unknownOperation(method, seg);
    if (n === 3 && method === 'POST') return mutate(s, () => createAccessEntry(s, input));
    if (n === 3 && method === 'GET') {
      const filter = q.get('associatedPolicyArn');
      const arns = [...s.entries.values()]
        .filter((e) => !filter || e.policies.has(filter))
        .map((e) => e.principalArn)
        .sort();
      return page(arns, q, 'accessEntries');
    }
    if (n === 4 && method === 'GET') return { accessEntry: entryJson(s, entryFor(s, principal)) };
    if (n === 4 && method === 'POST')
      return mutate(s, async () => updateAccessEntry(s, principal, input));
    if (n === 4 && method === 'DELETE') return mutate(s, () => deleteAccessEntry(s, principal));
    if (c !== 'access-policies') throw unknownOperation(method, seg);
    if (n === 5 && method === 'POST') return mutate(s, () => associate(s, principal, input));
    if (n === 5 && method === 'GET') {
      const e = entryFor(s, principal);
      return {
        clusterName: s.c.name,
        principalArn: e.principalArn,
        ...page([...e.policies.values()].map(associationJson), q, 'associatedAccessPolicies'),
      };
    }
    if (n === 6 && method === 'DELETE') return mutate(s, () => disassociate(s, principal, policy));
    throw unknownOperation(method, seg);
  }

  function describeCluster(s: ClusterState): Record<string, unknown> {
    const { c } = s;
    return {
      name: c.name,
      arn: s.arn,
      createdAt: epoch(s.createdAt),
      version: c.version,
      endpoint: c.endpoint,
      roleArn: `arn:aws:iam::${c.accountId}:role/eks-cluster-${c.name}`,
      resourcesVpcConfig: {
        subnetIds: [],
        securityGroupIds: [],
        clusterSecurityGroupId: 'sg-00000000000000000',
        vpcId: 'vpc-00000000000000000',
        endpointPublicAccess: true,
        endpointPrivateAccess: false,
        publicAccessCidrs: ['0.0.0.0/0'],
      },
      kubernetesNetworkConfig: { serviceIpv4Cidr: '10.0.0.0/16', ipFamily: 'ipv4' },
      logging: { clusterLogging: [] },
      status: 'ACTIVE',
      certificateAuthority: { data: Buffer.from(c.caPem, 'utf8').toString('base64') },
      platformVersion: 'eks.1',
      tags: {},
      accessConfig: {
        authenticationMode: 'API_AND_CONFIG_MAP',
        bootstrapClusterCreatorAdminPermissions: false,
      },
      upgradePolicy: { supportType: 'STANDARD' },
    };
  }

  function entryJson(s: ClusterState, e: AccessEntry): Record<string, unknown> {
    return {
      clusterName: s.c.name,
      principalArn: e.principalArn,
      kubernetesGroups: e.kubernetesGroups,
      accessEntryArn: e.accessEntryArn,
      createdAt: epoch(e.createdAt),
      modifiedAt: epoch(e.modifiedAt),
      tags: e.tags,
      username: e.username,
      type: e.type,
    };
  }

  function associationJson(p: PolicyAssociation): Record<string, unknown> {
    return {
      policyArn: p.policyArn,
      accessScope: {
        type: p.accessScope.type,
        namespaces: p.accessScope.type === 'namespace' ? p.accessScope.namespaces : [],
      },
      associatedAt: epoch(p.associatedAt),
      modifiedAt: epoch(p.modifiedAt),
    };
  }

  function validGroups(v: unknown): string[] {
    if (v === undefined) return [];
    if (!Array.isArray(v) || !v.every((g) => typeof g === 'string' && g.length > 0)) {
      throw invalid('kubernetesGroups must be a list of non-empty strings');
    }
    for (const g of v as string[]) {
      if (g.startsWith('system:') || g.startsWith(ENTRY_GROUP_PREFIX)) {
        throw invalid(
          `The kubernetes group name ${g} is invalid, it cannot start with system: or ${ENTRY_GROUP_PREFIX}`,
        );
      }
    }
    return [...new Set(v as string[])];
  }

  function validUsername(v: unknown): string | undefined {
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || v === '') throw invalid('username must be a non-empty string');
    if (RESERVED_USERNAME.test(v)) {
      throw invalid(
        `The username ${v} is invalid, it cannot start with system:, eks:, aws:, amazon: or iam:`,
      );
    }
    return v;
  }

  async function principalExists(canonical: string): Promise<boolean> {
    const [, , , , account, resource] = canonical.split(':') as string[];
    const [kind, name] = (resource ?? '').split('/');
    try {
      await iamCall(moto, account!, kind === 'role' ? 'GetRole' : 'GetUser', {
        [kind === 'role' ? 'RoleName' : 'UserName']: name!,
      });
      return true;
    } catch (err) {
      if (err instanceof AwsQueryError && err.code === 'NoSuchEntity') return false;
      throw err;
    }
  }

  async function createAccessEntry(
    s: ClusterState,
    input: Record<string, unknown>,
  ): Promise<unknown> {
    const principalArn = input.principalArn;
    if (typeof principalArn !== 'string') throw invalid('principalArn is required');
    const canonical = canonicalPrincipalArn(principalArn);
    if (!canonical) {
      throw invalid(
        `The specified principalArn is invalid: ${principalArn} is not an IAM role or user ARN`,
      );
    }
    const type = input.type ?? 'STANDARD';
    if (type !== 'STANDARD') {
      throw invalid(
        `access entry type ${String(type)} is not supported by the EKS emulator (only STANDARD)`,
      );
    }
    const kubernetesGroups = validGroups(input.kubernetesGroups);
    const username = validUsername(input.username);
    const tags = (input.tags ?? {}) as Record<string, string>;
    if (s.entries.has(canonical)) {
      throw new AwsError(
        409,
        'ResourceInUseException',
        'The specified access entry resource is already in use on this cluster.',
        {
          clusterName: s.c.name,
        },
      );
    }
    if (!(await principalExists(canonical))) {
      throw invalid(`The specified principalArn is invalid: invalid principal ${principalArn}`);
    }
    const [, , , , account, resource] = canonical.split(':') as string[];
    const [kind, name] = resource!.split('/') as [string, string];
    const at = now();
    const shared = hostOf(s.c) === s.c.name ? undefined : s.c.name;
    const e: AccessEntry = {
      principalArn,
      canonicalArn: canonical,
      id: accessEntryId(canonical, shared),
      group: accessEntryGroup(canonical, shared),
      kubernetesGroups,
      username:
        username ??
        (kind === 'role'
          ? `arn:aws:sts::${account}:assumed-role/${name}/{{SessionName}}`
          : canonical),
      type: 'STANDARD',
      tags,
      accessEntryArn: `arn:aws:eks:${s.c.region}:${s.c.accountId}:access-entry/${s.c.name}/${kind}/${account}/${name}/${randomUUID()}`,
      createdAt: at,
      modifiedAt: at,
      policies: new Map(),
    };
    s.entries.set(canonical, e);
    log(`eks-emulator: ${s.c.name}: access entry for ${canonical}`);
    return { accessEntry: entryJson(s, e) };
  }

  function updateAccessEntry(
    s: ClusterState,
    principal: string | undefined,
    input: Record<string, unknown>,
  ): unknown {
    const e = entryFor(s, principal);
    if (input.kubernetesGroups !== undefined)
      e.kubernetesGroups = validGroups(input.kubernetesGroups);
    const username = validUsername(input.username);
    if (username !== undefined) e.username = username;
    e.modifiedAt = now();
    return { accessEntry: entryJson(s, e) };
  }

  async function deleteAccessEntry(
    s: ClusterState,
    principal: string | undefined,
  ): Promise<unknown> {
    const e = entryFor(s, principal);
    await s.rbac.remove(e.id);
    s.entries.delete(e.canonicalArn);
    log(`eks-emulator: ${s.c.name}: access entry for ${e.canonicalArn} deleted`);
    return {};
  }

  function validScope(v: unknown): AccessScope {
    const scope = (v ?? {}) as { type?: unknown; namespaces?: unknown };
    const namespaces = scope.namespaces ?? [];
    if (!Array.isArray(namespaces) || !namespaces.every((n) => typeof n === 'string')) {
      throw invalid('accessScope.namespaces must be a list of strings');
    }
    if (scope.type === 'cluster') {
      if (namespaces.length > 0)
        throw invalid('namespaces must be empty when accessScope type is cluster');
      return { type: 'cluster' };
    }
    if (scope.type === 'namespace') {
      if (namespaces.length === 0)
        throw invalid('namespaces must be set when accessScope type is namespace');
      for (const ns of namespaces as string[]) {
        if (!DNS_LABEL.test(ns)) {
          throw invalid(
            `namespace "${ns}" is invalid${ns.includes('*') ? ' (wildcards are not supported by the EKS emulator)' : ''}`,
          );
        }
      }
      return { type: 'namespace', namespaces: [...new Set(namespaces as string[])] };
    }
    throw invalid('accessScope.type must be cluster or namespace');
  }

  async function associate(
    s: ClusterState,
    principal: string | undefined,
    input: Record<string, unknown>,
  ): Promise<unknown> {
    const e = entryFor(s, principal);
    const policyArn = input.policyArn;
    const policy = typeof policyArn === 'string' ? policyName(policyArn) : undefined;
    if (!policy) {
      throw invalid(
        `The specified policyArn is invalid or not supported by the EKS emulator: ${String(policyArn)}`,
      );
    }
    const accessScope = validScope(input.accessScope);
    await s.rbac.apply(
      { id: e.id, group: e.group, principalArn: e.canonicalArn },
      policy,
      accessScope,
    );
    const at = now();
    const prev = e.policies.get(policyArn as string);
    const assoc: PolicyAssociation = {
      policyArn: policyArn as string,
      policy,
      accessScope,
      associatedAt: prev?.associatedAt ?? at,
      modifiedAt: at,
    };
    e.policies.set(assoc.policyArn, assoc);
    log(
      `eks-emulator: ${s.c.name}: ${policy} (${accessScope.type === 'cluster' ? 'cluster' : accessScope.namespaces.join(',')}) for ${e.canonicalArn}`,
    );
    return {
      clusterName: s.c.name,
      principalArn: e.principalArn,
      associatedAccessPolicy: associationJson(assoc),
    };
  }

  async function disassociate(
    s: ClusterState,
    principal: string | undefined,
    policyArn: string | undefined,
  ): Promise<unknown> {
    const e = entryFor(s, principal);
    const assoc = policyArn ? e.policies.get(policyArn) : undefined;
    if (!assoc) {
      throw notFound(
        `The specified policy ${policyArn} is not associated with this access entry.`,
        {
          clusterName: s.c.name,
          principalArn: e.principalArn,
        },
      );
    }
    await s.rbac.remove(e.id, assoc.policy);
    e.policies.delete(assoc.policyArn);
    return {};
  }

  // ---- (b) TokenReview webhook -----------------------------------------------------------------

  async function tokenReview(clusterName: string, body: Buffer): Promise<unknown> {
    let review: { apiVersion?: string; kind?: string; spec?: { token?: unknown } };
    try {
      review = JSON.parse(body.toString('utf8')) as typeof review;
    } catch {
      review = {};
    }
    const apiVersion =
      review.apiVersion === 'authentication.k8s.io/v1beta1'
        ? 'authentication.k8s.io/v1beta1'
        : 'authentication.k8s.io/v1';
    const deny = (error: string) => {
      log(`eks-emulator: webhook ${clusterName}: denied: ${error}`);
      return { apiVersion, kind: 'TokenReview', status: { authenticated: false, error } };
    };
    if (review.kind !== 'TokenReview' || typeof review.spec?.token !== 'string') {
      return deny('request is not a TokenReview with spec.token');
    }
    const s = clusters.get(clusterName);
    if (!s) return deny(`unknown cluster "${clusterName}"`);
    if (hostOf(s.c) !== clusterName) {
      return deny(
        `cluster "${clusterName}" has no API server of its own: it shares that of ${hostOf(s.c)}`,
      );
    }

    const parsed = parseEksToken(review.spec.token, {
      now: now(),
      ...(opts.allowedStsHosts ? { allowedStsHosts: opts.allowedStsHosts } : {}),
      ...(tokenLifetimeMs !== undefined ? { lifetimeMs: tokenLifetimeMs } : {}),
    });
    if (!parsed.ok) return deny(`input token was not properly formatted: ${parsed.reason}`);
    const t = parsed.token;

    // What STS would do with the replayed URL.
    const key = await keys(t.accessKeyId);
    if (!key || !key.active) return deny(`sts: the access key ${t.accessKeyId} is not known`);
    if (key.sessionToken !== t.securityToken) {
      return deny('sts: the security token included in the request is invalid');
    }
    // The cluster name is a signed header, not in the URL: of the clusters this API server
    // serves, the token is for the one whose name its signature matches.
    const target = s.hosted.find((h) =>
      presignedSignatureMatches(t, h.c.name, key.secretAccessKey),
    );
    if (!target) {
      return deny(
        s.hosted.length === 1
          ? `sts: signature does not match for x-k8s-aws-id=${clusterName} (token minted for another cluster, or altered)`
          : `sts: signature does not match for x-k8s-aws-id=${s.hosted.map((h) => h.c.name).join(' or ')}, the clusters of this API server (token minted for a cluster on another API server, or altered)`,
      );
    }
    const where = target === s ? clusterName : `${clusterName} (cluster ${target.c.name})`;
    const caller = await getCallerIdentity(moto, {
      accessKeyId: key.accessKeyId,
      secretAccessKey: key.secretAccessKey,
      ...(key.sessionToken ? { sessionToken: key.sessionToken } : {}),
    });
    if (isMotoFallbackIdentity(caller))
      return deny(`sts: the access key ${t.accessKeyId} is not known`);
    const id = canonicalizeIdentity(caller);
    if ('error' in id) return deny(id.error);

    const entry = target.entries.get(id.canonicalArn);
    if (!entry) return deny(`no access entry for ${id.canonicalArn} in cluster ${target.c.name}`);
    const user = userInfo(entry, id, t.accessKeyId);
    log(`eks-emulator: webhook ${where}: ${user.username} groups=${user.groups.join(',')}`);
    return { apiVersion, kind: 'TokenReview', status: { authenticated: true, user } };
  }

  function userInfo(entry: AccessEntry, id: CanonicalIdentity, accessKeyId: string) {
    return {
      username: expandUsername(entry.username, { ...id, accessKeyId }),
      uid: `aws-iam-authenticator:${id.account}:${id.principalId}`,
      groups: [...entry.kubernetesGroups, entry.group],
      extra: {
        arn: [id.arn],
        canonicalArn: [id.canonicalArn],
        sessionName: [id.sessionName],
        accessKeyId: [accessKeyId],
        principalId: [id.principalId],
      },
    };
  }

  // ---- lifecycle -------------------------------------------------------------------------------

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  log(`eks-emulator: ${endpoint} (moto ${moto})`);

  return {
    endpoint,
    webhookUrl: (name) => `${endpoint}/authenticate/${encodeURIComponent(name)}`,
    addCluster(c) {
      if (clusters.has(c.name))
        throw new Error(`EKS emulator: cluster "${c.name}" is already added`);
      if (!/^\d{12}$/.test(c.accountId) || c.accountId === MOTO_DEFAULT_ACCOUNT) {
        // moto's fallback account would also match callers whose keys moto does not know.
        throw new Error(
          `EKS emulator: cluster "${c.name}" needs a real 12-digit account id, not ${c.accountId}`,
        );
      }
      const hostName = hostOf(c);
      const host = hostName === c.name ? undefined : clusters.get(hostName);
      if (hostName !== c.name && !host) {
        throw new Error(
          `EKS emulator: cluster "${c.name}" shares the API server of "${hostName}", which is not added: add "${hostName}" first`,
        );
      }
      if (host && hostOf(host.c) !== hostName) {
        throw new Error(
          `EKS emulator: cluster "${c.name}" shares the API server of "${hostName}", which shares that of "${hostOf(host.c)}": name "${hostOf(host.c)}" as its host`,
        );
      }
      const s: ClusterState = {
        c,
        arn: `arn:aws:eks:${c.region}:${c.accountId}:cluster/${c.name}`,
        createdAt: now(),
        entries: new Map(),
        hosted: [],
        rbac: new AccessPolicyRbac(c.admin),
        queue: Promise.resolve(),
      };
      (host ?? s).hosted.push(s);
      clusters.set(c.name, s);
      log(
        `eks-emulator: cluster ${c.name} (${c.accountId}, ${c.region}) -> ${c.endpoint}${host ? ` (API server of ${host.c.name})` : ''}`,
      );
    },
    setEndpoint(name, endpoint) {
      const st = clusters.get(name);
      if (!st) throw new Error(`EKS emulator: no cluster "${name}"`);
      st.c = { ...st.c, endpoint };
      log(`eks-emulator: cluster ${name} -> ${endpoint}`);
    },
    setAvailable(up) {
      available = up;
    },
    available: () => available,
    refused: () => refused,
    describeClusterCalls: () => Object.fromEntries(describeClusterCalls),
    async stop() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

// ---- HTTP helpers ------------------------------------------------------------------------------

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name.toLowerCase()];
  return Array.isArray(v) ? v.join(',') : v;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY)
      throw new AwsError(413, 'RequestEntityTooLargeException', 'request body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function parseJson(body: Buffer): Record<string, unknown> {
  try {
    const v = JSON.parse(body.toString('utf8')) as unknown;
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // below
  }
  throw new AwsError(400, 'SerializationException', 'request body is not a JSON object');
}

function page<T>(items: T[], q: Map<string, string>, key: string): Record<string, unknown> {
  const max = q.has('maxResults') ? Number(q.get('maxResults')) : 100;
  if (!Number.isInteger(max) || max < 1 || max > 100) {
    throw invalid('maxResults must be between 1 and 100');
  }
  let start = 0;
  const token = q.get('nextToken');
  if (token) {
    start = Number(Buffer.from(token, 'base64url').toString('utf8'));
    if (!Number.isInteger(start) || start < 0) throw invalid('The nextToken is invalid');
  }
  const slice = items.slice(start, start + max);
  const next =
    start + max < items.length ? Buffer.from(String(start + max)).toString('base64url') : undefined;
  return { [key]: slice, ...(next ? { nextToken: next } : {}) };
}

function unknownOperation(method: string, seg: string[]): AwsError {
  return new AwsError(
    404,
    'UnknownOperationException',
    `The EKS emulator does not implement ${method} /${seg.map(encodeURIComponent).join('/')}`,
  );
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'x-amzn-requestid': randomUUID(),
  });
  res.end(text);
}

function sendError(res: ServerResponse, e: AwsError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const text = JSON.stringify({ message: e.message, ...e.extra });
  res.writeHead(e.status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'x-amzn-errortype': e.type,
    'x-amzn-requestid': randomUUID(),
  });
  res.end(text);
}
