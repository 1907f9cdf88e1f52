/**
 * The Vault-source benchmark: N SecretMirrors, each reading its own KV v2 secret in a real
 * OpenBao (TLS) every 30 s and delivering it to one namespace; hub and agent run as separate
 * processes, as in the engine benchmark. What a quiet steady state costs (Vault requests by
 * operation, from the hub's counter and as counted on the wire; hub CPU and RSS; writes) and how
 * long a single Vault update takes to reach its copy.
 */
import { readdir, readFile } from 'node:fs/promises';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';

import { tokenAuth, VaultClient, type VaultEnvelope } from '@mirrorhub/hub/vault/index';
import { startOpenBao } from '@mirrorhub/infra/components/index';
import type { Kit } from '@mirrorhub/infra/kit/index';

import { installCrds } from '../support/crds.js';
import { startOneCluster, stopAll, until } from './procs.js';
import {
  cpuSeconds,
  fmtMs,
  peakRssMb,
  percentile,
  pool,
  rssMb,
  scrapeSeries,
  watchCopies,
} from './util.js';
import type { ProcessNodeOptions } from './node-options.js';

export interface VaultBenchOptions {
  mirrors: number;
  /** Namespaces the copies go to; mirror i delivers to namespace i % destNamespaces only. */
  destNamespaces: number;
  pollSeconds: number;
  steadyMs: number;
  updateSamples: number;
  nodeOptions: ProcessNodeOptions;
  root: string;
  log: (line: string) => void;
}

export interface VaultBenchResult {
  mirrors: number;
  destNamespaces: number;
  pollSeconds: number;
  steadyMs: number;
  initialMs: number;
  /** Steady window, per minute: the hub's mirrorhub_vault_requests_total by `operation outcome`. */
  hubCounterPerMinute: Record<string, number>;
  /** Steady window, per minute: requests the hub sent to OpenBao, by kind of path (wire count). */
  wirePerMinute: Record<string, number>;
  /** Steady window, per minute: TLS connections the hub opened to OpenBao. */
  connectionsPerMinute: number;
  /** Steady window: hub writes (mirrorhub_writes_total, all kinds) per minute. */
  hubWritesPerMinute: number;
  hubCpuSecondsPerMinute: number;
  hubRssMb: number;
  hubPeakRssMb: number;
  /** Write of a new version -> its copy's content changed in Kubernetes. */
  update: { p50: number; max: number; samples: number; all: number[] };
}

const SYSTEM_NS = 'mirrorhub-system';
const TEAM_NS = 'bench-vault';
const MOUNT = 'secret';
const PREFIX = 'bench';

const path = (i: number) => `${PREFIX}/app-${String(i).padStart(3, '0')}`;
const destNs = (i: number, n: number) => `bench-dst-${String(i % n).padStart(2, '0')}`;

export async function runVaultBench(kit: Kit, o: VaultBenchOptions): Promise<VaultBenchResult> {
  const log = o.log;
  const hubCluster = kit.cluster('hub');
  const kc = hubCluster.kubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);

  const bao = await startOpenBao({ tls: true });
  const root = new VaultClient({
    address: bao.address,
    caPem: bao.caPem,
    auth: tokenAuth({ token: bao.rootToken }),
  });
  const call = async (method: 'POST' | 'PUT', p: string, body: unknown) =>
    (await root.request<VaultEnvelope>({ method, path: p, body })).body;
  // The hub reaches OpenBao through a counting proxy: what it really asks for, on the wire.
  const wire = await countingProxy(bao.address, bao.caPem!, bao.dir);
  let procs: Awaited<ReturnType<typeof startOneCluster>>['procs'] = [];
  try {
    await call('PUT', 'sys/policies/acl/bench', {
      policy: `
        path "${MOUNT}/data/${PREFIX}/*" { capabilities = ["read"] }
        path "${MOUNT}/metadata/${PREFIX}/*" { capabilities = ["read"] }`,
    });
    const token = (await call('POST', 'auth/token/create', { policies: ['bench'], ttl: '24h' }))
      ?.auth?.client_token as string;

    log(`writing ${o.mirrors} KV v2 secrets under ${MOUNT}/${PREFIX}/`);
    await pool(
      Array.from({ length: o.mirrors }, (_, i) => i),
      16,
      (i) => call('POST', `${MOUNT}/data/${path(i)}`, { data: valueOf(i, 0) }),
    );

    await installCrds(kc, 'mirrorhub-hub');
    const namespaces = Array.from({ length: o.destNamespaces }, (_, k) =>
      destNs(k, o.destNamespaces),
    );
    for (const ns of [SYSTEM_NS, TEAM_NS, ...namespaces])
      await core.createNamespace({ body: { metadata: { name: ns } } });
    await core.createNamespacedSecret({
      namespace: TEAM_NS,
      body: { metadata: { name: 'vault-token' }, stringData: { token } },
    });
    await custom.createNamespacedCustomObject({
      group: 'mirrorhub.io',
      version: 'v1alpha1',
      namespace: TEAM_NS,
      plural: 'vaultconnections',
      body: {
        apiVersion: 'mirrorhub.io/v1alpha1',
        kind: 'VaultConnection',
        metadata: { name: 'openbao' },
        spec: {
          address: wire.address,
          caBundle: bao.caPem,
          auth: { token: { secretRef: { name: 'vault-token', key: 'token' } } },
        },
      },
    });

    const cluster = await startOneCluster(o.root, hubCluster.kubeconfigPath, o.nodeOptions);
    procs = cluster.procs;
    const { hub, hubPort } = cluster;
    const copies = await watchCopies(kc, { resource: 'bench-vault-copies' });
    const { seen, listeners } = copies;

    log(
      `creating ${o.mirrors} Vault-sourced SecretMirrors (poll ${o.pollSeconds} s, one namespace each)`,
    );
    const t0 = Date.now();
    await pool(
      Array.from({ length: o.mirrors }, (_, i) => i),
      16,
      (i) =>
        custom.createNamespacedCustomObject({
          group: 'mirrorhub.io',
          version: 'v1alpha1',
          namespace: TEAM_NS,
          plural: 'secretmirrors',
          body: {
            apiVersion: 'mirrorhub.io/v1alpha1',
            kind: 'SecretMirror',
            metadata: { name: `vault-${i}` },
            spec: {
              source: {
                kind: 'Vault',
                vault: {
                  connectionRef: { kind: 'VaultConnection', name: 'openbao' },
                  path: `${MOUNT}/${path(i)}`,
                },
              },
              destination: {
                namespaces: [destNs(i, o.destNamespaces)],
                name: `vault-${i}`,
              },
              pollPeriodSeconds: o.pollSeconds,
            },
          },
        }),
    );
    await until(
      () => seen.size >= o.mirrors,
      listeners,
      10 * 60_000,
      () => `${seen.size}/${o.mirrors} copies`,
    );
    const initialMs = Date.now() - t0;
    log(`${o.mirrors} copies in ${fmtMs(initialMs)}`);

    // Let the first polls' rescheduling and start-up work settle: a poll period and a bit.
    await sleep(o.pollSeconds * 1000 + 5_000);

    log(
      `steady state: counting for ${o.steadyMs / 1000} s (${(o.steadyMs / 1000 / o.pollSeconds).toFixed(1)} poll periods)`,
    );
    const vaultBefore = await scrapeSeries(hubPort, 'mirrorhub_vault_requests_total');
    const writesBefore = await scrapeSeries(hubPort, 'mirrorhub_writes_total');
    const cpuBefore = cpuSeconds(hub.pid!);
    const wireBefore = wire.snapshot();
    const w0 = Date.now();
    await sleep(o.steadyMs);
    const vaultAfter = await scrapeSeries(hubPort, 'mirrorhub_vault_requests_total');
    const writesAfter = await scrapeSeries(hubPort, 'mirrorhub_writes_total');
    const cpuAfter = cpuSeconds(hub.pid!);
    const window = Date.now() - w0;
    const wireAfter = wire.snapshot();
    const hubRssMb = rssMb(hub.pid!);
    const perMin = (d: number) => (d * 60_000) / window;

    const hubCounterPerMinute: Record<string, number> = {};
    for (const [series, v] of vaultAfter) {
      const d = v - (vaultBefore.get(series) ?? 0);
      // Label values are operation, outcome, component: keep the first two.
      if (d > 0) hubCounterPerMinute[series.split(' ').slice(0, 2).join(' ')] = perMin(d);
    }
    const wirePerMinute: Record<string, number> = {};
    for (const [kind, n] of Object.entries(wireAfter.requests)) {
      const d = n - (wireBefore.requests[kind] ?? 0);
      if (d > 0) wirePerMinute[kind] = perMin(d);
    }
    const connectionsPerMinute = perMin(wireAfter.connections - wireBefore.connections);
    const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
    const hubWritesPerMinute = perMin(sum(writesAfter) - sum(writesBefore));
    const hubCpuSecondsPerMinute = perMin(cpuAfter - cpuBefore);
    log(
      `steady: hub counter/min ${JSON.stringify(hubCounterPerMinute)}, on the wire/min ${JSON.stringify(wirePerMinute)}, ` +
        `TLS connections/min ${connectionsPerMinute.toFixed(1)}, ` +
        `hub writes/min ${hubWritesPerMinute.toFixed(1)}, hub CPU ${hubCpuSecondsPerMinute.toFixed(2)} s/min, RSS ${hubRssMb.toFixed(0)} MB`,
    );

    // Single updates, each to a different secret, in flight together but written at random
    // moments spread over one poll period: the pollers were started together and keep close
    // phases, so writing all at once would sample one moment of that cycle only.
    log(`single Vault updates -> copy, ${o.updateSamples} samples over one poll period`);
    const picks = Array.from({ length: o.updateSamples }, (_, k) =>
      Math.floor(((k + 0.5) * o.mirrors) / o.updateSamples),
    );
    const slot = (o.pollSeconds * 1000) / o.updateSamples;
    const latencies = await Promise.all(
      picks.map(async (i, k) => {
        await sleep((k + Math.random()) * slot);
        const key = `${destNs(i, o.destNamespaces)}/vault-${i}`;
        const old = seen.get(key)?.hash;
        const start = Date.now();
        await call('POST', `${MOUNT}/data/${path(i)}`, { data: valueOf(i, 1) });
        await until(
          () => seen.get(key)?.hash !== old,
          listeners,
          3 * o.pollSeconds * 1000 + 10_000,
          () => `copy ${key} not updated`,
        );
        return seen.get(key)!.at - start;
      }),
    );
    log(`update latencies: ${latencies.map(fmtMs).join(', ')}`);
    const hubPeakRssMb = peakRssMb(hub.pid!);
    await copies.stop();
    return {
      mirrors: o.mirrors,
      destNamespaces: o.destNamespaces,
      pollSeconds: o.pollSeconds,
      steadyMs: window,
      initialMs,
      hubCounterPerMinute,
      wirePerMinute,
      connectionsPerMinute,
      hubWritesPerMinute,
      hubCpuSecondsPerMinute,
      hubRssMb,
      hubPeakRssMb,
      update: {
        p50: percentile(latencies, 50),
        max: Math.max(...latencies),
        samples: latencies.length,
        all: latencies,
      },
    };
  } finally {
    await stopAll(procs);
    await root.close();
    await wire.close();
    await bao.stop();
  }
}

/** A harmless value per secret and version (~200 bytes). */
function valueOf(i: number, version: number): Record<string, string> {
  return {
    username: `app-${i}`,
    password: `bench-${i}-v${version}-${'x'.repeat(160)}`,
  };
}

/**
 * A TLS proxy in front of OpenBao that counts the requests passing through it by kind of path:
 * `metadata` (<mount>/metadata/...), `data` (<mount>/data/...), `mounts`
 * (sys/internal/ui/mounts: KV version detection), `token` (auth/token/...: token logins and
 * renewals), anything else as `METHOD path`; and the TLS connections opened to it. It serves the
 * dev server's own certificate (for 127.0.0.1, signed by `caPem`), so clients trust it as they
 * would OpenBao. (OpenBao 2 refuses to enable an audit device through the API, so its own
 * audit log is not available to a dev server started without a config file.)
 */
async function countingProxy(
  target: string,
  caPem: string,
  baoDir: string,
): Promise<{
  address: string;
  snapshot(): { requests: Record<string, number>; connections: number };
  close(): Promise<void>;
}> {
  const certDir = (await readdir(baoDir)).find((d) => d.startsWith('tls-'));
  if (!certDir) throw new Error(`no tls-* directory with the dev certificate in ${baoDir}`);
  const [cert, key] = await Promise.all(
    ['vault-cert.pem', 'vault-key.pem'].map((f) => readFile(join(baoDir, certDir, f), 'utf8')),
  );
  const requests: Record<string, number> = {};
  let connections = 0;
  const upstream = new https.Agent({ keepAlive: true, ca: caPem });
  const server = https.createServer({ cert, key }, (req, res) => {
    const p = (req.url ?? '').replace(/^\/v1\//, '').replace(/\?.*$/, '');
    const kind = p.startsWith(`${MOUNT}/metadata/`)
      ? 'metadata'
      : p.startsWith(`${MOUNT}/data/`)
        ? 'data'
        : p.startsWith('sys/internal/ui/mounts')
          ? 'mounts'
          : p.startsWith('auth/token/')
            ? 'token'
            : `${req.method} ${p}`;
    requests[kind] = (requests[kind] ?? 0) + 1;
    const up = https.request(
      new URL(req.url ?? '/', target),
      { method: req.method, headers: req.headers, agent: upstream },
      (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  // OpenBao's listener keeps idle connections 5 minutes (http_idle_timeout); so does the proxy.
  server.keepAliveTimeout = 300_000;
  server.on('secureConnection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    address: `https://127.0.0.1:${port}`,
    snapshot: () => ({ requests: { ...requests }, connections }),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      upstream.destroy();
    },
  };
}
