// Deliveries of deleted mirrors that may still be in a cluster: the mirror's finalizer was
// released while the cluster could not be reached (the mirror controller, cleanupGraceMs). The
// mirror controller deletes them once the cluster's caches show them (deliveries without a mirror
// are deleted when seen); this list is only what MirrorCluster status reports meanwhile.
import type { PendingCleanup } from './plan.js';

export class PendingCleanups {
  private readonly byCluster = new Map<string, Map<string, PendingCleanup>>();
  private readonly listeners = new Set<(cluster: string) => void>();

  /** `cluster` may still hold `delivery` of the deleted `mirror`. */
  add(cluster: string, delivery: string, mirror: string): void {
    let m = this.byCluster.get(cluster);
    if (!m) this.byCluster.set(cluster, (m = new Map()));
    if (m.get(delivery)?.mirror === mirror) return;
    m.set(delivery, { delivery, mirror });
    this.emit(cluster);
  }

  /** Entries recorded before (a MirrorCluster's status after a restart); existing ones win. */
  seed(cluster: string, entries: readonly PendingCleanup[]): void {
    let changed = false;
    for (const e of entries) {
      let m = this.byCluster.get(cluster);
      if (!m) this.byCluster.set(cluster, (m = new Map()));
      if (m.has(e.delivery)) continue;
      m.set(e.delivery, { ...e });
      changed = true;
    }
    if (changed) this.emit(cluster);
  }

  /** Drop entries for which `done(delivery)` is true; returns whether anything was dropped. */
  prune(cluster: string, done: (delivery: string) => boolean): boolean {
    const m = this.byCluster.get(cluster);
    if (!m) return false;
    let changed = false;
    for (const name of [...m.keys()]) {
      if (done(name)) {
        m.delete(name);
        changed = true;
      }
    }
    if (m.size === 0) this.byCluster.delete(cluster);
    return changed;
  }

  /** Forget a cluster (its MirrorCluster is gone). */
  clear(cluster: string): void {
    this.byCluster.delete(cluster);
  }

  list(cluster: string): PendingCleanup[] {
    return [...(this.byCluster.get(cluster)?.values() ?? [])].sort((a, b) =>
      a.delivery < b.delivery ? -1 : a.delivery > b.delivery ? 1 : 0,
    );
  }

  /** Listen to additions; returns an unsubscribe function. */
  onChange(listener: (cluster: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(cluster: string): void {
    for (const l of this.listeners) {
      try {
        l(cluster);
      } catch {
        // a listener must not break the list
      }
    }
  }
}
