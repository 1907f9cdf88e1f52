#!/usr/bin/env node
/**
 * kit: start and stop real local clusters for the demo, tests by hand, and benchmarks.
 *
 *   kit up [--clusters hub,follower-a,follower-b] [--port-base 16443] [--dir .kit]
 *   kit status [--dir .kit]
 *   kit kubeconfig <cluster> [--dir .kit]
 *   kit down [--dir .kit]
 *   kit build
 *
 * `up` starts a small supervisor process in the background that owns every server (API
 * servers, etcd, and the AWS emulators, which are in-process Node servers) and writes
 * <dir>/state.json; `down` stops it, and with it everything it started.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { pidAlive } from './components/cache.js';
import { ensureKstatus } from './components/kstatus.js';
import { KitError } from './kit/errors.js';
import { ensureKubeBinaries, startKit, validateClusterNames } from './kit/index.js';

export interface KitState {
  supervisorPid: number;
  phase: 'starting' | 'ready' | 'failed';
  error?: string;
  dir: string;
  kubectl?: string;
  clusters: Array<{
    name: string;
    server: string;
    kubeconfig: string;
    accountId: string;
    region: string;
  }>;
  aws?: { sts: string; eks: string; region: string };
}

const DEFAULT_CLUSTERS = 'hub,follower-a,follower-b';

function statePath(dir: string): string {
  return join(dir, 'state.json');
}

export function readState(dir: string): KitState | undefined {
  const p = statePath(dir);
  if (!existsSync(p)) return undefined;
  return JSON.parse(readFileSync(p, 'utf8')) as KitState;
}

async function up(dir: string, clusters: string[], portBase?: number): Promise<void> {
  validateClusterNames(clusters);
  const prev = readState(dir);
  if (prev && pidAlive(prev.supervisorPid)) {
    const same = prev.clusters.map((c) => c.name).join(',') === clusters.join(',');
    if (prev.phase === 'ready' && same) {
      console.log(`kit already up in ${dir}`);
      printState(prev);
      return;
    }
    throw new KitError(
      `a kit is already running in ${dir} (pid ${prev.supervisorPid}) with other clusters: run \`kit down\` first`,
    );
  }
  // Build (or find) the binaries in the foreground, so progress is visible here.
  await ensureKubeBinaries();
  await mkdir(dir, { recursive: true });
  await rm(statePath(dir), { force: true });
  const logFd = openSync(join(dir, 'supervisor.log'), 'a');
  const args = [
    fileURLToPath(import.meta.url),
    'supervise',
    '--dir',
    dir,
    '--clusters',
    clusters.join(','),
  ];
  if (portBase !== undefined) args.push('--port-base', String(portBase));
  const child = spawn(process.execPath, args, { detached: true, stdio: ['ignore', logFd, logFd] });
  closeSync(logFd);
  child.unref();
  const deadline = Date.now() + 180_000;
  for (;;) {
    const st = readState(dir);
    if (st?.phase === 'ready') {
      printState(st);
      return;
    }
    if (st?.phase === 'failed') throw new KitError(st.error ?? 'kit failed to start');
    if (!pidAlive(child.pid!)) {
      throw new KitError(
        `the kit supervisor exited during start-up; see ${join(dir, 'supervisor.log')}`,
      );
    }
    if (Date.now() > deadline)
      throw new KitError(
        `the kit did not become ready in 180s; see ${join(dir, 'supervisor.log')}`,
      );
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Runs in the background process that `up` starts; it owns the kit until SIGTERM. */
async function supervise(dir: string, clusters: string[], portBase?: number): Promise<void> {
  // Written whole, then renamed into place: `up` polls the file, and a write in place (truncate,
  // then fill) could hand it an empty file.
  const write = async (s: KitState) => {
    const tmp = `${statePath(dir)}.tmp`;
    await writeFile(tmp, JSON.stringify(s, null, 2) + '\n');
    await rename(tmp, statePath(dir));
  };
  const base: KitState = { supervisorPid: process.pid, phase: 'starting', dir, clusters: [] };
  await write(base);
  try {
    const kit = await startKit({ clusters, dir, portBase, log: (l) => console.error(l) });
    await write({
      ...base,
      phase: 'ready',
      kubectl: kit.kubectl,
      clusters: kit.clusters.map((c) => ({
        name: c.name,
        server: c.server,
        kubeconfig: c.kubeconfigPath,
        accountId: c.accountId,
        region: c.region,
      })),
      ...(kit.aws
        ? { aws: { sts: kit.aws.stsEndpoint, eks: kit.aws.eksEndpoint, region: kit.aws.region } }
        : {}),
    });
    const stop = async () => {
      await kit.stop();
      await rm(statePath(dir), { force: true });
      process.exit(0);
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    setInterval(() => {}, 1 << 30);
  } catch (err) {
    await write({
      ...base,
      phase: 'failed',
      error: err instanceof Error ? err.message : String(err),
    });
    process.exit(1);
  }
}

function printState(st: KitState): void {
  for (const c of st.clusters) {
    console.log(
      `${c.name.padEnd(12)} ${c.server.padEnd(24)} account ${c.accountId}  KUBECONFIG=${c.kubeconfig}`,
    );
  }
  if (st.aws)
    console.log(`aws          STS/IAM ${st.aws.sts}  EKS ${st.aws.eks}  region ${st.aws.region}`);
  if (st.kubectl) console.log(`kubectl      ${st.kubectl}`);
}

async function status(dir: string): Promise<number> {
  const st = readState(dir);
  if (!st || !pidAlive(st.supervisorPid)) {
    console.log(`no kit running in ${dir} (start one with: pnpm kit up)`);
    return 1;
  }
  console.log(`kit ${st.phase} in ${dir} (supervisor pid ${st.supervisorPid})`);
  printState(st);
  return st.phase === 'ready' ? 0 : 1;
}

async function down(dir: string): Promise<void> {
  const st = readState(dir);
  if (!st || !pidAlive(st.supervisorPid)) {
    console.log(`no kit running in ${dir}`);
    await rm(statePath(dir), { force: true });
    return;
  }
  process.kill(st.supervisorPid, 'SIGTERM');
  const deadline = Date.now() + 30_000;
  while (pidAlive(st.supervisorPid)) {
    if (Date.now() > deadline) {
      process.kill(st.supervisorPid, 'SIGKILL');
      break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  console.log(`kit in ${dir} stopped`);
}

function kubeconfig(dir: string, name: string | undefined): void {
  const st = readState(dir);
  if (!st || !pidAlive(st.supervisorPid))
    throw new KitError(`no kit running in ${dir}: start one with \`pnpm kit up\``);
  if (!name)
    throw new KitError(
      `name a cluster: kit kubeconfig <${st.clusters.map((c) => c.name).join('|')}>`,
    );
  const c = st.clusters.find((x) => x.name === name);
  if (!c)
    throw new KitError(
      `unknown cluster "${name}": this kit has ${st.clusters.map((x) => x.name).join(', ')}`,
    );
  console.log(c.kubeconfig);
}

export async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      clusters: { type: 'string', default: DEFAULT_CLUSTERS },
      dir: { type: 'string', default: process.env.MIRRORHUB_KIT_DIR ?? '.kit' },
      'port-base': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [cmd, arg] = positionals;
  const dir = resolve(values.dir!);
  const clusters = values
    .clusters!.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  let portBase: number | undefined;
  if (values['port-base'] !== undefined) {
    portBase = Number(values['port-base']);
    if (!Number.isInteger(portBase) || portBase < 1024 || portBase > 65000) {
      throw new KitError(
        `--port-base must be a port number between 1024 and 65000, got "${values['port-base']}"`,
      );
    }
  }
  switch (cmd) {
    case 'up':
      await up(dir, clusters, portBase);
      return 0;
    case 'supervise':
      await supervise(dir, clusters, portBase);
      return 0;
    case 'status':
      return status(dir);
    case 'down':
      await down(dir);
      return 0;
    case 'kubeconfig':
      kubeconfig(dir, arg);
      return 0;
    case 'build':
      await ensureKubeBinaries();
      // The status reader the GitOps tests use (test/src/engine/gitops-status.test.ts).
      await ensureKstatus();
      return 0;
    default:
      console.log(
        'usage: kit up [--clusters a,b] [--port-base N] | status | kubeconfig <cluster> | down | build   [--dir .kit]',
      );
      return cmd === undefined || values.help ? 0 : 2;
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(
    (code) => {
      if (positionalsIsSupervise()) return;
      process.exit(code);
    },
    (err: unknown) => {
      if (err instanceof KitError || (err instanceof TypeError && 'code' in err)) {
        console.error(`kit: ${err.message}`);
      } else {
        console.error('kit:', err);
      }
      process.exit(1);
    },
  );
}

function positionalsIsSupervise(): boolean {
  return process.argv.includes('supervise');
}
