#!/usr/bin/env node
// The README's commands land here (`npm test`, `npm run demo`, `npm run bench`). It uses only
// Node's standard library, so it runs on a fresh clone: it gets pnpm, installs the workspace,
// builds it, checks the machine has what the kit needs, and then runs the real thing.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const PNPM = '9.15.9';
const MOTO = '5.2.1';

function fail(msg) {
  console.error(`mirrorhub: ${msg}`);
  process.exit(1);
}

function has(cmd, args = ['--version']) {
  try {
    return execFileSync(cmd, args, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return undefined;
  }
}

function run(cmd, args, opts = {}) {
  const res = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', ...opts });
  if (res.error) fail(`${cmd} could not start: ${res.error.message}`);
  if (res.status !== 0) process.exit(res.status ?? 1);
}

/** pnpm 9 from PATH if it is there, else through npx (corepack's signature check fails here). */
function pnpm() {
  const v = has('pnpm');
  if (v && v.startsWith('9.')) return ['pnpm', []];
  return ['npx', ['--yes', `pnpm@${PNPM}`]];
}

function prerequisites() {
  const [major, minor] = process.versions.node.split('.').map(Number);
  if (major < 20 || (major === 20 && minor < 19))
    fail(`Node.js >= 20.19 is needed, this is ${process.version}`);
  if (!has('go', ['version'])) {
    fail(
      'go not found on PATH: the local kit builds kube-apiserver and etcd from Go modules; install Go >= 1.24 (https://go.dev/dl)',
    );
  }
  if (!has('openssl', ['version']))
    fail('openssl not found on PATH: install it (apt-get install openssl)');
  if (!has('moto_server', ['--help'])) {
    console.error(`mirrorhub: installing moto ${MOTO} (the AWS STS/IAM emulator) with pip`);
    const py = has('python3', ['--version'])
      ? 'python3'
      : fail('python3 not found: install Python >= 3.9 with pip');
    run(py, ['-m', 'pip', 'install', '--quiet', `moto[server]==${MOTO}`]);
    if (!has('moto_server', ['--help']))
      fail(
        "moto_server is still not on PATH after pip install: add pip's script directory to PATH",
      );
  }
}

const task = process.argv[2];
const rest = process.argv.slice(3);
const [pn, pnArgs] = pnpm();
const p = (...args) => run(pn, [...pnArgs, ...args]);

prerequisites();
p('install', '--frozen-lockfile', '--reporter=silent');
p('run', 'build');

switch (task) {
  case 'test':
    // Build (or find in the cache) the real kube-apiserver/etcd first, with visible progress.
    run(process.execPath, [join(root, 'infra/dist/cli.js'), 'build']);
    p('run', 'lint');
    {
      // vitest's JSON report gives the plain closing line CI reads: "N passed, N failed".
      const report = join(tmpdir(), `mirrorhub-vitest-${process.pid}.json`);
      const res = spawnSync(
        pn,
        [
          ...pnArgs,
          'exec',
          'vitest',
          'run',
          '--reporter=default',
          '--reporter=json',
          `--outputFile.json=${report}`,
          ...rest,
        ],
        { cwd: root, stdio: 'inherit' },
      );
      try {
        const r = JSON.parse(readFileSync(report, 'utf8'));
        console.log(
          `${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`,
        );
        rmSync(report, { force: true });
      } catch {
        // no report: vitest could not start; its own output says why
      }
      process.exit(res.status ?? 1);
    }
    break;
  case 'demo':
    run(process.execPath, [join(root, 'test/dist/demo/main.js'), ...rest]);
    break;
  case 'bench':
    run(process.execPath, [join(root, 'test/dist/bench/main.js'), ...rest]);
    break;
  default:
    fail(`unknown task "${task}": use test, demo or bench`);
}
