import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { findFreePort, onExit } from '@mirrorhub/infra/components/cache';

import { generateHubKeyPair } from '../support/signing.js';
import {
  chartMallocEnv,
  chartNodeOptions,
  chartV8Flags,
  type ProcessNodeOptions,
} from './node-options.js';

/**
 * Starts hub or agent as its real entry point (`node [v8Flags] <name>/dist/main.js`), so RSS
 * and request counts are the process's own, started as its chart starts it (NODE_OPTIONS, V8
 * flags, MALLOC_ARENA_MAX). `env` adds to (and wins over) the defaults. With `logFile`, its
 * output is appended there instead of this process's.
 */
/** The hub's signing key for this benchmark run: the hub reads the file, agents trust the key. */
const HUB_KEY = generateHubKeyPair();
let keyFile: string | undefined;
function signingEnv(name: 'hub' | 'agent'): Record<string, string> {
  if (name === 'agent') return { MIRRORHUB_HUB_PUBLIC_KEYS: HUB_KEY.publicKeyPem };
  if (!keyFile) {
    const dir = mkdtempSync(join(tmpdir(), 'mirrorhub-bench-key-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    keyFile = join(dir, 'private.pem');
    writeFileSync(keyFile, HUB_KEY.privateKeyPem, { mode: 0o600 });
  }
  return { MIRRORHUB_SIGNING_KEY_FILE: keyFile };
}

export function startMain(
  root: string,
  name: 'hub' | 'agent' | 'standalone',
  env: Record<string, string>,
  logFile?: string,
): ChildProcess {
  // The one process is the hub chart's pod with localAgent.inProcess (node-options.ts).
  const chart = name === 'standalone' ? 'hub-in-process' : name;
  return startNode(root, chart, join(root, name, 'dist/main.js'), env, logFile);
}

/**
 * Starts `script` as `startMain` starts the entry point of `chart`'s program (its V8 flags,
 * allocator, NODE_OPTIONS, signing key and log): for a benchmark's own host of agent code
 * (agent-host.ts), started as the agent is.
 */
export function startNode(
  root: string,
  chart: 'hub' | 'agent' | 'hub-in-process',
  script: string,
  env: Record<string, string>,
  logFile?: string,
): ChildProcess {
  const name = chart === 'hub-in-process' ? 'standalone' : chart;
  // MIRRORHUB_BENCH_CPU_PROFILE=<dir>: each process writes a V8 CPU profile there when it exits
  // (open it in Chrome DevTools); how the agent's reconcile cost was found.
  const profileDir = process.env.MIRRORHUB_BENCH_CPU_PROFILE;
  const profile = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [];
  // MIRRORHUB_BENCH_HEAP_SNAPSHOT=<dir>: \`kill -USR2 <pid>\` makes a process write a heap
  // snapshot there (open it in Chrome DevTools' Memory tab); for where a row's RSS goes.
  const heapDir = process.env.MIRRORHUB_BENCH_HEAP_SNAPSHOT;
  if (heapDir) profile.push('--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${heapDir}`);
  const args = [...chartV8Flags(root, chart), ...profile, script];
  const fd = logFile === undefined ? undefined : openSync(logFile, 'a');
  const child = spawn(process.execPath, args, {
    env: {
      ...process.env,
      ...chartMallocEnv(root, chart),
      MIRRORHUB_NAMESPACE: 'mirrorhub-system',
      POD_NAME: `${name}-bench`,
      // MIRRORHUB_BENCH_LOG_LEVEL=info (or debug): the processes' lines, to see what they did.
      LOG_LEVEL: process.env.MIRRORHUB_BENCH_LOG_LEVEL ?? 'warn',
      NODE_OPTIONS: chartNodeOptions(root, chart),
      ...signingEnv(name === 'agent' ? 'agent' : 'hub'),
      ...env,
    },
    stdio: ['ignore', fd ?? 'inherit', fd ?? 'inherit'],
  });
  if (fd !== undefined) closeSync(fd);
  // Dies with this process, even when it is interrupted (Ctrl-C, SIGTERM) before stopAll.
  const forget = onExit(() => child.kill('SIGKILL'));
  child.once('exit', () => forget());
  return child;
}

/** A hub and an agent on one cluster, as separate processes (see `startMain`). */
export interface OneCluster {
  hub: ChildProcess;
  agent: ChildProcess;
  hubPort: number;
  agentPort: number;
  procs: ChildProcess[];
}

/**
 * Starts the agent and the hub of one cluster (the hub's own, named "hub") as `startMain` does,
 * each with its NODE_OPTIONS, and waits until both answer /readyz.
 */
export async function startOneCluster(
  root: string,
  kubeconfig: string,
  nodeOptions: ProcessNodeOptions,
): Promise<OneCluster> {
  const [hubPort, agentPort] = [await findFreePort(), await findFreePort()];
  const start = (name: 'hub' | 'agent', port: number) =>
    startMain(root, name, {
      KUBECONFIG: kubeconfig,
      MIRRORHUB_CLUSTER_NAME: 'hub',
      PORT: String(port),
      NODE_OPTIONS: nodeOptions[name],
    });
  const agent = start('agent', agentPort);
  const hub = start('hub', hubPort);
  const procs = [agent, hub];
  try {
    await waitHttp(`http://127.0.0.1:${agentPort}/readyz`);
    await waitHttp(`http://127.0.0.1:${hubPort}/readyz`);
  } catch (err) {
    await stopAll(procs);
    throw err;
  }
  return { hub, agent, hubPort, agentPort, procs };
}

/**
 * The hub and the agent of one cluster in one process, as the hub chart runs them with
 * localAgent.inProcess (`node standalone/dist/main.js`): `hub` and `agent` are the same process,
 * its hub half answering on `hubPort`, its agent half on `agentPort`.
 */
export async function startOneProcess(
  root: string,
  kubeconfig: string,
  nodeOptions: string,
): Promise<OneCluster> {
  const [hubPort, agentPort] = [await findFreePort(), await findFreePort()];
  const proc = startMain(root, 'standalone', {
    KUBECONFIG: kubeconfig,
    MIRRORHUB_CLUSTER_NAME: 'hub',
    PORT: String(hubPort),
    MIRRORHUB_LOCAL_AGENT_PORT: String(agentPort),
    NODE_OPTIONS: nodeOptions,
  });
  try {
    await waitHttp(`http://127.0.0.1:${hubPort}/readyz`);
  } catch (err) {
    await stopAll([proc]);
    throw err;
  }
  return { hub: proc, agent: proc, hubPort, agentPort, procs: [proc] };
}

export async function waitHttp(url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (
      await fetch(url).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    if (Date.now() > deadline)
      throw new Error(`${url} did not answer 200 within ${timeoutMs / 1000}s`);
    await sleep(200);
  }
}

/** Waits until `done()` holds, re-checking whenever a watch handler calls a listener. */
export async function until(
  done: () => boolean,
  listeners: Set<() => void>,
  timeoutMs: number,
  progress: () => string,
): Promise<void> {
  if (done()) return;
  await new Promise<void>((resolve, reject) => {
    const check = () => {
      if (!done()) return;
      listeners.delete(check);
      clearTimeout(timer);
      clearInterval(tick);
      resolve();
    };
    const timer = setTimeout(() => {
      listeners.delete(check);
      clearInterval(tick);
      reject(new Error(`timed out: ${progress()}`));
    }, timeoutMs);
    const tick = setInterval(check, 500);
    listeners.add(check);
  });
}

/** SIGTERM every process and wait for all to exit (graceful shutdown releases their Leases). */
export async function stopAll(procs: ChildProcess[]): Promise<void> {
  await Promise.all(
    procs.map(
      (p) =>
        new Promise<void>((resolve) => {
          if (p.exitCode !== null || p.signalCode !== null) return resolve();
          p.once('exit', () => resolve());
          p.kill('SIGTERM');
        }),
    ),
  );
}
