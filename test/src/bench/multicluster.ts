/**
 * The multi-cluster benchmark: one hub and N EKS followers (each its own kube-apiserver, AWS
 * account, role, access entry and agent process), M matching namespaces per follower, one
 * ClusterSecretMirror selecting every follower by label. A source change must cost the hub
 * O(clusters) writes and reach every copy in every follower within seconds.
 */
import { setTimeout as sleep } from 'node:timers/promises';

import type { Kit } from '@mirrorhub/infra/kit/index';

import { changeSharedTls, createSharedTls, startFleet } from './fleet.js';
import { fmtMs, percentile, rssMb, scrapeSeries } from './util.js';
import { until } from './procs.js';
import type { ProcessNodeOptions } from './node-options.js';

export interface MultiClusterBenchOptions {
  followers: string[];
  namespacesPerFollower: number;
  updates: number;
  /** NODE_OPTIONS for each process (the charts'). */
  nodeOptions: ProcessNodeOptions;
  root: string;
  log: (line: string) => void;
}

export interface MultiClusterBenchResult {
  followers: number;
  namespacesPerFollower: number;
  copies: number;
  initialMs: number;
  update: { p50: number; p99: number; samples: number };
  hubWritesPerChange: number[];
  /** The change with the most hub writes, by `kind verb` (mirrorhub_writes_total's labels). */
  busiestChange: Record<string, number>;
  hubRssMb: number;
}

export async function runMultiClusterBench(
  kit: Kit,
  o: MultiClusterBenchOptions,
): Promise<MultiClusterBenchResult> {
  const log = o.log;
  const fleet = await startFleet(kit, {
    followers: o.followers,
    namespacesPerFollower: o.namespacesPerFollower,
    nodeOptions: o.nodeOptions,
    root: o.root,
    log,
  });
  const { core, hub: hubProc, hubPort } = fleet;
  try {
    // Each follower has an API server of its own: keys are `<follower>/<namespace>/<name>`.
    const copyWatch = await fleet.watchCopies();
    const { seen, listeners } = copyWatch;

    for (const f of o.followers) await fleet.register(f);
    const start = Date.now();
    await createSharedTls(fleet);
    const copies = o.followers.length * o.namespacesPerFollower;
    await until(
      () => seen.size >= copies,
      listeners,
      300_000,
      () => `${seen.size}/${copies} copies`,
    );
    const initialMs = Date.now() - start;
    log(`${copies} copies in ${o.followers.length} followers in ${initialMs} ms`);
    await sleep(3_000);

    const hubWrites = () => scrapeSeries(hubPort, 'mirrorhub_writes_total');
    let busiestChange: Record<string, number> = {};
    const latencies: number[] = [];
    const writesPerChange: number[] = [];
    for (let k = 1; k <= o.updates; k++) {
      const old = new Map([...seen.entries()].map(([key, v]) => [key, v.hash]));
      const w0 = await hubWrites();
      const t0 = Date.now();
      const latency = await changeSharedTls(core, k, old, { seen, listeners }, 120_000);
      if (latency > Math.max(0, ...latencies)) {
        // Where the slowest change spent its time: per follower, its first and last copy.
        const span = new Map<string, [number, number]>();
        for (const key of old.keys()) {
          const f = key.slice(0, key.indexOf('/'));
          const at = seen.get(key)!.at - t0;
          const [lo, hi] = span.get(f) ?? [at, at];
          span.set(f, [Math.min(lo, at), Math.max(hi, at)]);
        }
        log(
          `change ${k}: ${fmtMs(latency)}; per follower first..last copy: ${[...span]
            .map(([f, [lo, hi]]) => `${f} ${fmtMs(lo)}..${fmtMs(hi)}`)
            .join(', ')}`,
        );
      }
      latencies.push(latency);
      await sleep(2_000); // let the hub's status writes for this change land before counting
      const w1 = await hubWrites();
      const delta: Record<string, number> = {};
      for (const [series, v] of w1) {
        const d = v - (w0.get(series) ?? 0);
        if (d > 0) delta[series] = d;
      }
      const total = Object.values(delta).reduce((a, b) => a + b, 0);
      if (total > Math.max(0, ...writesPerChange)) busiestChange = delta;
      writesPerChange.push(total);
    }
    const hubRssMb = rssMb(hubProc.pid!);
    await copyWatch.stop();
    return {
      followers: o.followers.length,
      namespacesPerFollower: o.namespacesPerFollower,
      copies,
      initialMs,
      update: {
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        samples: latencies.length,
      },
      hubWritesPerChange: writesPerChange,
      busiestChange,
      hubRssMb,
    };
  } finally {
    await fleet.stop();
  }
}
