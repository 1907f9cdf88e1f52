/**
 * `npm run bench`: runs the benchmarks on real API servers, prints the figures and rewrites
 * each one's table at the top of docs/BENCHMARKS.md (with the command and the machine) and its
 * detail under Method, nothing else there (record.ts). scripts/run.mjs runs it on the Node.js
 * the image ships, and hub and agents run on the node that runs this.
 *
 *   npm run bench                 # every benchmark at full size (the longest run)
 *   npm run bench -- --only multicluster   # or --only load, engine, engine-one, scale,
 *                                           # growth, signing, status or vault
 *   npm run bench -- --only engine-100k     # the engine at 100,000 copies (the longest engine
 *                                           # run: the agent's memory per copy)
 *   npm run bench -- --only vault --steady 120   # a shorter steady window (default 300 s)
 *   npm run bench -- --only idle  # every install shape at idle, side by side (--steady: 180 s)
 *   npm run bench -- --only fleet --replicas 2   # the fleet benchmark with 2 hub replicas
 *                                 # (1 default, or 4), growing through --sizes 100,250,500,1000
 *   npm run bench -- --scale 0.1  # a tenth of every size, for a quick look (not recorded)
 *   npm run bench -- --scale 0.25 --node-options='--max-semi-space-size=1'
 *                                 # NODE_OPTIONS for every hub and agent (default: the charts')
 *   MIRRORHUB_BENCH_TRACE=1 npm run bench -- --only engine
 *                                 # also print when each copy of each new namespace landed
 *   MIRRORHUB_BENCH_CPU_PROFILE=/tmp/prof npm run bench -- --only engine
 *                                 # and write a V8 CPU profile of the hub and the agent there
 *   MIRRORHUB_BENCH_HEAP_SNAPSHOT=/tmp/heap npm run bench -- --only scale
 *                                 # then `kill -USR2 <pid>`: that process writes a heap
 *                                 # snapshot there (what its V8 heap holds, by object)
 */
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

import { OPENBAO_VERSION } from '@mirrorhub/infra/components/index';
import { startKit } from '@mirrorhub/infra/kit/index';

import { runEngineBench, type EngineBenchResult } from './engine.js';
import { perCopy, runEngine100kBench, type Engine100kResult } from './engine-100k.js';
import {
  rowMedian,
  runLoadBench,
  type LoadBenchResult,
  type LoadRow,
  type LoadSample,
} from './load.js';
import {
  runClusterGrowth,
  runSingleClusterGrowth,
  SETTLE_MS,
  type GrowthBenchResult,
  type GrowthPoint,
} from './growth.js';
import { growthSvg, writePng } from './plot.js';
import { fleetSectionName, fleetSvg, renderFleet } from './fleet-report.js';
import { runFleetScaleBench, type FleetScaleResult } from './fleet-scale.js';
import { runMultiClusterBench, type MultiClusterBenchResult } from './multicluster.js';
import { chartMallocEnv, chartNodeOptions, chartV8Flags } from './node-options.js';
import { runScaleBench, type ScaleBenchResult } from './scale.js';
import { runSigningBench, type SigningBenchResult } from './signing.js';
import { runStatusCostBench, type StatusCostResult } from './status.js';
import { fmtMs, phaseCostText } from './util.js';
import { figureTable, recordSection, SECTIONS, type DocSection, type Figure } from './record.js';
import { runVaultBench, type VaultBenchResult } from './vault.js';
import { auditLog, renderIdle, runIdleBench, type IdleBenchResult } from './idle.js';

const root = resolve(import.meta.dirname, '../../..');

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      scale: { type: 'string', default: '1' },
      // Seconds of steady state: engine 60 by default; vault 300 (ten poll periods, and any
      // 300 s window holds one of the connection's 5-minute logins).
      steady: { type: 'string' },
      'node-options': { type: 'string' },
      only: { type: 'string' },
      // The fleet benchmark: hub replicas sharing the followers, and the sizes it grows through.
      replicas: { type: 'string', default: '1' },
      sizes: { type: 'string' },
      // Minutes the fleet benchmark may take; sizes not reached by then are extrapolated.
      minutes: { type: 'string' },
    },
  });
  const only = values.only;
  if (only !== undefined && !SECTIONS.includes(only)) {
    throw new Error(
      `--only must be ${SECTIONS.slice(0, -1).join(', ')} or ${SECTIONS.at(-1)}, got ${only}`,
    );
  }
  const custom = values['node-options'];
  const nodeOptions = {
    hub: custom ?? chartNodeOptions(root, 'hub'),
    agent: custom ?? chartNodeOptions(root, 'agent'),
  };
  const scale = Number(values.scale);
  if (!(scale > 0 && scale <= 1)) throw new Error(`--scale must be in (0, 1], got ${values.scale}`);
  const n = (x: number) => Math.max(1, Math.round(x * scale));
  const log = (l: string) => console.log(`[bench] ${l}`);
  const record = scale === 1 && custom === undefined;
  // The command that reproduces a section, as its table shows it.
  const cmd = (section: string, ...more: string[]) =>
    [
      `npm run bench -- --only ${section}`,
      ...more,
      ...(scale !== 1 ? [`--scale ${scale}`] : []),
      ...(custom !== undefined ? [`--node-options='${custom}'`] : []),
    ].join(' ');
  const steadyArg = values.steady !== undefined ? [`--steady ${values.steady}`] : [];
  // The emulators log every AssumeRole and TokenReview; the bench shows only its own lines.
  const quiet = (l: string) => (/^(sts-gate|eks-emulator|moto)\b/.test(l) ? undefined : log(l));
  if (only === undefined || only === 'load') {
    const result = await runLoadBench({ root, nodeOptions, runs: n(5), log });
    await report(renderLoad(result, cmd('load'), custom), record, log);
  }
  if (only === undefined || only === 'signing') {
    await report(renderSigning(runSigningBench(), cmd('signing')), record, log);
  }
  if (only === undefined || only === 'status') {
    const kit = await startKit({ clusters: ['status'], aws: false, log });
    let result: StatusCostResult;
    try {
      result = await runStatusCostBench(kit, { deliveries: 10, patchesPerRow: n(300), log });
    } finally {
      await kit.stop();
    }
    await report(renderStatusCost(result, cmd('status')), record, log);
  }
  for (const mode of ['separate', 'one-process'] as const) {
    const section = mode === 'separate' ? 'engine' : 'engine-one';
    if (only !== undefined && only !== section) continue;
    const kit = await startKit({ clusters: ['hub'], aws: false, log });
    let result: EngineBenchResult;
    try {
      result = await runEngineBench(kit, {
        mode,
        namespaces: n(2000),
        shards: 20,
        mirrors: n(200),
        noiseStart: n(1000),
        noiseMid: n(10_000),
        noiseEnd: n(50_000),
        newNamespaceSamples: n(50),
        updateSamples: n(20),
        steadyMs: Number(values.steady ?? 60) * 1000,
        nodeOptions,
        root,
        log,
      });
    } finally {
      await kit.stop();
    }
    const command = cmd(section, ...steadyArg);
    await report(
      mode === 'separate' ? renderEngine(result, command) : renderEngineOneProcess(result, command),
      record,
      log,
    );
  }
  if (only === undefined || only === 'engine-100k') {
    const kit = await startKit({ clusters: ['hub'], aws: false, log });
    let result: Engine100kResult;
    try {
      result = await runEngine100kBench(kit, {
        namespaces: n(10_000),
        mirrors: 10,
        unrelatedSteps: [...new Set([n(25_000), n(50_000)])],
        newNamespaceSamples: n(50),
        steadyMs: Number(values.steady ?? 60) * 1000,
        nodeOptions,
        root,
        log,
      });
    } finally {
      await kit.stop();
    }
    await report(renderEngine100k(result, cmd('engine-100k', ...steadyArg)), record, log);
  }
  if (only === undefined || only === 'multicluster') {
    const followers = Array.from(
      { length: n(10) },
      (_, i) => `follower-${String(i + 1).padStart(2, '0')}`,
    );
    const kit = await startKit({ clusters: ['hub', ...followers], log: quiet });
    let result: MultiClusterBenchResult;
    try {
      result = await runMultiClusterBench(kit, {
        followers,
        namespacesPerFollower: n(100),
        updates: n(20),
        nodeOptions,
        root,
        log,
      });
    } finally {
      await kit.stop();
    }
    await report(renderMultiCluster(result, cmd('multicluster')), record, log);
  }
  if (only === undefined || only === 'scale') {
    // 100 followers on 21 kube-apiservers: 5 with their own (stopped for the outage), 15 hosts
    // and 80 sharing those hosts, 5-6 each. Every agent on a shared API server watches all
    // copies there, so sharing multiplies the followers' watch traffic by the followers per
    // server: with 19 per server (11 API servers) the followers' side took most of the 2 cores
    // and the hub's changes waited on it; no fleet has that.
    const followers = Array.from(
      { length: n(100) },
      (_, i) => `follower-${String(i + 1).padStart(3, '0')}`,
    );
    const stopped = n(5);
    const hosts = followers.slice(stopped, stopped + n(15));
    const sharing = roundRobin(followers.slice(stopped + hosts.length), hosts);
    const kit = await startKit({ clusters: ['hub', ...followers], sharing, log: quiet });
    // 101 processes, and an outage that makes them warn: their lines go to a file of their own.
    const logFile = join(tmpdir(), 'mirrorhub-bench-scale.log');
    await writeFile(logFile, '');
    log(`scale: hub and agent logs in ${logFile}`);
    let result: ScaleBenchResult;
    try {
      result = await runScaleBench(kit, {
        followers,
        stopped,
        namespacesPerFollower: 5,
        updates: n(10),
        idleSeconds: 60,
        nodeOptions,
        logFile,
        root,
        log,
      });
    } finally {
      await kit.stop();
    }
    await report(renderScale(result, cmd('scale')), record, log);
  }
  if (only === undefined || only === 'fleet') {
    // One fleet grown through the sizes on 12 follower kube-apiservers (the kit's sharing:
    // follower-0001..0012 host, the rest round-robin), by 1, 2 or 4 hub replicas; the first 20
    // followers with agent processes, the others' agents hosted 50 to a process (fleet-scale.ts).
    const replicas = Number(values.replicas);
    if (![1, 2, 3, 4].includes(replicas))
      throw new Error(`--replicas must be 1-4, got ${values.replicas}`);
    const sizes = (values.sizes ?? '100,250,500,1000').split(',').map((x) => n(Number(x)));
    if (sizes.some((x, i) => !(x > 0) || (i > 0 && x <= sizes[i - 1]!)))
      throw new Error(`--sizes must be ascending follower counts, got ${values.sizes}`);
    const followers = Array.from(
      { length: Math.max(...sizes) },
      (_, i) => `follower-${String(i + 1).padStart(4, '0')}`,
    );
    const hosts = followers.slice(0, Math.min(12, followers.length));
    const sharing = roundRobin(followers.slice(hosts.length), hosts);
    const kit = await startKit({ clusters: ['hub', ...followers], sharing, log: quiet });
    const logFile = join(tmpdir(), 'mirrorhub-bench-fleet.log');
    await writeFile(logFile, '');
    log(`fleet: hub and agent logs in ${logFile}`);
    let result: FleetScaleResult;
    try {
      result = await runFleetScaleBench(kit, {
        followers,
        sizes,
        replicas,
        agentProcesses: n(20),
        agentsPerHost: 50,
        namespacesPerFollower: 2,
        updates: Math.max(3, n(5)),
        idleSeconds: 30,
        reserveMb: 4096,
        budgetMinutes: Number(values.minutes ?? Infinity),
        convergeMinutes: 10,
        nodeOptions,
        logFile,
        root,
        log,
      });
    } finally {
      await kit.stop();
    }
    const command = cmd(
      'fleet',
      ...(replicas !== 1 ? [`--replicas ${replicas}`] : []),
      ...(values.sizes !== undefined ? [`--sizes ${values.sizes}`] : []),
      ...(values.minutes !== undefined ? [`--minutes ${values.minutes}`] : []),
    );
    const png = record
      ? join(root, 'docs', 'images', `${fleetSectionName(replicas)}.png`)
      : join(tmpdir(), `mirrorhub-bench-${fleetSectionName(replicas)}.png`);
    await writePng(fleetSvg(result, `${command}, ${machine()}`), png);
    log(`fleet: plot written to ${png}`);
    await report(renderFleet(result, command, machine()), record, log);
  }
  if (only === undefined || only === 'growth') {
    const steps = (xs: number[]) => [...new Set(xs.map(n))];
    const followers = Array.from(
      { length: n(10) },
      (_, i) => `follower-${String(i + 1).padStart(2, '0')}`,
    );
    const opts = {
      namespaceSteps: steps([250, 500, 1000, 2000]),
      unrelatedSteps: steps([10_000, 25_000, 50_000]),
      clusterSteps: [1, 2, 5].filter((c) => c < followers.length).concat(followers.length),
      namespacesPerFollower: n(20),
      nodeOptions,
      root,
      log,
    };
    let single: Pick<GrowthBenchResult, 'namespaces' | 'unrelated'>;
    const kit = await startKit({ clusters: ['hub'], aws: false, log });
    try {
      single = await runSingleClusterGrowth(kit, opts);
    } finally {
      await kit.stop();
    }
    const fleetKit = await startKit({ clusters: ['hub', ...followers], log: quiet });
    let clusters: GrowthPoint[];
    try {
      clusters = await runClusterGrowth(fleetKit, followers, opts);
    } finally {
      await fleetKit.stop();
    }
    const result: GrowthBenchResult = {
      ...single,
      clusters,
      mirrors: 10,
      namespacesPerFollower: opts.namespacesPerFollower,
    };
    const png = record
      ? join(root, 'docs', 'images', 'memory-growth.png')
      : join(tmpdir(), 'mirrorhub-bench-memory-growth.png');
    await writePng(
      growthSvg(growthPanels(result), `npm run bench -- --only growth, ${machine()}`),
      png,
    );
    log(`growth: plot written to ${png}`);
    await report(renderGrowth(result, cmd('growth')), record, log);
  }
  if (only === undefined || only === 'vault') {
    const kit = await startKit({ clusters: ['hub'], aws: false, log });
    let result: VaultBenchResult;
    try {
      result = await runVaultBench(kit, {
        mirrors: n(200),
        destNamespaces: n(20),
        pollSeconds: 30,
        steadyMs: Number(values.steady ?? 300) * 1000,
        updateSamples: Math.max(3, n(10)),
        nodeOptions,
        root,
        log,
      });
    } finally {
      await kit.stop();
    }
    await report(renderVault(result, cmd('vault', ...steadyArg)), record, log);
  }
  if (only === undefined || only === 'idle') {
    const audit = await auditLog();
    const kit = await startKit({ clusters: ['hub'], aws: false, apiserverArgs: audit.args, log });
    let result: IdleBenchResult;
    try {
      result = await runIdleBench(kit, {
        auditLogPath: audit.path,
        windowMs: Number(values.steady ?? 180) * 1000,
        settleMs: 20_000,
        nodeOptions,
        root,
        log,
      });
    } finally {
      await kit.stop();
    }
    await report(renderIdle(result, cmd('idle', ...steadyArg), machine()), record, log);
  }
}

async function report(
  section: DocSection,
  record: boolean,
  log: (l: string) => void,
): Promise<void> {
  console.log(`${section.summary}\n${section.method}`);
  const { name } = section;
  if (record) {
    const file = join(root, 'docs', 'BENCHMARKS.md');
    const doc = await readFile(file, 'utf8').catch(() => undefined);
    await writeFile(file, recordSection(doc, section));
    log(`${name}: recorded in docs/BENCHMARKS.md`);
  } else {
    log(`${name}: scaled run or custom --node-options: not recorded in docs/BENCHMARKS.md`);
  }
}

/**
 * A benchmark's table at the top of docs/BENCHMARKS.md: its title, the command that reproduces
 * it and the machine it ran on (the load average says whether others shared the cores), then one
 * row per figure.
 */
function summaryOf(title: string, command: string, rows: Figure[]): string {
  return [
    `## ${title}`,
    '',
    `Command: \`${command}\`. Recorded on ${machine()}.`,
    '',
    ...figureTable(rows),
    '',
  ].join('\n');
}

/** A benchmark's detail under Method: how it is set up, then what its table leaves out. */
function methodOf(title: string, lines: string[]): string {
  return [`### ${title}`, '', ...lines].join('\n');
}

/**
 * Status writes a source change may cost the hub in total, whatever the number of clusters: the
 * mirror's status is written as agents report, at most once per second and once more per 20
 * clusters (statusCoalesceMs: a change to more clusters takes longer, and its status is written
 * less often), and a change converges in a few of those periods; plus its Event.
 */
const STATUS_WRITES_BOUND = 6;

/** Why the hub writes each kind of object when a source changes (the busiest change's table). */
function whyWritten(series: string): string {
  const [kind, verb] = series.split(' ');
  if (kind === 'Secret' && verb === 'update')
    return "the cluster's payload Secret: the new content, signed (one per cluster)";
  if (kind === 'MirrorDelivery' && verb === 'patch')
    return "the cluster's delivery: its contentHash and signature (one per cluster)";
  if (/SecretMirror$/.test(kind ?? ''))
    return "the mirror's status as the agents report, coalesced to at most one write a second";
  if (kind === 'Event')
    return 'Synced: the mirror is Active again once every cluster reported the change';
  if (kind === 'MirrorCluster')
    return 'not this change: a periodic status change (credentials renewed, agent heartbeat report)';
  return 'unexpected: look at it';
}

function renderMultiCluster(r: MultiClusterBenchResult, command: string): DocSection {
  const writes = r.hubWritesPerChange;
  const title = 'Multi-cluster: hub + EKS followers';
  return {
    name: 'multicluster',
    summary: summaryOf(title, command, [
      { figure: `initial delivery of ${r.copies} copies`, now: fmtMs(r.initialMs) },
      {
        figure: `one source change -> all ${r.copies} copies converged, p50 / p99 (${r.update.samples} changes)`,
        now: `${fmtMs(r.update.p50)} / ${fmtMs(r.update.p99)}`,
        target: 'p99 < 5 s',
        met: r.update.p99 < 5000,
      },
      {
        figure: `hub writes per source change (all ${r.followers} clusters, ${r.copies} copies; min / max over the changes)`,
        now: `${Math.min(...writes)} / ${Math.max(...writes)}`,
        target: `<= 2 per cluster + ${STATUS_WRITES_BOUND} in total`,
        met: Math.max(...writes) <= 2 * r.followers + STATUS_WRITES_BOUND,
      },
      {
        figure: 'hub RSS after the run',
        now: `${r.hubRssMb.toFixed(0)} MB`,
        target: '< 120 MB',
        met: r.hubRssMb < 120,
      },
    ]),
    method: methodOf(title, [
      `Setup: ${r.followers} followers, each its own kube-apiserver, AWS account (moto behind the kit's STS gate), IAM role with ExternalId, EKS access entry and agent process; ` +
        `${r.namespacesPerFollower} matching namespaces each; one ClusterSecretMirror selecting the followers by label (${r.copies} copies). The hub runs as \`node hub/dist/main.js\`, assuming each follower's role and minting EKS tokens; everything shares the same 2 cores.`,
      '',
      "Hub writes per change are counted from the hub's own `mirrorhub_writes_total`, from the source's update until 2 s after the last copy changed. The busiest change, by kind and verb:",
      '',
      '| write (kind, verb, cluster) | count | why |',
      '| --- | --- | --- |',
      ...Object.entries(r.busiestChange)
        .sort(([x], [y]) => x.localeCompare(y))
        .map(([k, v]) => `| ${k} | ${v} | ${whyWritten(k)} |`),
      '',
    ]),
  };
}

function renderLoad(r: LoadBenchResult, command: string, custom: string | undefined): DocSection {
  const cell = (row: LoadRow, f: (x: LoadSample) => number) => {
    const xs = row.samples.map(f);
    const [lo, mid, hi] = [Math.min(...xs), rowMedian(row, f), Math.max(...xs)];
    return hi - lo < 0.05
      ? mid.toFixed(1)
      : `${mid.toFixed(1)} (${lo.toFixed(1)}-${hi.toFixed(1)})`;
  };
  const one = r.rows.find((row) => row.subject.program === 'standalone');
  const oneRss = one ? rowMedian(one, (x) => x.rssMb) : NaN;
  const options = custom === undefined ? "the charts' `nodeOptions`" : `\`${custom}\``;
  const title = 'Start-up memory: node and the code, before any state';
  return {
    name: 'load',
    summary: summaryOf(title, command, [
      ...r.rows.map((row) => ({
        figure: `${row.subject.label}: RSS, median (min-max) of ${r.runs} runs`,
        now: `${cell(row, (x) => x.rssMb)} MB`,
      })),
      {
        figure:
          "what the one process has left under engine-one's 80 MB target for its state (2,000 namespaces, 200 mirrors and their deliveries on both halves, 20,000 copies) and the pages of node's binary its work touches",
        now: `${(80 - oneRss).toFixed(0)} MB`,
      },
    ]),
    method: methodOf(title, [
      `Each process is started as its chart starts it (NODE_OPTIONS ${options}, the chart's \`v8Flags\` and \`mallocArenaMax\`, plus \`--expose-gc\`), imports its package's dist/index.js (the code its main.js runs; nothing started, no API server reached), collects garbage twice, and is measured from /proc/<pid>/status: ${r.runs} runs each, median (min-max) in MB.`,
      '',
      '| process | RSS | file-backed | anonymous | V8 heap in use |',
      '| --- | --- | --- | --- | --- |',
      ...r.rows.map(
        (row) =>
          `| ${row.subject.label} | ${cell(row, (x) => x.rssMb)} | ${cell(row, (x) => x.fileMb)} | ${cell(row, (x) => x.anonMb)} | ${cell(row, (x) => x.heapUsedMb)} |`,
      ),
      '',
      "This is the floor under every RSS figure in the other benchmarks: file-backed pages are node's own binary as far as the process has touched it, anonymous ones V8's heap (the code's functions, bytecode and source text) and native allocations.",
      '',
    ]),
  };
}

function renderScale(r: ScaleBenchResult, command: string): DocSection {
  const writes = r.hubWritesPerChange;
  const lat = (l: ScaleBenchResult['update']) => `${fmtMs(l.p50)} / ${fmtMs(l.p99)}`;
  const reachable = r.followers - r.outage.stopped;
  const perHour = Math.max(1, Math.ceil(r.aws.runMinutes / 60));
  const title = `${r.followers} followers`;
  return {
    name: 'scale',
    summary: summaryOf(title, command, [
      {
        figure: `${r.followers} MirrorClusters registered at once -> initial delivery of ${r.copies} copies`,
        now: fmtMs(r.initialMs),
      },
      {
        figure: `one source change -> all ${r.copies} copies converged, p50 / p99 (${r.update.samples} changes)`,
        now: lat(r.update),
        target: 'p99 < 10 s',
        met: r.update.p99 < 10_000,
      },
      {
        figure: `the same with ${r.outage.stopped} followers' API servers stopped: the other ${reachable} followers' copies, p50 / p99`,
        now: lat(r.outage.update),
        target: 'p99 not slower (25 % or 1 s of noise allowed)',
        met: r.outage.update.p99 <= Math.max(r.update.p99 * 1.25, r.update.p99 + 1000),
      },
      {
        figure: 'hub writes per source change (min / max)',
        now: `${Math.min(...writes)} / ${Math.max(...writes)}`,
        target: `<= 2 per cluster + ${STATUS_WRITES_BOUND} in total`,
        met: Math.max(...writes) <= 2 * r.followers + STATUS_WRITES_BOUND,
      },
      {
        figure: "hub RSS after the changes / after the outage's",
        now: `${r.hubRssMb.toFixed(0)} / ${r.outage.hubRssMb.toFixed(0)} MB`,
        target: '< 150 MB',
        met: Math.max(r.hubRssMb, r.outage.hubRssMb) < 150,
      },
      {
        figure: `hub CPU at idle (${r.idleSeconds} s, nothing changing)`,
        now: `${r.hubIdleCpuPercent.toFixed(2)} % of a core`,
        target: '< 2 %',
        met: r.hubIdleCpuPercent < 2,
      },
      {
        figure: `AssumeRole calls per follower role, most of any (STS gate's count, whole run of ${r.aws.runMinutes.toFixed(0)} min)`,
        now: String(r.aws.assumeRoleMax),
        target: '1 per session lifetime',
        met: r.aws.assumeRoleMax <= 1,
      },
      {
        figure:
          "DescribeCluster calls per reachable follower, most of any (EKS emulator's count, same run)",
        now: String(r.aws.describeClusterMax),
        target: '1 per hour',
        met: r.aws.describeClusterMax <= perHour,
      },
      {
        figure: `DescribeCluster calls per stopped follower, most of any (${r.aws.outageMinutes.toFixed(1)} min unreachable)`,
        now: String(r.aws.describeClusterDownMax),
        target: '1 per hour',
        met: r.aws.describeClusterDownMax <= perHour,
      },
    ]),
    method: methodOf(title, [
      `Setup: ${r.followers} followers, each its own AWS account (moto behind the kit's STS gate), IAM role with ExternalId, EKS cluster and access entry in the EKS emulator, and agent process; ` +
        `${r.apiServers} kube-apiservers hold them (${r.outage.stopped} followers have one each; the others share the rest, each in its own agent namespace, its hub access bound only there, and an agent policy allowing only its own ${r.namespacesPerFollower} namespaces). ` +
        `One ClusterSecretMirror selects every follower by label (${r.copies} copies). The hub runs as \`node hub/dist/main.js\`; everything shares the same 2 cores, ` +
        "the followers' side (agents and follower API servers) at nice 19: in a fleet they have their clusters' own machines, and at the hub's priority their bursts starved the hub's API server until its leader Lease renewal missed the 10 s deadline (test/src/bench/fleet.ts).",
      '',
      `The outage stops ${r.outage.stopped} followers' API servers for ${r.aws.outageMinutes.toFixed(1)} min; "not slower" compares the other followers' p99 with the run's own p99 before it, allowing 25 % (or 1 s) for the run-to-run noise of a shared machine.`,
      '',
    ]),
  };
}

function renderVault(r: VaultBenchResult, command: string): DocSection {
  const f = (x: number | undefined) => (x ?? 0).toFixed(0);
  const hub = r.hubCounterPerMinute;
  const op = (name: string) =>
    Object.entries(hub)
      .filter(([k]) => k.startsWith(`${name} `))
      .reduce((a, [, v]) => a + v, 0);
  const wire = r.wirePerMinute;
  const pollsPerMin = (r.mirrors * 60) / r.pollSeconds;
  const total = Object.values(wire).reduce((a, b) => a + b, 0);
  const other = Object.entries(wire)
    .filter(([k]) => !['metadata', 'data', 'mounts', 'token'].includes(k))
    .map(([k, v]) => `${k} ${v.toFixed(1)}`);
  const byOutcome = Object.entries(hub)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `\`${k.replace(' ', '/')}\` ${v.toFixed(1)}`)
    .join(', ');
  const bound = r.pollSeconds * 1000 + 1000;
  // What the figures themselves say about where the counter and the ideal part ways.
  const notes: string[] = [];
  if (op('detect') > (wire['mounts'] ?? 0) * 1.5 + 1) {
    notes.push(
      '',
      `The hub's \`detect\` count (${f(op('detect'))}/min) is not requests: the wire carried ${f(wire['mounts'])}/min to sys/internal/ui/mounts. ` +
        "The hub counts a `detect` on every poll of a source without `kvVersion`, also when the mount's KV version comes from its cache (hub/src/mirrors/sources/vault/poller.ts, `read()`).",
    );
  }
  if ((wire['data'] ?? 0) > 0) {
    const perMirror = (x: number | undefined) =>
      ((x ?? 0) * r.steadyMs) / 60_000 / Math.max(1, r.mirrors);
    notes.push(
      '',
      `Data reads with nothing changed in Vault: ${perMirror(wire['data']).toFixed(2)} per mirror in the window, with ${perMirror(wire['mounts']).toFixed(2)} mount detections per mirror. ` +
        "The hub checks each connection again every 5 minutes; that reconcile tells the connection's pollers it changed even when nothing did " +
        '(VaultConnections.reconcile -> onChange -> VaultSources.connectionChanged), so each poller forgets its KV version and mount, detects the mount again and reads the data again, ' +
        'and every Vault mirror is reconciled. Nothing is written: the data is the same. ' +
        `That check also counts a \`login\` (${op('login').toFixed(1)}/min here) when the session still holds its token and nothing is sent (token requests on the wire: ${f(wire['token'])}/min).`,
    );
  }
  const metadataOk =
    Math.abs((wire['metadata'] ?? 0) - pollsPerMin) <= 0.15 * pollsPerMin && !(wire['data'] ?? 0);
  const title = 'Vault source: polling KV v2';
  return {
    name: 'vault',
    summary: summaryOf(title, command, [
      {
        figure: `initial: ${r.mirrors} mirrors created -> ${r.mirrors} copies`,
        now: fmtMs(r.initialMs),
      },
      {
        figure:
          'Vault requests per minute at steady state, counted on the wire: metadata / data / mount detection / token',
        now: `${f(wire['metadata'])} / ${f(wire['data'])} / ${f(wire['mounts'])} / ${f(wire['token'])}${other.length ? ` (other: ${other.join(', ')})` : ''}; total ${total.toFixed(0)}`,
        target: `one metadata read per mirror per poll (~${pollsPerMin.toFixed(0)}), no data read`,
        met: metadataOk,
      },
      {
        figure:
          "the hub's `mirrorhub_vault_requests_total` per minute: metadata / read / detect / login",
        now: `${f(op('metadata'))} / ${f(op('read'))} / ${f(op('detect'))} / ${f(op('login'))}`,
        target: `metadata ~${pollsPerMin.toFixed(0)}, read 0`,
        met: Math.abs(op('metadata') - pollsPerMin) <= 0.15 * pollsPerMin && op('read') === 0,
      },
      {
        figure: 'hub writes per minute at steady state (`mirrorhub_writes_total`, all kinds)',
        now: r.hubWritesPerMinute.toFixed(1),
        target: '0',
        met: r.hubWritesPerMinute === 0,
      },
      {
        figure: 'hub CPU at steady state',
        now: `${r.hubCpuSecondsPerMinute.toFixed(2)} s per minute (${((r.hubCpuSecondsPerMinute / 60) * 100).toFixed(1)} % of a core)`,
      },
      {
        figure: 'hub RSS at the end of the window / peak (VmHWM)',
        now: `${r.hubRssMb.toFixed(0)} MB / ${r.hubPeakRssMb.toFixed(0)} MB`,
        target: '< 120 MB',
        met: r.hubRssMb < 120,
      },
      {
        figure: `one Vault write -> its copy's content changed, p50 / max (${r.update.samples} single updates to different paths, written at random moments over one poll period)`,
        now: `${fmtMs(r.update.p50)} / ${fmtMs(r.update.max)}`,
        target: `max within a poll period + 1 s (${fmtMs(bound)})`,
        met: r.update.max <= bound,
      },
    ]),
    method: methodOf(title, [
      `Setup: OpenBao ${OPENBAO_VERSION} dev server over TLS (real \`bao\`, KV v2 at \`secret/\`) on the same cores; ${r.mirrors} SecretMirrors with \`source.kind: Vault\`, each reading its own path \`secret/bench/app-NNN\` (~200 B) ` +
        `through one VaultConnection (token auth, a read-only policy), \`pollPeriodSeconds: ${r.pollSeconds}\`, no \`kvVersion\` (detected), each delivering to one namespace (${r.destNamespaces} namespaces, ${r.mirrors} copies). ` +
        `Hub and agent run as \`node hub/dist/main.js\` / \`node agent/dist/main.js\` as in the engine benchmark. Steady window: ${(r.steadyMs / 1000).toFixed(0)} s (${(r.steadyMs / 1000 / r.pollSeconds).toFixed(1)} poll periods), starting one poll period after the last copy landed, nothing changing in Vault.`,
      '',
      `On the wire: the hub reaches OpenBao through a TLS proxy in the bench that counts requests by path (OpenBao 2 cannot enable an audit device through its API); the hub opened ${r.connectionsPerMinute.toFixed(1)} TLS connections per minute. The hub's counter by operation/outcome: ${byOutcome || 'nothing'}. ` +
        `Update latencies (ms): ${r.update.all.map((x) => x.toFixed(0)).join(', ')}; a poll comes up to 10 % before its period and never after it, so one change waits at most ${r.pollSeconds.toFixed(0)} s for its poll.`,
      ...notes,
      '',
    ]),
  };
}

function growthPanels(r: GrowthBenchResult) {
  return [
    {
      title: 'namespaces',
      xLabel: `namespaces, each with ${r.mirrors} copies`,
      points: r.namespaces,
    },
    {
      title: 'unrelated Secrets',
      xLabel: `unrelated Secrets (at ${r.namespaces.at(-1)?.at ?? 0} namespaces)`,
      points: r.unrelated,
    },
    {
      title: 'clusters',
      xLabel: `EKS followers, ${r.namespacesPerFollower} copies each (agent: mean)`,
      points: r.clusters,
    },
  ];
}

function renderGrowth(r: GrowthBenchResult, command: string): DocSection {
  const panels = growthPanels(r);
  const rows = panels.flatMap((p) => {
    const first = p.points[0]!;
    return p.points.map((q, i) => {
      const grew =
        i === 0
          ? ''
          : `hub ${signed(q.hubMb - first.hubMb)}, agent ${signed(q.agentMb - first.agentMb)}`;
      return `| ${p.title} | ${q.at} | ${q.hubMb.toFixed(0)} MB | ${q.agentMb.toFixed(0)} MB | ${grew} |`;
    });
  });
  const title = 'Memory as the load grows';
  return {
    name: 'growth',
    summary: summaryOf(
      title,
      command,
      panels.map((p) => {
        const [first, last] = [p.points[0]!, p.points.at(-1)!];
        return {
          figure: `RSS as ${p.title} grow from ${first.at} to ${last.at}: hub / agent (at the first step: ${first.hubMb.toFixed(0)} / ${first.agentMb.toFixed(0)} MB)`,
          now: `${signed(last.hubMb - first.hubMb)} / ${signed(last.agentMb - first.agentMb)}`,
        };
      }),
    ),
    method: methodOf(title, [
      `The plot's first panel is the agent's memory against its copies: ${r.mirrors} a namespace, ${(r.namespaces[0]?.at ?? 0) * r.mirrors} to ${(r.namespaces.at(-1)?.at ?? 0) * r.mirrors} copies; at 100,000 copies, see "Engine at 100000 copies". ` +
        `Setup: hub and agent as in the engine benchmark (the charts' flags). Namespaces: ${r.mirrors} SecretMirrors select every namespace labelled growth=on, so each new namespace holds ${r.mirrors} copies of ~4 KB sources. ` +
        'Unrelated Secrets: 512 B Secrets in namespaces nothing selects, added after the last namespace step. ' +
        `Clusters: EKS followers (each its own kube-apiserver, AWS account, role with ExternalId and agent process) registered step by step, a ClusterSecretMirror delivering to ${r.namespacesPerFollower} namespaces in each; the agent column is the mean over the registered followers' agents. ` +
        `Each row is read ${SETTLE_MS / 1000} s after every copy the step implies has landed.`,
      '',
      '![hub and agent RSS against namespaces, unrelated Secrets and clusters](images/memory-growth.png)',
      '',
      '| grows | to | hub RSS | agent RSS | since the first row |',
      '| --- | --- | --- | --- | --- |',
      ...rows,
      '',
    ]),
  };
}

function signed(mb: number): string {
  return `${mb >= 0 ? '+' : ''}${mb.toFixed(0)} MB`;
}

function renderSigning(r: SigningBenchResult, command: string): DocSection {
  const us = (x: number) => `${x.toFixed(1)} µs`;
  const perReconcile = r.us.verifyDelivery + r.us.verifyPayload + r.us.policyDelivery;
  const title = 'Trust: signing, verifying and policy, per delivery';
  return {
    name: 'signing',
    summary: summaryOf(title, command, [
      {
        figure: 'sign a MirrorDelivery (Ed25519; hub: each plan, per selected cluster)',
        now: us(r.us.signDelivery),
      },
      {
        figure: 'sign a payload Secret (hub: each plan, per selected cluster)',
        now: us(r.us.signPayload),
      },
      {
        figure: 'verify a MirrorDelivery (agent: each reconcile of a delivery)',
        now: us(r.us.verifyDelivery),
      },
      {
        figure: 'verify a payload Secret (agent: each reconcile of a delivery)',
        now: us(r.us.verifyPayload),
      },
      {
        figure: 'policy: the copy, type and metadata keys (agent: each reconcile of a delivery)',
        now: us(r.us.policyDelivery),
      },
      {
        figure: 'policy: one namespace (agent: per selected namespace, per reconcile)',
        now: us(r.us.policyNamespace),
      },
      {
        figure:
          "one reconcile: both signatures and the copy's policy, plus the namespace check per namespace",
        now: `~${us(perReconcile)}`,
      },
      {
        figure: "the engine benchmark's 200 deliveries, one full resync, in CPU",
        now: `~${((200 * perReconcile) / 1000).toFixed(0)} ms`,
      },
    ]),
    method: methodOf(title, [
      `Setup: the functions of shared/src/mirror/signing.ts and agent/src/policy.ts on a delivery like the hub writes (a ClusterSecretMirror of a ~${(r.payloadBytes / 1024).toFixed(1)} KB kubernetes.io/tls payload), median of 5 rounds of ${r.iterations}; no cluster. ` +
        'The engine and multi-cluster figures are measured with signing and the policy on (their hub and agent run as the charts run them); ' +
        "the ValidatingAdmissionPolicies are not in those figures: the bench's processes use the kit's admin credentials, which the policies do not bind.",
      '',
    ]),
  };
}

function renderStatusCost(r: StatusCostResult, command: string): DocSection {
  const row = (shape: string, namespaces: number) =>
    r.rows.find((x) => x.shape === shape && x.namespaces === namespaces);
  const cell = (shape: string, namespaces: number) => {
    const x = row(shape, namespaces);
    return x ? `${x.cpuMs.toFixed(2)} ms (${(x.objectBytes / 1024).toFixed(1)} KB)` : '-';
  };
  const shapes = [
    ['objects', 'every namespace an object (name, state) in `namespaces`, as agents used to'],
    ['names', 'the same namespaces by name in `syncedNamespaces`, as agents write them now'],
    ['none', 'no list: counts, phase and message only'],
  ];
  const title = 'Status writes: what one MirrorDelivery status patch costs the API server';
  return {
    name: 'status',
    summary: summaryOf(
      title,
      command,
      shapes.map(([shape, what]) => ({
        figure: `${what}: API server + etcd CPU per patch (the delivery as served), at 100 / 500 namespaces`,
        now: `${cell(shape!, 100)} / ${cell(shape!, 500)}`,
      })),
    ),
    method: methodOf(title, [
      `Setup: one kube-apiserver + etcd with the agent chart's MirrorDelivery CRD; ${r.deliveries} deliveries, each patched as an agent patches it when one more namespace got its copy (a merge patch of the whole status), ${r.deliveries} at once; ${r.patchesPerRow} patches a row. CPU is the API server's and etcd's, per patch.`,
      '',
      "A Secret written with server-side apply costs the same API server about 1.5 ms (the engine benchmark's raw apply loop); each new namespace makes every delivery selecting it write its status once.",
      '',
    ]),
  };
}

function machine(): string {
  // The load average says whether other work shared the cores: latencies are only comparable
  // between runs on a quiet machine.
  return `${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}, 1-min load average at the end ${loadavg()[0]!.toFixed(1)}`;
}

/** Mirrors per shard: `10`, or `2-3` when mirrors do not divide evenly (scaled runs). */
function perShard(mirrors: number, shards: number): string {
  const lo = Math.floor(mirrors / shards);
  return mirrors % shards === 0 ? String(lo) : `${lo}-${lo + 1}`;
}

/** `node <v8Flags> <component>/dist/main.js` and MALLOC_ARENA_MAX, as the chart starts it. */
function startedAs(component: 'hub' | 'agent' | 'hub-in-process'): string {
  const program = component === 'hub-in-process' ? 'standalone' : component;
  const cmd = ['node', ...chartV8Flags(root, component), `${program}/dist/main.js`].join(' ');
  const env = Object.entries(chartMallocEnv(root, component)).map(([k, v]) => `${k}=${v}`);
  return `\`${[...env, cmd].join(' ')}\``;
}

function renderEngine(r: EngineBenchResult, command: string): DocSection {
  const o = r.options;
  const split = (c: 'hub' | 'agent', k: string) => {
    const x = r.rssSplit[c][k];
    return x ? `${x.anon.toFixed(0)} / ${x.file.toFixed(0)} MB` : '?';
  };
  const rssRows = Object.keys(r.rss.hub).map(
    (k) =>
      `| ${k} | ${r.rss.hub[k]!.toFixed(0)} MB | ${r.rss.agent[k]!.toFixed(0)} MB | ${split('hub', k)} | ${split('agent', k)} |`,
  );
  const hubMax = Math.max(...Object.values(r.rss.hub));
  const fanOutRate = r.copies / (r.initialFanOutMs / 1000);
  const agentMax = Math.max(...Object.values(r.rss.agent));
  const title = 'Engine: one cluster, hub + agent';
  return {
    name: 'engine',
    summary: summaryOf(title, command, [
      { figure: `initial fan-out of ${r.copies} copies`, now: fmtMs(r.initialFanOutMs) },
      newNamespaceFigure(
        r,
        ` (the last of them), p50 / p99 (${r.newNamespace.samples} namespaces, 1 s apart)`,
      ),
      {
        figure: `the same, ${r.newNamespace.samples} namespaces created back to back`,
        now: `${fmtMs(r.newNamespace.burst.p50)} / ${fmtMs(r.newNamespace.burst.p99)}`,
      },
      {
        figure: `the floor without mirrorhub: one client creates a namespace, then applies its ${r.raw.newNamespace.copiesEach} Secrets at once (no watch, no controller; ${r.raw.newNamespace.samples} namespaces, before mirrorhub starts), p50 / p99`,
        now: `${fmtMs(r.raw.newNamespace.p50)} / ${fmtMs(r.raw.newNamespace.p99)}`,
      },
      sourceUpdateFigure(r, ` (${r.sourceUpdate.samples} updates)`),
      steadyFigure(r),
      {
        figure:
          'Lease writes per minute (by design: hub leader election renews every 2 s, agent heartbeat every 30 s)',
        now: r.steadyPerMinute.leaseWrites.toFixed(0),
      },
      {
        figure: 'hub RSS, max',
        now: `${hubMax.toFixed(0)} MB`,
        target: '< 120 MB',
        met: hubMax < 120,
      },
      {
        figure: 'agent RSS, max',
        now: `${agentMax.toFixed(0)} MB`,
        target: '< 80 MB',
        met: agentMax < 80,
      },
      {
        figure:
          'peak RSS during the run (VmHWM: start-up, fan-out and bursts included): hub / agent',
        now: `${r.peakRss.hub.toFixed(0)} MB / ${r.peakRss.agent.toFixed(0)} MB`,
      },
      {
        figure: `copies per second, initial fan-out: mirrorhub / raw create loop (${r.raw.creates} creates with the agent's HTTP client, concurrency ${r.raw.createConcurrency}, before mirrorhub starts)`,
        now: `${fanOutRate.toFixed(0)} / ${r.raw.createsPerSecond.toFixed(0)} = **${(fanOutRate / r.raw.createsPerSecond).toFixed(2)}**`,
        target: '>= 0.9',
        met: fanOutRate / r.raw.createsPerSecond >= 0.9,
      },
      {
        figure:
          'the same raw creates as server-side apply, as the agent creates copies: mirrorhub / raw apply loop',
        now: `${fanOutRate.toFixed(0)} / ${r.raw.appliedCreatesPerSecond.toFixed(0)} = ${(fanOutRate / r.raw.appliedCreatesPerSecond).toFixed(2)}`,
      },
      {
        figure:
          "CPU per copy, initial fan-out: API server + etcd / mirrorhub's processes (raw loops: API server + etcd per POST / per apply)",
        now: fanOutCpuText(r),
      },
      {
        figure: `source update -> ${r.sourceUpdate.copiesEach} copies, p50: mirrorhub / raw update loop of ${r.raw.update.copiesEach} Secrets (concurrency ${r.raw.updateConcurrency}, ${r.raw.update.samples} samples)`,
        now: `${fmtMs(r.sourceUpdate.p50)} / ${fmtMs(r.raw.update.p50)} = **${(r.raw.update.p50 / r.sourceUpdate.p50).toFixed(2)}**`,
        target: '>= 0.9',
        met: r.raw.update.p50 / r.sourceUpdate.p50 >= 0.9,
      },
      {
        figure:
          'the same raw updates written as the agent writes copies (server-side apply, force), p50: mirrorhub / raw apply loop',
        now: `${fmtMs(r.sourceUpdate.p50)} / ${fmtMs(r.raw.applyUpdate.p50)} = ${(r.raw.applyUpdate.p50 / r.sourceUpdate.p50).toFixed(2)}`,
      },
      {
        figure: `hub RSS with the dashboard on and ${r.dashboard.viewers} viewers connected through ${r.dashboard.updates} source updates`,
        now: `${r.dashboard.hubRssMb.toFixed(0)} MB`,
        target: '< 120 MB',
        met: r.dashboard.hubRssMb < 120,
      },
      {
        figure: `dashboard snapshot (${o.mirrors} mirrors, ${(r.dashboard.snapshotBytes / 1024).toFixed(0)} KB): fetches p50 / p99 (${r.dashboard.fetches} fetches, ${r.dashboard.changes} changes streamed)`,
        now: `${fmtMs(r.dashboard.fetchP50Ms)} / ${fmtMs(r.dashboard.fetchP99Ms)}`,
      },
    ]),
    method: methodOf(title, [
      `Setup: ${o.namespaces} namespaces, ${o.mirrors} SecretMirrors each selecting ${o.namespaces / o.shards} namespaces by label (${r.copies} copies), ` +
        `sources ~4 KB kubernetes.io/tls Secrets, unrelated Secrets ${o.noiseStart} -> ${o.noiseMid} -> ${o.noiseEnd}; hub and agent run as \`node hub/dist/main.js\` / \`node agent/dist/main.js\` against a real kube-apiserver + etcd on the same 2 cores.`,
      `NODE_OPTIONS: hub \`${o.nodeOptions.hub || '(none)'}\`, agent \`${o.nodeOptions.agent || '(none)'}\` (the charts' \`nodeOptions\`).`,
      `Command line and allocator, as the charts start them (\`v8Flags\`, \`mallocArenaMax\`): hub ${startedAs('hub')}, agent ${startedAs('agent')}.`,
      '',
      "Reads at steady state include the bench's own scrape of the API server's /metrics (one per window). " +
        'Each RSS row is read once the processes are idle again (5 s after the fan-out; 5 s after the last source update; 10 s after the last unrelated Secret); the peak row shows what bursts cost. ' +
        "The raw loops write Secrets shaped like the copies, with the agent's HTTP client and write concurrency, before mirrorhub starts: the ratio is what mirrorhub's path costs on top of the writes themselves (for the fan-out: creating the mirrors, the hub's payload and delivery writes, the agent's plans and status writes; for a source update: the hub's payload write before the agent's copy writes).",
      '',
      ...costTable(r),
      '| unrelated Secrets in the cluster | hub RSS | agent RSS | hub: anonymous / file-backed | agent: anonymous / file-backed |',
      '| --- | --- | --- | --- | --- |',
      ...rssRows,
      '',
    ]),
  };
}

function renderEngine100k(r: Engine100kResult, command: string): DocSection {
  const o = r.options;
  const rate = r.copies / (r.fanOutMs / 1000);
  const ratio = rate / r.raw.createsPerSecond;
  const mb = (b: number) => `${(b / 2 ** 20).toFixed(0)} MB`;
  const bytes = (b: number | undefined) => (b === undefined ? '?' : `${b.toFixed(0)} B`);
  const [base, ...after] = r.memory;
  const fanned = after[0]!;
  const last = after.at(-1)!;
  const agentPerCopy = perCopy(r, fanned, 'agent');
  const flat = (who: 'hub' | 'agent', m: 'rss' | 'heap') =>
    after.map((row) => (row[who][m] === undefined ? '?' : mb(row[who][m]))).join(' -> ');
  const s = r.steadyPerMinute;
  const title = `Engine at ${r.copies} copies: one cluster, hub + agent`;
  const rows = r.memory.map((row) => {
    const cells = (who: 'hub' | 'agent') => {
      const m = row[who];
      const per = row === base ? undefined : perCopy(r, row, who);
      return `${mb(m.rss)} / ${m.heap === undefined ? '?' : mb(m.heap)}${per ? ` (${bytes(per.rss)} / ${bytes(per.heap)} a copy)` : ''}`;
    };
    return `| ${row.label} | ${cells('agent')} | ${cells('hub')} |`;
  });
  return {
    name: 'engine-100k',
    summary: summaryOf(title, command, [
      {
        figure: `initial fan-out of ${r.copies} copies (${o.mirrors} mirrors x ${o.namespaces} namespaces)`,
        now: fmtMs(r.fanOutMs),
      },
      {
        figure: `copies per second, initial fan-out: mirrorhub / raw create loop (${r.raw.creates} creates with the agent's HTTP client, concurrency ${r.raw.createConcurrency}, before mirrorhub starts)`,
        now: `${rate.toFixed(0)} / ${r.raw.createsPerSecond.toFixed(0)} = **${ratio.toFixed(2)}**`,
        target: '>= 0.9',
        met: ratio >= 0.9,
      },
      {
        figure:
          'the same raw creates as server-side apply, as the agent creates copies: mirrorhub / raw apply loop',
        now: `${rate.toFixed(0)} / ${r.raw.appliedCreatesPerSecond.toFixed(0)} = ${(rate / r.raw.appliedCreatesPerSecond).toFixed(2)}`,
      },
      {
        figure: `new namespace -> its ${r.newNamespace.copiesEach} copies (the last of them), p50 / p99 (${r.newNamespace.samples} namespaces, 1 s apart, with ${last.unrelated} unrelated Secrets)`,
        now: `${fmtMs(r.newNamespace.p50)} / ${fmtMs(r.newNamespace.p99)}`,
        target: 'p50 < 40 ms / p99 < 150 ms',
        met: [r.newNamespace.p50 < 40, r.newNamespace.p99 < 150],
      },
      {
        figure: `agent memory per copy after the fan-out, RSS / V8 heap used (minus the agent started with ${o.namespaces} namespaces and no mirror: ${mb(base!.agent.rss)} / ${base!.agent.heap === undefined ? '?' : mb(base!.agent.heap)})`,
        now: `${bytes(agentPerCopy.rss)} / ${bytes(agentPerCopy.heap)}`,
      },
      {
        figure: `agent RSS as unrelated Secrets grow (${after.map((row) => row.unrelated).join(' -> ')})`,
        now: flat('agent', 'rss'),
      },
      {
        figure: 'agent V8 heap used, the same rows',
        now: flat('agent', 'heap'),
      },
      {
        figure:
          'peak RSS during the run (VmHWM: start-up, fan-out and bursts included): hub / agent',
        now: `${r.peakRss.hub.toFixed(0)} MB / ${r.peakRss.agent.toFixed(0)} MB`,
      },
      {
        figure: `API requests per minute at steady state: reads / writes / new watches (${o.steadyMs / 1000} s window, the API server's counts)`,
        now: `${s.reads.toFixed(0)} / ${s.writes.toFixed(0)} / ${s.watches.toFixed(0)}`,
        target: 'writes 0',
        met: s.writes === 0,
      },
    ]),
    method: methodOf(title, [
      `Setup: ${o.namespaces} namespaces, ${o.mirrors} SecretMirrors each selecting every one of them by label (${r.copies} copies), sources ~4 KB kubernetes.io/tls Secrets; ` +
        `unrelated Secrets (512 B, spread over the same namespaces) added after the fan-out, ${o.unrelatedSteps.join(' -> ')}. ` +
        `Hub and agent run as the engine benchmark runs them (${startedAs('hub')}, ${startedAs('agent')}; NODE_OPTIONS hub \`${o.nodeOptions.hub || '(none)'}\`, agent \`${o.nodeOptions.agent || '(none)'}\`), against one real kube-apiserver + etcd on the same cores.`,
      '',
      "The engine benchmark's parts (test/src/bench/engine.ts) at this size: the raw create loops run before mirrorhub starts, in the same API server; the fan-out is timed from the first mirror's create to the last copy the bench's own watch sees; new namespaces are created 1 s apart and timed to the last of their copies. " +
        'Memory rows are read 10 s after the processes stopped writing (the agent compacts its heap once quiet after a burst); the first row is the processes started and synced with every namespace and no mirror, and per copy is (row - that row) / copies. ' +
        "Heap used is V8's `heap_size_used` from the process's /metrics (live objects and garbage not yet collected). The steady window follows the new namespaces once neither process has written for 2 s; writes are every POST/PUT/PATCH/DELETE the API server counted to anything but Leases (leader-election renewals and agent heartbeats, by design periodic: " +
        `${r.steadyPerMinute.leaseWrites.toFixed(0)} a minute in this window).`,
      '',
      '| moment | agent: RSS / heap used | hub: RSS / heap used |',
      '| --- | --- | --- |',
      ...rows,
      '',
    ]),
  };
}

/** New namespace -> its copies, against target 1 (both engine modes). */
function newNamespaceFigure(r: EngineBenchResult, how: string): Figure {
  const o = r.options;
  return {
    figure: `new namespace -> its ${perShard(o.mirrors, o.shards)} copies${how}`,
    now: `${fmtMs(r.newNamespace.p50)} / ${fmtMs(r.newNamespace.p99)}`,
    target: 'p50 < 40 ms / p99 < 150 ms',
    met: [r.newNamespace.p50 < 40, r.newNamespace.p99 < 150],
  };
}

function sourceUpdateFigure(r: EngineBenchResult, how: string): Figure {
  return {
    figure: `source update -> all ${r.sourceUpdate.copiesEach} copies, p50 / p99${how}`,
    now: `${fmtMs(r.sourceUpdate.p50)} / ${fmtMs(r.sourceUpdate.p99)}`,
    target: 'p99 < 3 s',
    met: r.sourceUpdate.p99 < 3000,
  };
}

function steadyFigure(r: EngineBenchResult): Figure {
  const s = r.steadyPerMinute;
  return {
    figure: 'API requests per minute at steady state: reads / writes / new watches',
    now: `${s.reads.toFixed(0)} / ${s.writes.toFixed(0)} / ${s.watches.toFixed(0)}`,
    target: 'writes 0',
    met: s.writes === 0,
  };
}

/**
 * The same engine run with hub and agent in one process (the hub chart with
 * localAgent.inProcess): the figures a platform team mirroring inside one cluster compares.
 */
function renderEngineOneProcess(r: EngineBenchResult, command: string): DocSection {
  const o = r.options;
  const max = Math.max(...Object.values(r.rss.hub));
  const fanOutRate = r.copies / (r.initialFanOutMs / 1000);
  const rows = Object.keys(r.rss.hub).map((k) => {
    const split = r.rssSplit.hub[k];
    return `| ${k} | ${r.rss.hub[k]!.toFixed(0)} MB | ${split ? `${split.anon.toFixed(0)} / ${split.file.toFixed(0)} MB` : '?'} |`;
  });
  const title = 'Engine: one cluster, one process (hub chart with localAgent.inProcess)';
  return {
    name: 'engine-one',
    summary: summaryOf(title, command, [
      {
        figure: 'resident memory, max of the rows under Method',
        now: `${max.toFixed(0)} MB`,
        target: '< 80 MB',
        met: max < 80,
      },
      {
        figure: 'peak RSS during the run (VmHWM: start-up, fan-out and bursts included)',
        now: `${r.peakRss.hub.toFixed(0)} MB`,
      },
      {
        figure: `initial fan-out of ${r.copies} copies`,
        now: `${fmtMs(r.initialFanOutMs)} (${fanOutRate.toFixed(0)}/s; raw create loop ${r.raw.createsPerSecond.toFixed(0)}/s, ratio ${(fanOutRate / r.raw.createsPerSecond).toFixed(2)})`,
      },
      {
        figure:
          'CPU per copy, initial fan-out: API server + etcd / the process (raw loops: API server + etcd per POST / per apply)',
        now: fanOutCpuText(r),
      },
      newNamespaceFigure(r, `, p50 / p99 (${r.newNamespace.samples} namespaces, 1 s apart)`),
      {
        figure: 'the same, back to back',
        now: `${fmtMs(r.newNamespace.burst.p50)} / ${fmtMs(r.newNamespace.burst.p99)}`,
      },
      sourceUpdateFigure(
        r,
        ` (${r.sourceUpdate.samples} updates; raw update loop p50 ${fmtMs(r.raw.update.p50)})`,
      ),
      steadyFigure(r),
      {
        figure: `resident memory with ${r.dashboard.viewers} dashboards open through ${r.dashboard.updates} source updates`,
        now: `${r.dashboard.hubRssMb.toFixed(0)} MB`,
      },
    ]),
    method: methodOf(title, [
      `Setup: as the engine benchmark (${o.namespaces} namespaces, ${o.mirrors} SecretMirrors, ${r.copies} copies, unrelated Secrets ${o.noiseStart} -> ${o.noiseMid} -> ${o.noiseEnd}), ` +
        `but hub and agent are one process, started as the hub chart starts it with localAgent.inProcess: ${startedAs('hub-in-process')}, NODE_OPTIONS \`${o.nodeOptions.hub || '(none)'}\`.`,
      '',
      ...costTable(r),
      '| unrelated Secrets in the cluster | RSS | anonymous / file-backed |',
      '| --- | --- | --- |',
      ...rows,
      '',
    ]),
  };
}

/**
 * The fan-out's CPU per copy, the API server's and etcd's against mirrorhub's own, beside what
 * the raw loops cost the server per write: on one machine both sides' CPU is the same budget.
 */
function fanOutCpuText(r: EngineBenchResult): string {
  const cpu = r.fanOutCost.cpuSeconds;
  const perCopy = (names: string[]) =>
    ((names.reduce((sum, n) => sum + (cpu[n] ?? 0), 0) * 1000) / r.copies).toFixed(2);
  const ours = Object.keys(cpu).filter((n) => n === 'hub' || n === 'agent' || n === 'hub + agent');
  const raw = r.raw.serverCpuMsPerCreate;
  return (
    `${perCopy(['kube-apiserver', 'etcd'])} / ${perCopy(ours)} ms ` +
    `(raw ${raw.post.toFixed(2)} / ${raw.apply.toFixed(2)} ms)`
  );
}

/**
 * Where the fan-out, new-namespace and source-update phases spent their time: CPU seconds per process
 * and the API server's requests by the time it spent serving them.
 */
function costTable(r: EngineBenchResult): string[] {
  const phases = [
    [`initial fan-out of ${r.copies} copies, until no more writes`, r.fanOutCost],
    [`${r.newNamespace.samples} new namespaces, 1 s apart`, r.newNamespace.cost],
    [`${r.sourceUpdate.samples} source updates`, r.sourceUpdate.cost],
  ] as const;
  const rows = phases.map(([label, c]) => {
    const { cpu, requests, writes } = phaseCostText(c, 5);
    return `| ${label} | ${cpu} | ${requests} | ${writes} |`;
  });
  return [
    "| phase | CPU seconds by process | API requests: count (seconds the API server spent serving them) | mirrorhub's own writes (kind verb cluster: count) |",
    '| --- | --- | --- | --- |',
    ...rows,
    '',
  ];
}

main().catch((err: unknown) => {
  console.error(`bench: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});

/** The kit's `sharing`: each guest cluster served by the hosts' API servers in turn. */
function roundRobin(guests: readonly string[], hosts: readonly string[]): Record<string, string> {
  return Object.fromEntries(guests.map((f, i) => [f, hosts[i % hosts.length]!]));
}
