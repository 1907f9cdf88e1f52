/**
 * The fleet benchmark's table, Method part and plot (fleet-scale.ts measures): one section per
 * replica count, so the 1-, 2- and 4-replica runs stand side by side on the page.
 */
import { fitLine, type FleetPoint, type FleetScaleResult } from './fleet-scale.js';
import { linesSvg, type Series } from './plot.js';
import { figureTable, type DocSection } from './record.js';
import { fmtMs } from './util.js';

/** The fleet the issue sizes the hub for: every fit is extrapolated at least this far. */
export const FLEET_TARGET = 1_000;

/** The section (and plot) name of a run with `replicas` hub replicas. */
export function fleetSectionName(replicas: number): string {
  return replicas === 1 ? 'fleet' : `fleet-${replicas}-replicas`;
}

const sum = (xs: number[]) => xs.reduce((s, x) => s + x, 0);

/** Hub memory, idle CPU and CPU per change against followers, fitted a + b x (fitLine). */
function fits(r: FleetScaleResult) {
  const by = (f: (p: FleetPoint) => number) => fitLine(r.points.map((p) => [p.followers, f(p)]));
  return {
    rss: by((p) => sum(p.hubRssMb)),
    // CPU seconds a minute at idle: % of a core x 0.6.
    idle: by((p) => sum(p.hubIdleCpuPercent) * 0.6),
    change: by((p) => p.hubCpuPerChangeSec),
  };
}

/** `a + b x` in words, with the value it extrapolates to at `at`. */
function fitText(
  f: { a: number; b: number } | undefined,
  unit: string,
  per: string,
  digits: number,
  at: number,
  /** Decimals of the intercept and the extrapolated value. */
  d: number,
): string {
  if (!f) return 'one size measured: no fit';
  // A falling cost per follower is the noise of a few sizes, not a saving to extrapolate.
  if (f.b < 0)
    return `no growth measured (the fit's slope, ${f.b.toFixed(digits)} ${unit} ${per}, is noise)`;
  const sign = f.a < 0 ? '-' : '+';
  return `${f.b.toFixed(digits)} ${unit} ${per} ${sign} ${Math.abs(f.a).toFixed(d)} ${unit}; at ${at}: ${(f.a + f.b * at).toFixed(d)} ${unit}`;
}

export function renderFleet(r: FleetScaleResult, command: string, machine: string): DocSection {
  const pts = r.points;
  const largest = Math.max(...r.sizes);
  const target = Math.max(largest, FLEET_TARGET);
  const at = pts.map((p) => p.followers).join('; ');
  // Sizes apart by `;`: a value may be `p50 / p99` itself.
  const each = (f: (p: FleetPoint) => string) => pts.map(f).join('; ');
  const f = fits(r);
  const replicas = r.replicas === 1 ? '1 hub replica' : `${r.replicas} hub replicas`;
  const measuredLargest = pts.at(-1)?.followers ?? 0;
  const title = `Fleet: ${r.sizes.join(', ')} followers, ${replicas}`;
  const extrapolated =
    measuredLargest < largest
      ? ` ${largest} followers were not measured in this run (${r.stopped ?? 'stopped'}): the fit's line gives its figures.`
      : '';
  const summary = [
    `## ${title}`,
    '',
    `Command: \`${command}\`. Recorded on ${machine}.${extrapolated}`,
    '',
    ...figureTable([
      {
        figure: `hub RSS at idle, ${r.replicas === 1 ? 'the replica' : 'sum of the replicas (each)'}, at ${at} followers`,
        now: each(
          (p) =>
            `${sum(p.hubRssMb).toFixed(0)}${p.hubRssMb.length > 1 ? ` (${p.hubRssMb.map((x) => x.toFixed(0)).join('+')})` : ''} MB`,
        ),
      },
      {
        figure: `hub memory per follower (least squares over ${at})`,
        now: fitText(f.rss, 'MB', 'per follower', 3, target, 0),
      },
      {
        figure: `hub CPU at idle (${r.idleSeconds} s, nothing changing), all replicas, at ${at}`,
        now: each((p) => `${sum(p.hubIdleCpuPercent).toFixed(2)} %`),
      },
      {
        figure: 'hub CPU at idle per follower (fit), CPU seconds a minute',
        now: fitText(f.idle, 's', 'per follower', 4, target, 2),
      },
      {
        figure: `hub CPU per source change, all replicas, at ${at}`,
        now: each((p) => `${p.hubCpuPerChangeSec.toFixed(2)} s`),
      },
      {
        figure: 'hub CPU per source change per follower (fit)',
        now: fitText(f.change, 's', 'per follower', 4, target, 2),
      },
      {
        figure: `one source change -> every copy converged, p50 / p99 (${r.updates} changes a size), at ${at}`,
        now: each((p) => `${fmtMs(p.update.p50)} / ${fmtMs(p.update.p99)}`),
        target: 'p99 < 10 s',
        met: pts.map((p) => p.update.p99 < 10_000),
      },
      {
        figure: `hub Lease renewals missed (a replica stepped down, its controllers started anew), while each size grew and was measured, at ${at}`,
        now: each((p) => String(p.hubStepDowns)),
        target: '0',
        met: pts.map((p) => p.hubStepDowns === 0),
      },
      {
        figure: `AssumeRole calls per follower role since the start, most of any / mean (STS gate's count), at ${at}`,
        now: each((p) => `${p.assumeRole.max} / ${p.assumeRole.mean.toFixed(2)}`),
        target: '1 per session lifetime',
        met: pts.map((p) => p.assumeRole.max <= 1),
      },
      {
        figure: `DescribeCluster calls per follower since the start, most of any / mean (EKS emulator's count), at ${at}`,
        now: each((p) => `${p.describeCluster.max} / ${p.describeCluster.mean.toFixed(2)}`),
        target: '1 per hour',
        met: pts.map((p) => p.describeCluster.max <= Math.max(1, Math.ceil(p.minutes / 60))),
      },
    ]),
    '',
  ].join('\n');
  const rows = pts.map(
    (p) =>
      `| ${p.followers} | ${p.copies} | ${p.agents.processes} / ${p.agents.hosted} in ${p.agents.hosts} | ${fmtMs(p.growMs)} | ` +
      `${p.hubRssMb.map((x) => x.toFixed(0)).join(' + ')} MB | ${p.hubIdleCpuPercent.map((x) => x.toFixed(2)).join(' + ')} % | ` +
      `${p.hubCpuPerChangeSec.toFixed(2)} s | ${fmtMs(p.update.p50)} / ${fmtMs(p.update.p99)} | ` +
      `${p.hubStepDowns} | ${p.assumeRole.max} / ${p.describeCluster.max} | ` +
      `${p.agentRssMb.process?.toFixed(0) ?? '-'} / ${p.agentRssMb.hosted?.toFixed(1) ?? '-'} MB | ${p.minutes.toFixed(0)} |`,
  );
  const method = [
    `### ${title}`,
    '',
    `![hub memory and one change's convergence against followers, ${replicas}](images/${fleetSectionName(r.replicas)}.png)`,
    '',
    `Setup: one fleet grown through ${r.sizes.join(', ')} MirrorClusters (measured: ${at}), ${r.namespacesPerFollower} team namespaces each and one ClusterSecretMirror selecting every follower by label. ` +
      `Real: every follower its own AWS account (moto behind the kit's STS gate), IAM role with ExternalId, EKS cluster and access entry in the kit's EKS emulator; ` +
      `${r.apiServers} follower kube-apiservers holding all of them (each follower in its own corner: agent namespace, hub access bound only there, an agent policy allowing only its own namespaces); ` +
      `the hub as ${r.replicas} \`node hub/dist/main.js\` process${r.replicas > 1 ? 'es, each its own POD_NAME and PORT, MIRRORHUB_SHARE_FOLLOWERS=true' : ''}, against a real hub API server.`,
    '',
    `Agents: the first ${pts.at(-1)?.agents.processes ?? 0} followers have an agent process each (\`node agent/dist/main.js\`, as a fleet runs them); every other follower's agent is the same agent code (createAgent from agent/src/agent.ts, configured by agent/src/config.ts from the environment the agent process would get) run ${r.agentsPerHost} to a process (test/src/bench/agent-host.ts), because ${largest} agent processes do not fit on this machine beside the rest. ` +
      'Every copy is written by agent code, and convergence is timed on the copies themselves (a metadata watch of every follower API server): it is measured for every follower, not modelled. ' +
      "What the hosted agents do not show is an agent's own process: they share a heap and one HTTP/2 connection per API server, and do not compact their heap after a burst (the agent process's --expose-gc compaction), so their memory per follower (the last column) is not an agent's; the agent process column is.",
    '',
    "Measured at each size, after the new followers' copies all exist and 10 s of quiet: each replica's RSS and CPU over the idle window; then the source changes, each timed from the source write to the last copy changed, with the replicas' CPU from the write until 3 s after the last copy (the status writes are part of a change). " +
      'AssumeRole and DescribeCluster are counted by the STS gate and the EKS emulator since the start of the run, per follower role and cluster.',
    '',
    `The fit: least squares of each hub figure against followers over the measured sizes, y = a + b x; b is the cost per follower, a what the hub costs with none${measuredLargest < target ? `; at ${target} the figures are the fit's, extrapolated beyond the sizes measured, not a measurement` : ''}. ` +
      "Everything shares the same 2 cores: the followers' side (agents and their API servers) at nice 19, as in the 100-follower benchmark, so the latencies include a loaded machine's waits. " +
      'Leader election is on, as `node hub/dist/main.js` runs by default: a replica whose API server answers too slowly misses its renewal deadline and steps down, and its next term starts its controllers anew; the step-downs column counts those terms, and a size with any has its CPU and latencies inflated by them.',
    '',
    '| followers | copies | agents: processes / hosted in processes | new followers -> their copies | hub RSS (each replica) | hub CPU at idle (each) | hub CPU per change | change -> every copy, p50 / p99 | hub Lease step-downs | AssumeRole / DescribeCluster per follower, most | agent RSS: per process / per hosted agent | minutes into the run |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
    ...(r.stopped ? [`The fleet stopped growing: ${r.stopped}.`, ''] : []),
    'Hub replicas sharing the followers (each its own section and plot): `npm run bench -- --only fleet --replicas 2` and `npm run bench -- --only fleet --replicas 4`; `--sizes 100,250,500` for the sizes, `--minutes N` to stop growing after N minutes.',
    '',
  ];
  return { name: fleetSectionName(r.replicas), summary, method: method.join('\n') };
}

/** Hub memory and convergence against followers, measured (dots) and the memory fit (dashed). */
export function fleetSvg(r: FleetScaleResult, caption: string): string {
  const largest = Math.max(...r.sizes, FLEET_TARGET);
  const f = fits(r).rss;
  const memory: Series[] = [
    {
      name: 'hub RSS, all replicas',
      color: '#1f6feb',
      points: r.points.map((p) => [p.followers, sum(p.hubRssMb)]),
    },
    ...(f
      ? [
          {
            name: 'fit',
            color: '#6b7280',
            dashed: true,
            points: [
              [0, f.a],
              [largest, f.a + f.b * largest],
            ] as [number, number][],
          },
        ]
      : []),
  ];
  const latency = (name: string, color: string, q: 'p50' | 'p99'): Series => ({
    name,
    color,
    points: r.points.map((p) => [p.followers, p.update[q] / 1000]),
  });
  return linesSvg(
    [
      { title: 'Hub memory', xLabel: 'followers', yLabel: 'RSS (MB)', series: memory },
      {
        title: 'One source change -> every copy',
        xLabel: 'followers',
        yLabel: 'seconds',
        series: [latency('p50', '#d97706', 'p50'), latency('p99', '#b91c1c', 'p99')],
      },
    ],
    caption,
  );
}
