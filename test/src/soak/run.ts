/**
 * One soak run: the world starts, churn seeds it and converges, a quiet minute measures the API
 * request rate at steady state, then churn, checks and faults run side by side until the
 * duration is up (the fault in progress finishes). After each fault has cleared and the clusters
 * converged, churn pauses until the mirrors' status agrees with what the checker sees (status
 * reports lag the copies by design, so it is judged at these quiet points, within the bound).
 * Churn stops, the clusters must converge, status must agree once more, and a last scan looks
 * for secret values.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { apiRequestCounts, rssMb } from '../bench/util.js';
import { Checker, type Violation } from './checker.js';
import { Churn } from './churn.js';
import { FAULT_KINDS, Faults, type FaultKind, type FaultRecord, type FaultRun } from './faults.js';
import { startWorld, type World } from './world.js';

export interface SoakOptions {
  durationMs: number;
  followers: number;
  /** Root of the repository (hub/dist, agent/dist). */
  root: string;
  /** Working directory: the kit, kubeconfigs and every component's log. */
  dir: string;
  seed: number;
  /** A churn action every this many ms. */
  tickMs: number;
  /** The checker's convergence bound. */
  boundMs: number;
  /** Faults to rotate through (default: all kinds). */
  faults?: readonly FaultKind[];
  log: (line: string) => void;
}

export interface RssSample {
  at: 'start' | 'middle' | 'end';
  mb: Record<string, number>;
}

export interface SoakResult {
  options: Omit<SoakOptions, 'log' | 'root'>;
  startedAt: Date;
  ranMs: number;
  faults: FaultRecord[];
  violations: Violation[];
  rss: RssSample[];
  /** Process starts beyond the first, by component. */
  restarts: Record<string, number>;
  /** API requests per minute per cluster in a quiet minute after the first convergence. */
  steadyRequestsPerMinute: Record<string, number>;
  /** AssumeRole sessions the hub opened per follower role (credential rotations). */
  assumeRoles: number;
  churn: Record<string, number>;
  churnErrors: Record<string, number>;
  planted: number;
  checks: number;
  repaired: Checker['repaired'];
  /** Places the secret scan looked at, summed over scans. */
  scanned: number;
  /**
   * Time from each quiet point (after a fault converged, and at the end) until every mirror's
   * status agreed with the clusters; a disagreement past the bound is a violation instead.
   */
  statusAgreedMs: number[];
  logDir: string;
}

const GRACE_MS = 3_000;

/** "90s", "45m", "2h" (or plain seconds) -> ms; throws on anything else. */
export function parseDuration(raw: string): number {
  const m = /^(\d+(?:\.\d+)?)(s|m|h)?$/.exec(raw.trim());
  if (!m) throw new Error(`--duration must look like 90s, 20m or 2h, got "${raw}"`);
  const unit: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000 };
  const n = Number(m[1]) * unit[m[2] ?? 's']!;
  if (n < 60_000 || n > 24 * 3_600_000)
    throw new Error(`--duration must be between 1m and 24h, got "${raw}"`);
  return n;
}

export async function runSoak(o: SoakOptions): Promise<SoakResult> {
  const startedAt = new Date();
  const log = o.log;
  const marker = `soakv${randomBytes(4).toString('hex')}`;
  const w = await startWorld({
    followers: o.followers,
    root: o.root,
    dir: o.dir,
    awsLifetimeSeconds: 120,
    log,
  });
  try {
    return await drive(w, o, marker, startedAt);
  } finally {
    await w.stop();
  }
}

async function drive(
  w: World,
  o: SoakOptions,
  marker: string,
  startedAt: Date,
): Promise<SoakResult> {
  const log = o.log;
  const churn = new Churn(w, marker, o.seed);
  const checker = new Checker(w, churn, o.boundMs, GRACE_MS);
  const faults = new Faults(w, churn);
  await churn.seed(6);
  log(`seeded: ${w.clusters.length} clusters, 6 sources, 4 mirrors; waiting for convergence`);
  await converge(checker, 180_000, 'the seeded state');

  const quietMs = Math.min(60_000, Math.max(20_000, o.durationMs / 10));
  const steadyRequestsPerMinute = await requestRate(w, quietMs);
  log(`steady state: ${JSON.stringify(steadyRequestsPerMinute)} requests/min`);
  const rss: RssSample[] = [sampleRss(w, 'start')];

  const t0 = Date.now();
  let stopping = false;
  let scanned = 0;
  // Churn pauses while status is judged: `paused` is what the loop waits for, `ticking` the
  // action in flight.
  let paused: Promise<void> | undefined;
  let ticking: Promise<void> = Promise.resolve();
  const statusAgreedMs: number[] = [];
  const quietStatus = async (what: string) => {
    let resume = () => {};
    paused = new Promise<void>((r) => (resume = r));
    try {
      await ticking;
      const agreedMs = await statusAgreement(checker, what, 'the loop');
      if (agreedMs !== undefined) statusAgreedMs.push(agreedMs);
      log(
        `  status ${agreedMs === undefined ? 'DISAGREES' : `agrees ${(agreedMs / 1000).toFixed(1)}s after churn paused`}`,
      );
    } finally {
      paused = undefined;
      resume();
    }
  };
  const loops: Array<Promise<void>> = [];
  loops.push(
    (async () => {
      while (!stopping) {
        if (paused) await paused;
        ticking = churn.tick();
        await ticking;
        await sleep(o.tickMs);
      }
    })(),
    (async () => {
      let lastScan = Date.now();
      while (!stopping) {
        await checker.check();
        if (Date.now() - lastScan > 60_000) {
          scanned += await checker.scanForSecrets();
          lastScan = Date.now();
        }
        await sleep(1_000);
      }
    })(),
  );
  const kinds = o.faults ?? FAULT_KINDS;
  const records: FaultRecord[] = [];
  let middle = false;
  for (let i = 0; Date.now() - t0 < o.durationMs || i < kinds.length; i++) {
    if (!middle && Date.now() - t0 > o.durationMs / 2) {
      rss.push(sampleRss(w, 'middle'));
      middle = true;
    }
    await sleep(5_000);
    const kind = kinds[i % kinds.length]!;
    log(`fault ${i + 1}: ${kind}`);
    checker.faultActive = true;
    let ran: FaultRun;
    try {
      ran = await faults.run(kind);
    } finally {
      checker.faultActive = false;
      checker.lastClear = Date.now();
    }
    const clear = checker.lastClear;
    const convergedMs = await convergedAfter(checker, clear);
    // The next fault would reset the bound: not converging after this one is a violation now.
    if (convergedMs === undefined)
      checker.record(
        'not converged after a fault',
        `${kind}: still open ${checker.boundMs / 1000}s after it cleared: ${checker.lingering().slice(0, 5).join('; ')}`,
      );
    records.push({ ...ran, clear, ...(convergedMs !== undefined ? { convergedMs } : {}) });
    log(
      `  ${ran.bit ? 'bit' : 'DID NOT BITE'}: ${ran.evidence}; converged ${convergedMs === undefined ? 'NOT within the bound' : `in ${(convergedMs / 1000).toFixed(1)}s`}`,
    );
    if (convergedMs !== undefined) await quietStatus(`after ${kind}`);
  }
  if (!middle) rss.push(sampleRss(w, 'middle'));
  stopping = true;
  await Promise.all(loops);
  const ranMs = Date.now() - t0;

  log('churn stopped; final convergence, status agreement and secret scan');
  await converge(checker, o.boundMs, 'the final state').catch((err: Error) =>
    checker.record('not converged at the end', err.message),
  );
  const agreedMs = await statusAgreement(checker, 'at the end', 'itself');
  if (agreedMs !== undefined) statusAgreedMs.push(agreedMs);
  scanned += await checker.scanForSecrets();
  rss.push(sampleRss(w, 'end'));

  const restarts: Record<string, number> = {};
  for (const p of [...w.hubs, ...w.agents.values()]) restarts[p.name] = p.starts - 1;
  return {
    options: {
      durationMs: o.durationMs,
      followers: o.followers,
      dir: o.dir,
      seed: o.seed,
      tickMs: o.tickMs,
      boundMs: o.boundMs,
      ...(o.faults ? { faults: o.faults } : {}),
    },
    startedAt,
    ranMs,
    faults: records,
    violations: checker.violations,
    rss,
    restarts,
    steadyRequestsPerMinute,
    assumeRoles: await assumeRoleCount(w),
    churn: churn.counts,
    churnErrors: churn.errors,
    planted: churn.planted.length,
    checks: checker.checks,
    repaired: checker.repaired,
    scanned,
    statusAgreedMs,
    logDir: w.logDir,
  };
}

/** Checks until one finds nothing older than the grace; throws after `timeoutMs`. */
async function converge(checker: Checker, timeoutMs: number, what: string): Promise<void> {
  const since = Date.now();
  while (Date.now() - since < timeoutMs) {
    await checker.check();
    if (checker.lastClean >= since) return;
    await sleep(1_000);
  }
  throw new Error(
    `${what} did not converge in ${timeoutMs / 1000}s: ${checker.lingering().slice(0, 5).join('; ')}`,
  );
}

/**
 * With churn paused: waits for a clean check that started after the pause, then for every
 * mirror's status to agree with the clusters. Returns how long status took to agree, or records
 * each disagreement still there after the bound and returns undefined. `checks` says whether to
 * run the checks itself (after the check loop stopped) or to wait for the loop's.
 */
async function statusAgreement(
  checker: Checker,
  what: string,
  checks: 'itself' | 'the loop',
): Promise<number | undefined> {
  const since = Date.now();
  const deadline = since + checker.boundMs;
  let disagree: string[] = [];
  while (Date.now() < deadline) {
    if (checker.lastClean < since && checks === 'itself') await checker.check();
    if (checker.lastClean >= since) {
      disagree = await checker.statusAgrees();
      if (disagree.length === 0) return Date.now() - since;
    }
    await sleep(1_000);
  }
  if (checker.lastClean < since)
    checker.record('not converged with churn paused', `${what}: ${checker.lingering().join('; ')}`);
  for (const d of disagree) checker.record('status disagrees', `${what}: ${d}`);
  return undefined;
}

/** Time from `clear` to the first clean check after it (the check loop runs meanwhile). */
async function convergedAfter(checker: Checker, clear: number): Promise<number | undefined> {
  while (Date.now() - clear < checker.boundMs) {
    if (checker.lastClean >= clear) return checker.lastClean - clear;
    await sleep(250);
  }
  return undefined;
}

async function requestRate(w: World, ms: number): Promise<Record<string, number>> {
  const counts = async () =>
    Promise.all(
      w.clusters.map(async (c) => {
        const k = w.kit.cluster(c);
        const tls = {
          ca: k.caPem,
          cert: readFileSync(join(k.dir, 'pki/admin.crt')),
          key: readFileSync(join(k.dir, 'pki/admin.key')),
        };
        const n = await apiRequestCounts(k.server, tls);
        return n.reads + n.writes + n.leaseWrites + n.watches;
      }),
    );
  const before = await counts();
  await sleep(ms);
  const after = await counts();
  return Object.fromEntries(
    w.clusters.map((c, i) => [c, Math.round(((after[i]! - before[i]!) * 60_000) / ms)]),
  );
}

function sampleRss(w: World, at: RssSample['at']): RssSample {
  const mb: Record<string, number> = {};
  for (const p of [...w.hubs, ...w.agents.values()]) {
    const pid = p.pid;
    if (pid !== undefined) mb[p.name] = Math.round(rssMb(pid));
  }
  return { at, mb };
}

async function assumeRoleCount(w: World): Promise<number> {
  const res = await fetch(`${w.kit.aws!.motoEndpoint}/moto-api/data.json`);
  const data = (await res.json()) as { sts?: { AssumedRole?: unknown[] } };
  return data.sts?.AssumedRole?.length ?? 0;
}
