/**
 * The engine benchmark (one cluster): 2,000 namespaces, 10,000 unrelated Secrets, 200 mirrors
 * fanning out to 100 namespaces each; the hub and agent run as their real entry points, so the
 * RSS figures are theirs alone.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';

import type { Kit } from '@mirrorhub/infra/kit/index';

import { CONTENT_TYPE, corePath, RestClient } from '@mirrorhub/shared/kit/k8s/rest';

import { installCrds } from '../support/crds.js';
import { clusterViewerToken } from '../support/viewers.js';
import { openViewers, type ViewerStats } from './dashboard.js';
import { startOneCluster, startOneProcess, until } from './procs.js';
import {
  apiRequestCounts,
  certLike,
  cpuSeconds,
  createTlsMirror,
  fmtMs,
  peakRssMb,
  percentile,
  phaseCost,
  phaseCostText,
  pool,
  type PhaseCost,
  rssMb,
  rssSplitMb,
  untilQuiet,
  watchCopies,
  type ApiCounts,
  type ApiServerTls,
  type CopyWatch,
} from './util.js';
import type { ProcessNodeOptions } from './node-options.js';

export interface EngineBenchOptions {
  namespaces: number;
  mirrors: number;
  /** Namespaces per mirror = namespaces / shards. */
  shards: number;
  noiseStart: number;
  noiseMid: number;
  noiseEnd: number;
  newNamespaceSamples: number;
  updateSamples: number;
  steadyMs: number;
  /** NODE_OPTIONS of each process (by default the charts' `nodeOptions`, see node-options.ts). */
  nodeOptions: ProcessNodeOptions;
  /**
   * `separate` (default): `node hub/dist/main.js` and `node agent/dist/main.js`, as the two charts
   * run them. `one-process`: `node standalone/dist/main.js`, as the hub chart runs it with
   * localAgent.inProcess (the hub's NODE_OPTIONS); `hub` and `agent` figures are then the same
   * process's.
   */
  mode?: 'separate' | 'one-process';
  root: string;
  log: (line: string) => void;
}

export interface EngineBenchResult {
  options: Omit<EngineBenchOptions, 'log' | 'root'>;
  initialFanOutMs: number;
  /** The fan-out until neither process has written for 2 s (its status writes included). */
  fanOutCost: PhaseCost;
  copies: number;
  /** `cost`: where the phase's time went (CPU per process, API requests), see `phaseCost`. */
  newNamespace: {
    p50: number;
    p99: number;
    samples: number;
    cost: PhaseCost;
    /** The same, with the namespaces created back to back. */
    burst: { p50: number; p99: number };
  };
  sourceUpdate: {
    p50: number;
    p99: number;
    samples: number;
    copiesEach: number;
    cost: PhaseCost;
  };
  rss: { hub: Record<string, number>; agent: Record<string, number> };
  /** The same moments, split into anonymous and file-backed (see rssSplitMb). */
  rssSplit: {
    hub: Record<string, { anon: number; file: number }>;
    agent: Record<string, { anon: number; file: number }>;
  };
  /** Peak resident set over the whole run (VmHWM: start-up, fan-out and bursts included). */
  peakRss: { hub: number; agent: number };
  steadyPerMinute: ApiCounts;
  /**
   * The API server's own write speed in the same run, at the concurrency mirrorhub writes with:
   * creates of copy-sized Secrets, and updates of one source's worth of them.
   */
  raw: {
    creates: number;
    createsPerSecond: number;
    /** The same creates as server-side apply, as the agent creates copies. */
    appliedCreatesPerSecond: number;
    /** CPU ms kube-apiserver and etcd spent per write in the POST and the apply create loops. */
    serverCpuMsPerCreate: { post: number; apply: number };
    createConcurrency: number;
    update: { p50: number; p99: number; samples: number; copiesEach: number };
    /** The same updates as server-side apply with force, as the agent writes copies. */
    applyUpdate: { p50: number; p99: number };
    updateConcurrency: number;
    /**
     * The floor of "new namespace -> its copies": one client creates the namespace, then applies
     * its copies all at once, with no watch and no controller between (ms to the last write).
     */
    newNamespace: { p50: number; p99: number; samples: number; copiesEach: number };
  };
  /** 5 dashboards open through source updates: what they fetched, and the hub's RSS then. */
  dashboard: ViewerStats & { hubRssMb: number; updates: number };
}

const SYSTEM_NS = 'mirrorhub-system';
/**
 * Writes mirrorhub has in flight: the agent's REST client opens at most 32 connections (many
 * deliveries at once, the initial fan-out) and writes one delivery's copies 16 at a time (one
 * source's update).
 */
const FAN_OUT_CONCURRENCY = 32;
const DELIVERY_CONCURRENCY = 16;
const SRC_NS = 'bench-src';

export async function runEngineBench(kit: Kit, o: EngineBenchOptions): Promise<EngineBenchResult> {
  const cluster = await prepareEngineCluster(kit, {
    namespaces: o.namespaces,
    shards: o.shards,
    noise: o.noiseStart,
    log: o.log,
  });
  const { hubCluster, kc, core, tls, addNoise } = cluster;
  const log = o.log;
  /**
   * A new certificate in source src-<i>: every copy of it changes. Returns when the write was
   * sent (after reading the source: the raw loops' writes need no read either).
   */
  const updateSource = async (i: number, version: number) => {
    const cur = await core.readNamespacedSecret({ name: `src-${i}`, namespace: SRC_NS });
    const sent = Date.now();
    await core.replaceNamespacedSecret({
      name: `src-${i}`,
      namespace: SRC_NS,
      body: {
        ...cur,
        data: undefined,
        stringData: { 'tls.crt': certLike(i, version), 'tls.key': 'k'.repeat(1700) },
      },
    });
    return sent;
  };

  // The API server's own speed first, in the state the fan-out meets (before mirrorhub runs).
  const { apiServer: apiServerPid, etcd: etcdPid } = cluster.serverPids;
  const raw = await rawWrites(kc, {
    serverPids: [apiServerPid, etcdPid],
    creates: Math.min(5000, o.mirrors * (o.namespaces / o.shards)),
    copiesEach: o.namespaces / o.shards,
    samples: o.updateSamples,
    newNamespaces: o.newNamespaceSamples,
    copiesPerNamespace: o.mirrors / o.shards,
    log,
  });
  const one = o.mode === 'one-process';
  const { hub, agent, hubPort, agentPort, procs } = one
    ? await startOneProcess(o.root, hubCluster.kubeconfigPath, o.nodeOptions.hub)
    : await startOneCluster(o.root, hubCluster.kubeconfigPath, o.nodeOptions);
  try {
    // Watch copies (metadata only) to timestamp every change the agent makes.
    const copyWatch = await watchCopies(kc, { resource: 'bench-copies' });
    const { seen, listeners } = copyWatch;

    const costOf = () =>
      phaseCost(
        {
          'kube-apiserver': apiServerPid,
          etcd: etcdPid,
          ...(one ? { 'hub + agent': hub.pid! } : { hub: hub.pid!, agent: agent.pid! }),
          benchmark: process.pid,
        },
        hubCluster.server,
        tls,
        { hub: hubPort, agent: agentPort },
      );
    const fanOutCostStart = await costOf();
    const { ms: initialFanOutMs, copies: expected } = await fanOut(cluster, copyWatch, o);
    // Until the mirrors' status says so too: the fan-out's status writes are part of its cost.
    await untilQuiet({ hub: hubPort, agent: agentPort }, 2_000, 120_000);
    const fanOutCost = await fanOutCostStart();
    logCost(log, 'initial fan-out', fanOutCost);

    await sleep(5_000);
    const rssAt = async (label: string) => {
      rss.hub[label] = rssMb(hub.pid!);
      rss.agent[label] = rssMb(agent.pid!);
      const split = { hub: rssSplitMb(hub.pid!), agent: rssSplitMb(agent.pid!) };
      rssSplit.hub[label] = split.hub;
      rssSplit.agent[label] = split.agent;
      // V8 heap in use (live objects and not yet collected garbage), to size --max-old-space-size.
      const [hubHeap, agentHeap] = await Promise.all([heapUsedMb(hubPort), heapUsedMb(agentPort)]);
      log(
        one
          ? `RSS with ${label}: one process ${rss.hub[label]!.toFixed(0)} MB (anonymous ${split.hub.anon.toFixed(0)} MB, heap used ${hubHeap})`
          : `RSS with ${label}: hub ${rss.hub[label]!.toFixed(0)} MB (anonymous ${split.hub.anon.toFixed(0)} MB, heap used ${hubHeap}), ` +
              `agent ${rss.agent[label]!.toFixed(0)} MB (anonymous ${split.agent.anon.toFixed(0)} MB, heap used ${agentHeap})`,
      );
    };
    const rss: EngineBenchResult['rss'] = { hub: {}, agent: {} };
    const rssSplit: EngineBenchResult['rssSplit'] = { hub: {}, agent: {} };
    await rssAt(`${o.noiseStart} unrelated Secrets`);

    await addNoise(o.noiseMid);
    await sleep(3_000);

    const steadyPerMinute = await steadyRequests(cluster, o.steadyMs, log);

    const newNamespaces = (prefix: string, samples: number, gapMs: number) =>
      newNamespaceLatencies(cluster, copyWatch, { ...o, prefix, samples, gapMs });
    // One at a time on a quiet system (as a namespace is created), then back to back (a burst
    // of new namespaces: each meets the previous one's status writes).
    log(`new namespace -> copy, ${o.newNamespaceSamples} samples 1 s apart`);
    let cost = await costOf();
    const newNs = await newNamespaces('bench-new', o.newNamespaceSamples, 1_000);
    const newNsCost = await cost();
    logCost(log, 'new namespaces', newNsCost);
    log(`new namespace -> copy, ${o.newNamespaceSamples} samples back to back`);
    const burst = await newNamespaces('bench-burst', o.newNamespaceSamples, 0);
    // The burst's mirrors' progress (their namespace counts) is written up to a coalescing
    // period after their copies landed: counted in the next phase it was 82 status writes of
    // mirrors no update touched, all in the phase's first second (one-process run, LOG_LEVEL
    // info). The updates' costs start once neither process has written for 2 s.
    await untilQuiet({ hub: hubPort, agent: agentPort }, 2_000, 30_000);

    log(`source update -> all copies, ${o.updateSamples} samples`);
    cost = await costOf();
    const updates: number[] = [];
    for (let k = 0; k < o.updateSamples; k++) {
      const i = k % o.mirrors;
      const targets = [...seen.entries()].filter(([key]) => key.endsWith(`/src-${i}`));
      const old = new Map(targets.map(([key, v]) => [key, v.hash]));
      const start = await updateSource(i, k + 1);
      const changed = () =>
        [...old.keys()].filter((key) => seen.get(key)?.hash !== old.get(key)).length;
      await until(
        () => changed() >= old.size,
        listeners,
        60_000,
        () => `${changed()}/${old.size} copies of src-${i} updated`,
      );
      updates.push(Math.max(...[...old.keys()].map((key) => seen.get(key)!.at)) - start);
      if (process.env.MIRRORHUB_BENCH_TRACE) {
        const at = [...old.keys()].map((key) => seen.get(key)!.at - start).sort((a, b) => a - b);
        log(`update of src-${i} at ${new Date(start).toISOString()}: ${at.join(' ')}`);
      }
    }

    const updateCost = await cost();
    logCost(log, 'source updates', updateCost);

    // As after the fan-out: the resident set once the processes are idle again, not in the
    // middle of the last update's writes (peakRss shows the bursts).
    await sleep(5_000);
    log(`adding unrelated Secrets up to ${o.noiseEnd}`);
    await rssAt(`${o.noiseMid} unrelated Secrets`);
    await addNoise(o.noiseEnd);
    await sleep(10_000);
    await rssAt(`${o.noiseEnd} unrelated Secrets`);

    // The dashboard on the same hub: 5 viewers hold the event stream open and fetch the whole
    // snapshot (200 mirrors, every count) on each change, while sources change every 2 s.
    const dashboardUpdates = 10;
    log(`5 dashboards open through ${dashboardUpdates} source updates`);
    const viewers = await openViewers(
      `http://127.0.0.1:${hubPort}`,
      await clusterViewerToken(kc, SYSTEM_NS, 'bench-viewer'),
      5,
    );
    for (let k = 0; k < dashboardUpdates; k++) {
      await updateSource(k % o.mirrors, 1000 + k);
      await sleep(2_000);
    }
    await sleep(5_000);
    const withViewers = `${o.noiseEnd} unrelated Secrets, 5 dashboards open`;
    await rssAt(withViewers);
    const viewerStats = await viewers.stop();
    log(
      `dashboard: ${viewerStats.fetches} snapshots (${(viewerStats.snapshotBytes / 1024).toFixed(0)} KB each) ` +
        `p50 ${fmtMs(viewerStats.fetchP50Ms)} p99 ${fmtMs(viewerStats.fetchP99Ms)}, ${viewerStats.changes} changes streamed`,
    );
    const peakRss = { hub: peakRssMb(hub.pid!), agent: peakRssMb(agent.pid!) };
    log(
      one
        ? `peak RSS: one process ${peakRss.hub.toFixed(0)} MB`
        : `peak RSS: hub ${peakRss.hub.toFixed(0)} MB, agent ${peakRss.agent.toFixed(0)} MB`,
    );

    await copyWatch.stop();
    return {
      options: { ...o, log: undefined, root: undefined } as unknown as EngineBenchResult['options'],
      initialFanOutMs,
      fanOutCost,
      copies: expected,
      newNamespace: {
        p50: percentile(newNs, 50),
        p99: percentile(newNs, 99),
        samples: newNs.length,
        cost: newNsCost,
        burst: { p50: percentile(burst, 50), p99: percentile(burst, 99) },
      },
      sourceUpdate: {
        p50: percentile(updates, 50),
        p99: percentile(updates, 99),
        samples: updates.length,
        copiesEach: o.namespaces / o.shards,
        cost: updateCost,
      },
      rss,
      rssSplit,
      peakRss,
      steadyPerMinute,
      dashboard: { ...viewerStats, hubRssMb: rss.hub[withViewers]!, updates: dashboardUpdates },
      raw,
    };
  } finally {
    for (const p of procs) p.kill('SIGTERM');
  }
}

/** The cluster an engine benchmark runs in, before mirrorhub starts. */
export interface EngineCluster {
  hubCluster: ReturnType<Kit['cluster']>;
  kc: KubeConfig;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  tls: ApiServerTls;
  /** The kube-apiserver and etcd under the benchmark (their CPU is the server's cost). */
  serverPids: { apiServer: number; etcd: number };
  /** The namespaces mirrors select, `bench-NNNN`, namespace j labelled shard=j % shards. */
  nsNames: string[];
  /** Adds unrelated Secrets (~512 B, spread over the namespaces) until `upTo` exist. */
  addNoise(upTo: number): Promise<void>;
}

/**
 * The CRDs, the agent and source namespaces, `namespaces` namespaces labelled by shard, and
 * `noise` unrelated Secrets: the state a fan-out meets.
 */
export async function prepareEngineCluster(
  kit: Kit,
  o: { namespaces: number; shards: number; noise: number; log: (line: string) => void },
): Promise<EngineCluster> {
  const hubCluster = kit.cluster('hub');
  const kc = hubCluster.kubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const tls = {
    ca: hubCluster.caPem,
    cert: readFileSync(join(hubCluster.dir, 'pki/admin.crt')),
    key: readFileSync(join(hubCluster.dir, 'pki/admin.key')),
  };
  await installCrds(kc, 'mirrorhub-hub');
  for (const ns of [SYSTEM_NS, SRC_NS])
    await core.createNamespace({ body: { metadata: { name: ns } } });

  o.log(`creating ${o.namespaces} namespaces and ${o.noise} unrelated Secrets`);
  const nsNames = Array.from(
    { length: o.namespaces },
    (_, j) => `bench-${String(j).padStart(4, '0')}`,
  );
  await pool(nsNames, 32, (name, j) =>
    core.createNamespace({ body: { metadata: { name, labels: { shard: String(j % o.shards) } } } }),
  );
  let noise = 0;
  const addNoise = async (upTo: number) => {
    const batch = Array.from({ length: upTo - noise }, (_, k) => noise + k);
    await pool(batch, 32, (k) =>
      core.createNamespacedSecret({
        namespace: nsNames[k % nsNames.length]!,
        body: { metadata: { name: `unrelated-${k}` }, stringData: { value: 'x'.repeat(512) } },
      }),
    );
    noise = upTo;
  };
  await addNoise(o.noise);
  const [etcdPid, apiServerPid] = kit.pids();
  return {
    hubCluster,
    kc,
    core,
    custom,
    tls,
    serverPids: { apiServer: apiServerPid!, etcd: etcdPid! },
    nsNames,
    addNoise,
  };
}

/**
 * Creates `mirrors` sources and SecretMirrors (mirror i selects shard i % shards) and waits
 * until the copy watch has seen every copy: ms from the first create to the last copy.
 */
export async function fanOut(
  c: Pick<EngineCluster, 'core' | 'custom'>,
  watch: Pick<CopyWatch, 'seen' | 'listeners'>,
  o: { namespaces: number; mirrors: number; shards: number; log: (line: string) => void },
): Promise<{ ms: number; copies: number }> {
  const { seen, listeners } = watch;
  o.log(`creating ${o.mirrors} sources and mirrors (${o.namespaces / o.shards} namespaces each)`);
  const t0 = Date.now();
  await pool(
    Array.from({ length: o.mirrors }, (_, i) => i),
    16,
    (i) => createTlsMirror(c, SRC_NS, i, { shard: String(i % o.shards) }),
  );
  const copies = o.mirrors * (o.namespaces / o.shards);
  await until(
    () => seen.size >= copies,
    listeners,
    30 * 60_000,
    () => `${seen.size}/${copies} copies`,
  );
  const ms = Date.now() - t0;
  o.log(`${copies} copies in ${fmtMs(ms)}`);
  return { ms, copies };
}

/**
 * Creates `samples` namespaces `gapMs` apart, namespace k in shard k % shards: ms from each
 * create to the last of its copies (one of each mirror selecting that shard).
 */
export async function newNamespaceLatencies(
  c: Pick<EngineCluster, 'core'>,
  watch: Pick<CopyWatch, 'seen' | 'listeners'>,
  o: {
    mirrors: number;
    shards: number;
    prefix: string;
    samples: number;
    gapMs: number;
    log: (line: string) => void;
  },
): Promise<number[]> {
  const { seen, listeners } = watch;
  // Mirror i selects shard i % shards: a namespace in shard h gets a copy of each src-i.
  const copiesIn = (name: string, shard: number) =>
    Array.from({ length: o.mirrors }, (_, i) => i)
      .filter((i) => i % o.shards === shard)
      .map((i) => `${name}/src-${i}`);
  const out: number[] = [];
  for (let k = 0; k < o.samples; k++) {
    await sleep(o.gapMs);
    const name = `${o.prefix}-${k}`;
    const expected = copiesIn(name, k % o.shards);
    const start = Date.now();
    await c.core.createNamespace({
      body: { metadata: { name, labels: { shard: String(k % o.shards) } } },
    });
    const count = () => expected.filter((key) => seen.has(key)).length;
    await until(
      () => count() >= expected.length,
      listeners,
      60_000,
      () => `${count()}/${expected.length} copies in ${name}`,
    );
    const at = expected.map((key) => seen.get(key)!.at - start).sort((a, b) => a - b);
    if (process.env.MIRRORHUB_BENCH_TRACE) o.log(`${name}: ${at.join(' ')}`);
    out.push(at.at(-1)!);
  }
  return out;
}

/**
 * API requests per minute over `ms` of steady state, from the API server's own counts (our own
 * /metrics scrape is one GET; everything else is the hub and the agent).
 */
export async function steadyRequests(
  c: Pick<EngineCluster, 'hubCluster' | 'tls'>,
  ms: number,
  log: (line: string) => void,
): Promise<ApiCounts> {
  log(`steady state: counting API requests for ${ms / 1000}s`);
  const before = await apiRequestCounts(c.hubCluster.server, c.tls);
  await sleep(ms);
  const after = await apiRequestCounts(c.hubCluster.server, c.tls);
  const perMin = (a: number, b: number) => ((b - a) * 60_000) / ms;
  return {
    reads: perMin(before.reads, after.reads),
    writes: perMin(before.writes, after.writes),
    leaseWrites: perMin(before.leaseWrites, after.leaseWrites),
    watches: perMin(before.watches, after.watches),
  };
}

function logCost(log: (line: string) => void, phase: string, c: PhaseCost): void {
  const { cpu, requests, writes } = phaseCostText(c, 6);
  log(
    `${phase}: CPU seconds ${cpu}; API requests by time served: ${requests}; mirrorhub's writes: ${writes}`,
  );
}

/**
 * Writes shaped like the copies, with the agent's own HTTP client and connection limit, into
 * namespace bench-raw, and how fast the API server takes them: the loops every raw figure is
 * measured with.
 */
async function rawLoops(kc: KubeConfig, serverPids: number[], creates: number) {
  const rest = new RestClient(kc, { maxSockets: FAN_OUT_CONCURRENCY });
  const namespace = 'bench-raw';
  const secrets = corePath('secrets', namespace);
  await rest.post(corePath('namespaces'), { metadata: { name: namespace } });
  const secret = (name: string, j: number, version: number, ns = namespace) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: ns },
    type: 'kubernetes.io/tls',
    stringData: { 'tls.crt': certLike(j, version), 'tls.key': 'k'.repeat(1700) },
  });
  // The agent's write: server-side apply with force (apply.ts), so each ratio splits into what
  // apply costs the API server and what mirrorhub adds.
  const apply = (name: string, j: number, version: number, ns = namespace) =>
    rest.patch(
      `${corePath('secrets', ns)}/${name}`,
      secret(name, j, version, ns),
      CONTENT_TYPE.apply,
      { fieldManager: 'bench-raw', force: true },
    );
  const ids = Array.from({ length: creates }, (_, j) => j);
  const serverCpu = () => serverPids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
  /**
   * Creates per second, one write for each id, FAN_OUT_CONCURRENCY at a time, and the CPU ms the
   * API server and etcd spent per write.
   */
  const createRate = async (write: (j: number) => Promise<unknown>) => {
    const [t0, cpu0] = [Date.now(), serverCpu()];
    await pool(ids, FAN_OUT_CONCURRENCY, write);
    const [ms, cpu] = [Date.now() - t0, serverCpu() - cpu0];
    return { perSecond: creates / (ms / 1000), serverCpuMs: (cpu * 1000) / creates };
  };
  /** The creates as POSTs (`raw-<j>`) and as server-side apply (`rawa-<j>`). */
  const posts = () => createRate((j) => rest.post(secrets, secret(`raw-${j}`, j, 0)));
  const applies = () => createRate((j) => apply(`rawa-${j}`, j, 0));
  /** Gone again before mirrorhub starts: the run's unrelated Secrets are the ones it says. */
  const cleanUp = async () => {
    await pool(ids, FAN_OUT_CONCURRENCY, (j) => rest.delete(`${secrets}/raw-${j}`));
    await pool(ids, FAN_OUT_CONCURRENCY, (j) => rest.delete(`${secrets}/rawa-${j}`));
  };
  return { rest, secrets, secret, apply, ids, posts, applies, cleanUp };
}

/** The raw create rates alone (POST and apply), for benchmarks that compare a fan-out only. */
export async function rawCreateRates(
  kc: KubeConfig,
  o: { serverPids: number[]; creates: number; log: (line: string) => void },
): Promise<
  Pick<
    EngineBenchResult['raw'],
    | 'creates'
    | 'createsPerSecond'
    | 'appliedCreatesPerSecond'
    | 'serverCpuMsPerCreate'
    | 'createConcurrency'
  >
> {
  const loops = await rawLoops(kc, o.serverPids, o.creates);
  const posts = await loops.posts();
  const applied = await loops.applies();
  await loops.cleanUp();
  loops.rest.close();
  o.log(
    `raw API server: ${o.creates} creates at ${posts.perSecond.toFixed(0)}/s, as apply ${applied.perSecond.toFixed(0)}/s (concurrency ${FAN_OUT_CONCURRENCY}; API server + etcd CPU ${posts.serverCpuMs.toFixed(2)} / ${applied.serverCpuMs.toFixed(2)} ms a write)`,
  );
  return {
    creates: o.creates,
    createsPerSecond: posts.perSecond,
    appliedCreatesPerSecond: applied.perSecond,
    serverCpuMsPerCreate: { post: posts.serverCpuMs, apply: applied.serverCpuMs },
    createConcurrency: FAN_OUT_CONCURRENCY,
  };
}

/**
 * A raw create loop and update loop against the same API server, with Secrets shaped like the
 * copies, at the concurrency mirrorhub uses: what "as fast as the API server" means here.
 */
async function rawWrites(
  kc: KubeConfig,
  o: {
    /** kube-apiserver and etcd: their CPU per write is what each loop costs the server. */
    serverPids: number[];
    creates: number;
    copiesEach: number;
    samples: number;
    newNamespaces: number;
    copiesPerNamespace: number;
    log: (line: string) => void;
  },
): Promise<EngineBenchResult['raw']> {
  const { creates, copiesEach, samples, log } = o;
  const { rest, secrets, secret, apply, ids, ...loops } = await rawLoops(kc, o.serverPids, creates);
  /** ms per round of rewriting one source's worth of Secrets, DELIVERY_CONCURRENCY at a time. */
  const updateRounds = async (write: (j: number, round: number) => Promise<unknown>) => {
    const out: number[] = [];
    for (let k = 0; k < samples; k++) {
      const start = Date.now();
      await pool(ids.slice(0, copiesEach), DELIVERY_CONCURRENCY, (j) => write(j, k));
      out.push(Date.now() - start);
    }
    return out;
  };
  const posts = await loops.posts();
  const updates = await updateRounds((j, k) =>
    rest.put(`${secrets}/raw-${j}`, secret(`raw-${j}`, j, k + 1)),
  );
  // Apply takes the fields over from the PUTs once, outside the timed rounds.
  await pool(ids.slice(0, copiesEach), DELIVERY_CONCURRENCY, (j) =>
    apply(`raw-${j}`, j, samples + 1),
  );
  const applies = await updateRounds((j, k) => apply(`raw-${j}`, j, samples + k + 2));
  const applied = await loops.applies();
  // The floor of a new namespace's copies. The namespaces carry no shard label (no mirror selects
  // them) and stay, empty: without a controller-manager a deleted namespace stays Terminating.
  const floor: number[] = [];
  const copyIds = Array.from({ length: o.copiesPerNamespace }, (_, j) => j);
  for (let k = 0; k < o.newNamespaces; k++) {
    const ns = `bench-floor-${k}`;
    const start = Date.now();
    await rest.post(corePath('namespaces'), { metadata: { name: ns } });
    await Promise.all(copyIds.map((j) => apply(`src-${j}`, j, 0, ns)));
    floor.push(Date.now() - start);
    await sleep(100);
  }
  await loops.cleanUp();
  for (let k = 0; k < o.newNamespaces; k++) {
    await pool(copyIds, FAN_OUT_CONCURRENCY, (j) =>
      rest.delete(`${corePath('secrets', `bench-floor-${k}`)}/src-${j}`),
    );
  }
  rest.close();
  log(
    `raw API server: ${creates} creates at ${posts.perSecond.toFixed(0)}/s, as apply ${applied.perSecond.toFixed(0)}/s (concurrency ${FAN_OUT_CONCURRENCY}; API server + etcd CPU ${posts.serverCpuMs.toFixed(2)} / ${applied.serverCpuMs.toFixed(2)} ms a write), ` +
      `${copiesEach} updates p50 ${fmtMs(percentile(updates, 50))}, as apply ${fmtMs(percentile(applies, 50))} (concurrency ${DELIVERY_CONCURRENCY}), ` +
      `a namespace and its ${o.copiesPerNamespace} Secrets p50 / p99 ${fmtMs(percentile(floor, 50))} / ${fmtMs(percentile(floor, 99))}`,
  );
  return {
    creates,
    createsPerSecond: posts.perSecond,
    appliedCreatesPerSecond: applied.perSecond,
    serverCpuMsPerCreate: { post: posts.serverCpuMs, apply: applied.serverCpuMs },
    createConcurrency: FAN_OUT_CONCURRENCY,
    update: {
      p50: percentile(updates, 50),
      p99: percentile(updates, 99),
      samples: updates.length,
      copiesEach,
    },
    applyUpdate: { p50: percentile(applies, 50), p99: percentile(applies, 99) },
    updateConcurrency: DELIVERY_CONCURRENCY,
    newNamespace: {
      p50: percentile(floor, 50),
      p99: percentile(floor, 99),
      samples: floor.length,
      copiesEach: o.copiesPerNamespace,
    },
  };
}

/** `mirrorhub_nodejs_heap_size_used_bytes` from a process's /metrics (undefined if absent). */
export async function heapUsedBytes(port: number): Promise<number | undefined> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const m = /^mirrorhub_nodejs_heap_size_used_bytes(?:\{[^}]*\})? (\S+)$/m.exec(text);
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** The same in MB, '?' if absent. */
async function heapUsedMb(port: number): Promise<string> {
  const bytes = await heapUsedBytes(port);
  return bytes === undefined ? '?' : `${(bytes / 2 ** 20).toFixed(0)} MB`;
}

export type { KubeConfig };
