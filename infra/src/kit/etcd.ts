import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

import { findFreePort, type ServiceProcess } from '../components/cache.js';
import { startServer } from './process.js';

export interface EtcdPorts {
  client: number;
  peer: number;
}

export interface Etcd {
  url: string;
  /** The ports it listens on: pass them to startEtcd again to restart it at the same URLs. */
  ports: EtcdPorts;
  proc: ServiceProcess;
}

/**
 * One etcd serves every cluster of a kit; each kube-apiserver keeps its objects under its own
 * --etcd-prefix. fsync is off: this is a test kit, and it saves seconds on every write burst.
 *
 * `ports` (default: two free ports) fixes the client and peer ports: a restart on the same `dir`
 * and ports is the same single-member cluster with its data, at the URL the API servers know.
 */
export async function startEtcd(bin: string, dir: string, ports?: EtcdPorts): Promise<Etcd> {
  await mkdir(dir, { recursive: true });
  if (ports) return startEtcdAt(bin, dir, ports);
  // A free port is free when it is chosen, not always when etcd binds it: another process of a
  // parallel test run can take it in between (CI once: "bind: address already in use"). A new
  // etcd then starts again on other ports, from an empty data dir.
  for (let attempt = 1; ; attempt++) {
    const chosen = { client: await findFreePort(), peer: await findFreePort() };
    try {
      return await startEtcdAt(bin, dir, chosen);
    } catch (err) {
      if (attempt >= 3 || !/address already in use/.test((err as Error).message)) throw err;
      await rm(join(dir, 'data'), { recursive: true, force: true });
    }
  }
}

async function startEtcdAt(bin: string, dir: string, ports: EtcdPorts): Promise<Etcd> {
  const { client, peer } = ports;
  const url = `http://127.0.0.1:${client}`;
  const peerUrl = `http://127.0.0.1:${peer}`;
  const proc = await startServer(
    'etcd',
    bin,
    [
      '--name=kit',
      `--data-dir=${join(dir, 'data')}`,
      `--listen-client-urls=${url}`,
      `--advertise-client-urls=${url}`,
      `--listen-peer-urls=${peerUrl}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=kit=${peerUrl}`,
      '--unsafe-no-fsync',
      '--quota-backend-bytes=4294967296',
      '--log-level=warn',
    ],
    join(dir, 'etcd.log'),
    async () => {
      const res = await fetch(`${url}/health`);
      return res.ok && ((await res.json()) as { health?: string }).health === 'true';
    },
    30_000,
    // A graceful stop waits for the API servers' watch streams, which a restart under running
    // API servers never ends; with fsync off a SIGKILL loses nothing the page cache holds.
    1_000,
  );
  return { url, ports: { client, peer }, proc };
}
