/**
 * The engine benchmark at 100,000 copies: 10,000 namespaces, 10 SecretMirrors each selecting
 * every one of them, then 50,000 unrelated Secrets. Built from the engine benchmark's parts
 * (engine.ts): the same cluster set-up, raw create loops, fan-out, new-namespace and steady-state
 * measurements; what it adds is the agent's memory per copy, against its own empty baseline.
 */
import { setTimeout as sleep } from 'node:timers/promises';

import type { Kit } from '@mirrorhub/infra/kit/index';

import {
  fanOut,
  heapUsedBytes,
  newNamespaceLatencies,
  prepareEngineCluster,
  rawCreateRates,
  steadyRequests,
  type EngineBenchResult,
} from './engine.js';
import type { ProcessNodeOptions } from './node-options.js';
import { startOneCluster } from './procs.js';
import {
  fmtMs,
  peakRssMb,
  percentile,
  rssMb,
  untilQuiet,
  watchCopies,
  type ApiCounts,
} from './util.js';

export interface Engine100kOptions {
  namespaces: number;
  mirrors: number;
  /** Unrelated Secrets added after the fan-out, step by step (each step a memory row). */
  unrelatedSteps: number[];
  newNamespaceSamples: number;
  steadyMs: number;
  nodeOptions: ProcessNodeOptions;
  root: string;
  log: (line: string) => void;
}

/** One process's memory at one moment: resident set and V8 heap in use, in bytes. */
export interface Memory {
  rss: number;
  heap: number | undefined;
}

export interface Engine100kResult {
  options: Omit<Engine100kOptions, 'log' | 'root'>;
  copies: number;
  fanOutMs: number;
  raw: Pick<
    EngineBenchResult['raw'],
    | 'creates'
    | 'createsPerSecond'
    | 'appliedCreatesPerSecond'
    | 'serverCpuMsPerCreate'
    | 'createConcurrency'
  >;
  newNamespace: { p50: number; p99: number; samples: number; copiesEach: number };
  /**
   * Memory rows in order: the processes started with every namespace and no mirror (the empty
   * baseline), then after the fan-out with each count of unrelated Secrets.
   */
  memory: { label: string; unrelated: number; hub: Memory; agent: Memory }[];
  peakRss: { hub: number; agent: number };
  steadyPerMinute: ApiCounts;
}

export async function runEngine100kBench(
  kit: Kit,
  o: Engine100kOptions,
): Promise<Engine100kResult> {
  const { log } = o;
  // One shard: every mirror selects every namespace.
  const shards = 1;
  const cluster = await prepareEngineCluster(kit, {
    namespaces: o.namespaces,
    shards,
    noise: 0,
    log,
  });
  const copiesExpected = o.mirrors * o.namespaces;
  const raw = await rawCreateRates(cluster.kc, {
    serverPids: [cluster.serverPids.apiServer, cluster.serverPids.etcd],
    creates: Math.min(5000, copiesExpected),
    log,
  });
  const { hub, agent, hubPort, agentPort, procs } = await startOneCluster(
    o.root,
    cluster.hubCluster.kubeconfigPath,
    o.nodeOptions,
  );
  try {
    const ports = { hub: hubPort, agent: agentPort };
    const memory: Engine100kResult['memory'] = [];
    const memoryAt = async (label: string, unrelated: number) => {
      const [hubHeap, agentHeap] = await Promise.all([
        heapUsedBytes(hubPort),
        heapUsedBytes(agentPort),
      ]);
      const row = {
        label,
        unrelated,
        hub: { rss: rssMb(hub.pid!) * 2 ** 20, heap: hubHeap },
        agent: { rss: rssMb(agent.pid!) * 2 ** 20, heap: agentHeap },
      };
      memory.push(row);
      log(`memory, ${label}: hub ${memoryText(row.hub)}, agent ${memoryText(row.agent)}`);
    };
    // Started and synced (every namespace listed), nothing to copy: what the agent holds for
    // the cluster itself, so the rows after the fan-out show what the copies add.
    await sleep(10_000);
    await memoryAt('started, no mirror', 0);

    const copyWatch = await watchCopies(cluster.kc, { resource: 'bench-copies' });
    const fan = await fanOut(cluster, copyWatch, { ...o, shards });
    await untilQuiet(ports, 2_000, 600_000);
    // Idle again: the agent compacts its heap once quiet after a burst (agent/src/compact.ts).
    await sleep(10_000);
    await memoryAt(`${fan.copies} copies`, 0);
    for (const step of o.unrelatedSteps) {
      log(`adding unrelated Secrets up to ${step}`);
      await cluster.addNoise(step);
      await sleep(10_000);
      await memoryAt(`${fan.copies} copies, ${step} unrelated Secrets`, step);
    }

    log(`new namespace -> its ${o.mirrors} copies, ${o.newNamespaceSamples} samples 1 s apart`);
    const newNs = await newNamespaceLatencies(cluster, copyWatch, {
      mirrors: o.mirrors,
      shards,
      prefix: 'bench-new',
      samples: o.newNamespaceSamples,
      gapMs: 1_000,
      log,
    });
    log(`new namespace p50 ${fmtMs(percentile(newNs, 50))} p99 ${fmtMs(percentile(newNs, 99))}`);
    await untilQuiet(ports, 2_000, 120_000);
    const steadyPerMinute = await steadyRequests(cluster, o.steadyMs, log);
    const peakRss = { hub: peakRssMb(hub.pid!), agent: peakRssMb(agent.pid!) };
    await copyWatch.stop();
    return {
      options: { ...o, log: undefined, root: undefined } as unknown as Engine100kResult['options'],
      copies: fan.copies,
      fanOutMs: fan.ms,
      raw,
      newNamespace: {
        p50: percentile(newNs, 50),
        p99: percentile(newNs, 99),
        samples: newNs.length,
        copiesEach: o.mirrors,
      },
      memory,
      peakRss,
      steadyPerMinute,
    };
  } finally {
    for (const p of procs) p.kill('SIGTERM');
  }
}

/** What the copies add to a process, per copy: the row minus the empty baseline, in bytes. */
export function perCopy(
  r: Engine100kResult,
  row: Engine100kResult['memory'][number],
  who: 'hub' | 'agent',
): { rss: number; heap: number | undefined } {
  const base = r.memory[0]![who];
  const now = row[who];
  return {
    rss: (now.rss - base.rss) / r.copies,
    heap:
      now.heap === undefined || base.heap === undefined
        ? undefined
        : (now.heap - base.heap) / r.copies,
  };
}

function memoryText(m: Memory): string {
  const mb = (b: number) => `${(b / 2 ** 20).toFixed(0)} MB`;
  return `RSS ${mb(m.rss)}, heap used ${m.heap === undefined ? '?' : mb(m.heap)}`;
}
