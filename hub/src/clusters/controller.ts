// The MirrorCluster controller: turns every MirrorCluster into a ClusterTarget in the registry
// (so mirrors with destination.clusters re-select at once), keeps one health loop per cluster
// and reports what it finds in the MirrorCluster's status.
//
// Per MirrorCluster (by spec):
//   eks                  one EksClusterAccess (AssumeRole + ExternalId -> DescribeCluster ->
//                        token), replaced when the spec changes, destroyed on delete.
//   kubeconfigSecretRef  the kubeconfig from that Secret in the hub cluster, in memory only; the
//                        Secret is watched by name, so a rotated kubeconfig is used at once.
//   inCluster            the hub's own cluster: its labels and agent namespace apply to the
//                        local target (see plan.ts resolveAccess for the naming rule).
//
// Nothing here waits on a follower inside a reconcile: probes run in each cluster's own loop
// (jittered, every request with a deadline) and hand their result to the reconcile, which only
// talks to the hub cluster (status, Events).
//
// Several hub replicas (hub/src/shards/ownership.ts): all of the above only for the followers
// this replica owns. One it does not own is registered as a remote target (name, labels, agent
// namespace, owner, and its owner's report from status.deliveries), so every replica plans every
// mirror against the same clusters; this replica takes no credentials for it, never probes it
// and writes nothing of it. For the followers it owns and does not lead, the status also
// carries what the mirror controller reports of the deliveries there (reports.ts).
import { crypto } from '@mirrorhub/shared/kit/runtime/builtins';
import type { V1Secret } from '@kubernetes/client-node';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { customObjectPath, RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import {
  DEFAULT_POLL_PERIOD_MS,
  GROUP,
  MIRROR_CLUSTER,
  VERSION,
  type MirrorCluster,
  type MirrorClusterStatus,
} from '@mirrorhub/shared/api/index';
import {
  childLogger,
  errorMessage,
  httpStatusOf,
  labelValue,
  realClock,
  sleep,
  type Clock,
  type ControllerMetrics,
  type Counter,
  type Gauge,
  type Logger,
} from '@mirrorhub/shared/kit/runtime/index';
import { createWatcher, watchTuning, type Watcher } from '@mirrorhub/shared/kit/k8s/watcher';
import { Reconciler, StatusWriter } from '@mirrorhub/shared/kit/controller/index';
import type {
  AwsCredentials,
  AwsCredentialsProvider,
  EksClusterAccess,
  StsClients,
} from './aws/index.js';
import { DEFAULT_REQUEST_TIMEOUT_MS } from './client.js';
import type { ClusterRegistry } from './registry.js';
import type { ClusterTarget } from './target.js';
import type { EksSessions } from './eks-sessions.js';
import { parseKubeconfig } from './kubeconfig.js';
import type { ProxyEnv } from './egress-proxy.js';
import type { PendingCleanups } from './pending.js';
import type { DeliveryReportStore } from './reports.js';
import { OWN_EVERYTHING, type Ownership } from '../shards/ownership.js';
import {
  CONDITION,
  parsePendingCleanups,
  nextProbe,
  planClusterStatus,
  resolveAccess,
  withLatestHeartbeat,
  type AccessSpec,
  type ClusterEvent,
  type ProbeResult,
} from './plan.js';
import { probeCluster, ProbeClient, type ProbeContext } from './probe.js';
import { FIELD_MANAGER, USER_AGENT } from '@mirrorhub/shared/api/contract';

const { createHash } = crypto;

const CONTROLLER = 'cluster';

/** How the hub reaches EKS followers (HubConfig.aws). */

type AwsModule = typeof import('./aws/index.js');
let awsModule: Promise<AwsModule> | undefined;

export interface HubAwsConfig {
  /** The hub's own identity. Default: the AWS SDK's default chain (IRSA, Pod Identity, env). */
  baseCredentials?: AwsCredentials | AwsCredentialsProvider;
  /** STS endpoint for AssumeRole (emulators, VPC endpoints). */
  stsEndpoint?: string;
  /** EKS endpoint for DescribeCluster (emulators, VPC endpoints). */
  eksEndpoint?: string;
  /** STS endpoint by region (interface VPC endpoints); wins over stsEndpoint for its region. */
  stsEndpoints?: Readonly<Record<string, string>>;
  /** EKS endpoint by region; wins over eksEndpoint for its region. */
  eksEndpoints?: Readonly<Record<string, string>>;
  /** Region of the AssumeRole calls. Default: each cluster's own region. */
  region?: string;
  /** Length of an assumed-role session, 900..3600 (default 3600). */
  roleDurationSeconds?: number;
  /** Re-assume the role when this much of the session is left (default 5 min). */
  refreshBeforeMs?: number;
  /** Re-mint the bearer token when this much of its 15 minutes is left (default 60 s). */
  tokenRefreshBeforeMs?: number;
  /** AssumeRole session name (default mirrorhub-hub-<host>); must contain "mirrorhub". */
  roleSessionName?: string;
}

export interface ClusterControllerOptions {
  /** The hub's own cluster: MirrorClusters, kubeconfig Secrets, status, Events. */
  kubeConfig: KubeAccess;
  /** See HubConfig.watchProgressDeadlineMs. */
  watchProgressDeadlineMs?: number | undefined;
  /** A MirrorCluster changed in the cache (the dashboard's live feed). */
  onObserved?(): void;
  registry: ClusterRegistry;
  /** The hub's own cluster as it is without a MirrorCluster (restored when one goes away). */
  localTarget: ClusterTarget;
  hubClusterName: string;
  /** Reporting instance of Events. */
  identity: string;
  logger: Logger;
  metrics: ControllerMetrics;
  pending: PendingCleanups;
  /** Whether `cluster` still holds delivery `name` (undefined: not known yet). */
  holds?: (cluster: string, name: string) => boolean | undefined;
  aws?: HubAwsConfig;
  /**
   * The egress proxy (HTTPS_PROXY / NO_PROXY) for STS, EKS and every follower's API server
   * (a kubeconfig's proxy-url wins for its cluster). Default: every connection direct.
   */
  proxy?: ProxyEnv;
  /**
   * AWS sessions that outlive this controller (one leadership term): taken for each EKS cluster
   * when registered, handed back when the controller stops, so a new term does not assume every
   * role and describe every cluster again.
   */
  eksSessions?: EksSessions;
  /**
   * Health probe period per cluster, jittered by ±10% (default 10 s). A healthy cluster is
   * probed less often (plan.ts nextProbe); a failed request to it wakes its probe at once.
   */
  healthIntervalMs?: number;
  /** An agent heartbeat older than this makes AgentHealthy Unknown (default 90 s). */
  heartbeatGraceMs?: number;
  /**
   * A healthy agent's heartbeat is written to status this often, not on every renewal (default
   * 5 min; see planClusterStatus). The dashboard shows the latest one read.
   */
  heartbeatReportMs?: number;
  /** Deadline of each probe request (default 10 s). */
  requestTimeoutMs?: number;
  /** MirrorClusters reconciled at once (default 4). */
  concurrency?: number;
  clock?: Clock;
  /**
   * Which followers this replica owns (default: every one, as with one replica). A follower it
   * does not own is only registered as a remote target.
   */
  ownership?: Ownership;
  /**
   * What the mirror controller reports of the deliveries in the followers this replica owns
   * (when it does not lead), written to their status.deliveries. The same store goes to the
   * mirror controller. Default: none (one replica).
   */
  reports?: DeliveryReportStore;
}

export const DEFAULT_HEALTH_INTERVAL_MS = 10_000;
/** 3 x the agent's default 30 s heartbeat. */
export const DEFAULT_HEARTBEAT_GRACE_MS = 90_000;
export const DEFAULT_HEARTBEAT_REPORT_MS = 300_000;

interface Entry {
  name: string;
  access: AccessSpec;
  abort: AbortController;
  /** Wakes the probe loop early (a new kubeconfig). */
  wake: () => void;
  eks?: EksClusterAccess;
  /** EKS: the KubeConfig last handed out (a new one means a new endpoint or CA). */
  eksKubeConfig?: KubeAccess;
  /** Kubeconfig: what the current kubeConfig function was built from. */
  kubeconfigFingerprint?: string;
  kubeConfig: () => Promise<KubeAccess>;
  reportError: (err: unknown) => void;
  target?: ClusterTarget;
  probe?: ProbeResult;
  /** The latest heartbeat renewTime any probe read (clock ms). */
  renewedAt?: number;
  /** The last probe found the cluster healthy, so the next one waits longer (nextProbe). */
  healthy: boolean;
  loop?: Promise<void>;
  seeded: boolean;
}

interface SecretWatch {
  watcher: Watcher<V1Secret>;
  clusters: Set<string>;
}

export class ClusterController {
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly rest: RestClient;
  private readonly reconciler: Reconciler;
  /** Status writes, remembering each until its watch shows it. */
  private readonly writer: StatusWriter<MirrorCluster>;
  private readonly clusters: Watcher<MirrorCluster>;
  private readonly entries = new Map<string, Entry>();
  /** Followers another replica owns, as registered (remote targets, or the local one). */
  private readonly remotes = new Map<string, { target: ClusterTarget; fingerprint: string }>();
  private readonly ownership: Ownership;
  private readonly secretWatches = new Map<string, SecretWatch>();
  private readonly readiness = new Map<string, string>();
  private readonly unsubscribe: (() => void)[] = [];
  private readonly stateGauge: Gauge<'state'>;
  private readonly requestErrors: Counter<'cluster' | 'code'>;
  private readonly intervalMs: number;
  private readonly graceMs: number;
  private readonly reportMs: number;
  private readonly timeoutMs: number;
  private started = false;
  private stopped = false;
  private stopping: Promise<void> | undefined;
  /** STS clients of this controller's own, when there are no eksSessions to hold the process's. */
  private ownStsClients: StsClients | undefined;

  constructor(private readonly opts: ClusterControllerOptions) {
    this.log = childLogger(opts.logger, { controller: CONTROLLER });
    this.clock = opts.clock ?? realClock;
    this.ownership = opts.ownership ?? OWN_EVERYTHING;
    this.intervalMs = opts.healthIntervalMs ?? DEFAULT_HEALTH_INTERVAL_MS;
    this.graceMs = opts.heartbeatGraceMs ?? DEFAULT_HEARTBEAT_GRACE_MS;
    this.reportMs = opts.heartbeatReportMs ?? DEFAULT_HEARTBEAT_REPORT_MS;
    this.timeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.rest = new RestClient(opts.kubeConfig, { userAgent: USER_AGENT.hub });
    const m = opts.metrics;
    this.stateGauge = m.gauge(
      'mirror_clusters',
      'MirrorClusters by their Ready condition (ready, not_ready, unknown, invalid).',
      ['state'],
    );
    this.requestErrors = m.counter(
      'cluster_request_errors_total',
      'Failed requests to delivery clusters (watches, writes, probes), by HTTP status or "network".',
      ['cluster', 'code'],
    );
    this.writer = new StatusWriter<MirrorCluster>({
      rest: this.rest,
      pathOf: (mc) =>
        customObjectPath({
          group: GROUP,
          version: VERSION,
          plural: MIRROR_CLUSTER.plural,
          name: mc.metadata.name ?? '',
        }),
      keyOf: (mc) => mc.metadata.name ?? '',
      fieldManager: FIELD_MANAGER.hub,
      reportingInstance: opts.identity,
      metrics: m,
      logger: this.log,
      // Health changes (Ready's status or reason) are logged at info, the rest at debug.
      summary: (status) => {
        const ready = readyOf(status);
        return { ready: ready?.status, reason: ready?.reason };
      },
      detail: (status) => ({ message: readyOf(status)?.message }),
      clock: this.clock,
    });
    this.reconciler = new Reconciler({
      name: CONTROLLER,
      concurrency: opts.concurrency,
      reconcile: (key) => this.reconcile(key),
      logger: this.log,
      metrics: m,
      shutdownTimeoutMs: 10_000,
      clock: this.clock,
    });
    this.clusters = createWatcher<MirrorCluster>(
      opts.kubeConfig,
      { group: GROUP, version: VERSION, plural: MIRROR_CLUSTER.plural },
      { resyncPeriodMs: DEFAULT_POLL_PERIOD_MS, ...watchTuning(opts.watchProgressDeadlineMs) },
    );
  }

  /**
   * Start watching. Resolves once every MirrorCluster seen in the first list is registered (so
   * the mirror controller's first plans see every cluster), or when stopped.
   */
  async start(): Promise<void> {
    if (this.started || this.stopped) return;
    this.started = true;
    const w = this.reconciler.watch(this.clusters, {
      onAdd: (mc) => this.changed(mc),
      onUpdate: (mc) => this.changed(mc),
      onDelete: (mc) => {
        this.opts.onObserved?.();
        this.writer.deleted(mc.metadata.name ?? '');
        this.reconciler.add(mc.metadata.name ?? '');
      },
      onListed: () => this.writer.relisted(),
    });
    this.unsubscribe.push(this.opts.pending.onChange((cluster) => this.reconciler.add(cluster)));
    const reports = this.opts.reports;
    if (reports) {
      this.unsubscribe.push(
        reports.onChange((cluster) => {
          if (this.ownership.owns(cluster)) this.reconciler.add(cluster);
        }),
      );
    }
    this.unsubscribe.push(
      this.ownership.onChange((name, owned) => this.ownershipChanged(name, owned)),
    );
    try {
      await w.synced;
    } catch {
      return; // stopped
    }
    if (this.stopped) return;
    // Kubeconfig Secrets are read before the first registration, so a cluster is not
    // registered with "not read yet" and re-registered a moment later. A Secret the hub cannot
    // list does not hold the start-up: its cluster reports why.
    for (const mc of w.list()) {
      const name = mc.metadata.name ?? '';
      // Only the followers this replica owns: another's kubeconfig is never read here.
      if (!this.ownership.owns(name)) continue;
      const r = resolveAccess(mc, this.opts.hubClusterName);
      if (r.ok && r.access.type === 'Kubeconfig') this.watchSecret(r.access, name);
    }
    await Promise.race([
      Promise.all(
        [...this.secretWatches.values()].map((s) => s.watcher.synced.catch(() => undefined)),
      ),
      sleep(this.clock, 10_000),
    ]);
    for (const mc of w.list()) {
      if (this.stopped) return;
      try {
        await this.reconcile(mc.metadata.name ?? '');
      } catch (err) {
        this.log.warn(
          { cluster: mc.metadata.name, err: errorMessage(err) },
          'first reconcile failed',
        );
        this.reconciler.add(mc.metadata.name ?? '');
      }
    }
    this.reconciler.start();
    this.log.info({ clusters: this.entries.size }, 'cluster controller started');
  }

  /** Idempotent: every call resolves once the one stop is done. */
  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  private async shutdown(): Promise<void> {
    this.stopped = true;
    for (const u of this.unsubscribe.splice(0)) u();
    await this.reconciler.stop(); // and every watch
    const loops = [...this.entries.values()].map((e) => e.loop);
    // The clusters still exist: their AWS sessions go to the next term instead of being dropped.
    for (const name of [...this.entries.keys()]) this.teardown(name, { keepSession: true });
    await Promise.all(loops);
    this.ownStsClients?.destroy();
    this.secretWatches.clear();
    this.rest.close();
  }

  /** Every MirrorCluster as the cache holds it (read-only: the dashboard's views). */
  /**
   * Every MirrorCluster as cached, with the latest heartbeat a probe read in place of the one
   * in status, which is written only every heartbeatReportMs (the dashboard's heartbeat age).
   */
  list(): MirrorCluster[] {
    return this.clusters
      .list()
      .map((mc) => withLatestHeartbeat(mc, this.entries.get(mc.metadata.name ?? '')?.renewedAt));
  }

  /** The MirrorCluster cache is synced (readiness). */
  hasSynced(): boolean {
    return this.clusters.hasSynced();
  }

  /** Wait until nothing is queued or in flight (tests). */
  idle(): Promise<void> {
    return this.reconciler.idle();
  }

  // ---- events -> keys ---------------------------------------------------------------------------

  private changed(mc: MirrorCluster): void {
    this.opts.onObserved?.();
    const name = mc.metadata.name ?? '';
    if (this.writer.observed(mc)) return; // our status echo
    this.reconciler.add(name);
  }

  private current(name: string): MirrorCluster | undefined {
    return this.writer.current(name, this.clusters.get(name));
  }

  // ---- reconcile --------------------------------------------------------------------------------

  private async reconcile(name: string): Promise<void> {
    if (this.stopped) return;
    const mc = this.current(name);
    if (!mc) {
      this.unregisterRemote(name);
      if (this.teardown(name))
        this.log.info({ cluster: name }, 'MirrorCluster deleted; cluster unregistered');
      this.opts.pending.clear(name);
      this.readiness.delete(name);
      this.updateGauge();
      return;
    }
    const resolved = resolveAccess(mc, this.opts.hubClusterName);
    if (!this.ownership.owns(name)) {
      // Another replica's: no credentials, no probe, no status, no Event; only its target
      // (registered first, so the cluster never leaves the registry in between).
      if (resolved.ok) this.registerRemote(mc, resolved.access);
      else this.unregisterRemote(name);
      if (this.teardown(name)) this.log.info({ cluster: name }, 'cluster handed to its owner');
      // Its owner counts it in its gauge.
      if (this.readiness.delete(name)) this.updateGauge();
      return;
    }
    this.unregisterRemote(name, { keepTarget: true });
    let entry = this.entries.get(name);
    if (!resolved.ok) {
      if (this.teardown(name))
        this.log.warn(
          { cluster: name, err: resolved.error },
          'MirrorCluster invalid; cluster unregistered',
        );
      await this.writeStatus(
        mc,
        planClusterStatus(this.statusInput(mc, undefined, resolved.error)),
      );
      return;
    }
    if (entry && entry.access.key !== resolved.access.key) {
      this.log.info({ cluster: name }, 'MirrorCluster access changed; reconnecting');
      this.teardown(name);
      entry = undefined;
    }
    if (!entry) {
      try {
        // The AWS SDK is loaded with the first EKS cluster, not at start: a hub without EKS
        // clusters never pays its memory.
        if (resolved.access.type === 'EKS') awsModule ??= import('./aws/index.js');
        entry = this.create(
          name,
          resolved.access,
          resolved.access.type === 'EKS' ? await awsModule : undefined,
        );
      } catch (err) {
        // e.g. EksClusterAccess refusing an option: as good as an invalid spec.
        await this.writeStatus(
          mc,
          planClusterStatus(this.statusInput(mc, undefined, errorMessage(err))),
        );
        return;
      }
    }
    if (!entry.seeded) {
      this.opts.pending.seed(name, parsePendingCleanups(mc.status));
      entry.seeded = true;
    }
    if (entry.access.type === 'Kubeconfig') this.loadKubeconfig(entry);
    this.register(entry, mc);
    const holds = this.opts.holds;
    if (holds) this.opts.pending.prune(name, (delivery) => holds(name, delivery) === false);
    await this.writeStatus(
      mc,
      withDeliveries(planClusterStatus(this.statusInput(mc, entry)), this.reported(name)),
    );
  }

  /** status.deliveries for `name`: this replica's reports (none while it leads). */
  private reported(name: string): MirrorClusterStatus['deliveries'] {
    const items = this.opts.reports?.list(name) ?? [];
    return items.length > 0 ? { replica: this.opts.identity, items } : undefined;
  }

  /**
   * `name` changed hands. Gained: it is reconciled as owned (credentials, probe, status).
   * Lost: its probe and session stop now, before the claim is given up, and it is registered as
   * a remote target (the cluster destinations stop writing to it in their own listener).
   */
  private async ownershipChanged(name: string, owned: boolean): Promise<void> {
    if (this.stopped) return;
    if (owned) {
      this.reconciler.add(name);
      return;
    }
    const loop = this.entries.get(name)?.loop;
    const mc = this.clusters.get(name);
    const resolved = mc ? resolveAccess(mc, this.opts.hubClusterName) : undefined;
    if (mc && resolved?.ok) this.registerRemote(mc, resolved.access);
    if (this.teardown(name)) this.log.info({ cluster: name }, 'cluster handed to another replica');
    if (this.readiness.delete(name)) this.updateGauge();
    await loop;
  }

  /**
   * Register a follower another replica owns: what mirrors select it by, who owns it, and its
   * owner's report. The hub's own cluster (inCluster) stays a local target: its deliveries are
   * the leader's to write, whoever probes it.
   */
  private registerRemote(mc: MirrorCluster, access: AccessSpec): void {
    const name = mc.metadata.name ?? '';
    const labels = { ...(mc.metadata.labels ?? {}) };
    const local = access.type === 'InCluster';
    const owner = this.ownership.ownerOf(name);
    const report = local ? undefined : mc.status?.deliveries;
    const fingerprint = JSON.stringify([access.agentNamespace, canonical(labels), owner, report]);
    const known = this.remotes.get(name);
    if (known?.fingerprint === fingerprint && this.opts.registry.get(name) === known.target) return;
    const target: ClusterTarget = local
      ? {
          name,
          agentNamespace: access.agentNamespace,
          labels,
          local: true,
          type: access.type,
          kubeConfig: this.opts.localTarget.kubeConfig,
        }
      : {
          name,
          agentNamespace: access.agentNamespace,
          labels,
          local: false,
          type: access.type,
          kubeConfig: rejecting(`cluster ${name} is owned by hub replica ${owner ?? '(none yet)'}`),
          remote: { owner, report },
        };
    this.remotes.set(name, { target, fingerprint });
    this.opts.registry.set(target);
  }

  /**
   * Forget the remote registration of `name`; with `keepTarget`, leave the registry as it is
   * (this replica registers its own target for it next).
   */
  private unregisterRemote(name: string, opts: { keepTarget?: boolean } = {}): void {
    const known = this.remotes.get(name);
    if (!known) return;
    this.remotes.delete(name);
    if (opts.keepTarget) return;
    if (known.target.local) {
      if (this.opts.registry.get(name) === known.target)
        this.opts.registry.set(this.opts.localTarget);
    } else this.opts.registry.remove(name, known.target);
  }

  private statusInput(mc: MirrorCluster, entry: Entry | undefined, invalid?: string) {
    const name = mc.metadata.name ?? '';
    const eks = entry?.eks?.health();
    return {
      cluster: mc,
      invalid,
      probe: entry?.probe,
      eks: eks
        ? {
            credentialsExpireAt: eks.credentialsExpireAt,
            identity: eks.identityArn,
            server: eks.server,
            lastError: eks.lastError ? { message: eks.lastError.message } : undefined,
          }
        : undefined,
      pending: this.opts.pending.list(name),
      agentNamespace: entry?.access.agentNamespace ?? mc.spec?.agentNamespace ?? 'mirrorhub-system',
      heartbeatGraceMs: this.graceMs,
      heartbeatReportMs: this.reportMs,
      lastRenewedAt: entry?.renewedAt,
      now: new Date(this.clock.now()),
    };
  }

  /** The process's STS clients (eksSessions'); without eksSessions (tests), this controller's. */
  private stsClients(awsModule: AwsModule): StsClients {
    const aws = this.opts.aws ?? {};
    const make = () =>
      new awsModule.StsClients({
        ...(aws.baseCredentials ? { baseCredentials: aws.baseCredentials } : {}),
        ...(aws.stsEndpoint ? { stsEndpoint: aws.stsEndpoint } : {}),
        ...(aws.stsEndpoints ? { stsEndpoints: aws.stsEndpoints } : {}),
        ...(this.opts.proxy ? { proxy: this.opts.proxy } : {}),
        requestTimeoutMs: this.timeoutMs,
      });
    return this.opts.eksSessions?.stsClients(make) ?? (this.ownStsClients ??= make());
  }

  /** A new entry: the access object, and the health loop (first probe at once). */
  private create(name: string, access: AccessSpec, awsModule?: AwsModule): Entry {
    const countError = (err: unknown) =>
      this.requestErrors.inc({
        cluster: labelValue(name),
        code: String(httpStatusOf(err) ?? 'network'),
      });
    let entry: Entry;
    if (access.type === 'EKS') {
      const aws = this.opts.aws ?? {};
      if (!awsModule) throw new Error('internal: the AWS module was not loaded for an EKS cluster');
      const kept = this.opts.eksSessions?.take(name, access.eks);
      if (kept) this.log.debug({ cluster: name }, "reusing the previous term's AWS session");
      const eks =
        kept ??
        new awsModule.EksClusterAccess({
          cluster: access.eks,
          stsClients: this.stsClients(awsModule),
          ...(aws.eksEndpoint ? { eksEndpoint: aws.eksEndpoint } : {}),
          ...(aws.eksEndpoints ? { eksEndpoints: aws.eksEndpoints } : {}),
          ...(this.opts.proxy ? { proxy: this.opts.proxy } : {}),
          ...(aws.region ? { stsRegion: aws.region } : {}),
          ...(aws.roleDurationSeconds !== undefined
            ? { roleDurationSeconds: aws.roleDurationSeconds }
            : {}),
          ...(aws.refreshBeforeMs !== undefined ? { refreshBeforeMs: aws.refreshBeforeMs } : {}),
          ...(aws.tokenRefreshBeforeMs !== undefined
            ? { tokenRefreshBeforeMs: aws.tokenRefreshBeforeMs }
            : {}),
          ...(aws.roleSessionName ? { roleSessionName: aws.roleSessionName } : {}),
          requestTimeoutMs: this.timeoutMs,
        });
      entry = this.newEntry(
        name,
        access,
        () => eks.kubeAccess(),
        (err) => {
          countError(err);
          eks.reportRequestError(err);
        },
      );
      entry.eks = eks;
    } else if (access.type === 'InCluster') {
      entry = this.newEntry(name, access, this.opts.localTarget.kubeConfig, countError);
    } else {
      this.watchSecret(access, name);
      entry = this.newEntry(
        name,
        access,
        () => Promise.reject(new Error('not read yet')),
        countError,
      );
    }
    this.entries.set(name, entry);
    entry.loop = this.probeLoop(entry).catch((err: unknown) =>
      this.log.error({ cluster: name, err }, 'health loop crashed'),
    );
    this.log.info({ cluster: name, type: access.type }, 'cluster registered');
    return entry;
  }

  private newEntry(
    name: string,
    access: AccessSpec,
    kubeConfig: () => Promise<KubeAccess>,
    reportError: (err: unknown) => void,
  ): Entry {
    return {
      name,
      access,
      abort: new AbortController(),
      wake: () => {},
      kubeConfig,
      reportError,
      seeded: false,
      healthy: false,
    };
  }

  /** Add or replace the cluster's target when anything a mirror sees of it changed. */
  private register(entry: Entry, mc: MirrorCluster): void {
    const labels = { ...(mc.metadata.labels ?? {}) };
    const t = entry.target;
    if (
      t &&
      t.kubeConfig === entry.kubeConfig &&
      t.agentNamespace === entry.access.agentNamespace &&
      canonical(t.labels) === canonical(labels)
    ) {
      return;
    }
    const target: ClusterTarget = {
      name: entry.name,
      agentNamespace: entry.access.agentNamespace,
      labels,
      local: entry.access.type === 'InCluster',
      type: entry.access.type,
      kubeConfig: entry.kubeConfig,
      reportError: (err) => {
        entry.reportError(err);
        // A request to a cluster thought healthy failed: probe now, not in up to 30 s.
        if (entry.healthy) {
          entry.healthy = false;
          this.log.info(
            { cluster: entry.name, err: errorMessage(err) },
            'a request to the cluster failed; probing it now',
          );
          entry.wake();
        }
      },
    };
    entry.target = target;
    this.opts.registry.set(target);
  }

  /**
   * Stop the cluster's loop and access, and unregister it. Returns whether there was one. With
   * `keepSession` (this controller stops, the cluster stays), its AWS session is handed back.
   */
  private teardown(name: string, opts: { keepSession?: boolean } = {}): boolean {
    const e = this.entries.get(name);
    if (!e) return false;
    this.entries.delete(name);
    e.abort.abort();
    if (e.eks && e.access.type === 'EKS' && opts.keepSession && this.opts.eksSessions) {
      this.opts.eksSessions.keep(name, e.access.eks, e.eks);
    } else e.eks?.destroy();
    if (e.access.type === 'Kubeconfig') this.unwatchSecret(e.access, name);
    // Only what this controller registered: a successor (a new leadership term while this one
    // winds down) may have registered the cluster again since.
    const mine = e.target !== undefined && this.opts.registry.get(name) === e.target;
    if (e.access.type === 'InCluster') {
      if (mine) this.opts.registry.set(this.opts.localTarget);
    } else if (e.target) this.opts.registry.remove(name, e.target);
    return true;
  }

  // ---- kubeconfig Secrets -------------------------------------------------------------------------

  private watchSecret(access: AccessSpec & { type: 'Kubeconfig' }, cluster: string): void {
    const key = `${access.secret.namespace}/${access.secret.name}`;
    let w = this.secretWatches.get(key);
    if (!w) {
      const clusters = new Set<string>();
      const enqueue = () => {
        for (const c of clusters) this.reconciler.add(c);
      };
      const watcher = createWatcher<V1Secret>(
        this.opts.kubeConfig,
        {
          version: 'v1',
          plural: 'secrets',
          namespace: access.secret.namespace,
          fieldSelector: `metadata.name=${access.secret.name}`,
        },
        {
          resource: 'kubeconfig-secrets',
          resyncPeriodMs: DEFAULT_POLL_PERIOD_MS,
          ...watchTuning(this.opts.watchProgressDeadlineMs),
        },
      );
      w = { watcher, clusters };
      this.secretWatches.set(key, w);
      this.reconciler.watch(watcher, {
        onAdd: enqueue,
        onUpdate: enqueue,
        onDelete: enqueue,
        onListed: enqueue,
      });
    }
    w.clusters.add(cluster);
  }

  private unwatchSecret(access: AccessSpec & { type: 'Kubeconfig' }, cluster: string): void {
    const key = `${access.secret.namespace}/${access.secret.name}`;
    const w = this.secretWatches.get(key);
    if (!w) return;
    w.clusters.delete(cluster);
    if (w.clusters.size > 0) return;
    this.secretWatches.delete(key);
    void this.reconciler.unwatch(w.watcher);
  }

  /** Point the entry at the kubeconfig its Secret holds now (a new function when it changed). */
  private loadKubeconfig(entry: Entry): void {
    if (entry.access.type !== 'Kubeconfig') return;
    const { namespace, name, key } = entry.access.secret;
    const where = `Secret ${namespace}/${name}`;
    const w = this.secretWatches.get(`${namespace}/${name}`);
    let fingerprint: string;
    let kubeConfig: () => Promise<KubeAccess>;
    if (!w?.watcher.hasSynced()) {
      if (entry.kubeconfigFingerprint !== undefined) return;
      fingerprint = 'unread';
      kubeConfig = () =>
        Promise.reject(
          new Error(
            `the kubeconfig ${where} has not been read yet (can the hub list Secrets in ${namespace}?)`,
          ),
        );
    } else {
      const secret = w.watcher.get(name, namespace);
      const data = secret?.data?.[key];
      if (!secret) {
        fingerprint = 'missing';
        kubeConfig = rejecting(
          `kubeconfig ${where} not found: create it in the hub cluster with the kubeconfig under key "${key}"`,
        );
      } else if (!data) {
        fingerprint = `nokey`;
        kubeConfig = rejecting(
          `kubeconfig ${where} has no key "${key}" (spec.kubeconfigSecretRef.key)`,
        );
      } else {
        fingerprint = createHash('sha256').update(data).digest('hex');
        if (fingerprint === entry.kubeconfigFingerprint) return;
        const parsed = parseKubeconfig(
          Buffer.from(data, 'base64').toString('utf8'),
          `${where} (key "${key}")`,
          this.opts.proxy ? { proxy: this.opts.proxy } : {},
        );
        if (parsed.ok) {
          const kc = parsed.kubeConfig;
          kubeConfig = () => Promise.resolve(kc);
        } else {
          kubeConfig = rejecting(parsed.error);
        }
      }
    }
    if (fingerprint === entry.kubeconfigFingerprint) return;
    const first =
      entry.kubeconfigFingerprint === undefined || entry.kubeconfigFingerprint === 'unread';
    entry.kubeconfigFingerprint = fingerprint;
    entry.kubeConfig = kubeConfig;
    if (!first)
      this.log.info({ cluster: entry.name, secret: where }, 'kubeconfig changed; reconnecting');
    entry.wake();
  }

  // ---- health -------------------------------------------------------------------------------------

  private async probeLoop(entry: Entry): Promise<void> {
    const signal = entry.abort.signal;
    const a = entry.access;
    const ctx: ProbeContext = {
      cluster: entry.name,
      type: a.type,
      agentNamespace: a.agentNamespace,
      timeoutMs: this.timeoutMs,
      ...(a.type === 'EKS' ? { roleArn: a.eks.roleArn, eksName: a.eks.name } : {}),
      ...(a.type === 'Kubeconfig' ? { secret: `${a.secret.namespace}/${a.secret.name}` } : {}),
    };
    const client = new ProbeClient(this.timeoutMs);
    try {
      await this.probeEvery(entry, ctx, client, signal);
    } finally {
      client.close();
    }
  }

  private async probeEvery(
    entry: Entry,
    ctx: ProbeContext,
    client: ProbeClient,
    signal: AbortSignal,
  ): Promise<void> {
    while (!signal.aborted) {
      const result = await probeCluster(
        () => this.entryKubeConfig(entry),
        client,
        ctx,
        entry.reportError,
        () => this.clock.now(),
      );
      if (signal.aborted) return;
      entry.probe = result;
      // The API server answered: a later certificate or name failure is news, worth a prompt
      // re-describe (a refused connection waits an hour: EksClusterAccess.invalidateEndpoint).
      if (result.version?.ok) entry.eks?.endpointWorked();
      const renewTime = result.lease?.ok ? result.lease.lease?.renewTime : undefined;
      const renewed = renewTime ? Date.parse(renewTime) : NaN;
      if (Number.isFinite(renewed)) entry.renewedAt = Math.max(renewed, entry.renewedAt ?? 0);
      const next = nextProbe(result, entry.renewedAt, {
        now: this.clock.now(),
        intervalMs: this.intervalMs,
        graceMs: this.graceMs,
      });
      entry.healthy = next.healthy;
      this.reconciler.add(entry.name);
      const jittered = next.inMs * (0.9 + 0.2 * Math.random());
      await new Promise<void>((resolve) => {
        const wake = new AbortController();
        entry.wake = () => wake.abort();
        const both = AbortSignal.any([signal, wake.signal]);
        void sleep(this.clock, jittered, both).then(() => resolve());
      });
      entry.wake = () => {};
    }
  }

  /** The entry's KubeConfig; for EKS, a new KubeConfig (new endpoint or CA) re-registers it. */
  private async entryKubeConfig(entry: Entry): Promise<KubeAccess> {
    const kc = await entry.kubeConfig();
    if (entry.eks) {
      if (entry.eksKubeConfig && entry.eksKubeConfig !== kc) {
        const eks = entry.eks;
        // A new function: the target changes, so the cluster's connection is rebuilt with it.
        entry.kubeConfig = () => eks.kubeAccess();
        this.log.info({ cluster: entry.name }, 'EKS endpoint or CA changed; reconnecting');
      }
      entry.eksKubeConfig = kc;
    }
    return kc;
  }

  // ---- status -------------------------------------------------------------------------------------

  /** Report `next` (Events after the status write), and the cluster's readiness in the gauge. */
  private async writeStatus(
    mc: MirrorCluster,
    next: { status: MirrorClusterStatus; events: ClusterEvent[] },
  ): Promise<void> {
    const ready = readyOf(next.status);
    this.readiness.set(
      mc.metadata.name ?? '',
      ready?.reason === 'InvalidSpec'
        ? 'invalid'
        : ready?.status === 'True'
          ? 'ready'
          : ready?.status === 'False'
            ? 'not_ready'
            : 'unknown',
    );
    this.updateGauge();
    await this.writer.writeStatus(mc, next.status, next.events);
  }

  private updateGauge(): void {
    const counts: Record<string, number> = { ready: 0, not_ready: 0, unknown: 0, invalid: 0 };
    for (const s of this.readiness.values()) counts[s] = (counts[s] ?? 0) + 1;
    for (const [state, n] of Object.entries(counts)) this.stateGauge.set({ state }, n);
  }
}

function withDeliveries(
  next: { status: MirrorClusterStatus; events: ClusterEvent[] },
  deliveries: MirrorClusterStatus['deliveries'],
): { status: MirrorClusterStatus; events: ClusterEvent[] } {
  return deliveries ? { ...next, status: { ...next.status, deliveries } } : next;
}

function readyOf(status: MirrorClusterStatus | undefined) {
  return status?.conditions?.find((c) => c.type === CONDITION.ready);
}

function canonical(labels: Readonly<Record<string, string>>): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function rejecting(message: string): () => Promise<KubeAccess> {
  return () => Promise.reject(new Error(message));
}
