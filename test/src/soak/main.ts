/**
 * `npm run soak`: hours of churn and injected faults on real API servers, judged by an
 * independent checker; prints the figures and rewrites the soak section of
 * docs/RELIABILITY.md with the command and the machine. Exits 1 on any invariant violation or
 * any fault that did not take effect.
 *
 *   npm run soak                          # 20 minutes, 3 followers
 *   npm run soak -- --duration 2h         # any of 90s, 45m, 2h
 *   npm run soak -- --followers 5 --seed 7
 *   npm run soak -- --duration 5m --no-record   # print only, leave docs/RELIABILITY.md alone
 *
 * Logs of every component stay in the printed directory when the run fails (or with --keep).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

import { format, resolveConfig } from 'prettier';

import { replaceSection, section } from './report.js';
import { parseDuration, runSoak } from './run.js';

const root = resolve(import.meta.dirname, '../../..');

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '20m' },
      followers: { type: 'string', default: '3' },
      seed: { type: 'string', default: '1' },
      'no-record': { type: 'boolean', default: false },
      keep: { type: 'boolean', default: false },
    },
  });
  const durationMs = parseDuration(values.duration);
  const followers = Number(values.followers);
  if (!Number.isInteger(followers) || followers < 1 || followers > 20)
    throw new Error(`--followers must be a whole number from 1 to 20, got ${values.followers}`);
  const seed = Number(values.seed);
  if (!Number.isInteger(seed)) throw new Error(`--seed must be a whole number, got ${values.seed}`);
  const dir = mkdtempSync(join(tmpdir(), 'mirrorhub-soak-'));
  const log = (l: string) => {
    // The emulators log every AssumeRole and TokenReview; the soak shows its own lines.
    if (!/^(sts-gate|eks-emulator|moto)\b/.test(l)) console.log(`[soak] ${l}`);
  };
  log(`working in ${dir}`);
  const r = await runSoak({
    durationMs,
    followers,
    root,
    dir,
    seed,
    tickMs: 1_000,
    boundMs: 120_000,
    log,
  });
  const command = `npm run soak -- --duration ${values.duration} --followers ${followers} --seed ${seed}`;
  const text = section(r, command, {
    cpus: cpus().length,
    memGiB: Math.round(totalmem() / 2 ** 30),
    node: process.versions.node,
  });
  console.log(text);
  if (!values['no-record']) {
    const file = join(root, 'docs/RELIABILITY.md');
    // Formatted as `npm run lint` checks it (tables aligned), so a recorded run passes lint.
    const doc = replaceSection(readFileSync(file, 'utf8'), text);
    const options = (await resolveConfig(file)) ?? {};
    writeFileSync(file, await format(doc, { ...options, filepath: file }));
    log(`wrote ${file}`);
  }
  const failed = r.violations.length > 0 || r.faults.some((f) => !f.bit);
  if (failed || values.keep) log(`logs kept in ${r.logDir}`);
  else rmSync(dir, { recursive: true, force: true });
  if (failed) {
    log(
      `FAILED: ${r.violations.length} violation(s), ${r.faults.filter((f) => !f.bit).length} fault(s) that did not take effect`,
    );
    process.exit(1);
  }
}

main().catch((err: unknown) => {
  console.error(`[soak] ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
