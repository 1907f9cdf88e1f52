/**
 * The growth benchmark: hub and agent RSS as namespaces, unrelated Secrets and clusters grow,
 * so the curve is visible, not just the end point. Each step grows one thing, waits until every
 * copy it implies has landed and the processes are idle again, then reads their RSS.
 *
 * - Namespaces: 10 SecretMirrors select every namespace labelled growth=on, so each namespace
 *   holds 10 copies (what a new team namespace costs in a real cluster).
 * - Unrelated Secrets: Secrets nothing selects, in namespaces nothing selects.
 * - Clusters: EKS followers (each its own API server, account, role and agent) registered one
 *   step at a time, with a ClusterSecretMirror delivering to 20 namespaces in each.
 */
import { setTimeout as sleep } from 'node:timers/promises';

import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';

import type { Kit } from '@mirrorhub/infra/kit/index';

import { installCrds } from '../support/crds.js';
import { createSharedTls, startFleet, SYSTEM_NS } from './fleet.js';
import { startOneCluster, stopAll, until } from './procs.js';
import { createTlsMirror, pool, rssMb, watchCopies, type CopyWatch } from './util.js';
import type { ProcessNodeOptions } from './node-options.js';

export interface GrowthBenchOptions {
  /** Namespace counts to measure at, ascending. */
  namespaceSteps: number[];
  /** Unrelated Secret counts to measure at, ascending (after the last namespace step). */
  unrelatedSteps: number[];
  /** Registered cluster counts to measure at, ascending; the last is the number of followers. */
  clusterSteps: number[];
  namespacesPerFollower: number;
  nodeOptions: ProcessNodeOptions;
  root: string;
  log: (line: string) => void;
}

/** One measurement: the axis value and each process's RSS (agent: mean over the agents). */
export interface GrowthPoint {
  at: number;
  hubMb: number;
  agentMb: number;
}

export interface GrowthBenchResult {
  mirrors: number;
  namespacesPerFollower: number;
  namespaces: GrowthPoint[];
  unrelated: GrowthPoint[];
  clusters: GrowthPoint[];
}

const MIRRORS = 10;
const SRC_NS = 'growth-src';
/** Idle time before each reading: the agent compacts its heap once quiet (compact.ts). */
export const SETTLE_MS = 8_000;

/** Namespaces and unrelated Secrets, on one cluster with the hub and its agent. */
export async function runSingleClusterGrowth(
  kit: Kit,
  o: GrowthBenchOptions,
): Promise<Pick<GrowthBenchResult, 'namespaces' | 'unrelated'>> {
  const cluster = kit.cluster('hub');
  const kc = cluster.kubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  await installCrds(kc, 'mirrorhub-hub');
  for (const ns of [SYSTEM_NS, SRC_NS])
    await core.createNamespace({ body: { metadata: { name: ns } } });
  const { hub, agent, procs } = await startOneCluster(
    o.root,
    cluster.kubeconfigPath,
    o.nodeOptions,
  );
  let copies: CopyWatch | undefined;
  try {
    copies = await watchCopies(kc, { resource: 'growth-copies' });
    for (let i = 0; i < MIRRORS; i++) {
      await createTlsMirror({ core, custom }, SRC_NS, i, { growth: 'on' });
    }
    const read = async (at: number): Promise<GrowthPoint> => {
      await sleep(SETTLE_MS);
      return { at, hubMb: rssMb(hub.pid!), agentMb: rssMb(agent.pid!) };
    };

    const namespaces: GrowthPoint[] = [];
    let made = 0;
    for (const step of o.namespaceSteps) {
      const names = Array.from(
        { length: step - made },
        (_, k) => `team-${String(made + k).padStart(5, '0')}`,
      );
      await pool(names, 16, (name) =>
        core.createNamespace({ body: { metadata: { name, labels: { growth: 'on' } } } }),
      );
      made = step;
      const want = step * MIRRORS;
      const { seen, listeners } = copies;
      await until(
        () => seen.size >= want,
        listeners,
        20 * 60_000,
        () => `${seen.size}/${want} copies`,
      );
      namespaces.push(await read(step));
      o.log(
        `${step} namespaces (${want} copies): hub ${namespaces.at(-1)!.hubMb.toFixed(0)} MB, agent ${namespaces.at(-1)!.agentMb.toFixed(0)} MB`,
      );
    }

    const noiseNs = Array.from({ length: 10 }, (_, k) => `unrelated-${k}`);
    for (const name of noiseNs) await core.createNamespace({ body: { metadata: { name } } });
    const unrelated: GrowthPoint[] = [{ ...namespaces.at(-1)!, at: 0 }];
    let noise = 0;
    for (const step of o.unrelatedSteps) {
      const batch = Array.from({ length: step - noise }, (_, k) => noise + k);
      await pool(batch, 32, (k) =>
        core.createNamespacedSecret({
          namespace: noiseNs[k % noiseNs.length]!,
          body: { metadata: { name: `unrelated-${k}` }, stringData: { value: 'x'.repeat(512) } },
        }),
      );
      noise = step;
      unrelated.push(await read(step));
      o.log(
        `${step} unrelated Secrets: hub ${unrelated.at(-1)!.hubMb.toFixed(0)} MB, agent ${unrelated.at(-1)!.agentMb.toFixed(0)} MB`,
      );
    }
    return { namespaces, unrelated };
  } finally {
    await copies?.stop();
    await stopAll(procs);
  }
}

/** Clusters: followers registered step by step, each with its agent and 20 selected namespaces. */
export async function runClusterGrowth(
  kit: Kit,
  followers: string[],
  o: GrowthBenchOptions,
): Promise<GrowthPoint[]> {
  const fleet = await startFleet(kit, {
    followers,
    namespacesPerFollower: o.namespacesPerFollower,
    nodeOptions: o.nodeOptions,
    root: o.root,
    log: o.log,
  });
  const seen = new Map<string, { hash?: string; at: number }>();
  const listeners = new Set<() => void>();
  const watches: CopyWatch[] = [];
  try {
    for (const f of followers) {
      watches.push(
        await watchCopies(kit.cluster(f).kubeConfig(), {
          resource: `growth-${f}`,
          prefix: `${f}/`,
          into: { seen, listeners },
        }),
      );
    }
    await createSharedTls(fleet);
    const points: GrowthPoint[] = [];
    let registered = 0;
    for (const step of o.clusterSteps) {
      for (const f of followers.slice(registered, step)) await fleet.register(f);
      registered = step;
      const want = step * o.namespacesPerFollower;
      await until(
        () => seen.size >= want,
        listeners,
        10 * 60_000,
        () => `${seen.size}/${want} copies`,
      );
      await sleep(SETTLE_MS);
      const agents = followers.slice(0, step).map((f) => rssMb(fleet.agents.get(f)!.pid!));
      points.push({
        at: step,
        hubMb: rssMb(fleet.hub.pid!),
        agentMb: agents.reduce((a, b) => a + b, 0) / agents.length,
      });
      o.log(
        `${step} clusters: hub ${points.at(-1)!.hubMb.toFixed(0)} MB, agent (mean) ${points.at(-1)!.agentMb.toFixed(0)} MB`,
      );
    }
    return points;
  } finally {
    for (const w of watches) await w.stop();
    await fleet.stop();
  }
}
