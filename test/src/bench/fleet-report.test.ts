// The fleet benchmark's fit and table: the cost per follower is the least-squares slope over the
// sizes measured, and a size the run did not reach is said to be the fit's, never passed off as
// measured. Pure (no cluster), beside the integration suites because test/src is where the
// bench lives.
import { describe, expect, it } from 'vitest';

import { FLEET_TARGET, fleetSectionName, renderFleet } from './fleet-report.js';
import { fitLine, type FleetPoint, type FleetScaleResult } from './fleet-scale.js';

function point(followers: number, rssMb: number[]): FleetPoint {
  return {
    followers,
    copies: followers * 2,
    growMs: 1000,
    hubRssMb: rssMb,
    hubIdleCpuPercent: rssMb.map(() => 1),
    hubCpuPerChangeSec: followers / 100,
    hubStepDowns: 0,
    update: { p50: 1000, p99: 2000, samples: 3 },
    assumeRole: { max: 1, mean: 1 },
    describeCluster: { max: 1, mean: 1 },
    agentRssMb: { process: 60, hosted: 5 },
    agents: { processes: 20, hosted: followers - 20, hosts: 2 },
    minutes: 10,
  };
}

const result = (points: FleetPoint[], replicas = 1): FleetScaleResult => ({
  replicas,
  apiServers: 12,
  namespacesPerFollower: 2,
  updates: 3,
  idleSeconds: 30,
  agentsPerHost: 50,
  sizes: [100, 250, 500, 1000],
  points,
});

describe('the fleet benchmark', () => {
  it('fits y = a + b x by least squares', () => {
    const fit = fitLine([
      [100, 60 + 0.1 * 100],
      [250, 60 + 0.1 * 250],
      [500, 60 + 0.1 * 500],
    ]);
    expect(fit!.a).toBeCloseTo(60, 9);
    expect(fit!.b).toBeCloseTo(0.1, 9);
    // Noise around the line: the slope is the mean's, not the last two points'.
    const noisy = fitLine([
      [0, 1],
      [1, 1],
      [2, 3],
    ]);
    expect(noisy!.b).toBeCloseTo(1, 9);
    expect(noisy!.a).toBeCloseTo(2 / 3, 9);
  });

  it('has no fit from one size', () => {
    expect(fitLine([[100, 70]])).toBeUndefined();
    expect(fitLine([])).toBeUndefined();
  });

  it('says when the largest size is the fit, not a measurement', () => {
    const partial = { ...result([point(100, [70]), point(250, [85])]), stopped: 'out of time' };
    const s = renderFleet(partial, 'npm run bench -- --only fleet', 'this machine');
    expect(s.summary).toContain('1000 followers were not measured in this run (out of time)');
    // 70 + 0.1 x -> 160 MB at 1,000.
    expect(s.summary).toContain('0.100 MB per follower + 60 MB; at 1000: 160 MB');
    const full = renderFleet(
      result([point(100, [70]), point(250, [85]), point(500, [110]), point(1000, [160])]),
      'npm run bench -- --only fleet',
      'this machine',
    );
    expect(full.summary).not.toContain('not measured');
  });

  it('extrapolates no falling cost: a negative slope over a few sizes is noise', () => {
    const idle = (followers: number, percent: number) => ({
      ...point(followers, [70]),
      hubIdleCpuPercent: [percent],
    });
    const s = renderFleet(result([idle(50, 4.6), idle(100, 4.2)]), 'cmd', 'here');
    expect(s.summary).toContain(
      "no growth measured (the fit's slope, -0.0048 s per follower, is noise)",
    );
    expect(s.summary).not.toMatch(/at 1000: -/);
  });

  it('extrapolates every fit to 1,000 followers when the run went less far', () => {
    const small = { ...result([point(100, [70]), point(250, [85])]), sizes: [100, 250] };
    const s = renderFleet(small, 'npm run bench -- --only fleet --sizes 100,250', 'here');
    expect(s.summary).not.toContain('not measured'); // every size asked for was measured
    expect(s.summary).toContain(`at ${FLEET_TARGET}: 160 MB`);
    expect(s.method).toContain(`at ${FLEET_TARGET} the figures are the fit's`);
  });

  it('records each replica count in a section of its own, replicas side by side', () => {
    const s = renderFleet(result([point(100, [40, 41])], 2), 'cmd', 'this machine');
    expect(s.name).toBe(fleetSectionName(2));
    expect(fleetSectionName(1)).toBe('fleet');
    expect(fleetSectionName(4)).not.toBe(fleetSectionName(2));
    expect(s.summary).toContain('81 (40+41) MB');
    // Its plot, beside the method.
    expect(s.method).toContain(`(images/${fleetSectionName(2)}.png)`);
  });
});
