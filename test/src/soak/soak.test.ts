// A short soak inside `npm test`: the whole world of `npm run soak` (two hub replicas with leader
// election, an agent per cluster, two EKS followers) under churn, with every fault kind injected
// once, judged by the independent checker. It fails on any invariant violation, on a fault that
// did not take effect, and on a fault after which the clusters did not converge within the bound.
// The figures of the long run are in docs/RELIABILITY.md.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { FAULT_KINDS } from './faults.js';
import { section } from './report.js';
import { runSoak } from './run.js';

const root = resolve(import.meta.dirname, '../../..');

describe('a short soak', () => {
  const lines: string[] = [];
  let dir: string | undefined;
  let passed = false;

  afterAll(() => {
    // A failed run keeps every component's log for reading; a passed one leaves nothing.
    if (!dir) return;
    if (passed) rmSync(dir, { recursive: true, force: true });
    else console.error(`soak logs kept in ${dir}/logs`);
  });

  it(
    'injects every fault kind, converges after each, and violates no invariant',
    async () => {
      dir = mkdtempSync(join(tmpdir(), 'mirrorhub-soak-test-'));
      const r = await runSoak({
        // Shorter than one rotation of the faults: the run goes on until each kind ran once.
        durationMs: 60_000,
        followers: 2,
        root,
        dir,
        seed: 7,
        tickMs: 1_000,
        boundMs: 120_000,
        log: (l) => {
          if (!/^(sts-gate|eks-emulator|moto)\b/.test(l)) lines.push(l);
        },
      });
      const report = section(r, 'vitest run test/src/soak/soak.test.ts', {
        cpus: 0,
        memGiB: 0,
        node: process.versions.node,
      });
      const why = `${report}\n\nsoak log:\n${lines.join('\n')}`;
      expect(r.violations, why).toEqual([]);
      for (const kind of FAULT_KINDS) {
        const runs = r.faults.filter((f) => f.kind === kind);
        expect(runs.length, `${kind} was not injected\n${why}`).toBeGreaterThan(0);
        for (const f of runs) {
          expect(f.bit, `${kind} did not take effect: ${f.evidence}\n${why}`).toBe(true);
          expect(f.convergedMs, `no convergence after ${kind}\n${why}`).toBeDefined();
        }
      }
      // Status was judged after every fault and at the end (a disagreement is a violation).
      expect(r.statusAgreedMs.length, why).toBe(r.faults.length + 1);
      // The checker saw churn's discrepancies open and close: it is not blind.
      expect(r.repaired['missing']?.count ?? 0, why).toBeGreaterThan(0);
      expect(r.checks, why).toBeGreaterThan(50);
      expect(r.planted, why).toBeGreaterThan(0);
      passed = true;
    },
    20 * 60_000,
  );
});
