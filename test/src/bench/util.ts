import { readFileSync } from 'node:fs';
import { request } from 'node:https';

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

function statusMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
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
export async function apiRequestCounts(
  server: string,
  tls: { ca: string; cert: Buffer; key: Buffer },
): Promise<ApiCounts> {
  const text = await new Promise<string>((resolve, reject) => {
    const req = request(`${server}/metrics`, tls, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve(body));
    });
    req.once('error', reject);
    req.end();
  });
  const counts: ApiCounts = { reads: 0, writes: 0, leaseWrites: 0, watches: 0 };
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const verb = /verb="(\w+)"/.exec(line)?.[1] ?? '';
    const n = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (verb === 'WATCH') counts.watches += n;
    else if (verb === 'GET' || verb === 'LIST') counts.reads += n;
    else if (['POST', 'PUT', 'PATCH', 'DELETE', 'APPLY'].includes(verb)) {
      if (/resource="leases"/.test(line)) counts.leaseWrites += n;
      else counts.writes += n;
    }
  }
  return counts;
}

export function fmtMs(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`;
}
