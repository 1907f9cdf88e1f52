/**
 * The fleet benchmark: one fleet grown through 100, 250, 500 and 1,000 MirrorClusters, served by
 * 1, 2 or 4 hub replicas, measuring what each follower costs the hub.
 *
 * What is real: every follower its own AWS account, IAM role with ExternalId, EKS cluster and
 * access entry (moto behind the kit's STS gate, the kit's EKS emulator); the hub's processes
 * (`node hub/dist/main.js`, one per replica) against a real hub API server; the follower API
 * servers (real kube-apiservers, many followers confined to corners of each, fleet.ts); and the
 * agent code. The first `agentProcesses` followers have an agent process each, as a fleet runs
 * them; the others' agents are the same code run many to a process (agent-host.ts), because a
 * thousand agent processes do not fit beside the rest. Every copy is written by agent code, so
 * convergence is measured, not modelled; what differs for the hosted agents is their process
 * (shared heap, one HTTP/2 connection per API server) and so their memory per follower.
 */
import { type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import type { Kit } from '@mirrorhub/infra/kit/index';

import {
  agentEnv,
  changeSharedTls,
  createSharedTls,
  freePorts,
  prepareFleet,
  startAgentProcesses,
  startHubReplicas,
} from './fleet.js';
import type { ProcessNodeOptions } from './node-options.js';
import { startNode, stopAll, until } from './procs.js';
import { type Latency } from './scale.js';
import { cpuSeconds, fmtMs, percentile, pool, rssMb } from './util.js';

export interface FleetScaleOptions {
  /** Every follower the fleet may grow to, in the order they join. */
  followers: string[];
  /** The fleet's sizes, ascending: it grows to each in turn and is measured there. */
  sizes: number[];
  /** Hub processes sharing the followers. */
  replicas: number;
  /** The first followers with an agent process of their own. */
  agentProcesses: number;
  /** Hosted agents (agent-host.ts) per process. */
  agentsPerHost: number;
  namespacesPerFollower: number;
  /** Source changes per size. */
  updates: number;
  /** Seconds of idle per size over which the hub's CPU is measured. */
  idleSeconds: number;
  /**
   * Stop growing when the machine has less memory available than this (MB) after a size: the
   * next size would not fit, and the fit extrapolates to it.
   */
  reserveMb: number;
  /** Minutes a size's new followers may take to get their copies before the size is given up. */
  convergeMinutes: number;
  /** Minutes the run may take: a size not measured by then is left out (default: no limit). */
  budgetMinutes: number;
  nodeOptions: ProcessNodeOptions;
  logFile: string;
  root: string;
  log: (line: string) => void;
}

/** One size of the fleet, measured. */
export interface FleetPoint {
  followers: number;
  copies: number;
  /** From registering this size's new followers until their copies all exist. */
  growMs: number;
  /** Each replica's RSS at idle, MB. */
  hubRssMb: number[];
  /** Each replica's CPU at idle, % of one core. */
  hubIdleCpuPercent: number[];
  /** The replicas' CPU seconds per source change, summed. */
  hubCpuPerChangeSec: number;
  /**
   * Times a hub replica missed its Lease renewal deadline and stepped down while this size grew
   * and was measured (its log's warnings): each new term starts the leader's controllers anew.
   */
  hubStepDowns: number;
  update: Latency;
  /** Calls per registered follower since the start: the most of any, and the mean. */
  assumeRole: { max: number; mean: number };
  describeCluster: { max: number; mean: number };
  /** Agent processes' RSS, mean per process; hosted agents' RSS per agent (process / agents). */
  agentRssMb: { process: number | undefined; hosted: number | undefined };
  agents: { processes: number; hosted: number; hosts: number };
  minutes: number;
}

export interface FleetScaleResult {
  replicas: number;
  apiServers: number;
  namespacesPerFollower: number;
  updates: number;
  idleSeconds: number;
  agentsPerHost: number;
  sizes: number[];
  points: FleetPoint[];
  /** Why the fleet stopped before its last size, if it did. */
  stopped?: string;
}

const MIRROR_NAMESPACES = ['follower-\\d+-team-.+'];

/** MemAvailable in MB: what the machine can still give without swapping (it has no swap). */
function availableMb(): number {
  const m = /MemAvailable:\s+(\d+)/.exec(readFileSync('/proc/meminfo', 'utf8'));
  return Number(m?.[1] ?? 0) / 1024;
}

/**
 * How often the hub's processes stepped down from their Lease so far, from the log they share
 * with the agents: on a loaded machine a renewal can miss its deadline, and a new term starts
 * the leader's controllers anew, which the figures of that size then include.
 */
function hubStepDowns(logFile: string): number {
  return readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((l) => l.includes('"component":"hub"') && l.includes('stepping down')).length;
}

/** Hosted agents: `followers` run by agent-host.ts, `per` to a process; resolves once ready. */
async function startAgentHosts(
  kit: Kit,
  followers: readonly string[],
  procs: ChildProcess[],
  o: FleetScaleOptions,
): Promise<{ proc: ChildProcess; agents: number }[]> {
  const groups: string[][] = [];
  for (let i = 0; i < followers.length; i += o.agentsPerHost)
    groups.push(followers.slice(i, i + o.agentsPerHost));
  const hosts: { proc: ChildProcess; agents: number }[] = [];
  // One host at a time: each starts its agents a few at a time, and their first lists are what
  // the followers' API servers are busy with.
  for (const group of groups) {
    const ready = join(tmpdir(), `mirrorhub-bench-agent-host-${process.pid}-${procs.length}`);
    rmSync(ready, { force: true });
    const host = startNode(
      o.root,
      'agent',
      join(o.root, 'test/dist/bench/agent-host.js'),
      {
        NODE_OPTIONS: o.nodeOptions.agent,
        MIRRORHUB_BENCH_AGENTS: JSON.stringify(group.map((f) => agentEnv(kit, f, true))),
        MIRRORHUB_BENCH_READY_FILE: ready,
      },
      o.logFile,
    );
    setPriority(host.pid!, 19);
    procs.push(host);
    hosts.push({ proc: host, agents: group.length });
    const deadline = Date.now() + 300_000;
    while (!existsSync(ready)) {
      if (host.exitCode !== null || host.signalCode !== null)
        throw new Error(`an agent host exited at start-up (its log: ${o.logFile})`);
      if (Date.now() > deadline) throw new Error(`an agent host did not start within 300 s`);
      await sleep(200);
    }
    rmSync(ready, { force: true });
  }
  return hosts;
}

/** y = a + b x by least squares over `points`; b undefined with fewer than two sizes. */
export function fitLine(points: [number, number][]): { a: number; b: number } | undefined {
  if (points.length < 2) return undefined;
  const n = points.length;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const sxx = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  const sxy = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  if (sxx === 0) return undefined;
  const b = sxy / sxx;
  return { a: my - b * mx, b };
}

export async function runFleetScaleBench(
  kit: Kit,
  o: FleetScaleOptions,
): Promise<FleetScaleResult> {
  const log = o.log;
  const started = Date.now();
  const base = await prepareFleet(kit, {
    followers: o.followers,
    confined: true,
    followerNice: 19,
  });
  const procs: ChildProcess[] = [];
  const points: FleetPoint[] = [];
  let stopped: string | undefined;
  const agentProcs = new Map<string, ChildProcess>();
  const agentHosts: { proc: ChildProcess; agents: number }[] = [];
  const copyWatch = await base.watchCopies();
  const { seen, listeners } = copyWatch;
  try {
    const hubPorts = await freePorts(o.replicas);
    const hubs = await startHubReplicas(kit, base, hubPorts, procs, o);
    log(`fleet: ${o.replicas} hub replica(s) ready`);
    await createSharedTls(base, MIRROR_NAMESPACES);
    let version = 0;
    let size = 0;
    /** Grows the fleet to `target` followers and measures it there. */
    const growTo = async (target: number): Promise<FleetPoint> => {
      const joining = o.followers.slice(size, target);
      log(`fleet: preparing followers ${size + 1}-${target} (role, access entry, namespaces)`);
      await base.prepare(joining, o.namespacesPerFollower);
      const own = joining.filter((f) => o.followers.indexOf(f) < o.agentProcesses);
      const hosted = joining.filter((f) => o.followers.indexOf(f) >= o.agentProcesses);
      const ports = await freePorts(own.length);
      for (const [f, p] of await startAgentProcesses(kit, own, ports, procs, {
        ...o,
        confined: true,
        followerNice: 19,
      }))
        agentProcs.set(f, p);
      agentHosts.push(...(await startAgentHosts(kit, hosted, procs, o)));
      log(
        `fleet: ${agentProcs.size} agent processes, ${agentHosts.reduce((s, h) => s + h.agents, 0)} hosted agents in ${agentHosts.length} processes`,
      );
      const stepDowns0 = hubStepDowns(o.logFile);
      const t0 = Date.now();
      await pool(joining, 16, (f) => base.register(f));
      const copies = target * o.namespacesPerFollower;
      await until(
        () => seen.size >= copies,
        listeners,
        o.convergeMinutes * 60_000,
        () => `${seen.size}/${copies} copies`,
      );
      const growMs = Date.now() - t0;
      size = target;
      log(`fleet: ${target} followers, ${copies} copies (the new ones in ${fmtMs(growMs)})`);
      await sleep(10_000);

      const pids = hubs.map((h) => h.pid!);
      const cpu0 = pids.map(cpuSeconds);
      await sleep(o.idleSeconds * 1000);
      const hubIdleCpuPercent = pids.map(
        (p, i) => ((cpuSeconds(p) - cpu0[i]!) / o.idleSeconds) * 100,
      );
      const hubRssMb = pids.map(rssMb);

      const latencies: number[] = [];
      let changeCpu = 0;
      for (let k = 0; k < o.updates; k++) {
        const old = new Map([...seen.entries()].map(([key, v]) => [key, v.hash]));
        const c0 = pids.map(cpuSeconds);
        const latency = await changeSharedTls(
          base.core,
          ++version,
          old,
          { seen, listeners },
          600_000,
        );
        await sleep(3_000); // the status writes of this change belong to its cost
        changeCpu += pids.reduce((s, p, i) => s + cpuSeconds(p) - c0[i]!, 0);
        latencies.push(latency);
        log(`fleet: change ${version}: ${old.size} copies in ${fmtMs(latency)}`);
      }

      const calls = kit.aws!.calls();
      const registered = o.followers.slice(0, size);
      const stat = (n: number[]) => ({
        max: Math.max(...n),
        mean: n.reduce((s, x) => s + x, 0) / n.length,
      });
      const mean = (xs: number[]) =>
        xs.length === 0 ? undefined : xs.reduce((s, x) => s + x, 0) / xs.length;
      const hostedCount = agentHosts.reduce((s, h) => s + h.agents, 0);
      const point: FleetPoint = {
        followers: size,
        copies,
        growMs,
        hubRssMb,
        hubIdleCpuPercent,
        hubStepDowns: hubStepDowns(o.logFile) - stepDowns0,
        hubCpuPerChangeSec: changeCpu / o.updates,
        update: {
          p50: percentile(latencies, 50),
          p99: percentile(latencies, 99),
          samples: latencies.length,
        },
        assumeRole: stat(registered.map((f) => calls.assumeRole[base.roleArn(f)] ?? 0)),
        describeCluster: stat(registered.map((f) => calls.describeCluster[f] ?? 0)),
        agentRssMb: {
          process: mean([...agentProcs.values()].map((p) => rssMb(p.pid!))),
          hosted:
            hostedCount === 0
              ? undefined
              : agentHosts.reduce((s, h) => s + rssMb(h.proc.pid!), 0) / hostedCount,
        },
        agents: { processes: agentProcs.size, hosted: hostedCount, hosts: agentHosts.length },
        minutes: (Date.now() - started) / 60_000,
      };
      log(
        `fleet: ${size} followers: hub RSS ${hubRssMb.map((x) => x.toFixed(0)).join(' + ')} MB, idle CPU ${hubIdleCpuPercent.map((x) => x.toFixed(2)).join(' + ')} %, ` +
          `${point.hubCpuPerChangeSec.toFixed(2)} CPU s per change, p50 / p99 ${fmtMs(point.update.p50)} / ${fmtMs(point.update.p99)}, ` +
          `AssumeRole max ${point.assumeRole.max}, DescribeCluster max ${point.describeCluster.max}, ${point.hubStepDowns} Lease step-downs, ${availableMb().toFixed(0)} MB available`,
      );
      return point;
    };
    const deadline = started + o.budgetMinutes * 60_000;
    for (const target of o.sizes) {
      // A size still growing when the run's time is up, or that never converged, is left out
      // and said so (the fit extrapolates to it); the sizes before it are the run's result, and
      // its work is abandoned with the processes when the run stops.
      const step = growTo(target);
      step.catch(() => undefined);
      const timer = new AbortController();
      const out = await Promise.race([
        step.then(
          (p) => p,
          (err: unknown) => (err instanceof Error ? err : new Error(String(err))),
        ),
        // No budget: nothing to wait for (a timer of Infinity fires at once).
        Number.isFinite(deadline)
          ? sleep(Math.max(0, deadline - Date.now()), undefined, { signal: timer.signal }).then(
              () => undefined,
              () => undefined,
            )
          : new Promise<undefined>(() => {}),
      ]);
      timer.abort();
      if (out === undefined || out instanceof Error) {
        stopped =
          out === undefined
            ? `the run's ${o.budgetMinutes}-minute budget ran out growing to ${target} followers`
            : `growing to ${target} followers failed (${out.message})`;
        log(`fleet: ${stopped}`);
        break;
      }
      points.push(out);
      const next = o.sizes[o.sizes.indexOf(target) + 1];
      if (next !== undefined && availableMb() < o.reserveMb) {
        stopped = `${availableMb().toFixed(0)} MB available after ${size} followers, under the ${o.reserveMb} MB reserve: ${next} did not fit`;
        log(`fleet: ${stopped}`);
        break;
      }
    }
    if (points.length === 0) throw new Error(`fleet: no size measured: ${stopped}`);
    return {
      replicas: o.replicas,
      apiServers: base.hosts.length,
      namespacesPerFollower: o.namespacesPerFollower,
      updates: o.updates,
      idleSeconds: o.idleSeconds,
      agentsPerHost: o.agentsPerHost,
      sizes: o.sizes,
      points,
      ...(stopped ? { stopped } : {}),
    };
  } finally {
    await copyWatch.stop();
    await stopAll(procs);
  }
}
