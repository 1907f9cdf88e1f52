/**
 * Fakes for unit tests of the runtime and of controllers built on it.
 *
 * `FakeListerWatcher`: an in-memory ListerWatcher for unit tests of watchers and of controllers
 * built on them. It behaves like an API server for one resource: monotonically increasing
 * resourceVersions, paginated lists, watches that deliver events written after their
 * resourceVersion, and knobs to inject the failures a real server produces (list errors, watch
 * errors, 410 Gone, connections dropped mid-stream).
 *
 * `FakeClock`: a manual `Clock` (kit/runtime/clock.ts), so tests move time instead of sleeping.
 * It lives here, not beside `Clock`, so that it is not in the image.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Clock, Timer } from '../kit/runtime/clock.js';
import {
  K8sHttpError,
  type ListOptions,
  type ListPage,
  type ListerWatcher,
  type WatchCallbacks,
  type WatchEvent,
  type WatchOptions,
} from '../kit/k8s/listwatch.js';

export interface FakeWatch<T> {
  opts: WatchOptions;
  callbacks: WatchCallbacks<T>;
  aborted: boolean;
  closed: boolean;
  /** Connected and caught up with history: receives new events directly. */
  ready: boolean;
}

export class FakeListerWatcher<T extends KubernetesObject> implements ListerWatcher<T> {
  private rv = 100;
  private uidSeq = 0;
  private readonly objects = new Map<string, T>();
  /** Every list call, in order. */
  readonly lists: ListOptions[] = [];
  /** Every watch call, in order. */
  readonly watches: FakeWatch<T>[] = [];
  /** Errors thrown by the next list calls (FIFO). */
  readonly listErrors: unknown[] = [];
  /** Errors the next watch calls close with at once (FIFO). */
  readonly watchErrors: unknown[] = [];
  /** Events older than this resourceVersion are "compacted": watching from before gets 410. */
  compactedBefore = 0;
  /** Events since the start, for replay to watches that start from an older resourceVersion. */
  private readonly history: { rv: number; event: WatchEvent<T> }[] = [];

  get resourceVersion(): string {
    return String(this.rv);
  }

  /** Create (assigns uid and resourceVersion); returns the stored copy. */
  create(obj: T): T {
    const stored = this.clone(obj);
    stored.metadata = {
      ...(stored.metadata ?? {}),
      uid: stored.metadata?.uid ?? `uid-${++this.uidSeq}`,
      resourceVersion: String(++this.rv),
    };
    this.objects.set(this.key(stored), stored);
    this.record('ADDED', stored);
    return stored;
  }

  /** Replace the object with the same namespace/name; bumps resourceVersion. */
  update(obj: T): T {
    const prev = this.objects.get(this.key(obj));
    if (!prev) throw new Error(`fake: ${this.key(obj)} not found`);
    const stored = this.clone(obj);
    stored.metadata = {
      ...(stored.metadata ?? {}),
      uid: prev.metadata?.uid,
      resourceVersion: String(++this.rv),
    };
    this.objects.set(this.key(stored), stored);
    this.record('MODIFIED', stored);
    return stored;
  }

  delete(name: string, namespace?: string): void {
    const key = namespace ? `${namespace}/${name}` : name;
    const prev = this.objects.get(key);
    if (!prev) throw new Error(`fake: ${key} not found`);
    this.objects.delete(key);
    const tomb = this.clone(prev);
    tomb.metadata = { ...(tomb.metadata ?? {}), resourceVersion: String(++this.rv) };
    this.record('DELETED', tomb);
  }

  /** Change state without telling watches (as if a watch missed it), e.g. before forcing 410. */
  silently(fn: () => void): void {
    const watching = this.watches.filter((w) => !w.closed);
    for (const w of watching) w.closed = true;
    try {
      fn();
    } finally {
      for (const w of watching) w.closed = false;
    }
  }

  /** The newest watch that is still open. */
  active(): FakeWatch<T> | undefined {
    return [...this.watches].reverse().find((w) => w.ready && !w.closed && !w.aborted);
  }

  /**
   * Stall the open watch: it stays open but passes nothing more (a proxy that stopped
   * forwarding), and learns nothing of it.
   */
  stall(): void {
    const w = this.active();
    if (w) w.closed = true;
  }

  /** Every metadata list call (see `withMetadataLists`), in order. */
  readonly metadataLists: ListOptions[] = [];
  listMetadata?: (opts: ListOptions) => Promise<ListPage<KubernetesObject>>;

  /** Also answer metadata-only lists, as the HTTP lister-watcher does for full objects. */
  withMetadataLists(): this {
    this.listMetadata = async (opts) => {
      this.metadataLists.push(opts);
      const page = await this.page(opts);
      return {
        ...page,
        items: page.items.map((o) => ({ metadata: { ...o.metadata } })),
      };
    };
    return this;
  }

  /** Send a raw event to the open watch (e.g. a BOOKMARK or an ERROR Status). */
  send(event: WatchEvent<T>): void {
    const w = this.active();
    if (w) w.callbacks.onEvent(event);
  }

  /** End the open watch: cleanly, or with `err` (a dropped connection). */
  closeWatch(err?: unknown): void {
    const w = this.active();
    if (!w) return;
    w.closed = true;
    w.callbacks.onClose(err);
  }

  /** Tell the open watch its resourceVersion expired, the way the API server does. */
  expireWatch(): void {
    this.send({
      type: 'ERROR',
      object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' },
    });
    this.closeWatch();
  }

  list(opts: ListOptions): Promise<ListPage<T>> {
    this.lists.push(opts);
    return this.page(opts);
  }

  private async page(opts: ListOptions): Promise<ListPage<T>> {
    await Promise.resolve();
    const err = this.listErrors.shift();
    if (err !== undefined) throw err;
    const all = [...this.objects.values()].sort((a, b) => this.key(a).localeCompare(this.key(b)));
    const start = opts.continue ? Number(opts.continue) : 0;
    const limit = opts.limit ?? all.length;
    const items = all.slice(start, start + limit).map((o) => this.clone(o));
    const page: ListPage<T> = { items, resourceVersion: String(this.rv) };
    if (start + limit < all.length) page.continue = String(start + limit);
    return page;
  }

  watch(opts: WatchOptions, callbacks: WatchCallbacks<T>): { abort(): void } {
    const w: FakeWatch<T> = { opts, callbacks, aborted: false, closed: false, ready: false };
    this.watches.push(w);
    const err = this.watchErrors.shift();
    queueMicrotask(() => {
      if (w.aborted) return;
      if (err !== undefined) {
        w.closed = true;
        callbacks.onClose(err);
        return;
      }
      const from = Number(opts.resourceVersion || '0');
      if (from < this.compactedBefore) {
        w.closed = true;
        callbacks.onClose(
          new K8sHttpError(
            410,
            { code: 410, reason: 'Expired', message: 'too old resource version' },
            'watch',
          ),
        );
        return;
      }
      callbacks.onConnected?.();
      for (const h of this.history)
        if (h.rv > from && !w.closed && !w.aborted) callbacks.onEvent(this.cloneEvent(h.event));
      w.ready = true;
    });
    return {
      abort: () => {
        w.aborted = true;
      },
    };
  }

  private record(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: T): void {
    const event: WatchEvent<T> = { type, object: obj };
    this.history.push({ rv: this.rv, event });
    for (const w of this.watches) {
      if (w.ready && !w.closed && !w.aborted) w.callbacks.onEvent(this.cloneEvent(event));
    }
  }

  private cloneEvent(e: WatchEvent<T>): WatchEvent<T> {
    return { type: e.type, object: this.clone(e.object as T) };
  }

  private key(o: KubernetesObject): string {
    return o.metadata?.namespace
      ? `${o.metadata.namespace}/${o.metadata.name}`
      : (o.metadata?.name ?? '');
  }

  private clone(o: T): T {
    return structuredClone(o);
  }
}

interface FakeTimer {
  id: number;
  due: number;
  fn: () => void;
}

/**
 * A manual clock for tests. Timers fire only from `advance()`/`tick()`, in due order; a timer
 * scheduled by a firing timer fires in the same advance if it is due.
 */
export class FakeClock implements Clock {
  private current: number;
  private timers: FakeTimer[] = [];
  private nextId = 1;

  constructor(startMs = 1_700_000_000_000) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  setTimer(fn: () => void, ms: number): Timer {
    const t: FakeTimer = { id: this.nextId++, due: this.current + Math.max(0, ms), fn };
    this.timers.push(t);
    return {
      cancel: () => {
        this.timers = this.timers.filter((x) => x !== t);
      },
    };
  }

  /** Number of timers not yet fired or cancelled. */
  pending(): number {
    return this.timers.length;
  }

  /** Due time of the earliest pending timer, if any. */
  nextDue(): number | undefined {
    let min: number | undefined;
    for (const t of this.timers) if (min === undefined || t.due < min) min = t.due;
    return min;
  }

  /**
   * Move time forward by `ms`, firing due timers in order and letting promise callbacks settle
   * between timers (so async code reacting to one timer can schedule the next).
   */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    await settle();
    for (;;) {
      const next = this.popDue(target);
      if (!next) break;
      this.current = next.due;
      next.fn();
      await settle();
    }
    this.current = target;
    await settle();
  }

  /** Advance to the earliest pending timer and fire it (and any due at the same time). */
  async tick(): Promise<void> {
    const due = this.nextDue();
    if (due !== undefined) await this.advance(due - this.current);
    else await settle();
  }

  private popDue(target: number): FakeTimer | undefined {
    let best: FakeTimer | undefined;
    for (const t of this.timers) {
      if (t.due <= target && (!best || t.due < best.due || (t.due === best.due && t.id < best.id)))
        best = t;
    }
    if (best) this.timers = this.timers.filter((x) => x !== best);
    return best;
  }
}

/** Let every pending promise callback run (a macrotask boundary drains the microtask queue). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
