/**
 * Start-up memory: what node and each process's code hold before any state. Each process is
 * started as its chart starts it (NODE_OPTIONS, V8 flags, MALLOC_ARENA_MAX), imports its
 * package's index (the code its main.js runs; nothing is started, no API server is reached),
 * collects garbage twice and waits; its resident set is then read from /proc. This is the floor
 * under every RSS figure of the other sections: target 2's 80 MB minus the one process's row is
 * what its state may take.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

import {
  chartMallocEnv,
  chartV8Flags,
  type Component,
  type ProcessNodeOptions,
} from './node-options.js';
import { percentile, rssMb, rssSplitMb } from './util.js';

export interface LoadSubject {
  label: string;
  /** The package whose dist/index.js is imported; none: node alone. */
  program?: 'hub' | 'agent' | 'standalone';
  chart: Component;
}

export const LOAD_SUBJECTS: LoadSubject[] = [
  // With the one process's flags: the row target 2 is set against.
  { label: "node alone (the one process's flags)", chart: 'hub-in-process' },
  { label: 'hub', program: 'hub', chart: 'hub' },
  { label: 'agent', program: 'agent', chart: 'agent' },
  {
    label: 'one process (hub chart, localAgent.inProcess)',
    program: 'standalone',
    chart: 'hub-in-process',
  },
];

export interface LoadSample {
  rssMb: number;
  anonMb: number;
  fileMb: number;
  heapUsedMb: number;
}

export interface LoadRow {
  subject: LoadSubject;
  samples: LoadSample[];
}

export interface LoadBenchResult {
  rows: LoadRow[];
  runs: number;
}

/** The median over a row's samples of one figure. */
export function rowMedian(row: LoadRow, figure: (s: LoadSample) => number): number {
  return percentile(row.samples.map(figure), 50);
}

// Runs in the measured process: load the module, collect garbage twice around a pause (V8
// frees pages and finishes sweeping in between), report V8's heap in use, wait to be measured.
const PROBE = `
const target = process.argv[1];
if (target) await import(target);
const pause = () => new Promise((r) => setTimeout(r, 500));
await pause();
globalThis.gc();
globalThis.gc();
await pause();
process.stdout.write(JSON.stringify({ heapUsed: process.memoryUsage().heapUsed }) + '\\n');
setInterval(() => {}, 60_000);
`;

async function sample(
  root: string,
  subject: LoadSubject,
  nodeOptions: string,
): Promise<LoadSample> {
  const target = subject.program
    ? pathToFileURL(join(root, subject.program, 'dist/index.js')).href
    : '';
  const flags = chartV8Flags(root, subject.chart);
  const args = [...flags, ...(flags.includes('--expose-gc') ? [] : ['--expose-gc'])];
  const child = spawn(process.execPath, [...args, '--input-type=module', '-e', PROBE, target], {
    env: { ...process.env, ...chartMallocEnv(root, subject.chart), NODE_OPTIONS: nodeOptions },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    // The probe's one line says it has loaded and collected; it then waits to be measured.
    const line = await new Promise<string>((resolve, reject) => {
      const exited = (code: number | null) =>
        reject(
          new Error(`load probe of ${subject.label} exited with ${code} before it was measured`),
        );
      child.once('exit', exited);
      createInterface({ input: child.stdout! }).once('line', (l) => {
        child.off('exit', exited);
        resolve(l);
      });
    });
    const { heapUsed } = JSON.parse(line) as { heapUsed: number };
    const pid = child.pid!;
    const split = rssSplitMb(pid);
    return {
      rssMb: rssMb(pid),
      anonMb: split.anon,
      fileMb: split.file,
      heapUsedMb: heapUsed / 1024 / 1024,
    };
  } finally {
    child.kill('SIGKILL');
  }
}

export async function runLoadBench(opts: {
  root: string;
  nodeOptions: ProcessNodeOptions;
  runs: number;
  log: (l: string) => void;
}): Promise<LoadBenchResult> {
  const rows: LoadRow[] = LOAD_SUBJECTS.map((subject) => ({ subject, samples: [] }));
  // Round robin, so that a slower minute of the machine falls on every subject alike.
  for (let i = 0; i < opts.runs; i++) {
    for (const row of rows) {
      const options = row.subject.chart === 'agent' ? opts.nodeOptions.agent : opts.nodeOptions.hub;
      row.samples.push(await sample(opts.root, row.subject, options));
    }
  }
  for (const row of rows) {
    const mb = (f: (s: LoadSample) => number) => rowMedian(row, f).toFixed(1);
    opts.log(
      `load: ${row.subject.label}: RSS ${mb((s) => s.rssMb)} MB ` +
        `(anonymous ${mb((s) => s.anonMb)}, file-backed ${mb((s) => s.fileMb)})`,
    );
  }
  return { rows, runs: opts.runs };
}
