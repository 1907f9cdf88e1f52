// Writing a controller's own objects back: status through the status subresource, finalizers on
// metadata, and remembering what we wrote until the watch shows it. One writer for every
// controller of hub and agent.
//
// - Status is written only when it changed: a JSON merge patch of the difference (the plans
//   keep timestamps when nothing else changed, so a steady object is never written), where a field we no longer report is sent as null, or it would stay.
// - Metadata patches (finalizers) are conditional on the resourceVersion we planned from: a
//   concurrent change fails with 409 and the reconcile runs again on fresh state.
// - After a write, the cache still holds the old object until the watch event arrives; a
//   reconcile in between would plan from stale state (writing twice, emitting an Event twice).
//   `current()` prefers our write until its echo arrives (WriteOverlay); `observed()`, fed by
//   the watch, says whether an event is that echo, so the controller need not look again.
// - The Events a plan decided are recorded after the status write that carries the transition,
//   so a failed write (retried) does not announce a transition twice.
// - Every write is counted (writes_total / write_errors_total by kind and verb).
// - `queueStatus` is `writeStatus` without the wait, for a controller whose status writes must
//   not hold a worker that could be writing what users wait for (the agent's copies): writes
//   are sent in order per key, a newer status replaces one not yet sent, `current()` shows the
//   queued status until it is written, and a failed write drops what was queued behind it and
//   hands the key back (`onQueuedWriteFailed`) to be reconciled from the cache again.

import { realClock, type Clock } from '../runtime/clock.js';
import { errorMessage, httpStatusOf } from '../runtime/errors.js';
import type { Logger } from '../runtime/log.js';
import type { WriteMetrics } from '../runtime/metrics.js';
import { equalIgnoringTime, mergePatchBody } from './patch.js';
import { CONTENT_TYPE, isConflict, isNotFound, type RestClient } from '../k8s/rest.js';
import { EventRecorder, type ControllerEvent } from './events.js';
import { WriteOverlay } from './overlay.js';

/** The objects a StatusWriter writes. */
export interface WritableObject {
  apiVersion?: string | undefined;
  kind?: string | undefined;
  metadata: {
    name?: string | undefined;
    namespace?: string | undefined;
    uid?: string | undefined;
    resourceVersion?: string | undefined;
    finalizers?: string[] | undefined;
    deletionTimestamp?: unknown;
  };
  status?: unknown;
}

export interface StatusWriterOptions<T extends WritableObject> {
  rest: RestClient;
  /** The object's API path (without /status). */
  pathOf(obj: T): string;
  /** The controller's key for an object (the overlay and write times are kept by it). */
  keyOf(obj: T): string;
  fieldManager: string;
  metrics?: WriteMetrics | undefined;
  /**
   * Events passed to `writeStatus` are recorded as `fieldManager` (reportingController) from this
   * instance (reportingInstance, e.g. the pod name), with the writer's client, logger, metrics
   * and clock; none when undefined.
   */
  reportingInstance?: string | undefined;
  logger?: Logger | undefined;
  /**
   * What to log when a status changes, e.g. `{ phase }`: an info line is written when it
   * differs from the previous status's summary, a debug line otherwise.
   */
  summary?(status: T['status']): Record<string, unknown>;
  /**
   * Logged with the info line of a changed summary, not compared: what explains the change
   * (e.g. `{ message }`).
   */
  detail?(status: T['status']): Record<string, unknown>;
  /** The object as the cache holds it (e.g. without managedFields), to shadow the cache with. */
  asCached?(obj: T): T;
  /** Every Event recorded (or attempted), e.g. for the hub dashboard's recent Events. */
  onEvent?(obj: T, event: ControllerEvent): void;
  /** A `queueStatus` write failed (it was logged): reconcile `key` again. */
  onQueuedWriteFailed?(key: string, err: unknown): void;
  /**
   * Awaited before each queued write is sent, e.g. until the controller's other writes are done
   * (the agent: its copies, at most 250 ms). A newer status for the key replaces it meanwhile.
   */
  beforeQueuedWrite?(): Promise<void>;
  clock?: Clock | undefined;
}

/** A status `queueStatus` has not written yet. */
interface QueuedStatus<T extends WritableObject> {
  /** The object as the caller planned from, with the status the API server holds. */
  obj: T;
  next: NonNullable<T['status']>;
  events: ControllerEvent[];
  sent: boolean;
  /** The key's `queueEpoch` when queued: a failed write before it cancels it. */
  epoch: number;
}

export class StatusWriter<T extends WritableObject> {
  private readonly overlay = new WriteOverlay<T>();
  /**
   * Key -> uid of an object a write of ours found gone (404) while the cache may still hold it
   * (its watch behind, or down): current() does not hand that object out again until the cache
   * shows the delete or re-lists. Without this, an agent whose delivery watch was down removed
   * its finalizer, found the delivery gone on a second try, and then planned from the stale
   * cached delivery, writing copies for a spec that no longer existed (the soak found it).
   */
  private readonly gone = new Map<string, string>();
  private readonly writtenAt = new Map<string, number>();
  /** The newest queued status per key, until written. */
  private readonly queued = new Map<string, QueuedStatus<T>>();
  /** The last queued write per key: the next one is sent after it. */
  private readonly sending = new Map<string, Promise<void>>();
  private readonly queueEpoch = new Map<string, number>();
  /** Keys whose queued writes someone waits for (`sent`). */
  private readonly urgent = new Set<string>();
  /** Ends the beforeQueuedWrite wait of a key's queued write. */
  private readonly hurry = new Map<string, () => void>();
  private readonly clock: Clock;
  private readonly events: EventRecorder | undefined;

  constructor(private readonly opts: StatusWriterOptions<T>) {
    this.clock = opts.clock ?? realClock;
    this.events =
      opts.reportingInstance === undefined
        ? undefined
        : new EventRecorder({
            rest: opts.rest,
            controller: opts.fieldManager,
            instance: opts.reportingInstance,
            logger: opts.logger,
            metrics: opts.metrics,
            clock: this.clock,
          });
  }

  // ---- what the watch tells us ---------------------------------------------------------------

  /**
   * A watch event showed `obj` (added or updated). Returns true when it is the echo of our own
   * write: nothing new to look at.
   */
  observed(obj: T): boolean {
    return this.overlay.observed(this.opts.keyOf(obj), obj.metadata.resourceVersion);
  }

  /** The object was deleted: forget what we wrote, and what was queued for it. */
  deleted(key: string): void {
    this.gone.delete(key);
    this.overlay.deleted(key);
    this.writtenAt.delete(key);
    this.cancelQueued(key);
  }

  /** A fresh list replaced the cache: it is the truth now. */
  relisted(): void {
    this.overlay.clear();
    this.gone.clear();
  }

  /** The freshest view of `cached`: our last write while the cache has not caught up with it. */
  current(key: string, cached: T | undefined): T | undefined {
    if (!cached || this.gone.get(key) === cached.metadata.uid) return undefined;
    const w = this.overlay.get(key);
    const base = w && w.metadata.uid === cached.metadata.uid ? w : cached;
    const q = this.queued.get(key);
    return q && q.obj.metadata.uid === base.metadata.uid ? { ...base, status: q.next } : base;
  }

  /** When we last wrote the object under `key` (clock ms), for coalescing status writes. */
  lastWriteAt(key: string): number | undefined {
    return this.writtenAt.get(key);
  }

  // ---- writes ----------------------------------------------------------------------------------

  /**
   * Write `next` as the status of `obj` when it differs from its status,
   * then record `events`. Returns the updated object (or `obj` when nothing changed), undefined
   * when the object is gone.
   */
  async writeStatus(
    obj: T,
    next: NonNullable<T['status']>,
    events: readonly ControllerEvent[] = [],
  ): Promise<T | undefined> {
    const prev = obj.status ?? {};
    if (equalIgnoringTime(prev, next, [])) {
      // Nothing to write, but an Event that is not a status transition (a rotated lease, a
      // write to Vault) is still news.
      await this.record(obj, events);
      return obj;
    }
    const updated = await this.patch(obj, `${this.opts.pathOf(obj)}/status`, {
      status: mergePatchBody(prev, next),
    });
    if (!updated) return undefined;
    this.logChange(obj, prev, next);
    await this.record(updated, events);
    return updated;
  }

  /**
   * `writeStatus` without waiting for it: see the header. `obj` is what the caller planned from
   * (`current()`, so a queued status counts as written).
   */
  queueStatus(
    obj: T,
    next: NonNullable<T['status']>,
    events: readonly ControllerEvent[] = [],
  ): void {
    const key = this.opts.keyOf(obj);
    const waiting = this.queued.get(key);
    if (waiting && !waiting.sent && waiting.obj.metadata.uid === obj.metadata.uid) {
      // Not sent yet: send the newer status instead, from the status the server holds.
      waiting.next = next;
      waiting.events.push(...events);
      return;
    }
    const entry: QueuedStatus<T> = {
      obj,
      next,
      events: [...events],
      sent: false,
      epoch: this.queueEpoch.get(key) ?? 0,
    };
    this.queued.set(key, entry);
    const send = (this.sending.get(key) ?? Promise.resolve()).then(() =>
      this.sendQueued(key, entry),
    );
    this.sending.set(key, send);
    void send.finally(() => {
      if (this.sending.get(key) === send) this.sending.delete(key);
    });
  }

  /**
   * Resolves when what is queued for `key` has been written (or has failed): a conditional
   * metadata write after it then carries the resourceVersion the status write produced.
   */
  async sent(key: string): Promise<void> {
    // What is queued goes without waiting for beforeQueuedWrite (or stops waiting).
    this.urgent.add(key);
    this.hurry.get(key)?.();
    try {
      while (this.sending.has(key)) await this.sending.get(key);
    } finally {
      this.urgent.delete(key);
    }
  }

  /** Resolves when every queued status has been written (or has failed). */
  async flushed(): Promise<void> {
    while (this.sending.size > 0) await Promise.all([...this.sending.values()]);
  }

  private async sendQueued(key: string, entry: QueuedStatus<T>): Promise<void> {
    const hold = this.opts.beforeQueuedWrite;
    if (hold && !this.urgent.has(key)) {
      await Promise.race([hold(), new Promise<void>((r) => this.hurry.set(key, r))]);
      this.hurry.delete(key);
    }
    if (entry.epoch !== (this.queueEpoch.get(key) ?? 0)) return; // a write before it failed
    entry.sent = true;
    try {
      await this.writeStatus(entry.obj, entry.next, entry.events);
    } catch (err) {
      this.opts.logger?.warn(
        { key, err: errorMessage(err) },
        'status write failed; reconciling again',
      );
      this.cancelQueued(key);
      this.opts.onQueuedWriteFailed?.(key, err);
    } finally {
      if (this.queued.get(key) === entry) this.queued.delete(key);
    }
  }

  /** Drop what is queued for `key` (what follows was planned on a write that did not happen). */
  private cancelQueued(key: string): void {
    if (!this.queued.has(key) && !this.sending.has(key)) return;
    this.queued.delete(key);
    this.queueEpoch.set(key, (this.queueEpoch.get(key) ?? 0) + 1);
  }

  private async record(obj: T, events: readonly ControllerEvent[]): Promise<void> {
    if (!this.events) return;
    for (const e of events) {
      this.opts.onEvent?.(obj, e);
      await this.events.record(obj, e);
    }
  }

  /**
   * Add or remove `finalizer`, conditional on the resourceVersion of `obj`. Returns the updated
   * object (or `obj` when nothing changed), undefined when the object is gone.
   */
  async setFinalizer(obj: T, finalizer: string, present: boolean): Promise<T | undefined> {
    const has = obj.metadata.finalizers?.includes(finalizer) ?? false;
    if (has === present) return obj;
    const others = (obj.metadata.finalizers ?? []).filter((f) => f !== finalizer);
    return this.patch(obj, this.opts.pathOf(obj), {
      metadata: {
        finalizers: present ? [...others, finalizer] : others,
        resourceVersion: obj.metadata.resourceVersion,
      },
    });
  }

  private async patch(obj: T, path: string, body: object): Promise<T | undefined> {
    const kind = obj.kind ?? 'object';
    const key = this.opts.keyOf(obj);
    let updated: T;
    try {
      updated = await this.opts.rest.patch<T>(path, body, CONTENT_TYPE.merge, {
        fieldManager: this.opts.fieldManager,
      });
    } catch (err) {
      this.opts.metrics?.writeErrorsTotal.inc({
        kind,
        verb: 'patch',
        code: String(httpStatusOf(err) ?? 'none'),
      });
      if (isNotFound(err)) {
        this.deleted(key);
        if (obj.metadata.uid !== undefined) this.gone.set(key, obj.metadata.uid);
        return undefined;
      }
      if (isConflict(err)) {
        throw new Error(`${kind} ${key} changed while we patched it; reconciling again`, {
          cause: err,
        });
      }
      throw err;
    }
    this.opts.metrics?.writesTotal.inc({ kind, verb: 'patch' });
    this.writtenAt.set(key, this.clock.now());
    const cached = this.opts.asCached ? this.opts.asCached(updated) : updated;
    const rv = cached.metadata.resourceVersion;
    if (rv && rv !== obj.metadata.resourceVersion) this.overlay.wrote(key, rv, cached);
    return cached;
  }

  private logChange(obj: T, prev: T['status'], next: T['status']): void {
    const log = this.opts.logger;
    if (!log) return;
    const key = this.opts.keyOf(obj);
    const summary = this.opts.summary;
    if (!summary) return log.debug({ key }, 'status updated');
    const before = summary(prev);
    const after = summary(next);
    if (JSON.stringify(before) === JSON.stringify(after)) {
      log.debug({ key, ...after }, 'status updated');
    } else {
      log.info({ key, ...after, ...this.opts.detail?.(next), from: before }, 'status changed');
    }
  }
}
