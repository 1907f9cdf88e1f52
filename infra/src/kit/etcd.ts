import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';

import { findFreePort, type ServiceProcess } from '../components/cache.js';
import { startServer } from './process.js';

export interface Etcd {
  url: string;
  proc: ServiceProcess;
}

/**
 * One etcd serves every cluster of a kit; each kube-apiserver keeps its objects under its own
 * --etcd-prefix. fsync is off: this is a test kit, and it saves seconds on every write burst.
 */
export async function startEtcd(bin: string, dir: string): Promise<Etcd> {
  await mkdir(dir, { recursive: true });
  const [client, peer] = [await findFreePort(), await findFreePort()];
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
  );
  return { url, proc };
}
