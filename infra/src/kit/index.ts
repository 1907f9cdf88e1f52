import { readFileSync } from 'node:fs';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { KubeConfig } from '@kubernetes/client-node';

import { startEksEmulator, type EksEmulator } from '../aws/eks-emulator.js';
import { startMoto, type MotoServer } from '../aws/moto.js';
import { startStsGate, type StsGate } from '../aws/sts-gate.js';
import { serviceAccountIssuer, startApiServer, type ApiServer } from './apiserver.js';
import { ensureKubeBinaries, KUBE_VERSION } from './binaries.js';
import { startEtcd, type Etcd } from './etcd.js';
import { KitError } from './errors.js';
import { makeClusterPki, type ClusterPki } from './pki.js';
import {
  findFreePort,
  isPortFree,
  onExit,
  removeDirSync,
  type ServiceProcess,
} from '../components/cache.js';

export { KitError } from './errors.js';
export { serviceAccountIssuer } from './apiserver.js';
export { ensureKubeBinaries, KUBE_VERSION, ETCD_VERSION } from './binaries.js';

export interface KitOptions {
  /** Cluster names, e.g. ['hub', 'follower-a', 'follower-b']. */
  clusters: string[];
  /** Working directory for certificates, kubeconfigs, logs and etcd data (default: a temp dir). */
  dir?: string;
  /**
   * Fixed API server ports: cluster i listens on portBase + i (default: free ports). The port of
   * a cluster that shares another's API server stays unused.
   */
  portBase?: number;
  /** AWS account id per cluster (default: 111111111111, 222222222222, ... in order). */
  accounts?: Record<string, string>;
  /**
   * Clusters served by another cluster's API server, by name: `{ 'follower-b': 'follower-a' }`
   * (both listed in `clusters`; the host must not share another's itself). So a fleet of many
   * EKS clusters needs only a few kube-apiservers: a sharing cluster is a cluster of its own for
   * AWS (its account, EKS cluster, access entries and tokens minted for its name, which the
   * host's API server authenticates with them), but has no certificates, API server or
   * ServiceAccount issuer of its own. Everything in Kubernetes is its host's: namespaces,
   * objects, RBAC, ServiceAccount tokens, and the groups access entries name in
   * kubernetesGroups; only the group the EKS emulator mints for each access entry is its own.
   * Default: none.
   */
  sharing?: Record<string, string>;
  region?: string;
  /**
   * AWS for the clusters (default true): moto as STS/IAM with one account per cluster, the EKS
   * emulator answering DescribeCluster and access entries, and every API server checking EKS
   * bearer tokens through the emulator's TokenReview webhook.
   */
  aws?: boolean;
  /**
   * AssumeRole sessions and EKS tokens expire after this many seconds instead of what was asked /
   * 15 minutes, so hours of credential rotation happen in minutes: the STS gate caps the
   * `Expiration` of AssumeRole and AssumeRoleWithWebIdentity answers at now + this, and the EKS
   * emulator's TokenReview webhook refuses tokens whose X-Amz-Date is older than this (as it
   * refuses an expired token). Default: unchanged (the asked duration; 15 minutes).
   */
  awsLifetimeSeconds?: number;
  /** Extra kube-apiserver flags for every cluster. */
  apiserverArgs?: string[];
  log?: (line: string) => void;
}

/**
 * One cluster. A cluster that shares another's API server (KitOptions.sharing) has its own name
 * and accountId; everything else (server, port, caPem, kubeconfigPath, dir, kubeConfig(),
 * running()) is its host's, and it cannot stop or start an API server (its host's is shared).
 */
export interface KitCluster {
  readonly name: string;
  /** The cluster whose API server this one is: its own name, or its host under sharing. */
  readonly host: string;
  readonly server: string;
  readonly port: number;
  readonly caPem: string;
  readonly accountId: string;
  readonly region: string;
  /** Admin kubeconfig (client certificate in system:masters) on disk. */
  readonly kubeconfigPath: string;
  readonly dir: string;
  /** A fresh admin KubeConfig for @kubernetes/client-node. */
  kubeConfig(): KubeConfig;
  /** Stops this cluster's API server (its data stays in etcd), e.g. to test an outage. */
  stopApiServer(): Promise<void>;
  /** Starts it again on the same address with the same certificates. */
  startApiServer(): Promise<void>;
  running(): boolean;
  /** Process id of its API server while it runs (e.g. to renice it in a benchmark). */
  apiServerPid(): number | undefined;
}

export interface KitAws {
  /**
   * STS and IAM (pass as `endpoint` to STS clients): moto behind the STS gate, which holds
   * AssumeRole to the role's trust policy (ExternalId included) like AWS; see aws/sts-gate.ts.
   */
  readonly stsEndpoint: string;
  /** moto itself, for administration that must bypass the gate (it forwards IAM unchanged). */
  readonly motoEndpoint: string;
  /** The EKS emulator (pass as `endpoint` to EKS clients). */
  readonly eksEndpoint: string;
  readonly region: string;
  /**
   * Starts (`down` true) or ends an outage of the STS or the EKS API. During an STS outage the
   * STS gate answers every request (IAM too; `motoEndpoint` still works) with HTTP 503
   * ServiceUnavailable. During an EKS outage the EKS API (DescribeCluster, access entries, ...)
   * answers 503 ServiceUnavailableException, while the API servers' TokenReview webhook keeps
   * working, as a real EKS API outage leaves the clusters' authenticator up.
   */
  outage(service: 'sts' | 'eks', down: boolean): void;
  /**
   * The endpoint DescribeCluster answers for `cluster` from now on (default: its API server),
   * e.g. a loopback proxy in front of it that a test can cut or stall. The serving certificate
   * names 127.0.0.1, so any loopback port works.
   */
  describeEndpoint(cluster: string, endpoint: string): void;
  /** How many requests that service refused because of an outage, since the kit started. */
  refused(service: 'sts' | 'eks'): number;
  /**
   * Calls counted by the emulators since the kit started, every one that reached them whatever
   * its answer (allowed or refused, outages included): `assumeRole` by role ARN (sts:AssumeRole
   * at the STS gate; one without a RoleArn is not counted), `describeCluster` by cluster name
   * (eks:DescribeCluster at the EKS emulator, unknown names included). A fresh copy each call.
   */
  calls(): { assumeRole: Record<string, number>; describeCluster: Record<string, number> };
}

export interface Kit {
  readonly dir: string;
  readonly aws: KitAws | undefined;
  /** Every cluster in the order of KitOptions.clusters, sharing ones included. */
  readonly clusters: readonly KitCluster[];
  readonly kubectl: string;
  /** The cluster of that name, or a KitError that lists the known ones. */
  cluster(name: string): KitCluster;
  /** Process ids of everything the kit runs (etcd, API servers, moto), each once. */
  pids(): number[];
  /**
   * Restarts the etcd under every cluster: stops it (SIGTERM, SIGKILL after 1 s: a graceful stop
   * waits for the API servers' watches), waits `downMs` (default 0), and starts it again on the
   * same data directory and the same client and peer URLs, resolving once it answers /health.
   * The API servers keep running and reconnect by themselves; until they have, requests to them
   * may fail for a few seconds. pids() names the new etcd afterwards (and no etcd while it is
   * down). Restarts run one at a time; stop() ends a pending `downMs` wait.
   */
  restartEtcd(downMs?: number): Promise<void>;
  stop(): Promise<void>;
}

const NAME = /^[a-z]([a-z0-9-]{0,30}[a-z0-9])?$/;

export function validateClusterNames(names: string[]): void {
  if (names.length === 0)
    throw new KitError('no clusters given: name at least one, e.g. --clusters hub,follower-a');
  const seen = new Set<string>();
  for (const n of names) {
    if (!NAME.test(n)) {
      throw new KitError(
        `invalid cluster name "${n}": use lowercase letters, digits and '-', starting with a letter (max 32)`,
      );
    }
    if (seen.has(n)) throw new KitError(`cluster "${n}" is named twice`);
    seen.add(n);
  }
}

/** Checks KitOptions.sharing against the cluster names (see there). */
export function validateSharing(names: string[], sharing: Record<string, string>): void {
  const known = `the clusters are ${names.join(', ')}`;
  for (const [name, host] of Object.entries(sharing)) {
    if (!names.includes(name)) {
      throw new KitError(
        `sharing names cluster "${name}", which is not in clusters (${known}): add it to clusters or remove it from sharing`,
      );
    }
    if (host === name) {
      throw new KitError(
        `cluster "${name}" cannot share its own API server: remove it from sharing`,
      );
    }
    if (!names.includes(host)) {
      throw new KitError(
        `cluster "${name}" shares the API server of "${host}", which is not in clusters (${known}): add "${host}" to clusters or share another's`,
      );
    }
    if (Object.hasOwn(sharing, host)) {
      throw new KitError(
        `cluster "${name}" shares the API server of "${host}", which shares that of "${sharing[host]}" itself: share "${sharing[host]}" instead`,
      );
    }
  }
}

/** 111111111111, 222222222222, ... 999999999999, then 100000000010, 100000000011, ... */
export function defaultAccount(index: number): string {
  return index < 9 ? String(index + 1).repeat(12) : String(100_000_000_000 + index + 1);
}

/**
 * Starts real local clusters: one etcd, and per cluster a kube-apiserver with RBAC, its own CA,
 * service-account token signing (TokenRequest works) and an admin kubeconfig. Nothing runs
 * besides the API servers: no controller-manager, so no garbage collection, and deleted
 * namespaces stay Terminating.
 */
export async function startKit(opts: KitOptions): Promise<Kit> {
  validateClusterNames(opts.clusters);
  validateSharing(opts.clusters, opts.sharing ?? {});
  /** Sharing cluster -> its host. */
  const sharedHost = new Map(Object.entries(opts.sharing ?? {}));
  const lifetime = opts.awsLifetimeSeconds;
  if (lifetime !== undefined && !(Number.isFinite(lifetime) && lifetime > 0)) {
    throw new KitError(`awsLifetimeSeconds must be a positive number of seconds, not ${lifetime}`);
  }
  const log = opts.log ?? (() => {});
  // A kit that made its own directory removes it when it stops (MIRRORHUB_KEEP_KIT=1 keeps it
  // for reading the logs); one given a directory leaves it alone.
  const ownDir = opts.dir === undefined && process.env.MIRRORHUB_KEEP_KIT !== '1';
  const dir = resolve(opts.dir ?? (await mkdtemp(join(tmpdir(), 'mirrorhub-kit-'))));
  const forgetDir = ownDir ? onExit(() => removeDirSync(dir)) : () => false;
  await mkdir(dir, { recursive: true });
  const ports = new Map<string, number>();
  for (const [i, name] of opts.clusters.entries()) {
    if (sharedHost.has(name)) continue;
    if (opts.portBase !== undefined) {
      const port = opts.portBase + i;
      if (!(await isPortFree(port))) {
        throw new KitError(
          `port ${port} for cluster ${name} is already in use: stop what listens there (ss -ltnp 'sport = :${port}') or pick another --port-base`,
        );
      }
      ports.set(name, port);
    } else {
      ports.set(name, await findFreePort());
    }
  }
  const bins = await ensureKubeBinaries();
  const region = opts.region ?? 'eu-west-1';
  let etcd: Etcd | undefined;
  let moto: MotoServer | undefined;
  let sts: StsGate | undefined;
  let eks: EksEmulator | undefined;
  /** The clusters with an API server of their own. */
  const servers: ClusterImpl[] = [];
  const clusters: KitCluster[] = [];
  const stopping = new AbortController();
  /** The pending etcd restart, if any: restarts run one at a time, stop() waits for them. */
  let etcdRestarts: Promise<void> = Promise.resolve();
  const stopAll = async () => {
    stopping.abort();
    await etcdRestarts;
    await Promise.all(servers.map((c) => c.stopApiServer()));
    await Promise.all([etcd?.proc.stop(), eks?.stop(), sts?.stop(), moto?.stop()]);
    if (ownDir) {
      forgetDir();
      await rm(dir, { recursive: true, force: true });
    }
  };
  try {
    if (opts.aws ?? true) {
      moto = await startMoto({ dir: join(dir, 'aws'), log });
      sts = await startStsGate({
        motoEndpoint: moto.endpoint,
        ...(lifetime !== undefined ? { sessionLifetimeSeconds: lifetime } : {}),
        log,
      });
      eks = await startEksEmulator({
        stsEndpoint: moto.endpoint,
        allowedStsHosts: [new URL(moto.endpoint).host, new URL(sts.endpoint).host],
        ...(lifetime !== undefined ? { tokenLifetimeSeconds: lifetime } : {}),
        log,
      });
    }
    etcd = await startEtcd(bins.etcd, join(dir, 'etcd'));
    const accountOf = (name: string) =>
      opts.accounts?.[name] ?? defaultAccount(opts.clusters.indexOf(name));
    const hostNames = [...ports.keys()];
    const pkis = await Promise.all(hostNames.map((n) => makeClusterPki(join(dir, n, 'pki'), n)));
    // IRSA: STS verifies each API server's ServiceAccount tokens with its signing key.
    for (const [i, name] of hostNames.entries()) {
      sts?.trustIssuer(serviceAccountIssuer(name), readFileSync(pkis[i]!.saPub, 'utf8'));
    }
    for (const [i, name] of hostNames.entries()) {
      servers.push(
        new ClusterImpl({
          name,
          dir: join(dir, name),
          port: ports.get(name)!,
          pki: pkis[i]!,
          accountId: accountOf(name),
          region,
          start: (c) =>
            startApiServer({
              bin: bins.kubeApiserver,
              name,
              dir: c.dir,
              port: c.port,
              etcdUrl: etcd!.url,
              pki: c.pki,
              webhookUrl: eks?.webhookUrl(name),
              extraArgs: opts.apiserverArgs,
            }),
        }),
      );
    }
    const started = Date.now();
    const newPort = opts.portBase === undefined ? findFreePort : undefined;
    await Promise.all(servers.map((c) => c.firstStart(newPort)));
    await Promise.all(
      servers.map((c) => writeFile(c.kubeconfigPath, c.kubeconfigYaml(), { mode: 0o600 })),
    );
    const serverOf = new Map(servers.map((c) => [c.name, c]));
    for (const name of opts.clusters) {
      const host = sharedHost.get(name);
      clusters.push(
        host === undefined
          ? serverOf.get(name)!
          : new SharedCluster(name, accountOf(name), serverOf.get(host)!),
      );
    }
    log(
      `${clusters.length} cluster(s) ready in ${((Date.now() - started) / 1000).toFixed(1)}s: ${clusters.map((c) => `${c.name}=${c.server}`).join(' ')}`,
    );
    // Hosts first: the emulator adds a sharing cluster only to a host it knows.
    for (const c of [...servers, ...clusters.filter((c) => c.host !== c.name)]) {
      eks?.addCluster({
        name: c.name,
        host: c.host,
        region,
        accountId: c.accountId,
        endpoint: c.server,
        caPem: c.caPem,
        version: KUBE_VERSION.replace(/^v(\d+\.\d+).*/, '$1'),
        admin: c.kubeConfig(),
      });
    }
  } catch (err) {
    await stopAll();
    throw err;
  }
  const byName = new Map(clusters.map((c) => [c.name, c]));
  const restartEtcd = async (downMs: number): Promise<void> => {
    if (stopping.signal.aborted) throw new KitError('cannot restart etcd: the kit is stopped');
    const old = etcd!;
    const down = Date.now();
    await old.proc.stop();
    if (downMs > 0) await sleep(downMs, undefined, { signal: stopping.signal }).catch(() => {});
    if (stopping.signal.aborted) return;
    try {
      etcd = await startEtcd(bins.etcd, join(dir, 'etcd'), old.ports);
    } catch (err) {
      throw new KitError(
        `etcd did not come back at ${old.url} (the API servers know only that address): ${(err as Error).message}`,
        { cause: err },
      );
    }
    log(`etcd restarted at ${etcd.url} after ${((Date.now() - down) / 1000).toFixed(1)}s down`);
  };
  const awsService = (service: 'sts' | 'eks') => {
    const s = service === 'sts' ? sts : service === 'eks' ? eks : undefined;
    if (!s) throw new KitError(`unknown AWS service "${String(service)}": use sts or eks`);
    return s;
  };
  return {
    dir,
    clusters,
    kubectl: bins.kubectl,
    cluster(name: string) {
      const c = byName.get(name);
      if (!c)
        throw new KitError(
          `unknown cluster "${name}": this kit has ${[...byName.keys()].join(', ')}`,
        );
      return c;
    },
    pids: () =>
      [etcd?.proc, ...servers.map((c) => c.proc())]
        .filter((p) => p !== undefined && p.exitReason() === undefined)
        .map((p) => p!.pid)
        .concat(moto ? [moto.pid] : []),
    restartEtcd(downMs = 0) {
      if (!(Number.isFinite(downMs) && downMs >= 0)) {
        return Promise.reject(
          new KitError(`restartEtcd: downMs must be a number >= 0, not ${downMs}`),
        );
      }
      const next = etcdRestarts.then(() => restartEtcd(downMs));
      etcdRestarts = next.catch(() => {});
      return next;
    },
    aws:
      moto && sts && eks
        ? {
            stsEndpoint: sts.endpoint,
            motoEndpoint: moto.endpoint,
            eksEndpoint: eks.endpoint,
            region,
            outage(service, down) {
              const s = awsService(service);
              if (s.available() === !down) return;
              s.setAvailable(!down);
              log(`${service.toUpperCase()} outage ${down ? 'begins' : 'ends'}`);
            },
            refused: (service) => awsService(service).refused(),
            calls: () => ({
              assumeRole: sts.assumeRoleCalls(),
              describeCluster: eks.describeClusterCalls(),
            }),
            describeEndpoint: (cluster, endpoint) => {
              if (!byName.has(cluster))
                throw new KitError(
                  `unknown cluster "${cluster}": this kit has ${[...byName.keys()].join(', ')}`,
                );
              eks.setEndpoint(cluster, endpoint);
            },
          }
        : undefined,
    stop: stopAll,
  };
}

interface ClusterInit {
  name: string;
  dir: string;
  port: number;
  pki: ClusterPki;
  accountId: string;
  region: string;
  start: (c: ClusterImpl) => Promise<ApiServer>;
}

class ClusterImpl implements KitCluster {
  readonly name: string;
  readonly dir: string;
  readonly pki: ClusterPki;
  readonly accountId: string;
  readonly region: string;
  readonly kubeconfigPath: string;
  /** Fixed once the API server first started: kubeconfigs and the EKS emulator name it. */
  private listenPort: number;
  private api: ApiServer | undefined;
  private readonly init: ClusterInit;

  constructor(init: ClusterInit) {
    this.init = init;
    this.name = init.name;
    this.dir = init.dir;
    this.listenPort = init.port;
    this.pki = init.pki;
    this.accountId = init.accountId;
    this.region = init.region;
    this.kubeconfigPath = join(init.dir, 'kubeconfig');
  }

  get host(): string {
    return this.name;
  }

  get port(): number {
    return this.listenPort;
  }

  get server(): string {
    return `https://127.0.0.1:${this.listenPort}`;
  }

  get caPem(): string {
    return this.pki.caPem;
  }

  kubeconfigYaml(): string {
    const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
    return [
      'apiVersion: v1',
      'kind: Config',
      `current-context: ${this.name}`,
      'clusters:',
      `- name: ${this.name}`,
      '  cluster:',
      `    server: ${this.server}`,
      `    certificate-authority-data: ${b64(this.pki.caPem)}`,
      'users:',
      `- name: ${this.name}-admin`,
      '  user:',
      `    client-certificate-data: ${b64(readFileSync(this.pki.adminCert))}`,
      `    client-key-data: ${b64(readFileSync(this.pki.adminKey))}`,
      'contexts:',
      `- name: ${this.name}`,
      `  context: {cluster: ${this.name}, user: ${this.name}-admin}`,
      '',
    ].join('\n');
  }

  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromString(this.kubeconfigYaml());
    return kc;
  }

  async startApiServer(): Promise<void> {
    if (this.running()) return;
    this.api = await this.init.start(this);
  }

  /**
   * The first start. A free port found earlier can be taken by another process before the API
   * server binds it (moto and etcd start in between, other test runs share the machine): with
   * `newPort`, such a start is retried on another free port, a few times.
   */
  async firstStart(newPort?: () => Promise<number>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.startApiServer();
      } catch (err) {
        if (!newPort || attempt >= 4 || !/address already in use/.test(String(err))) throw err;
        this.listenPort = await newPort();
      }
    }
  }

  async stopApiServer(): Promise<void> {
    await this.api?.proc.stop();
    this.api = undefined;
  }

  running(): boolean {
    return this.api !== undefined && this.api.proc.exitReason() === undefined;
  }

  proc(): ServiceProcess | undefined {
    return this.api?.proc;
  }

  apiServerPid(): number | undefined {
    return this.running() ? this.api!.proc.pid : undefined;
  }
}

/** A cluster under KitOptions.sharing: its own name and account, its host's API server. */
class SharedCluster implements KitCluster {
  constructor(
    readonly name: string,
    readonly accountId: string,
    private readonly hostCluster: ClusterImpl,
  ) {}

  get host(): string {
    return this.hostCluster.name;
  }
  get server(): string {
    return this.hostCluster.server;
  }
  get port(): number {
    return this.hostCluster.port;
  }
  get caPem(): string {
    return this.hostCluster.caPem;
  }
  get region(): string {
    return this.hostCluster.region;
  }
  get kubeconfigPath(): string {
    return this.hostCluster.kubeconfigPath;
  }
  get dir(): string {
    return this.hostCluster.dir;
  }

  kubeConfig(): KubeConfig {
    return this.hostCluster.kubeConfig();
  }

  apiServerPid(): number | undefined {
    return this.hostCluster.apiServerPid();
  }

  running(): boolean {
    return this.hostCluster.running();
  }

  // Stopping the host's API server from here would take down every cluster it serves.
  stopApiServer(): Promise<void> {
    return Promise.reject(this.notMine('stop'));
  }

  startApiServer(): Promise<void> {
    return Promise.reject(this.notMine('start'));
  }

  private notMine(verb: string): KitError {
    return new KitError(
      `cluster ${this.name} shares the API server of ${this.host}: ${verb} ${this.host}`,
    );
  }
}
