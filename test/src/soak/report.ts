/**
 * The soak's figures as a docs/RELIABILITY.md section: pure text from a result, and the
 * replacement of the previous run's section between two markers (the rest of the page stays).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { percentile } from '../bench/util.js';
import { FAULT_KINDS, FAULT_TEXT } from './faults.js';
import type { SoakResult } from './run.js';

export const BEGIN = '<!-- soak:begin (written by `npm run soak`; edits here are replaced) -->';
export const END = '<!-- soak:end -->';

export interface Machine {
  cpus: number;
  memGiB: number;
  node: string;
}

const s = (ms: number | undefined) => (ms === undefined ? '-' : `${(ms / 1000).toFixed(1)} s`);

export function section(r: SoakResult, command: string, m: Machine): string {
  const minutes = r.ranMs / 60_000;
  const lines: string[] = [];
  lines.push(
    BEGIN,
    '',
    `Run ${r.startedAt.toISOString().slice(0, 16).replace('T', ' ')} UTC: \`${command}\`, ` +
      `${minutes.toFixed(0)} minutes of churn and faults on ${m.cpus} cores, ${m.memGiB} GiB, Node.js ${m.node}.`,
    '',
    `Load: the hub cluster and ${r.options.followers} EKS followers (each its own API server, ` +
      `AWS account and role), two hub replicas with leader election, an agent per cluster; ` +
      `a churn action every ${r.options.tickMs} ms (${Object.values(r.churn).reduce((a, b) => a + b, 0)} in all: ` +
      `${Object.entries(r.churn)
        .sort()
        .map(([k, v]) => `${k} ${v}`)
        .join(
          ', ',
        )}); ${r.planted} unowned objects planted; AWS sessions and EKS tokens living 120 s ` +
      `(${r.assumeRoles} AssumeRole sessions opened); seed ${r.options.seed}.`,
    '',
    `**Invariant violations: ${r.violations.length}** (target 0), from ${r.checks} checks of every ` +
      `cluster and ${r.scanned} places searched for secret values. Convergence bound: ` +
      `${s(r.options.boundMs)} after a fault clears. Discrepancies the checker saw open and ` +
      `then repaired: ${
        Object.entries(r.repaired)
          .sort()
          .map(([k, v]) => `${k} ${v.count} (longest open ${s(v.maxMs)})`)
          .join(', ') || 'none'
      }.`,
    '',
    `Mirror status (observed generation, synced and conflict counts) was compared with the ` +
      `clusters at ${r.statusAgreedMs.length} quiet points, after each fault converged and at the ` +
      `end, churn paused meanwhile: it agreed ${s(r.statusAgreedMs.length ? percentile(r.statusAgreedMs, 50) : undefined)} (p50) and at ` +
      `most ${s(r.statusAgreedMs.length ? Math.max(...r.statusAgreedMs) : undefined)} after ` +
      `the pause began; a disagreement past the bound would be a violation.`,
    '',
    '| fault | injected | took effect | converged p50 | p99 | max | what |',
    '| --- | ---: | ---: | ---: | ---: | ---: | --- |',
  );
  for (const kind of FAULT_KINDS) {
    const runs = r.faults.filter((f) => f.kind === kind);
    if (runs.length === 0) continue;
    const conv = runs.map((f) => f.convergedMs).filter((x): x is number => x !== undefined);
    const missed = runs.length - conv.length;
    lines.push(
      `| ${kind} | ${runs.length} | ${runs.filter((f) => f.bit).length} | ${s(percentile(conv, 50))} | ` +
        `${s(percentile(conv, 99))} | ${s(conv.length ? Math.max(...conv) : undefined)}` +
        `${missed ? ` (${missed} not within the bound)` : ''} | ${FAULT_TEXT[kind]} |`,
    );
  }
  lines.push('', '| resident memory (MB) | start | middle | end |', '| --- | ---: | ---: | ---: |');
  const names = [...new Set(r.rss.flatMap((x) => Object.keys(x.mb)))];
  for (const n of names) lines.push(`| ${n} | ${r.rss.map((x) => x.mb[n] ?? '-').join(' | ')} |`);
  lines.push(
    '',
    `Restarts (kills and restarts by the injector): ${Object.entries(r.restarts)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}.`,
    '',
    `API requests per minute at steady state (a quiet window after the first convergence, ` +
      `every client included): ${Object.entries(r.steadyRequestsPerMinute)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}.`,
  );
  const errs = Object.entries(r.churnErrors);
  if (errs.length)
    lines.push(
      '',
      `Churn writes refused while faults were on (expected; churn goes on): ${errs
        .sort()
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}.`,
    );
  if (r.violations.length) {
    lines.push('', 'Violations (first 20), each with the log lines that name its object:', '');
    for (const v of r.violations.slice(0, 20)) {
      lines.push(`- ${new Date(v.at).toISOString()} **${v.kind}**: ${v.what}`);
      for (const l of excerpt(r.logDir, v.what)) lines.push(`  - \`${l}\``);
    }
  }
  lines.push('', END);
  return lines.join('\n');
}

/** Replaces the section between the markers in `doc`, or appends it. */
export function replaceSection(doc: string, text: string): string {
  const a = doc.indexOf(BEGIN);
  const b = doc.indexOf(END);
  if (a < 0 || b < a) return `${doc.trimEnd()}\n\n${text}\n`;
  return doc.slice(0, a) + text + doc.slice(b + END.length);
}

/** The last few log lines that name the violation's namespace and object. */
function excerpt(logDir: string, what: string): string[] {
  const path = /\S+\/(soak-[\w-]+)\/([\w-]+)/.exec(what);
  if (!path) return [];
  const [, ns, name] = path;
  const out: string[] = [];
  let files: string[] = [];
  try {
    files = readdirSync(logDir);
  } catch {
    return [];
  }
  for (const f of files) {
    const text = readFileSync(join(logDir, f), 'utf8');
    for (const l of text.split('\n'))
      if (l.includes(ns!) && l.includes(name!)) out.push(`${f}: ${l.slice(0, 240)}`);
  }
  return out.slice(-5);
}
