/**
 * A typed list-then-watch cache (a reflector + store + event dispatch, like client-go's shared
 * informer, for one selected set of objects).
 *
 * - Lists in pages, then watches from the list's resourceVersion with bookmarks and a
 *   randomised server-side timeout (5-10 min by default), resuming from the last seen
 *   resourceVersion when a watch ends.
 * - 410 Gone (an ERROR event or HTTP status: our resourceVersion was compacted away) -> re-list
 *   and diff against the store, so handlers see exactly the adds/updates/deletes they missed.
 * - Any other failure -> retry with jittered exponential backoff (never a hot loop, never
 *   giving up unless `maxConsecutiveErrors` says so, which emits `gaveUp`).
 * - A watch that delivers nothing, not even a bookmark, within `progressDeadlineMs` is stalled
 *   (a proxy or load balancer that keeps the connection open but passes nothing): it is ended
 *   and resumed at once from the last resourceVersion, so whatever it missed is replayed (or a
 *   410 makes it re-list). The API server's watch cache sends every watcher a bookmark about
 *   once a minute (k8s.io/apiserver cacher, `nextBookmarkTime`), so a healthy quiet watch never
 *   trips the default of 150 s.
 * - Optional periodic re-list (`resyncPeriodMs`, jittered, changeable while running with
 *   `setResyncPeriod`): a fresh look that repairs whatever the watch missed. It first compares
 *   every object's resourceVersion with the store, page by page (as metadata only where the
 *   lister-watcher offers `listMetadata`), and lists in full only when something differs: a
 *   look at an unchanged cache costs one metadata list and one page of memory.
 * - Store keyed by uid (a Secret deleted and re-created under the same name is a delete and an
 *   add, not an update), with a namespace/name index for `get()`. It holds only what the
 *   selectors select, after `transform` (which by default drops `managedFields`), so memory is
 *   proportional to the selected objects.
 * - Handlers run synchronously after the store is updated; a handler that throws (or returns a
 *   rejected promise) is reported as a `handlerError` lifecycle event and never stops the
 *   watcher or the process. Handlers receive the cached object: treat it as read-only.
 * - Lifecycle events (`listed`, `connected`, `restarted`, `error`, `handlerError`, `gaveUp`,
 *   `event`) are typed; the caller logs and counts them (`instrumentWatcher` does both).
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeAccess } from './access.js';
import type { Logger } from 'pino';
import { Backoff, jitterUp } from '../runtime/backoff.js';
import { realClock, sleep, type Clock, type Timer } from '../runtime/clock.js';
import { errorMessage, httpStatusOf, type StatusLike } from '../runtime/errors.js';
import type { ControllerMetrics } from '../runtime/metrics.js';
import {
  K8sHttpError,
  kubeListerWatcher,
  type KubeListerWatcherOptions,
  type ListerWatcher,
  type ListOptions,
  type ListPage,
  type ResourceTarget,
  type WatchEvent,
  type WatchHandle,
} from './listwatch.js';

/** Why the store was listed. `checked`: a periodic re-list's metadata check found it current. */
export type ListReason = 'initial' | 'gone' | 'periodic' | 'checked';
export type RestartReason = 'closed' | 'gone' | 'resync' | 'error' | 'stalled';

export type WatcherEvent =
  | {
      type: 'listed';
      reason: ListReason;
      resourceVersion: string;
      total: number;
      added: number;
      updated: number;
      deleted: number;
      durationMs: number;
    }
  | { type: 'connected'; resourceVersion: string }
  | { type: 'restarted'; reason: RestartReason; durationMs: number; events: number }
  | { type: 'error'; phase: 'list' | 'watch'; err: unknown; attempt: number; retryInMs: number }
  | { type: 'handlerError'; handler: 'add' | 'update' | 'delete'; key: string; err: unknown }
  | { type: 'gaveUp'; err: unknown; attempts: number }
  | { type: 'event'; eventType: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' };

export interface DeleteInfo {
  /**
   * True when the delete was inferred from a re-list (the watch missed it): `obj` is the last
   * state we saw, not the state at deletion.
   */
  finalStateUnknown: boolean;
}

type MaybePromise = void | Promise<void>;
export interface WatchHandlers<T> {
  onAdd?(obj: T): MaybePromise;
  onUpdate?(obj: T, old: T): MaybePromise;
  onDelete?(obj: T, info: DeleteInfo): MaybePromise;
}

export interface WatcherOptions<T> {
  /** Name for events, logs and metrics, e.g. `secrets` or `payload-secrets`. */
  resource: string;
  listerWatcher: ListerWatcher<T>;
  /** List page size (default 500). */
  pageSize?: number;
  /** Each watch asks the server to end it after [t, 2t) seconds (default t = 300). */
  watchTimeoutSeconds?: number;
  /** Re-list this often (jittered up to +20%); 0/undefined = never. See `setResyncPeriod`. */
  resyncPeriodMs?: number;
  /**
   * End a watch that delivered nothing (no event, no bookmark) for this long and resume it
   * (default 150 s: two and a half of the API server's one-minute bookmarks); 0 = never.
   */
  progressDeadlineMs?: number;
  /** Retry backoff (default 500 ms doubling to 30 s, equal jitter). */
  backoff?: { initialMs?: number; maxMs?: number };
  /** Stop after this many consecutive failures (default: never). */
  maxConsecutiveErrors?: number;
  /** Applied to every object before it is stored (default: drop metadata.managedFields). */
  transform?: (obj: T) => T;
  clock?: Clock;
  random?: () => number;
}

/** Drop `metadata.managedFields`: often the biggest part of an object, never needed here. */
export function stripManagedFields<T extends KubernetesObject>(obj: T): T {
  if (obj.metadata?.managedFields) delete obj.metadata.managedFields;
  return obj;
}

/** See `WatcherOptions.progressDeadlineMs`. */
export const DEFAULT_PROGRESS_DEADLINE_MS = 150_000;
/**
 * The shortest deadline hub and agent take from their environment. The API server's watch cache
 * sends a bookmark about once a minute; a shorter deadline would end every quiet watch that is
 * not stalled at all, and log it as stalled (the chaos soak found that at 20 s).
 */
export const MIN_PROGRESS_DEADLINE_SECONDS = 90;

/**
 * MIRRORHUB_WATCH_PROGRESS_DEADLINE_SECONDS, in seconds (undefined when unset), for hub and
 * agent alike; throws with what is wrong and why.
 */
export function progressDeadlineFromEnv(
  env: Record<string, string | undefined>,
): number | undefined {
  const name = 'MIRRORHUB_WATCH_PROGRESS_DEADLINE_SECONDS';
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < MIN_PROGRESS_DEADLINE_SECONDS || n > 3600)
    throw new Error(
      `${name} must be a whole number of seconds from ${MIN_PROGRESS_DEADLINE_SECONDS} to 3600; got "${raw}" (the API server sends a bookmark about once a minute: a shorter deadline would resume every quiet watch as if it were stalled)`,
    );
  return n;
}

/** A component's watch setting as Watcher options (undefined: the defaults). */
export function watchTuning(
  progressDeadlineMs: number | undefined,
): Pick<WatcherOptions<never>, 'progressDeadlineMs'> {
  return progressDeadlineMs === undefined ? {} : { progressDeadlineMs };
}

type WatchOutcome =
  | { kind: 'stopped' }
  | { kind: 'closed' | 'gone' | 'resync' | 'stalled'; durationMs: number; events: number }
  | { kind: 'error'; err: unknown; durationMs: number; events: number };

function keyOf(obj: KubernetesObject): string {
  const ns = obj.metadata?.namespace;
  const name = obj.metadata?.name ?? '';
  return ns ? `${ns}/${name}` : name;
}

function nameOf(obj: KubernetesObject): string {
  return obj.metadata?.name ?? '';
}

function uidOf(obj: KubernetesObject): string {
  return obj.metadata?.uid || `key:${keyOf(obj)}`;
}

function rvOf(obj: KubernetesObject): string | undefined {
  return obj.metadata?.resourceVersion;
}

export class Watcher<T extends KubernetesObject> {
  readonly resource: string;
  /** Resolves after the first list is in the store; rejects if stopped (or gave up) before. */
  readonly synced: Promise<void>;

  private readonly lw: ListerWatcher<T>;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly backoff: Backoff;
  private readonly transform: (obj: T) => T;
  private readonly byUid = new Map<string, T>();
  /**
   * namespace ('' for cluster-scoped objects) -> name -> uid. Nested rather than keyed by
   * `namespace/name`: no key string per object (the store holds tens of thousands of objects,
   * and a string each would add up), and `list(namespace)` reads one namespace without scanning
   * the store.
   */
  private readonly uidByName = new Map<string, Map<string, string>>();
  private readonly handlers = new Set<WatchHandlers<T>>();
  private readonly listeners = new Set<(e: WatcherEvent) => void>();
  private rv = '';
  private isSynced = false;
  private started = false;
  private stopped = false;
  private consecutiveErrors = 0;
  private resolveSynced!: () => void;
  private rejectSynced!: (err: unknown) => void;
  private loopDone: Promise<void> = Promise.resolve();
  private readonly stopController = new AbortController();
  private currentWatch: WatchHandle | undefined;
  private endWatch: ((o: WatchOutcome) => void) | undefined;
  private resyncTimer: Timer | undefined;
  private resyncDue = false;
  private resyncPeriodMs: number | undefined;
  /** When the store was last listed (or checked current). */
  private listedAt = 0;
  private goneStreak = 0;

  constructor(private readonly opts: WatcherOptions<T>) {
    this.resource = opts.resource;
    this.lw = opts.listerWatcher;
    this.clock = opts.clock ?? realClock;
    this.random = opts.random ?? Math.random;
    this.transform = opts.transform ?? stripManagedFields;
    this.resyncPeriodMs = opts.resyncPeriodMs;
    this.backoff = new Backoff({
      initialMs: opts.backoff?.initialMs ?? 500,
      maxMs: opts.backoff?.maxMs ?? 30_000,
      jitter: 0.5,
      random: this.random,
    });
    this.synced = new Promise<void>((resolve, reject) => {
      this.resolveSynced = resolve;
      this.rejectSynced = reject;
    });
    // Nobody may be awaiting `synced`; its rejection must not become an unhandled rejection.
    this.synced.catch(() => undefined);
  }

  /** Start listing and watching (idempotent). */
  start(): this {
    if (this.started || this.stopped) return this;
    this.started = true;
    this.loopDone = this.loop().catch((err: unknown) => {
      // The loop catches everything it expects; this is a bug guard, not a code path.
      this.emit({ type: 'gaveUp', err, attempts: this.consecutiveErrors });
      this.stopped = true;
      if (!this.isSynced) this.rejectSynced(err);
    });
    return this;
  }

  /** Stop watching and wait for the loop to end. The store stays readable. */
  async stop(): Promise<void> {
    if (!this.stopped) {
      this.stopped = true;
      this.stopController.abort();
      this.resyncTimer?.cancel();
      this.currentWatch?.abort();
      this.endWatch?.({ kind: 'stopped' });
      if (!this.isSynced)
        this.rejectSynced(new Error(`watcher ${this.resource}: stopped before sync`));
    }
    await this.loopDone;
  }

  hasSynced(): boolean {
    return this.isSynced;
  }

  get running(): boolean {
    return this.started && !this.stopped;
  }

  /** resourceVersion of the last list, event or bookmark. */
  get resourceVersion(): string {
    return this.rv;
  }

  get size(): number {
    return this.byUid.size;
  }

  get(name: string, namespace?: string): T | undefined {
    const uid = this.uidByName.get(namespace ?? '')?.get(name);
    return uid === undefined ? undefined : this.byUid.get(uid);
  }

  getByUid(uid: string): T | undefined {
    return this.byUid.get(uid);
  }

  /** Every cached object, or those in `namespace`. */
  list(namespace?: string): T[] {
    if (namespace === undefined) return [...this.byUid.values()];
    const out: T[] = [];
    for (const uid of this.uidByName.get(namespace)?.values() ?? []) {
      const obj = this.byUid.get(uid);
      if (obj) out.push(obj);
    }
    return out;
  }

  /**
   * Register handlers. Objects already in the store are replayed to `onAdd` at once (as
   * client-go does), so late registration misses nothing. Returns an unregister function.
   */
  addHandler(h: WatchHandlers<T>): () => void {
    this.handlers.add(h);
    if (h.onAdd) for (const obj of this.byUid.values()) this.call(h, 'add', obj);
    return () => this.handlers.delete(h);
  }

  /**
   * Re-list this often from now on (undefined or 0: never), counted from the last list: a
   * shorter period than before can make a re-list due at once.
   */
  setResyncPeriod(ms: number | undefined): void {
    if ((ms || undefined) === (this.resyncPeriodMs || undefined)) return;
    this.resyncPeriodMs = ms;
    if (this.isSynced) this.scheduleResync();
  }

  /** Listen to lifecycle events. Returns an unregister function. */
  onEvent(listener: (e: WatcherEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  // ---- the loop --------------------------------------------------------------------------------

  private async loop(): Promise<void> {
    let needList = true;
    let listReason: ListReason = 'initial';
    while (!this.stopped) {
      if (needList || this.resyncDue) {
        try {
          await this.listAndReplace(this.resyncDue && !needList ? 'periodic' : listReason);
          needList = false;
        } catch (err) {
          if (this.stopped) return;
          if (!(await this.failed('list', err))) return;
          continue;
        }
      }
      if (this.stopped) return;
      const o = await this.watchOnce();
      if (o.kind === 'stopped' || this.stopped) return;
      const gone = o.kind === 'gone' || (o.kind === 'error' && isGoneError(o.err));
      const reason: RestartReason = gone ? 'gone' : o.kind;
      if (o.events > 0) this.goneStreak = 0;
      this.emit({ type: 'restarted', reason, durationMs: o.durationMs, events: o.events });
      if (gone) {
        needList = true;
        listReason = 'gone';
        // 410 straight after a fresh list (nothing delivered) would otherwise loop list/watch
        // with no pause; a lagging watch cache can do that. Back off without counting an error.
        if (o.events === 0 && o.durationMs < 1000 && this.goneStreak++ > 0) {
          await sleep(this.clock, this.backoff.next(), this.stopController.signal);
        }
        continue;
      }
      this.goneStreak = 0;
      if (o.kind === 'stalled') {
        // Resume at once from where it stopped: the server replays what the stall withheld.
        continue;
      }
      if (o.kind === 'resync') {
        needList = true;
        listReason = 'periodic';
      } else if (o.kind === 'error') {
        if (!(await this.failed('watch', o.err))) return;
      } else if (o.events === 0 && o.durationMs < 1000) {
        // Closed cleanly but at once, with nothing delivered: do not spin.
        await sleep(this.clock, this.backoff.next(), this.stopController.signal);
      }
    }
  }

  /** Count a failure, report it, wait the backoff. Returns false when we should stop. */
  private async failed(phase: 'list' | 'watch', err: unknown): Promise<boolean> {
    this.consecutiveErrors++;
    const max = this.opts.maxConsecutiveErrors ?? Infinity;
    if (this.consecutiveErrors >= max) {
      this.emit({ type: 'error', phase, err, attempt: this.consecutiveErrors, retryInMs: 0 });
      this.emit({ type: 'gaveUp', err, attempts: this.consecutiveErrors });
      this.stopped = true;
      this.resyncTimer?.cancel();
      if (!this.isSynced) {
        this.rejectSynced(
          new Error(`watcher ${this.resource}: gave up: ${errorMessage(err)}`, { cause: err }),
        );
      }
      return false;
    }
    const delay = this.backoff.next();
    this.emit({ type: 'error', phase, err, attempt: this.consecutiveErrors, retryInMs: delay });
    await sleep(this.clock, delay, this.stopController.signal);
    return !this.stopped;
  }

  private succeeded(): void {
    this.consecutiveErrors = 0;
    this.backoff.reset();
  }

  private async listAndReplace(reason: ListReason): Promise<void> {
    const began = this.clock.now();
    if (reason === 'periodic') {
      const rv = await this.currentAt();
      if (this.stopped) return;
      if (rv !== undefined) {
        this.rv = rv;
        this.listed();
        this.emit({
          type: 'listed',
          reason: 'checked',
          resourceVersion: rv,
          total: this.byUid.size,
          added: 0,
          updated: 0,
          deleted: 0,
          durationMs: this.clock.now() - began,
        });
        return;
      }
    }
    const pageSize = this.opts.pageSize ?? 500;
    let items: T[] = [];
    let rv = '';
    let restarts = 0;
    let cont: string | undefined;
    for (;;) {
      let page;
      try {
        page = await this.lw.list({ limit: pageSize, ...(cont ? { continue: cont } : {}) });
      } catch (err) {
        // A continue token expired between pages: start the list over (a few times).
        if (cont && isGoneError(err) && restarts++ < 3) {
          items = [];
          cont = undefined;
          continue;
        }
        throw err;
      }
      if (this.stopped) return;
      for (const obj of page.items) items.push(this.transform(obj));
      rv = page.resourceVersion;
      cont = page.continue;
      if (!cont) break;
    }
    const counts = this.replace(items);
    this.rv = rv;
    this.listed();
    this.emit({
      type: 'listed',
      reason,
      resourceVersion: rv,
      total: this.byUid.size,
      ...counts,
      durationMs: this.clock.now() - began,
    });
  }

  private listed(): void {
    this.resyncDue = false;
    this.listedAt = this.clock.now();
    this.succeeded();
    this.scheduleResync();
    if (!this.isSynced) {
      this.isSynced = true;
      this.resolveSynced();
    }
  }

  /**
   * The resourceVersion of a list that shows the store exactly as it is (the same objects at
   * the same resourceVersions), or undefined when anything differs. It reads metadata only
   * where the lister-watcher can, and holds one page at a time: checking a cache that is
   * current costs no more memory than a page.
   */
  private async currentAt(): Promise<string | undefined> {
    const listMetadata: (o: ListOptions) => Promise<ListPage<KubernetesObject>> =
      this.lw.listMetadata?.bind(this.lw) ?? ((o) => this.lw.list(o));
    let seen = 0;
    let cont: string | undefined;
    for (;;) {
      let page;
      try {
        page = await listMetadata({
          limit: this.opts.pageSize ?? 500,
          ...(cont ? { continue: cont } : {}),
        });
      } catch (err) {
        if (isGoneError(err)) return undefined; // a continue token expired: read in full
        throw err;
      }
      for (const m of page.items) {
        const stored = this.get(m.metadata?.name ?? '', m.metadata?.namespace);
        if (!stored || rvOf(stored) !== m.metadata?.resourceVersion) return undefined;
        seen++;
      }
      cont = page.continue;
      if (!cont) return seen === this.byUid.size ? page.resourceVersion : undefined;
    }
  }

  /** Make the store equal `items`, then tell handlers what changed (deletes first). */
  private replace(items: T[]): { added: number; updated: number; deleted: number } {
    const next = new Map<string, T>();
    for (const obj of items) next.set(uidOf(obj), obj);
    const deleted: T[] = [];
    const added: T[] = [];
    const updated: [T, T][] = [];
    for (const [uid, old] of this.byUid) {
      if (!next.has(uid)) {
        deleted.push(old);
        this.removeFromStore(old);
      }
    }
    for (const [uid, obj] of next) {
      const old = this.byUid.get(uid);
      if (!old) {
        this.putInStore(obj);
        added.push(obj);
      } else if (rvOf(old) !== rvOf(obj) || rvOf(obj) === undefined) {
        this.putInStore(obj);
        updated.push([obj, old]);
      }
    }
    for (const o of deleted) this.dispatchDelete(o, { finalStateUnknown: true });
    for (const o of added) this.dispatch('add', o);
    for (const [o, old] of updated) this.dispatch('update', o, old);
    return { added: added.length, updated: updated.length, deleted: deleted.length };
  }

  private watchOnce(): Promise<WatchOutcome> {
    return new Promise<WatchOutcome>((resolve) => {
      const began = this.clock.now();
      let events = 0;
      let done = false;
      let progressAt = began;
      let stallTimer: Timer | undefined;
      const deadline = this.opts.progressDeadlineMs ?? DEFAULT_PROGRESS_DEADLINE_MS;
      const checkProgress = (): void => {
        if (done) return;
        const quiet = this.clock.now() - progressAt;
        if (quiet >= deadline) end({ kind: 'stalled', ...stats() });
        else stallTimer = this.clock.setTimer(checkProgress, deadline - quiet);
      };
      const end = (o: WatchOutcome): void => {
        if (done) return;
        done = true;
        stallTimer?.cancel();
        // A stall makes the transport check the connection under it (h2.ts: suspectStream).
        this.currentWatch?.abort(o.kind === 'stalled' ? 'stalled' : undefined);
        this.currentWatch = undefined;
        this.endWatch = undefined;
        resolve(o);
      };
      const stats = (): { durationMs: number; events: number } => ({
        durationMs: this.clock.now() - began,
        events,
      });
      this.endWatch = end;
      if (this.resyncDue) return end({ kind: 'resync', ...stats() });
      if (deadline > 0) stallTimer = this.clock.setTimer(checkProgress, deadline);

      const base = this.opts.watchTimeoutSeconds ?? 300;
      const timeoutSeconds = Math.max(1, Math.floor(base * (1 + this.random())));
      try {
        const handle = this.lw.watch(
          { resourceVersion: this.rv, timeoutSeconds, allowWatchBookmarks: true },
          {
            onConnected: () => {
              if (!done) this.emit({ type: 'connected', resourceVersion: this.rv });
            },
            onEvent: (ev) => {
              if (done) return;
              progressAt = this.clock.now();
              events++;
              if (events === 1) this.succeeded();
              const r = this.handleEvent(ev);
              if (r === 'gone') end({ kind: 'gone', ...stats() });
              else if (r instanceof Error) end({ kind: 'error', err: r, ...stats() });
            },
            onClose: (err) => {
              if (err === undefined) end({ kind: 'closed', ...stats() });
              else end({ kind: 'error', err, ...stats() });
            },
          },
        );
        if (done) handle.abort();
        else this.currentWatch = handle;
      } catch (err) {
        end({ kind: 'error', err, ...stats() });
      }
    });
  }

  /** Apply one watch event. Returns 'gone' for 410, an Error for other ERROR events. */
  private handleEvent(ev: WatchEvent<T>): 'gone' | Error | undefined {
    switch (ev.type) {
      case 'ERROR': {
        const status = ev.object as StatusLike;
        if (status.code === 410 || status.reason === 'Expired' || status.reason === 'Gone')
          return 'gone';
        return new K8sHttpError(status.code ?? 500, status, `watch ${this.resource}`);
      }
      case 'BOOKMARK': {
        const rv = rvOf(ev.object as T);
        if (rv) this.rv = rv;
        this.emit({ type: 'event', eventType: 'BOOKMARK' });
        return undefined;
      }
      case 'ADDED':
      case 'MODIFIED': {
        const obj = this.transform(ev.object as T);
        this.emit({ type: 'event', eventType: ev.type });
        const rv = rvOf(obj);
        if (rv) this.rv = rv;
        this.upsert(obj);
        return undefined;
      }
      case 'DELETED': {
        const obj = this.transform(ev.object as T);
        this.emit({ type: 'event', eventType: 'DELETED' });
        const rv = rvOf(obj);
        if (rv) this.rv = rv;
        const known = this.byUid.get(uidOf(obj));
        if (known) {
          this.removeFromStore(known);
          this.dispatchDelete(obj, { finalStateUnknown: false });
        }
        return undefined;
      }
      default:
        return new Error(
          `watch ${this.resource}: unknown event type ${String((ev as { type: unknown }).type)}`,
        );
    }
  }

  private upsert(obj: T): void {
    const uid = uidOf(obj);
    const old = this.byUid.get(uid);
    if (!old) {
      // Same name, other uid, and we never saw the delete: the old object is gone.
      const prevUid = this.uidByName.get(obj.metadata?.namespace ?? '')?.get(nameOf(obj));
      const prev = prevUid === undefined ? undefined : this.byUid.get(prevUid);
      if (prev) {
        this.removeFromStore(prev);
        this.dispatchDelete(prev, { finalStateUnknown: true });
      }
      this.putInStore(obj);
      this.dispatch('add', obj);
    } else if (rvOf(old) !== rvOf(obj) || rvOf(obj) === undefined) {
      this.putInStore(obj);
      this.dispatch('update', obj, old);
    }
  }

  private putInStore(obj: T): void {
    const uid = uidOf(obj);
    this.byUid.set(uid, obj);
    const ns = obj.metadata?.namespace ?? '';
    let names = this.uidByName.get(ns);
    if (!names) this.uidByName.set(ns, (names = new Map()));
    names.set(nameOf(obj), uid);
  }

  private removeFromStore(obj: T): void {
    const uid = uidOf(obj);
    this.byUid.delete(uid);
    const ns = obj.metadata?.namespace ?? '';
    const names = this.uidByName.get(ns);
    const name = nameOf(obj);
    if (names?.get(name) === uid) {
      names.delete(name);
      if (names.size === 0) this.uidByName.delete(ns);
    }
  }

  private scheduleResync(): void {
    this.resyncTimer?.cancel();
    this.resyncTimer = undefined;
    const period = this.resyncPeriodMs;
    if (!period || period <= 0 || this.stopped) return;
    const due = this.listedAt + jitterUp(period, 0.2, this.random);
    this.resyncTimer = this.clock.setTimer(() => {
      this.resyncTimer = undefined;
      this.resyncDue = true;
      this.endWatch?.({ kind: 'resync', durationMs: 0, events: 0 });
    }, due - this.clock.now());
  }

  // ---- dispatch ---------------------------------------------------------------------------------

  private dispatch(kind: 'add' | 'update', obj: T, old?: T): void {
    for (const h of this.handlers) this.call(h, kind, obj, old);
  }

  private dispatchDelete(obj: T, info: DeleteInfo): void {
    for (const h of this.handlers) this.call(h, 'delete', obj, undefined, info);
  }

  private call(
    h: WatchHandlers<T>,
    kind: 'add' | 'update' | 'delete',
    obj: T,
    old?: T,
    info?: DeleteInfo,
  ): void {
    const report = (err: unknown): void =>
      this.emit({ type: 'handlerError', handler: kind, key: keyOf(obj), err });
    try {
      let r: MaybePromise | undefined;
      if (kind === 'add') r = h.onAdd?.(obj);
      else if (kind === 'update') r = h.onUpdate?.(obj, old as T);
      else r = h.onDelete?.(obj, info ?? { finalStateUnknown: false });
      if (r && typeof (r as Promise<void>).then === 'function')
        (r as Promise<void>).then(undefined, report);
    } catch (err) {
      report(err);
    }
  }

  private emit(e: WatcherEvent): void {
    for (const l of this.listeners) {
      try {
        l(e);
      } catch {
        // a listener (logging, metrics) must not break the watcher
      }
    }
  }
}

function isGoneError(err: unknown): boolean {
  return httpStatusOf(err) === 410;
}

export interface CreateWatcherOptions<T> extends Omit<
  WatcherOptions<T>,
  'listerWatcher' | 'resource'
> {
  /** Defaults to the target's plural. */
  resource?: string;
  transport?: KubeListerWatcherOptions;
}

/** A watcher over `target` on the cluster of `kc` (not started). */
export function createWatcher<T extends KubernetesObject>(
  kc: KubeAccess,
  target: ResourceTarget,
  opts: CreateWatcherOptions<T> = {},
): Watcher<T> {
  const { transport, resource, ...rest } = opts;
  return new Watcher<T>({
    ...rest,
    resource: resource ?? target.plural,
    listerWatcher: kubeListerWatcher<T>(kc, target, transport),
  });
}

/**
 * Log and count a watcher's lifecycle: errors at warn (at error once it gives up), relists and
 * restarts at debug (info for relists not caused by the initial list), metrics for all of them.
 */
export interface WatcherLike {
  readonly resource: string;
  readonly size: number;
  onEvent(listener: (e: WatcherEvent) => void): () => void;
}

export function instrumentWatcher(
  w: WatcherLike,
  deps: { logger?: Logger; metrics?: ControllerMetrics },
): () => void {
  const resource = w.resource;
  const { logger: log, metrics: m } = deps;
  return w.onEvent((e) => {
    switch (e.type) {
      case 'event':
        m?.watchEventsTotal.inc({ resource, type: e.eventType });
        return;
      case 'listed':
        m?.watchRelistsTotal.inc({ resource, reason: e.reason });
        m?.watchObjects.set({ resource }, e.total);
        // A periodic check that found the cache current is routine; any other re-list is news.
        (e.reason === 'initial' || e.reason === 'checked' ? log?.debug : log?.info)?.call(
          log,
          {
            resource,
            reason: e.reason,
            total: e.total,
            added: e.added,
            updated: e.updated,
            deleted: e.deleted,
            durationMs: e.durationMs,
          },
          'listed',
        );
        return;
      case 'connected':
        log?.debug({ resource, resourceVersion: e.resourceVersion }, 'watch connected');
        return;
      case 'restarted':
        m?.watchRestartsTotal.inc({ resource, reason: e.reason });
        m?.watchObjects.set({ resource }, w.size);
        if (e.reason === 'stalled') {
          log?.warn(
            { resource, durationMs: e.durationMs, events: e.events },
            'watch stalled: nothing arrived, not even a bookmark, within the progress deadline; resuming from the last resourceVersion',
          );
          return;
        }
        log?.debug(
          { resource, reason: e.reason, durationMs: e.durationMs, events: e.events },
          'watch ended',
        );
        return;
      case 'error':
        m?.watchErrorsTotal.inc({ resource, phase: e.phase });
        log?.warn(
          { resource, phase: e.phase, attempt: e.attempt, retryInMs: e.retryInMs, err: e.err },
          'watch failed, retrying',
        );
        return;
      case 'handlerError':
        m?.watchErrorsTotal.inc({ resource, phase: 'handler' });
        log?.error(
          { resource, handler: e.handler, key: e.key, err: e.err },
          'watch handler failed',
        );
        return;
      case 'gaveUp':
        m?.watchErrorsTotal.inc({ resource, phase: 'gaveUp' });
        log?.error({ resource, attempts: e.attempts, err: e.err }, 'watch gave up');
        return;
    }
  });
}
