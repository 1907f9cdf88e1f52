// What this hub replica reports of the deliveries it holds in the followers it owns, for the
// replica that leads (several replicas share the fleet: hub/src/shards/ownership.ts). The mirror
// controller's cluster destinations put one DeliveryReport per (cluster, delivery) here; the
// MirrorCluster controller writes them to the follower's status.deliveries. A leader publishes
// nothing (it writes the mirrors' status itself), so one replica adds no write.
//
// Changes are announced at most once per `coalesceMs` per cluster: the status write that
// follows carries every change made meanwhile, so a burst of agent reports costs one write.
import type { DeliveryReport } from '@mirrorhub/shared/api/index';
import { realClock, type Clock, type Timer } from '@mirrorhub/shared/kit/runtime/index';

export const DEFAULT_REPORT_COALESCE_MS = 1000;

interface ClusterReports {
  items: Map<string, { report: DeliveryReport; canonical: string }>;
  lastEmit: number;
  timer?: Timer | undefined;
}

export class DeliveryReportStore {
  private readonly byCluster = new Map<string, ClusterReports>();
  private readonly listeners = new Set<(cluster: string) => void>();
  private readonly clock: Clock;
  private readonly coalesceMs: number;

  constructor(opts: { clock?: Clock; coalesceMs?: number } = {}) {
    this.clock = opts.clock ?? realClock;
    this.coalesceMs = opts.coalesceMs ?? DEFAULT_REPORT_COALESCE_MS;
  }

  /** Report `report` for its delivery in `cluster` (a no-op when it says what it said). */
  set(cluster: string, report: DeliveryReport): void {
    const c = this.cluster(cluster);
    const canonical = JSON.stringify(report);
    if (c.items.get(report.delivery)?.canonical === canonical) return;
    c.items.set(report.delivery, { report, canonical });
    this.changed(cluster, c);
  }

  /** `cluster` holds nothing of delivery `delivery` any more. */
  remove(cluster: string, delivery: string): void {
    const c = this.byCluster.get(cluster);
    if (!c?.items.delete(delivery)) return;
    this.changed(cluster, c);
  }

  /**
   * Forget `cluster` (this replica no longer owns it) or, without a name, every cluster (this
   * replica leads now). Announced at once, so an owner's status drops what it no longer reports.
   */
  clear(cluster?: string): void {
    const names = cluster === undefined ? [...this.byCluster.keys()] : [cluster];
    for (const name of names) {
      const c = this.byCluster.get(name);
      if (!c) continue;
      c.timer?.cancel();
      this.byCluster.delete(name);
      this.emit(name);
    }
  }

  /** The reports for `cluster`, by delivery name. */
  list(cluster: string): DeliveryReport[] {
    const c = this.byCluster.get(cluster);
    if (!c) return [];
    return [...c.items.values()]
      .map((i) => i.report)
      .sort((a, b) => (a.delivery < b.delivery ? -1 : a.delivery > b.delivery ? 1 : 0));
  }

  /** Listen to (coalesced) changes; returns an unsubscribe function. */
  onChange(listener: (cluster: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private cluster(name: string): ClusterReports {
    let c = this.byCluster.get(name);
    if (!c) this.byCluster.set(name, (c = { items: new Map(), lastEmit: -Infinity }));
    return c;
  }

  private changed(name: string, c: ClusterReports): void {
    if (c.timer) return; // announced when it fires, with this change too
    const wait = c.lastEmit + this.coalesceMs - this.clock.now();
    c.timer = this.clock.setTimer(
      () => {
        c.timer = undefined;
        c.lastEmit = this.clock.now();
        this.emit(name);
      },
      Math.max(0, wait),
    );
  }

  private emit(cluster: string): void {
    for (const l of this.listeners) {
      try {
        l(cluster);
      } catch {
        // a listener must not break the store
      }
    }
  }
}
