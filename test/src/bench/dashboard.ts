/**
 * Dashboard viewers for the benchmarks: each holds the event stream open and, like the page,
 * fetches the snapshot again on every `changed` (one fetch in flight at most). They sign in with
 * a ServiceAccount token that may list every mirror and cluster, so each sees everything.
 */
import { percentile } from './util.js';

export interface ViewerStats {
  viewers: number;
  /** Snapshot fetches over all viewers, their latency and size. */
  fetches: number;
  fetchP50Ms: number;
  fetchP99Ms: number;
  snapshotBytes: number;
  /** `changed` events received over all viewers. */
  changes: number;
}

export interface Viewers {
  stop(): Promise<ViewerStats>;
}

export async function openViewers(base: string, token: string, n: number): Promise<Viewers> {
  const headers = { authorization: `Bearer ${token}` };
  const abort = new AbortController();
  const latencies: number[] = [];
  let bytes = 0;
  let changes = 0;
  const viewer = async () => {
    let inFlight: Promise<void> | undefined;
    let again = false;
    const refetch = () => {
      if (inFlight) {
        again = true;
        return;
      }
      inFlight = (async () => {
        do {
          again = false;
          const t = performance.now();
          const res = await fetch(`${base}/api/v1/snapshot`, { headers, signal: abort.signal });
          const body = await res.text();
          if (res.status !== 200) throw new Error(`snapshot: ${res.status} ${body}`);
          latencies.push(performance.now() - t);
          bytes = body.length;
        } while (again && !abort.signal.aborted);
      })()
        .catch(() => undefined)
        .finally(() => (inFlight = undefined));
    };
    const res = await fetch(`${base}/api/v1/watch`, { headers, signal: abort.signal });
    if (res.status !== 200) throw new Error(`watch: ${res.status} ${await res.text()}`);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    void (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buf += decoder.decode(value, { stream: true });
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const event = buf.slice(0, i);
          buf = buf.slice(i + 2);
          if (event.includes('event: changed')) {
            changes += 1;
            refetch();
          }
        }
      }
    })().catch(() => undefined);
  };
  await Promise.all(Array.from({ length: n }, viewer));
  return {
    stop: async () => {
      abort.abort();
      return {
        viewers: n,
        fetches: latencies.length,
        fetchP50Ms: percentile(latencies, 50),
        fetchP99Ms: percentile(latencies, 99),
        snapshotBytes: bytes,
        changes,
      };
    },
  };
}
