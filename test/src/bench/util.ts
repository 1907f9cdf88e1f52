import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';

import type {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObject,
} from '@kubernetes/client-node';

import { createWatcher } from '@mirrorhub/shared';

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function pool<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T, i: number) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx]!;
}

/** Resident set size of a process in MB, from /proc. */
export function rssMb(pid: number): number {
  return statusMb(pid, 'VmRSS');
}

/** The highest resident set size a process has had so far, in MB (VmHWM). */
export function peakRssMb(pid: number): number {
  return statusMb(pid, 'VmHWM');
}

/**
 * CPU time a process has used so far (user + system), in seconds, from /proc/<pid>/stat
 * (clock ticks of USER_HZ, 100 on Linux).
 */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces), from field 3 (state) on.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * The resident set split as the kernel counts it: anonymous (the process's own: V8 heap, native
 * allocations) and file-backed (mostly node's own binary, mapped pages of its code and data,
 * shared with every process running the same binary and reclaimable). RssShmem is left out.
 */
export function rssSplitMb(pid: number): { anon: number; file: number } {
  return { anon: statusMb(pid, 'RssAnon'), file: statusMb(pid, 'RssFile') };
}

function statusMb(pid: number, field: 'VmRSS' | 'VmHWM' | 'RssAnon' | 'RssFile'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return kb / 1024;
}

export interface ApiCounts {
  reads: number;
  /** Writes to anything but Leases: mirrors, deliveries, payloads, copies, Events. */
  writes: number;
  /** Lease writes: leader-election renewals and agent heartbeats, by design periodic. */
  leaseWrites: number;
  watches: number;
}

/**
 * Requests the API server has served, from its own apiserver_request_total counter, split into
 * reads (GET/LIST), writes (POST/PUT/PATCH/DELETE; Lease writes apart) and WATCH.
 */
export async function apiRequestCounts(server: string, tls: ApiServerTls): Promise<ApiCounts> {
  const text = await apiServerMetrics(server, tls);
  const counts: ApiCounts = { reads: 0, writes: 0, leaseWrites: 0, watches: 0 };
  const series = metricSeries(text, 'apiserver_request_total', (l) => `${l.verb} ${l.resource}`);
  for (const [key, n] of series) {
    const [verb = '', resource] = key.split(' ');
    if (verb === 'WATCH') counts.watches += n;
    else if (verb === 'GET' || verb === 'LIST') counts.reads += n;
    else if (['POST', 'PUT', 'PATCH', 'DELETE', 'APPLY'].includes(verb)) {
      if (resource === 'leases') counts.leaseWrites += n;
      else counts.writes += n;
    }
  }
  return counts;
}

export interface ApiServerTls {
  ca: string;
  cert: Buffer;
  key: Buffer;
}

/** The API server's /metrics text (as the kit's admin). */
export function apiServerMetrics(server: string, tls: ApiServerTls): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const req = request(`${server}/metrics`, tls, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve(body));
    });
    req.once('error', reject);
    req.end();
  });
}

/**
 * Where a phase of a benchmark spent its time: CPU seconds of each process, the API server's
 * requests (count and seconds served) by verb and resource, and mirrorhub's own writes.
 */
export interface PhaseCost {
  cpuSeconds: Record<string, number>;
  requests: { verb: string; resource: string; count: number; seconds: number }[];
  /** mirrorhub's own count of its writes and failed writes, per process and series. */
  writes: { process: string; series: string; count: number }[];
}

/**
 * A PhaseCost in words, as the log line and the docs table both print it: CPU seconds by
 * process, the `top` requests by time served, and mirrorhub's writes.
 */
export function phaseCostText(
  c: PhaseCost,
  top: number,
): { cpu: string; requests: string; writes: string } {
  return {
    cpu: Object.entries(c.cpuSeconds)
      .map(([name, sec]) => `${name} ${sec.toFixed(1)}`)
      .join(', '),
    requests: c.requests
      .slice(0, top)
      .map((q) => `${q.verb} ${q.resource} ${q.count} (${q.seconds.toFixed(1)} s)`)
      .join(', '),
    writes: c.writes.map((w) => `${w.process}: ${w.series} ${w.count}`).join(', '),
  };
}

/**
 * mirrorhub's own counts of its writes and failed writes, by `<process>\t<series>` (failed ones
 * as `failed <series>`), read from each process's /metrics in `metricsPorts`.
 */
export async function ownWrites(
  metricsPorts: Record<string, number>,
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const [name, port] of Object.entries(metricsPorts)) {
    for (const metric of ['mirrorhub_writes_total', 'mirrorhub_write_errors_total']) {
      for (const [series, n] of await scrapeSeries(port, metric)) {
        const label = metric.includes('errors') ? `failed ${series}` : series;
        out.set(`${name}\t${label}`, n);
      }
    }
  }
  return out;
}

/** Until the processes of `metricsPorts` have written nothing for `quietMs` (at most `maxMs`). */
export async function untilQuiet(
  metricsPorts: Record<string, number>,
  quietMs: number,
  maxMs: number,
): Promise<void> {
  const writes = async () =>
    [...(await ownWrites(metricsPorts)).values()].reduce((a, b) => a + b, 0);
  const deadline = Date.now() + maxMs;
  let last = await writes();
  while (Date.now() < deadline) {
    await sleep(quietMs);
    const now = await writes();
    if (now === last) return;
    last = now;
  }
}

/**
 * Takes the first reading of a PhaseCost; the function it returns takes the second and gives
 * the differences.
 */
export async function phaseCost(
  pids: Record<string, number>,
  server: string,
  tls: ApiServerTls,
  metricsPorts: Record<string, number> = {},
): Promise<() => Promise<PhaseCost>> {
  const read = async () => {
    const writes = await ownWrites(metricsPorts);
    const text = await apiServerMetrics(server, tls);
    const cpu = Object.fromEntries(
      Object.entries(pids).map(([name, pid]) => [name, cpuSeconds(pid)]),
    );
    const byRequest = (metric: string) =>
      metricSeries(
        text,
        metric,
        (l) => `${l.verb} ${l.resource ?? ''}${l.subresource ? `/${l.subresource}` : ''}`,
      );
    return {
      cpu,
      writes,
      counts: byRequest('apiserver_request_total'),
      seconds: byRequest('apiserver_request_duration_seconds_sum'),
    };
  };
  const before = await read();
  return async () => {
    const after = await read();
    const requests = [...after.counts]
      .map(([key, n]) => {
        const [verb = '', resource = ''] = key.split(' ');
        return {
          verb,
          resource,
          count: n - (before.counts.get(key) ?? 0),
          seconds: (after.seconds.get(key) ?? 0) - (before.seconds.get(key) ?? 0),
        };
      })
      .filter((r) => r.count > 0 && r.verb !== 'WATCH')
      .sort((a, b) => b.seconds - a.seconds);
    const cpuSeconds = Object.fromEntries(
      Object.keys(pids).map((name) => [name, after.cpu[name]! - before.cpu[name]!]),
    );
    const writes = [...after.writes]
      .map(([key, n]) => {
        const [process = '', series = ''] = key.split('\t');
        return { process, series, count: n - (before.writes.get(key) ?? 0) };
      })
      .filter((w) => w.count > 0);
    return { cpuSeconds, requests, writes };
  };
}

/**
 * Every series of a counter in Prometheus text format, keyed by its label values (or by
 * `keyOf` of its labels; series with the same key are summed).
 */
export function metricSeries(
  text: string,
  name: string,
  keyOf: (labels: Record<string, string>) => string = (l) => Object.values(l).join(' '),
): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const labels = /\{(.*)\}/.exec(line)?.[1] ?? '';
    const key = keyOf(
      Object.fromEntries([...labels.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!])),
    );
    out.set(key, (out.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return out;
}

/** `metricSeries` of a counter, scraped from a process's /metrics on `port`. */
export async function scrapeSeries(port: number, name: string): Promise<Map<string, number>> {
  return metricSeries(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text(), name);
}

interface CopyMeta extends KubernetesObject {
  metadata?: { namespace?: string; name?: string; annotations?: Record<string, string> };
}

/** What a copy watch has seen: each copy's content hash and when it last changed. */
export interface CopyWatch {
  /** `<prefix><namespace>/<name>` -> content hash and when the watch saw it last. */
  seen: Map<string, { hash?: string; at: number }>;
  /** Called on every copy event (`until()` re-checks its condition there). */
  listeners: Set<() => void>;
  stop(): Promise<void>;
}

/**
 * Watches the copies mirrorhub manages in one cluster (metadata only, their content-hash
 * annotation) and timestamps every change, into `into` when given (several clusters, one map),
 * keyed by `prefix` + namespace/name. Resolves once the watch has listed.
 */
export async function watchCopies(
  kc: KubeConfig,
  opts: { resource: string; prefix?: string; into?: Omit<CopyWatch, 'stop'> },
): Promise<CopyWatch> {
  const seen = opts.into?.seen ?? new Map<string, { hash?: string; at: number }>();
  const listeners = opts.into?.listeners ?? new Set<() => void>();
  const prefix = opts.prefix ?? '';
  const w = createWatcher<CopyMeta>(
    kc,
    {
      version: 'v1',
      plural: 'secrets',
      labelSelector: 'mirrorhub.io/managed-by=mirrorhub',
      metadataOnly: true,
    },
    { resource: opts.resource },
  );
  const key = (obj: CopyMeta) => `${prefix}${obj.metadata?.namespace}/${obj.metadata?.name}`;
  const record = (obj: CopyMeta) => {
    seen.set(key(obj), {
      hash: obj.metadata?.annotations?.['mirrorhub.io/content-hash'],
      at: Date.now(),
    });
    for (const l of listeners) l();
  };
  w.addHandler({
    onAdd: record,
    onUpdate: record,
    onDelete: (obj) => void seen.delete(key(obj)),
  });
  w.start();
  await w.synced;
  return { seen, listeners, stop: () => w.stop() };
}

export function fmtMs(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`;
}

/** A ~2 KB certificate-like PEM, different for each source and version. */
export function certLike(i: number, version: number): string {
  return `-----BEGIN CERTIFICATE-----\n${`mirror-${i}-v${version}-`.repeat(40)}\n-----END CERTIFICATE-----\n`;
}

/**
 * Source `src-<i>` in `namespace` (a ~4 KB kubernetes.io/tls Secret) and SecretMirror
 * `mirror-<i>` beside it, copying it to every namespace whose labels match `matchLabels`.
 */
export async function createTlsMirror(
  api: { core: CoreV1Api; custom: CustomObjectsApi },
  namespace: string,
  i: number,
  matchLabels: Record<string, string>,
): Promise<void> {
  await api.core.createNamespacedSecret({
    namespace,
    body: {
      metadata: { name: `src-${i}` },
      type: 'kubernetes.io/tls',
      stringData: { 'tls.crt': certLike(i, 0), 'tls.key': 'k'.repeat(1700) },
    },
  });
  await api.custom.createNamespacedCustomObject({
    group: 'mirrorhub.io',
    version: 'v1alpha1',
    namespace,
    plural: 'secretmirrors',
    body: {
      apiVersion: 'mirrorhub.io/v1alpha1',
      kind: 'SecretMirror',
      metadata: { name: `mirror-${i}` },
      spec: {
        source: { kind: 'Secret', name: `src-${i}` },
        destination: { namespaceSelector: { matchLabels } },
        pollPeriodSeconds: 300,
      },
    },
  });
}
