// A chart's Deployment run as a local process, the way the kubelet would run its pod: the
// container's entry point (the image's /app is this checkout), its env, its Secret volumes and
// the token of its ServiceAccount. e2e.test.ts runs the hub and agents this way, and
// one-process.test.ts the hub chart's pod with localAgent.inProcess.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

import { AppsV1Api } from '@kubernetes/client-node';
import { findFreePort } from '@mirrorhub/infra/components/cache';
import type { Kit } from '@mirrorhub/infra/kit/index';
import { expect } from 'vitest';

import { eventually } from './eventually.js';
import {
  deploymentArgs,
  deploymentEnv,
  mountSecretVolumes,
  relocateEnv,
  serviceAccountKubeConfig,
  writeKubeConfig,
} from './serviceaccount.js';

const repo = resolve(import.meta.dirname, '../../..');

export interface RunningDeployment {
  name: string;
  child: ChildProcess;
  /** The process's stdout and stderr. */
  log: string;
  /** PORT: the process's /healthz, /readyz, /metrics (and the hub's dashboard). */
  port: number;
}

export interface DeploymentRunner {
  /**
   * Starts Deployment `name` of `cluster` (in the runner's namespace) and waits for /readyz.
   * `env` is what something outside the chart injects, and wins (PORT is always a free port).
   */
  run(cluster: string, name: string, env?: Record<string, string>): Promise<RunningDeployment>;
  /** Started as `run` does, without waiting: for a process expected to fail at start-up. */
  spawn(cluster: string, name: string, env?: Record<string, string>): Promise<RunningDeployment>;
  readonly procs: readonly RunningDeployment[];
  /** SIGTERM to every process, and waits for each to exit. */
  stop(): Promise<void>;
}

/** Exit code of a process, once it has exited. */
export function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((done) => child.once('exit', (code) => done(code)));
}

export function deploymentRunner(kit: Kit, namespace: string, work: string): DeploymentRunner {
  const procs: RunningDeployment[] = [];

  async function start(
    cluster: string,
    name: string,
    extraEnv: Record<string, string>,
  ): Promise<RunningDeployment> {
    const admin = kit.cluster(cluster).kubeConfig();
    const dep = await admin.makeApiClient(AppsV1Api).readNamespacedDeployment({ namespace, name });
    // node's own flags (the image's entrypoint is node), then the script and its arguments.
    const args = deploymentArgs(dep);
    const script = args.findIndex((a) => a.startsWith('/app/'));
    expect(script, `${name}: the chart's entry point is under /app`).toBeGreaterThanOrEqual(0);
    const nodeFlags = args.slice(0, script);
    const [entry, ...rest] = args.slice(script);
    const serviceAccount = dep.spec!.template.spec!.serviceAccountName!;
    const kubeconfig = await writeKubeConfig(
      await serviceAccountKubeConfig(admin, { namespace, name: serviceAccount }),
      join(work, `${cluster}-${name}-${procs.length}.kubeconfig`),
    );
    const port = await findFreePort();
    // The kubelet mounts the pod's Secret volumes (the hub's signing key) before it starts it.
    const mounts = await mountSecretVolumes(admin, dep, join(work, `${cluster}-${name}-root`));
    const env: Record<string, string> = {
      ...relocateEnv(deploymentEnv(dep, `${name}-e2e`), mounts),
      PORT: String(port),
      KUBECONFIG: kubeconfig,
      ...extraEnv,
    };
    expect(env['MIRRORHUB_NAMESPACE'] ?? namespace).toBe(namespace);
    const log = join(work, `${cluster}-${name}-${procs.length}.log`);
    const out = createWriteStream(log);
    // Only PATH and HOME from this process: no AWS_* or KUBECONFIG of the machine leaks in.
    const child = spawn(
      process.execPath,
      [...nodeFlags, join(repo, entry!.slice('/app/'.length)), ...rest],
      {
        env: { PATH: process.env.PATH ?? '', HOME: work, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    child.stdout!.pipe(out);
    child.stderr!.pipe(out);
    const running = { name: `${cluster}/${name}`, child, log, port };
    procs.push(running);
    return running;
  }

  return {
    procs,
    spawn: (cluster, name, env = {}) => start(cluster, name, env),
    async run(cluster, name, env = {}) {
      const p = await start(cluster, name, env);
      await eventually(
        async () => {
          if (p.child.exitCode !== null)
            throw new Error(
              `${p.name} exited ${p.child.exitCode}: ${await readFile(p.log, 'utf8')}`,
            );
          const res = await fetch(`http://127.0.0.1:${p.port}/readyz`);
          expect(res.status, `${p.name} /readyz`).toBe(200);
        },
        { timeoutMs: 60_000, intervalMs: 250 },
      );
      return p;
    },
    async stop() {
      await Promise.all(
        procs.map(async ({ child }) => {
          if (child.exitCode !== null || child.signalCode !== null) return;
          child.kill('SIGTERM');
          await exited(child);
        }),
      );
    },
  };
}
