// A hub and three EKS followers on real parts, wired the way terraform/ and the charts wire
// production, with the hub and every agent running in this process:
//
//   hub user (111111111111) --AssumeRole + ExternalId--> mirrorhub-follower role (222.../333.../444...)
//     --DescribeCluster--> endpoint + CA --token--> kube-apiserver --TokenReview--> EKS emulator
//
// Per follower: a role trusting the hub user with an ExternalId; an EKS access entry for it with
// kubernetesGroups [mirrorhub-hub] and no access policy; the agent chart's hub-access Role and
// RoleBinding, rendered by `helm template` (so what is proven is the chart's RBAC), as the only
// rights of that group; the MirrorDelivery CRD; an agent with that cluster's admin kubeconfig.
// On the hub: every CRD, a MirrorCluster per follower (spec.eks + labels), and the hub with
// `aws` pointing at the kit's STS and EKS and its base identity the hub user.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

import { CreateAccessEntryCommand, EKSClient } from '@aws-sdk/client-eks';
import {
  CoreV1Api,
  CustomObjectsApi,
  RbacAuthorizationV1Api,
  type KubeConfig,
  type V1Role,
  type V1RoleBinding,
} from '@kubernetes/client-node';

import { createAgent, type Agent, type AgentConfig } from '@mirrorhub/agent/agent';
import { createHub, type Hub, type HubConfig } from '@mirrorhub/hub/hub';
import {
  createRole,
  createUserWithAccessKey,
  trustPolicy,
  type Principal,
} from '@mirrorhub/infra/aws/moto';
import { startKit, type Kit } from '@mirrorhub/infra/kit/index';
import {
  createLogger,
  type ClusterSecretMirror,
  type Logger,
  type MirrorCluster,
  type MirrorClusterSpec,
  type SecretMirror,
} from '@mirrorhub/shared';
import { mergePatchOptions } from '@mirrorhub/shared/testing/index';

import { installCrds } from './crds.js';
import { applyRendered, renderChart } from './helm.js';
import { LogSink } from './engine.js';
import { ClusterObjects, SYSTEM_NS } from './objects.js';
import { eventually } from './eventually.js';
import { TEST_HUB_KEY } from './signing.js';

export { SYSTEM_NS };
export const HUB = 'hub';
export const HUB_GROUP = 'mirrorhub-hub';
const GROUP = 'mirrorhub.io';
const VERSION = 'v1alpha1';
const run = promisify(execFile);

export interface FollowerSpec {
  name: string;
  labels: Record<string, string>;
}

/** follower-a (222222222222) and follower-b (333333333333) are prod, follower-c (444444444444) dev. */
export const FOLLOWERS: readonly FollowerSpec[] = [
  { name: 'follower-a', labels: { env: 'prod' } },
  { name: 'follower-b', labels: { env: 'prod' } },
  { name: 'follower-c', labels: { env: 'dev' } },
];

/** Short intervals, so outages and recoveries show in seconds. */
export const HEARTBEAT_MS = 2_000;
export const FAST: Partial<HubConfig> = {
  clusterHealthIntervalMs: 1_000,
  agentHeartbeatGraceMs: 3 * HEARTBEAT_MS,
  agentHeartbeatReportMs: 2 * HEARTBEAT_MS,
  unreachableAfterMs: 3_000,
  clusterRequestTimeoutMs: 3_000,
};

export interface MultiClusterOptions {
  followers?: readonly FollowerSpec[];
  /** Hub config on top of the harness's (aws is merged, not replaced). */
  hub?: Partial<HubConfig>;
  agent?: Partial<AgentConfig>;
  /** Register the followers as MirrorClusters (default true). */
  registerFollowers?: boolean;
  /** Start the in-process hub (default true; false: the test runs its own, e.g. as processes). */
  startHub?: boolean;
}

/**
 * Where in its API server a follower lives, for followers that share one (the 100-follower
 * benchmark): its agent namespace, the group its access entry maps the hub to, and whether to
 * apply the agent CRDs (once per API server is enough).
 */
export interface FollowerLayout {
  /** Agent namespace (default mirrorhub-system). */
  namespace?: string;
  /** Kubernetes group of the hub's access entry, bound in `namespace` (default mirrorhub-hub). */
  group?: string;
  /** Apply the agent chart's CRDs (default true). */
  crds?: boolean;
  /**
   * Values of the agent chart (release mirrorhub-agent): apply all its ServiceAccount, RBAC and
   * admission policies (support/helm.ts IDENTITY_KINDS) rendered with them, as `helm install`
   * would, instead of its hub-access Role and RoleBinding alone. Its policies are cluster-wide
   * objects, so one follower per API server.
   */
  agentChart?: Record<string, unknown>;
}

export interface FollowerAccess {
  roleArn: string;
  externalId: string;
  accountId: string;
}

export class MultiCluster {
  readonly logs = new LogSink();
  hub: Hub | undefined;
  readonly agents = new Map<string, Agent>();
  /** The follower role, ExternalId and account of every follower. */
  readonly access = new Map<string, FollowerAccess>();
  hubUser!: Principal;

  private constructor(
    readonly kit: Kit,
    readonly followers: readonly FollowerSpec[],
    private readonly opts: MultiClusterOptions,
  ) {}

  static async start(opts: MultiClusterOptions = {}): Promise<MultiCluster> {
    const followers = opts.followers ?? FOLLOWERS;
    const kit = await startKit({ clusters: [HUB, ...followers.map((f) => f.name)] });
    const m = new MultiCluster(kit, followers, opts);
    try {
      await m.setUp();
    } catch (err) {
      await kit.stop();
      throw err;
    }
    return m;
  }

  private async setUp(): Promise<void> {
    const { stsEndpoint } = this.kit.aws!;
    await installCrds(this.kc(HUB), 'mirrorhub-hub');
    await this.ensureNamespace(HUB, SYSTEM_NS);
    this.hubUser = await createUserWithAccessKey(stsEndpoint, {
      accountId: this.kit.cluster(HUB).accountId,
      userName: 'mirrorhub-hub',
    });
    await Promise.all(
      this.followers.map(async (f) => {
        this.access.set(f.name, await prepareFollower(this.kit, f.name, this.hubUser.arn));
      }),
    );
    for (const name of [HUB, ...this.followers.map((f) => f.name)]) await this.startAgent(name);
    if (this.opts.registerFollowers ?? true) {
      for (const f of this.followers) await this.registerEks(f.name, f.labels);
    }
    if (this.opts.startHub ?? true) await this.startHub();
  }

  // ---- clusters ---------------------------------------------------------------------------------

  kc(cluster: string): KubeConfig {
    return this.kit.cluster(cluster).kubeConfig();
  }

  core(cluster: string): CoreV1Api {
    return this.kc(cluster).makeApiClient(CoreV1Api);
  }

  custom(cluster: string): CustomObjectsApi {
    return this.kc(cluster).makeApiClient(CustomObjectsApi);
  }

  /** Every cluster's name, the hub first. */
  names(): string[] {
    return [HUB, ...this.followers.map((f) => f.name)];
  }

  // ---- hub and agents ---------------------------------------------------------------------------

  logger(component: string, cluster?: string): Logger {
    return createLogger({
      level: 'debug',
      base: { component, ...(cluster ? { cluster } : {}) },
      destination: this.logs,
    });
  }

  hubConfig(extra: Partial<HubConfig> = {}): HubConfig {
    const { stsEndpoint, eksEndpoint } = this.kit.aws!;
    const over = { ...this.opts.hub, ...extra };
    return {
      kubeConfig: this.kc(HUB),
      clusterName: HUB,
      namespace: SYSTEM_NS,
      agentNamespace: SYSTEM_NS,
      identity: 'hub-test',
      version: 'test',
      logger: this.logger('hub'),
      leaderElection: false,
      signingKey: TEST_HUB_KEY.privateKeyPem,
      ...FAST,
      ...over,
      aws: {
        baseCredentials: this.hubUser.credentials,
        stsEndpoint,
        eksEndpoint,
        ...over.aws,
      },
    };
  }

  async startHub(extra: Partial<HubConfig> = {}): Promise<Hub> {
    this.hub = createHub(this.hubConfig(extra));
    await this.hub.start();
    return this.hub;
  }

  async stopHub(): Promise<void> {
    await this.hub?.stop();
    this.hub = undefined;
  }

  async startAgent(cluster: string): Promise<Agent> {
    const agent = createAgent({
      kubeConfig: this.kc(cluster),
      namespace: SYSTEM_NS,
      clusterName: cluster,
      hubPublicKeys: TEST_HUB_KEY.publicKeyPem,
      version: '0.1.0-test',
      logger: this.logger('agent', cluster),
      heartbeat: { intervalMs: HEARTBEAT_MS },
      processMetrics: false,
      ...this.opts.agent,
    });
    await agent.start();
    this.agents.set(cluster, agent);
    return agent;
  }

  async stopAgent(cluster: string): Promise<void> {
    await this.agents.get(cluster)?.stop();
    this.agents.delete(cluster);
  }

  async stop(): Promise<void> {
    await this.stopHub().catch(() => undefined);
    await Promise.all([...this.agents.keys()].map((c) => this.stopAgent(c).catch(() => undefined)));
    await this.kit.stop();
  }

  // ---- MirrorClusters ---------------------------------------------------------------------------

  /** A MirrorCluster for `cluster` as terraform's outputs would fill it in. */
  eksSpec(
    cluster: string,
    over: Partial<NonNullable<MirrorClusterSpec['eks']>> = {},
  ): MirrorClusterSpec {
    const a = this.access.get(cluster);
    if (!a) throw new Error(`no follower ${cluster}`);
    return {
      eks: {
        name: cluster,
        region: this.kit.aws!.region,
        roleArn: a.roleArn,
        externalId: a.externalId,
        ...over,
      },
      agentNamespace: SYSTEM_NS,
    };
  }

  async registerEks(cluster: string, labels: Record<string, string>): Promise<void> {
    await this.applyMirrorCluster(cluster, this.eksSpec(cluster), labels);
  }

  async applyMirrorCluster(
    name: string,
    spec: MirrorClusterSpec,
    labels: Record<string, string> = {},
  ): Promise<void> {
    const api = this.custom(HUB);
    const ref = { group: GROUP, version: VERSION, plural: 'mirrorclusters' };
    const body = {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'MirrorCluster',
      metadata: { name, labels },
      spec,
    };
    try {
      await api.createClusterCustomObject({ ...ref, body });
    } catch (err) {
      if ((err as { code?: number }).code !== 409) throw err;
      const cur = (await api.getClusterCustomObject({ ...ref, name })) as MirrorCluster;
      await api.replaceClusterCustomObject({
        ...ref,
        name,
        body: {
          ...body,
          metadata: { ...body.metadata, resourceVersion: cur.metadata.resourceVersion },
        },
      });
    }
  }

  async labelMirrorCluster(name: string, labels: Record<string, string | null>): Promise<void> {
    await this.custom(HUB).patchClusterCustomObject(
      {
        group: GROUP,
        version: VERSION,
        plural: 'mirrorclusters',
        name,
        body: { metadata: { labels } },
      },
      mergePatchOptions(),
    );
  }

  async deleteMirrorCluster(name: string): Promise<void> {
    await this.custom(HUB).deleteClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'mirrorclusters',
      name,
    });
  }

  async getMirrorCluster(name: string): Promise<MirrorCluster | undefined> {
    try {
      return (await this.custom(HUB).getClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural: 'mirrorclusters',
        name,
      })) as MirrorCluster;
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  }

  /** Waits until the MirrorCluster's status satisfies `check` (an expect inside). */
  async mirrorClusterStatus(
    name: string,
    check: (mc: MirrorCluster) => void,
    timeoutMs = 20_000,
  ): Promise<MirrorCluster> {
    return eventually(
      async () => {
        const mc = await this.getMirrorCluster(name);
        if (!mc) throw new Error(`MirrorCluster ${name} not found`);
        check(mc);
        return mc;
      },
      { timeoutMs, intervalMs: 200 },
    );
  }

  // ---- objects in any cluster -------------------------------------------------------------------

  /** Objects in one cluster (namespaces, Secrets, deliveries, copies); mirrors live on the hub. */
  on(cluster: string): ClusterObjects {
    return new ClusterObjects(this.kc(cluster));
  }

  ensureNamespace(cluster: string, name: string, labels: Record<string, string> = {}) {
    return this.on(cluster).ensureNamespace(name, labels);
  }

  putSecret(cluster: string, namespace: string, name: string, data: Record<string, string>) {
    return this.on(cluster).putSecret(namespace, name, data);
  }

  secretData(cluster: string, namespace: string, name: string) {
    return this.on(cluster).secretData(namespace, name);
  }

  copies(cluster: string, name: string) {
    return this.on(cluster).copies(name);
  }

  deliveries(cluster: string) {
    return this.on(cluster).deliveries();
  }

  payloads(cluster: string) {
    return this.on(cluster).payloads();
  }

  // ---- mirrors on the hub -----------------------------------------------------------------------

  applyMirror(m: SecretMirror | ClusterSecretMirror) {
    return this.on(HUB).applyMirror(m);
  }

  getMirror(kind: string, name: string, namespace?: string) {
    return this.on(HUB).getMirror(kind, name, namespace);
  }

  deleteMirror(kind: string, name: string, namespace?: string) {
    return this.on(HUB).deleteMirror(kind, name, namespace);
  }

  mirrorStatus(
    kind: string,
    name: string,
    namespace: string | undefined,
    check: (m: SecretMirror) => void,
    timeoutMs = 20_000,
  ) {
    return this.on(HUB).mirrorStatus(kind, name, namespace, check, timeoutMs);
  }

  /** Events in the hub cluster about one object. */
  events(namespace: string, name: string) {
    return this.on(HUB).events(namespace, name);
  }

  /** The first Event in the hub cluster about one object with `reason`, once there is one. */
  eventWith(...args: Parameters<ClusterObjects['eventWith']>) {
    return this.on(HUB).eventWith(...args);
  }

  /** `kubectl <args>` against the hub cluster; stdout. */
  async kubectl(...args: string[]): Promise<string> {
    const { stdout } = await run(this.kit.kubectl, [
      '--kubeconfig',
      this.kit.cluster(HUB).kubeconfigPath,
      ...args,
    ]);
    return stdout;
  }

  /** Value of a hub metric series (sum over matching label sets). */
  async hubMetric(name: string, labels: Record<string, string> = {}): Promise<number> {
    const text = await this.hub!.metrics.render();
    let sum = 0;
    for (const line of text.split('\n')) {
      if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
      const ok = Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`));
      if (ok) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return sum;
  }
}

export { clusterSecretMirror, secretMirror } from './objects.js';

/**
 * The environment a hub process needs to reach followers as `hub` (the base identity IRSA or Pod
 * Identity would give it in EKS): its access key, the region and the emulators' endpoints.
 */
export function hubAwsEnv(kit: Kit, hub: Principal): Record<string, string> {
  const { region, stsEndpoint, eksEndpoint } = kit.aws!;
  return {
    AWS_ACCESS_KEY_ID: hub.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: hub.credentials.secretAccessKey,
    AWS_REGION: region,
    MIRRORHUB_STS_ENDPOINT: stsEndpoint,
    MIRRORHUB_EKS_ENDPOINT: eksEndpoint,
  };
}

let rendered: Promise<{ role: V1Role; binding: V1RoleBinding }> | undefined;

/**
 * What terraform/'s follower module and the agent chart set up in one follower, for the hub
 * identity `hubPrincipalArn`: the MirrorDelivery CRD and agent namespace; a role in the
 * follower's account that the hub may assume with an ExternalId; an EKS access entry mapping
 * that role to the group mirrorhub-hub with no access policy; and the chart's hub-access Role
 * and RoleBinding, the group's only rights (with `opts.agentChart`, everything of the agent chart
 * that `helm install` would create but its workload). `opts` places it elsewhere in its API server.
 */
export async function prepareFollower(
  kit: Kit,
  name: string,
  hubPrincipalArn: string,
  opts: FollowerLayout = {},
): Promise<FollowerAccess> {
  const { stsEndpoint, eksEndpoint, region } = kit.aws!;
  const namespace = opts.namespace ?? SYSTEM_NS;
  const group = opts.group ?? HUB_GROUP;
  const cluster = kit.cluster(name);
  const kc = cluster.kubeConfig();
  if (opts.crds ?? true) await installCrds(kc, 'mirrorhub-agent');
  await kc
    .makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name: namespace } } })
    .catch((err: { code?: number }) => {
      if (err.code !== 409) throw err;
    });
  const externalId = `mirrorhub-${name}`;
  const role = await createRole(stsEndpoint, {
    accountId: cluster.accountId,
    roleName: 'mirrorhub-follower',
    trustPolicy: trustPolicy({ principals: [hubPrincipalArn], externalId }),
  });
  const admin = await createUserWithAccessKey(stsEndpoint, {
    accountId: cluster.accountId,
    userName: 'platform-admin',
  });
  const eks = new EKSClient({ endpoint: eksEndpoint, region, credentials: admin.credentials });
  try {
    await eks.send(
      new CreateAccessEntryCommand({
        clusterName: name,
        principalArn: role.arn,
        kubernetesGroups: [group],
      }),
    );
  } finally {
    eks.destroy();
  }
  if (opts.agentChart) {
    const objs = await renderChart('mirrorhub-agent', 'mirrorhub-agent', namespace, {
      ...opts.agentChart,
      hubAccess: { group },
    });
    await applyRendered(kc, objs, namespace);
    return { roleArn: role.arn, externalId, accountId: cluster.accountId };
  }
  // The chart's objects as `helm install --namespace <namespace> --set hubAccess.group=<group>`
  // would render them: only the namespace and the bound group differ.
  const rbac = await hubAccessRbac();
  const accessRole = { ...rbac.role, metadata: { ...rbac.role.metadata, namespace } };
  const accessBinding = {
    ...rbac.binding,
    metadata: { ...rbac.binding.metadata, namespace },
    subjects: rbac.binding.subjects!.map((s) =>
      s.kind === 'Group' && s.name === HUB_GROUP ? { ...s, name: group } : s,
    ),
  };
  const api = kc.makeApiClient(RbacAuthorizationV1Api);
  await api.createNamespacedRole({ namespace, body: accessRole });
  await api.createNamespacedRoleBinding({ namespace, body: accessBinding });
  return { roleArn: role.arn, externalId, accountId: cluster.accountId };
}

/**
 * The agent chart's hub-access Role and RoleBinding, from `helm template` with the chart's
 * defaults (release mirrorhub in mirrorhub-system): exactly what `helm install` would create.
 */
export function hubAccessRbac(): Promise<{ role: V1Role; binding: V1RoleBinding }> {
  rendered ??= (async () => {
    const objs = await renderChart('mirrorhub-agent', 'mirrorhub', SYSTEM_NS, {
      clusterName: 'follower',
      hubPublicKeys: [TEST_HUB_KEY.publicKeyPem],
    });
    const pick = <T>(kind: string): T => {
      const found = objs.filter(
        (o) => o.kind === kind && o.metadata?.name === 'mirrorhub-agent-hub-access',
      );
      if (found.length !== 1)
        throw new Error(
          `helm template: expected one ${kind} mirrorhub-agent-hub-access, got ${found.length}`,
        );
      return found[0] as T;
    };
    const role = pick<V1Role>('Role');
    const binding = pick<V1RoleBinding>('RoleBinding');
    if (!binding.subjects?.some((s) => s.kind === 'Group' && s.name === HUB_GROUP)) {
      throw new Error(`the chart's hub-access RoleBinding does not bind group ${HUB_GROUP}`);
    }
    return { role, binding };
  })();
  return rendered;
}

/** Reads condition `type` of a MirrorCluster. */
export function condition(
  mc: {
    status?: { conditions?: { type: string; status: string; reason: string; message: string }[] };
  },
  type: string,
) {
  return mc.status?.conditions?.find((c) => c.type === type);
}
