// What makes the dashboard live: the controllers tell the feed whenever their caches change
// (a watch event of a mirror, a MirrorCluster or a delivery), and the feed tells every open
// page at most every `coalesceMs`, with a version number the page compares with what it shows.
// And the Events the hub recorded, newest first, kept per mirror for the detail page.
import type { EventRow } from './types.js';

export interface FeedOptions {
  /** Changes closer together than this are sent as one (default 200 ms). */
  coalesceMs?: number;
}

export class DashboardFeed {
  private ver = 1;
  private timer: NodeJS.Timeout | undefined;
  private readonly listeners = new Set<(version: number) => void>();
  private readonly coalesceMs: number;

  constructor(opts: FeedOptions = {}) {
    this.coalesceMs = opts.coalesceMs ?? 200;
  }

  get version(): number {
    return this.ver;
  }

  /** Something the dashboard shows may have changed. Cheap: call it from every watch event. */
  changed(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.ver += 1;
      for (const l of this.listeners) l(this.ver);
    }, this.coalesceMs);
    this.timer.unref();
  }

  subscribe(listener: (version: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get subscribers(): number {
    return this.listeners.size;
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.listeners.clear();
  }
}

/**
 * The last Events the hub recorded about each mirror (this replica only: a new leader starts
 * empty). Repeats of the same type, reason and message are counted, as the API server does.
 */
export class RecentEvents {
  private readonly byKey = new Map<string, EventRow[]>();

  constructor(
    private readonly perKey = 20,
    private readonly maxKeys = 5000,
  ) {}

  add(key: string, e: Omit<EventRow, 'count'>): void {
    const list = this.byKey.get(key) ?? [];
    this.byKey.delete(key); // most recently used last
    const same = list.findIndex(
      (x) => x.type === e.type && x.reason === e.reason && x.message === e.message,
    );
    if (same >= 0) {
      const [prev] = list.splice(same, 1);
      list.unshift({ ...e, count: (prev?.count ?? 1) + 1 });
    } else {
      list.unshift({ ...e, count: 1 });
    }
    list.length = Math.min(list.length, this.perKey);
    this.byKey.set(key, list);
    while (this.byKey.size > this.maxKeys) this.byKey.delete(this.byKey.keys().next().value!);
  }

  forget(key: string): void {
    this.byKey.delete(key);
  }

  get map(): ReadonlyMap<string, readonly EventRow[]> {
    return this.byKey;
  }
}
