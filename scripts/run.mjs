#!/usr/bin/env node
// The README's commands land here (`npm test`, `npm run demo`, `npm run bench`, `npm run soak`).
// It uses only Node's standard library, so it runs on a fresh clone: it gets pnpm, installs the workspace,
// builds it, checks the machine has what the kit needs, and then runs the real thing.
import { execFileSync, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { delimiter, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const PNPM = '9.15.9';
/**
 * The Node.js LTS the image ships (Dockerfile: node:24 / distroless nodejs24). `npm test` also
 * runs the unit and engine suites on exactly this release, whatever Node runs this script.
 */
const NODE_LTS = '24.21.0';

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
}

/**
 * moto, the AWS STS/IAM emulator, from the project's venv in the cache (installed on first use;
 * infra/src/components/moto.ts), so the suites and the demo do not each wait for it.
 */
async function ensureMoto() {
  const { ensureMoto } = await import(
    pathToFileURL(join(root, 'infra/dist/components/moto.js')).href
  );
  try {
    await ensureMoto();
  } catch (err) {
    fail(err.message);
  }
}

/** Same rule as infra/src/components/cache.ts cacheDir(). */
function cacheDir() {
  if (process.env.MIRRORHUB_CACHE) return resolve(process.env.MIRRORHUB_CACHE);
  const xdg = process.env.XDG_CACHE_HOME;
  if (xdg && isAbsolute(xdg)) return join(xdg, 'mirrorhub');
  return join(homedir(), '.cache', 'mirrorhub');
}

/**
 * The Node.js LTS binary: `$MIRRORHUB_NODE_LTS` (a path), else `<cache>/bin/node-v<NODE_LTS>/node`,
 * else fetched once from the npm registry package node-<os>-<arch>@NODE_LTS (the official
 * binary in a tarball; `npm pack` checks its integrity against the registry) and unpacked there.
 */
function ensureNodeLts() {
  const fromEnv = process.env.MIRRORHUB_NODE_LTS;
  if (fromEnv) return resolve(fromEnv);
  const dir = join(cacheDir(), 'bin', `node-v${NODE_LTS}`);
  const node = join(dir, 'node');
  if (existsSync(join(dir, '.complete')) && has(node) === `v${NODE_LTS}`) return node;
  const pkg = `node-${process.platform}-${process.arch}@${NODE_LTS}`;
  console.error(
    `mirrorhub: fetching Node.js ${NODE_LTS} (${pkg} from the npm registry, once, ~35 MB) into ${dir}`,
  );
  mkdirSync(dirname(dir), { recursive: true });
  const work = mkdtempSync(join(dirname(dir), `.node-v${NODE_LTS}-`));
  try {
    const packed = spawnSync('npm', ['pack', pkg, '--silent', '--pack-destination', work], {
      cwd: work,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const tgz = packed.status === 0 && packed.stdout.trim().split('\n').pop();
    if (!tgz)
      fail(
        `npm pack ${pkg} failed (see above): check access to the npm registry, or set MIRRORHUB_NODE_LTS to a Node.js ${NODE_LTS.split('.')[0]} binary (or to "off" to skip the runs on it)`,
      );
    run('tar', ['-xzf', join(work, tgz), '-C', work, 'package/bin/node']);
    const out = join(work, 'out');
    mkdirSync(out);
    renameSync(join(work, 'package/bin/node'), join(out, 'node'));
    if (has(join(out, 'node')) !== `v${NODE_LTS}`)
      fail(`${pkg} did not unpack a working node ${NODE_LTS}: delete ${dir} and retry`);
    writeFileSync(join(out, '.complete'), `${new Date().toISOString()} ${pkg}\n`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(out, dir);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return node;
}

/**
 * The Node.js LTS to run on besides this one: undefined when this already is its major or
 * MIRRORHUB_NODE_LTS=off (said on stderr), else its path and the version it says it is.
 */
function ltsNode() {
  const ltsMajor = NODE_LTS.split('.')[0];
  if (process.env.MIRRORHUB_NODE_LTS === 'off') {
    console.error(`mirrorhub: MIRRORHUB_NODE_LTS=off: no runs on Node.js ${NODE_LTS}`);
    return undefined;
  }
  if (process.versions.node.split('.')[0] === ltsMajor) {
    console.error(`mirrorhub: this is Node.js ${ltsMajor} already: no second run on ${NODE_LTS}`);
    return undefined;
  }
  const node = ensureNodeLts();
  const version = has(node);
  if (!version)
    fail(
      `${node} (MIRRORHUB_NODE_LTS) does not run: point it at a Node.js ${ltsMajor} binary, or unset it`,
    );
  return { node, version };
}

/**
 * One vitest run; returns its counts from vitest's JSON report (undefined counts when vitest
 * could not start: its own output says why) and whether it passed.
 */
function vitest(label, cmd, args, env = process.env) {
  const report = join(tmpdir(), `mirrorhub-vitest-${process.pid}-${Date.now()}.json`);
  console.error(`mirrorhub: ${label}`);
  const res = spawnSync(
    cmd,
    [...args, '--reporter=default', '--reporter=json', `--outputFile.json=${report}`],
    { cwd: root, stdio: 'inherit', env },
  );
  let counts;
  const failures = [];
  try {
    const r = JSON.parse(readFileSync(report, 'utf8'));
    counts = {
      passed: r.numPassedTests,
      failed: r.numFailedTests,
      skipped: r.numPendingTests + r.numTodoTests,
    };
    // What failed, by file and name, with the first line of its message: CI shows the end of
    // the output, so the closing lines must say which tests to look at.
    for (const file of r.testResults ?? []) {
      const where = relative(root, file.name);
      const failed = (file.assertionResults ?? []).filter((t) => t.status === 'failed');
      for (const t of failed)
        failures.push(`${where} > ${t.fullName}: ${firstLine(t.failureMessages?.[0])}`);
      if (failed.length === 0 && file.status === 'failed')
        failures.push(`${where}: ${firstLine(file.message)}`);
    }
  } catch {
    // no report
  }
  rmSync(report, { force: true });
  const ok = res.status === 0 && counts !== undefined;
  console.error(
    `mirrorhub: ${label}: ${counts ? `${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped` : 'no report'}${ok ? '' : ` (exit ${res.status ?? res.signal ?? res.error?.message})`}`,
  );
  return { counts, ok, label, failures };
}

function firstLine(text) {
  return (text ?? '').split('\n').find((l) => l.trim() !== '') ?? '(no message)';
}

const task = process.argv[2];
// `npm test -- <args>` drops the `--`; `node scripts/run.mjs test -- <args>` keeps it.
const rest = process.argv.slice(process.argv[3] === '--' ? 4 : 3);
const [pn, pnArgs] = pnpm();
const p = (...args) => run(pn, [...pnArgs, ...args]);

prerequisites();
p('install', '--frozen-lockfile', '--reporter=silent');
p('run', 'build');

switch (task) {
  case 'test': {
    // Build (or find in the cache) the real kube-apiserver/etcd first, with visible progress.
    run(process.execPath, [join(root, 'infra/dist/cli.js'), 'build']);
    await ensureMoto();
    p('run', 'lint');
    // Every suite (or what `npm test -- <vitest args>` selects) on this Node.js, hub and agent
    // wired as two processes are; then the unit suite and the engine suite (or the same
    // selection) again on the Node.js LTS the image ships, unless this already is that major or
    // MIRRORHUB_NODE_LTS=off, with hub and agent wired as one process (the hub chart's
    // localAgent.inProcess; MIRRORHUB_ENGINE_MODE, test/src/support/engine.ts). Without an LTS
    // run the engine suite runs in one-process mode on this Node.js, so both install modes are
    // always tested.
    const runs = [
      vitest(`vitest on Node.js ${process.versions.node}`, pn, [
        ...pnArgs,
        'exec',
        'vitest',
        'run',
        ...rest,
      ]),
    ];
    const cli = join(root, 'node_modules/vitest/vitest.mjs');
    const oneProcess = {
      MIRRORHUB_ENGINE_MODE: process.env.MIRRORHUB_ENGINE_MODE ?? 'one-process',
    };
    const lts = ltsNode();
    if (lts) {
      const { node, version } = lts;
      // Child processes that run `node` (or a node_modules/.bin tool) get the LTS too.
      const env = {
        ...process.env,
        PATH: [dirname(node), join(root, 'node_modules/.bin'), process.env.PATH].join(delimiter),
      };
      const selections =
        rest.length > 0
          ? [[rest, oneProcess]]
          : [
              [['--project', 'unit'], {}],
              [['test/src/engine'], oneProcess],
            ];
      for (const [sel, mode] of selections)
        runs.push(
          vitest(
            `vitest ${sel.join(' ')} on Node.js ${version}${mode.MIRRORHUB_ENGINE_MODE ? `, engine mode ${mode.MIRRORHUB_ENGINE_MODE}` : ''}`,
            node,
            [cli, 'run', ...sel],
            { ...env, ...mode },
          ),
        );
    } else if (rest.length === 0) {
      runs.push(
        vitest(
          `vitest test/src/engine on Node.js ${process.versions.node}, engine mode ${oneProcess.MIRRORHUB_ENGINE_MODE}`,
          process.execPath,
          [cli, 'run', 'test/src/engine'],
          { ...process.env, ...oneProcess },
        ),
      );
    }
    // The plain closing line CI reads, summed over every run: "N passed, N failed, N skipped".
    for (const r of runs)
      for (const f of r.failures) console.log(`mirrorhub: FAILED (${r.label}) ${f}`);
    const sum = (k) => runs.reduce((n, r) => n + (r.counts?.[k] ?? 0), 0);
    if (runs.some((r) => r.counts))
      console.log(`${sum('passed')} passed, ${sum('failed')} failed, ${sum('skipped')} skipped`);
    process.exit(runs.every((r) => r.ok) ? 0 : 1);
    break;
  }
  case 'demo':
    await ensureMoto();
    run(process.execPath, [join(root, 'test/dist/demo/main.js'), ...rest]);
    break;
  case 'bench':
    await ensureMoto();
    // On the Node.js the image ships (its V8 decides what the charts' v8Flags cost), hub and
    // agents too: the bench starts them with its own node. MIRRORHUB_NODE_LTS=off: this one.
    run(ltsNode()?.node ?? process.execPath, [join(root, 'test/dist/bench/main.js'), ...rest]);
    break;
  case 'soak':
    await ensureMoto();
    run(process.execPath, [join(root, 'test/dist/soak/main.js'), ...rest]);
    break;
  default:
    fail(`unknown task "${task}": use test, demo, bench or soak`);
}
