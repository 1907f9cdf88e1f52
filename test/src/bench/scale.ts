/**
 * The 100-follower benchmark: one hub and 100 EKS followers, each its own AWS account, IAM role
 * with ExternalId, EKS cluster and access entry in the emulators, and its own agent process. A
 * 2-core machine holds a dozen kube-apiservers, not 100: `dedicated` followers have one each,
 * the rest share `hosts` of them, each confined to its own corner (fleet.ts, `confined`).
 *
 * It measures what the design's scale costs the hub: one source change -> every copy in every
 * follower, hub writes per change, hub RSS and CPU at idle, AssumeRole and DescribeCluster calls
 * per cluster (counted by the STS gate and the EKS emulator), and the same change with the
 * dedicated followers' API servers stopped (an unreachable cluster must not slow the others).
 */
import { setTimeout as sleep } from 'node:timers/promises';

import type { Kit } from '@mirrorhub/infra/kit/index';

import { changeSharedTls, createSharedTls, startFleet } from './fleet.js';
import { cpuSeconds, fmtMs, percentile, rssMb, rssSplitMb, scrapeSeries } from './util.js';
import { until } from './procs.js';
import type { ProcessNodeOptions } from './node-options.js';

export interface ScaleBenchOptions {
  /** Every follower: the first `stopped` have an API server of their own (they are stopped). */
  followers: string[];
  stopped: number;
  namespacesPerFollower: number;
  updates: number;
  /** Seconds of idle over which the hub's CPU is measured. */
  idleSeconds: number;
  /** NODE_OPTIONS of the hub and the agents (see FleetOptions). */
  nodeOptions: ProcessNodeOptions;
  /** Where hub and agents log (warnings: the outage makes many). */
  logFile: string;
  root: string;
  log: (line: string) => void;
}

export interface Latency {
  p50: number;
  p99: number;
  samples: number;
}

export interface ScaleBenchResult {
  followers: number;
  apiServers: number;
  namespacesPerFollower: number;
  copies: number;
  initialMs: number;
  update: Latency;
  hubWritesPerChange: number[];
  hubRssMb: number;
  /** Hub CPU over `idleSeconds` with nothing changing, in % of one core. */
  hubIdleCpuPercent: number;
  idleSeconds: number;
  /** With `stopped` followers' API servers down: the change reaching the other followers. */
  outage: { stopped: number; update: Latency; hubRssMb: number };
  /**
   * Calls per follower, the most of any: AssumeRole over every follower, DescribeCluster over
   * the reachable ones and the stopped ones apart (a connection failure re-describes); how long
   * the outage and the whole run were.
   */
  aws: {
    assumeRoleMax: number;
    describeClusterMax: number;
    describeClusterDownMax: number;
    outageMinutes: number;
    runMinutes: number;
  };
}

const MIRROR_NAMESPACES = ['follower-\\d+-team-.+'];

export async function runScaleBench(kit: Kit, o: ScaleBenchOptions): Promise<ScaleBenchResult> {
  const log = o.log;
  const started = Date.now();
  const fleet = await startFleet(kit, {
    followers: o.followers,
    namespacesPerFollower: o.namespacesPerFollower,
    nodeOptions: o.nodeOptions,
    confined: true,
    logFile: o.logFile,
    followerNice: 19,
    root: o.root,
    log,
  });
  const { core, hub: hubProc, hubPort } = fleet;
  // Every copy, keyed `<host>/<namespace>/<name>`; the follower is the namespace's prefix.
  const copyWatch = await fleet.watchCopies().catch(async (err: unknown) => {
    await fleet.stop();
    throw err;
  });
  const { seen, listeners } = copyWatch;
  try {
    const followerOf = (key: string) => {
      const ns = key.split('/')[1]!;
      return ns.slice(0, ns.indexOf('-team-'));
    };

    await Promise.all(o.followers.map((f) => fleet.register(f)));
    const start = Date.now();
    await createSharedTls(fleet, MIRROR_NAMESPACES);
    const copies = o.followers.length * o.namespacesPerFollower;
    await until(
      () => seen.size >= copies,
      listeners,
      600_000,
      () => `${seen.size}/${copies} copies`,
    );
    const initialMs = Date.now() - start;
    log(`${copies} copies in ${o.followers.length} followers in ${fmtMs(initialMs)}`);
    await sleep(5_000);

    const hubWrites = () => scrapeSeries(hubPort, 'mirrorhub_writes_total');
    let version = 0;
    /** Source changes; each waits for the copies in `reachable` followers to change. */
    const changes = async (n: number, reachable: (f: string) => boolean, writes?: number[]) => {
      const latencies: number[] = [];
      for (let k = 0; k < n; k++) {
        const old = new Map(
          [...seen.entries()]
            .filter(([key]) => reachable(followerOf(key)))
            .map(([key, v]) => [key, v.hash]),
        );
        const w0 = writes ? await hubWrites() : undefined;
        const latency = await changeSharedTls(core, ++version, old, { seen, listeners }, 300_000);
        latencies.push(latency);
        log(`change ${version}: ${old.size} copies in ${fmtMs(latency)}`);
        await sleep(3_000); // the hub's status writes for this change land before counting
        if (writes && w0) {
          const w1 = await hubWrites();
          let total = 0;
          for (const [series, v] of w1) total += v - (w0.get(series) ?? 0);
          writes.push(total);
        }
      }
      return {
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        samples: latencies.length,
      };
    };

    const hubWritesPerChange: number[] = [];
    const update = await changes(o.updates, () => true, hubWritesPerChange);
    const hubRssMb = rssMb(hubProc.pid!);
    await logHubMemory(log, hubProc.pid!, hubPort, 'after the changes');

    // Idle: nothing changes; the hub renews credentials, reads heartbeats, resyncs.
    await sleep(10_000);
    const cpu0 = cpuSeconds(hubProc.pid!);
    await sleep(o.idleSeconds * 1000);
    const hubIdleCpuPercent = ((cpuSeconds(hubProc.pid!) - cpu0) / o.idleSeconds) * 100;
    log(`hub idle CPU ${hubIdleCpuPercent.toFixed(2)} % of a core over ${o.idleSeconds} s`);

    // Outage: the dedicated followers' API servers stop; the others must not wait for them.
    const down = new Set(o.followers.slice(0, o.stopped));
    for (const f of down) {
      if (kit.cluster(f).host !== f)
        throw new Error(`${f} shares an API server: only a follower with its own can be stopped`);
      await kit.cluster(f).stopApiServer();
    }
    const outageStart = Date.now();
    log(`stopped the API servers of ${[...down].join(', ')}`);
    const outageUpdate = await changes(o.updates, (f) => !down.has(f));
    const outage = { stopped: down.size, update: outageUpdate, hubRssMb: rssMb(hubProc.pid!) };
    await logHubMemory(log, hubProc.pid!, hubPort, 'after the outage');

    const calls = kit.aws!.calls();
    const perFollower = (
      what: string,
      counts: Record<string, number>,
      key: (f: string) => string,
      among: string[],
    ) => {
      const n = new Map(among.map((f) => [f, counts[key(f)] ?? 0]));
      const most = Math.max(...n.values());
      log(
        `${what}: at most ${most} per follower (${[...n]
          .filter(([, c]) => c === most)
          .map(([f]) => f)
          .join(', ')})`,
      );
      return most;
    };
    const up = o.followers.filter((f) => !down.has(f));
    const aws = {
      assumeRoleMax: perFollower(
        'AssumeRole',
        calls.assumeRole,
        (f) => fleet.roleArn(f),
        o.followers,
      ),
      describeClusterMax: perFollower('DescribeCluster', calls.describeCluster, (f) => f, up),
      describeClusterDownMax: perFollower(
        'DescribeCluster, stopped',
        calls.describeCluster,
        (f) => f,
        [...down],
      ),
      outageMinutes: (Date.now() - outageStart) / 60_000,
      runMinutes: (Date.now() - started) / 60_000,
    };
    for (const f of down) await kit.cluster(f).startApiServer();
    return {
      followers: o.followers.length,
      apiServers: fleet.hosts.length,
      namespacesPerFollower: o.namespacesPerFollower,
      copies,
      initialMs,
      update,
      hubWritesPerChange,
      hubRssMb,
      hubIdleCpuPercent,
      idleSeconds: o.idleSeconds,
      outage,
      aws,
    };
  } finally {
    await copyWatch.stop();
    await fleet.stop();
  }
}

/**
 * The hub's resident set split (anonymous / file-backed) and V8's heap in use and held, from its
 * /metrics: what a heap compaction could give back, against native memory and node's binary.
 */
async function logHubMemory(
  log: (line: string) => void,
  pid: number,
  port: number,
  when: string,
): Promise<void> {
  const mb = (bytes: number | undefined) =>
    bytes === undefined ? '?' : `${(bytes / 2 ** 20).toFixed(0)} MB`;
  const one = async (name: string) => [...(await scrapeSeries(port, name)).values()][0];
  const split = rssSplitMb(pid);
  log(
    `hub memory ${when}: RSS ${rssMb(pid).toFixed(0)} MB (anonymous ${split.anon.toFixed(0)} MB, ` +
      `file-backed ${split.file.toFixed(0)} MB), V8 heap used ` +
      `${mb(await one('mirrorhub_nodejs_heap_size_used_bytes'))} of ` +
      `${mb(await one('mirrorhub_nodejs_heap_size_total_bytes'))}`,
  );
}
