// What the delivery controller knows about each copy's content, without caching any data.
//
// The copy watch tells us every resourceVersion a copy goes through. We remember the
// resourceVersion at which each copy is known to hold the current payload (we wrote it, or read
// and compared it). A copy whose resourceVersion moves without us (kubectl edit, another
// controller) is "unverified": its delivery is queued and the plan asks to verify it (GET +
// compare; write only if it differs). The payload Secret's resourceVersion is part of that
// knowledge, so a payload that changes under an unchanged contentHash is caught too.
//
// Memory: the agent's memory must stay small with a hundred thousand copies (docs/BENCHMARKS.md,
// Engine at 100000 copies). Copies are keyed by uid everywhere, using the uid string the cache
// already holds: no key strings of our own per copy. What we know of a copy's content once the
// cache shows the version we wrote or read is one field of the cached object itself
// (`CopyObject.heldPayload`, pointing at the payload's resourceVersion string that all copies of
// a delivery share); only a write whose watch event is still on its way is remembered in a map
// (`pending`), for the moments until that event arrives.

import type { SourceKind } from '@mirrorhub/shared/api/types.gen';
import type { Clock } from '@mirrorhub/shared/kit/runtime/clock';
import { LABEL_DELIVERY } from '@mirrorhub/shared/api/contract';
import type { WriteObserver, Written } from './apply.js';
import { answeredCopy, type CopyObject } from './cached.js';
import type { CopyView, ObjectRef } from './plan.js';

/**
 * What we know about one copy's content: "at this resourceVersion the copy held the payload of
 * that version" ('' for none). `payload` is the payload Secret's resourceVersion string as the
 * reconcile had it, one instance for every copy of the delivery: the cached copies keep that
 * instance (`CopyObject.heldPayload`), not a string of their own.
 */
interface Known {
  version: string;
  payload: string;
}
const known = (resourceVersion: string | undefined, payloadVersion: string | undefined): Known => ({
  version: resourceVersion ?? '',
  payload: payloadVersion ?? '',
});

/** The copy caches (the copy watchers), by kind. */
export type CopyCaches = Record<
  SourceKind,
  {
    get(name: string, namespace: string): CopyObject | undefined;
    getByUid(uid: string): CopyObject | undefined;
  }
>;

/** A copy's metadata, as the cache, a write's answer or a LIST has it. */
type CopyIdentity = {
  uid?: string | undefined;
  name?: string | undefined;
  namespace?: string | undefined;
  resourceVersion?: string | undefined;
};

/** Forget removals we never saw the end of once this many are pending... */
const REMOVING_SWEEP_AT = 10_000;
/** ...and they are this old. */
const REMOVING_MAX_AGE_MS = 600_000;

export class CopyKnowledge {
  /** delivery name -> uids of its copies (the copy watchers index copies by namespace). */
  private readonly copyIndex = new Map<string, Set<string>>();
  /**
   * copy uid -> what we know about its content (see `known`), for a version the cache does not
   * show yet: a write answered before its watch event, or a copy not in the cache yet. Once the
   * cache shows that version, it moves to the cached object (`CopyObject.heldPayload`); a newer
   * version by anyone else drops it.
   */
  private readonly pending = new Map<string, Known>();
  /** uids of copies we are deleting or releasing (their watch events are our own doing). */
  private readonly removing = new Map<string, number>();
  /**
   * copy uid -> `<resourceVersion> <delivery generation>` of a write whose watch event has not
   * arrived yet: until it does, the cache shows the copy as it was (see `copyViews`). Entries
   * live for the milliseconds between a write's answer and its echo.
   */
  private readonly echoes = new Map<string, string>();

  /**
   * Copies we created whose watch event has not arrived, by uid: their delivery, when, and the
   * copy as the create's answer showed it. The cache does not hold them yet, so a delivery being
   * deleted would not see them to remove them (the soak found 20 copies orphaned so), and a
   * reconcile in the meantime would create them again (409, then a read and a rewrite, for
   * every copy whose echo is late in a fan-out). Entries older than
   * `UNSEEN_MAX_AGE_MS` are forgotten: an echo that late means the watch re-listed without the
   * copy (it is gone).
   */
  private readonly unseen = new Map<string, { delivery: string; at: number; copy: CopyObject }>();

  /** Writes still waiting for their watch event (tests: none are left behind). */
  get pendingEchoes(): number {
    return this.echoes.size;
  }
  /**
   * Copies whose known version the cache does not show yet (tests: once it does, nothing is
   * kept per copy outside the cached objects).
   */
  get pendingKnowledge(): number {
    return this.pending.size;
  }
  /** payload Secret name -> when its data last changed (see `payloadSettling`). */
  private readonly payloadChangedAt = new Map<string, number>();

  constructor(
    private readonly copies: CopyCaches,
    private readonly clock: Clock,
    /** How long a payload change waits for the matching contentHash change (default 2000). */
    private readonly payloadSettleMs = 2000,
  ) {}

  // ---- what the copy watch shows ---------------------------------------------------------------

  /** A copy appeared in the cache. Returns true when it is the echo of our own write. */
  added(c: CopyObject): boolean {
    this.index(c, +1);
    const uid = c.metadata.uid;
    // A create's echo: the cache has caught up.
    if (uid !== undefined) {
      this.settle(uid, c);
      this.echoes.delete(uid);
      this.unseen.delete(uid);
    }
    return this.isOurWrite(c);
  }

  /** A copy changed. Returns true when it is the echo of our own write. */
  updated(c: CopyObject, old: CopyObject): boolean {
    if (deliveryOf(old) !== deliveryOf(c)) {
      this.index(old, -1);
      this.index(c, +1);
    }
    // Our write's echo, or something after it: the cache has caught up.
    if (c.metadata.uid !== undefined) {
      this.settle(c.metadata.uid, c);
      this.echoes.delete(c.metadata.uid);
    }
    return this.isOurWrite(c);
  }

  /** A copy is gone. Returns true when we removed it (our own doing). */
  deleted(c: CopyObject): boolean {
    this.index(c, -1);
    const uid = c.metadata.uid;
    if (!uid) return false;
    this.pending.delete(uid);
    this.echoes.delete(uid);
    this.unseen.delete(uid);
    return this.removing.delete(uid);
  }

  /**
   * The copy cache of `kind` was listed afresh at `resourceVersion`: a copy we created at or
   * before it that the list did not hold is gone (deleted, or relabelled, while the watch was
   * down). Forgets it and returns the deliveries that lost one, to look again.
   */
  relisted(kind: SourceKind, resourceVersion: string): string[] {
    const lost = new Set<string>();
    for (const [uid, u] of this.unseen) {
      if (u.copy.kind !== kind || newerVersion(u.copy.resourceVersion ?? '', resourceVersion)) {
        continue;
      }
      if (this.copies[kind].getByUid(uid)) continue;
      this.unseen.delete(uid);
      this.echoes.delete(uid);
      this.pending.delete(uid);
      lost.add(u.delivery);
    }
    return [...lost];
  }

  /** Copies of `delivery` we created that the cache does not show yet. */
  unseenCopies(delivery: string): number {
    const oldest = this.clock.now() - UNSEEN_MAX_AGE_MS;
    let n = 0;
    for (const [uid, u] of this.unseen) {
      if (u.at < oldest) this.unseen.delete(uid);
      else if (u.delivery === delivery) n++;
    }
    return n;
  }

  // ---- what our writes tell us -----------------------------------------------------------------

  /** At its resourceVersion in `m`, the copy holds the payload of `payloadVersion`. */
  holds(kind: SourceKind, m: CopyIdentity, payloadVersion: string | undefined): void {
    if (!m.uid) return;
    const cached = m.name && m.namespace ? this.copies[kind].get(m.name, m.namespace) : undefined;
    if (
      cached !== undefined &&
      cached.metadata.uid === m.uid &&
      cached.metadata.resourceVersion === m.resourceVersion
    ) {
      // The cache shows this very version (a read that compared equal, a LIST): known on it.
      cached.heldPayload = payloadVersion ?? '';
      this.pending.delete(m.uid);
      return;
    }
    this.pending.set(m.uid, known(m.resourceVersion, payloadVersion));
  }

  /** We are about to delete or release this copy. */
  removingCopy(ref: ObjectRef): void {
    if (!ref.uid) return;
    this.pending.delete(ref.uid);
    const cached = this.copies[ref.kind].getByUid(ref.uid);
    if (cached) cached.heldPayload = undefined;
    const now = this.clock.now();
    if (this.removing.size > REMOVING_SWEEP_AT) {
      for (const [uid, at] of this.removing) {
        if (now - at > REMOVING_MAX_AGE_MS) this.removing.delete(uid);
      }
    }
    this.removing.set(ref.uid, now);
  }

  /**
   * What apply tells us about the copies it writes for a payload of `payloadVersion`, rendered
   * from the delivery at `generation`.
   */
  observer(
    payloadVersion: string | undefined,
    generation?: number,
  ): Pick<WriteObserver, 'wrote' | 'removing'> {
    return {
      wrote: (kind, obj: Written) => {
        const m = obj.metadata;
        if (!m) return;
        this.holds(kind, m, payloadVersion);
        const cached =
          m.name && m.namespace ? this.copies[kind].get(m.name, m.namespace) : undefined;
        const delivery = m.labels?.[LABEL_DELIVERY];
        if (m.uid && !cached && delivery)
          this.unseen.set(m.uid, {
            delivery,
            at: this.clock.now(),
            copy: answeredCopy(kind, m),
          });
        // Answered before the watch showed it: remember the write until its echo arrives.
        if (m.uid && m.resourceVersion && cached?.metadata.resourceVersion !== m.resourceVersion)
          this.echoes.set(
            cached?.metadata.uid ?? m.uid,
            `${m.resourceVersion} ${generation ?? ''}`,
          );
      },
      removing: (_kind, ref) => this.removingCopy(ref),
    };
  }

  // ---- payloads --------------------------------------------------------------------------------

  /** The payload Secret's data changed (see `payloadSettling`). */
  payloadChanged(name: string): void {
    this.payloadChangedAt.set(name, this.clock.now());
  }

  payloadDeleted(name: string): void {
    this.payloadChangedAt.delete(name);
  }

  /**
   * The hub writes the payload Secret and the delivery's contentHash: two events, usually
   * milliseconds apart, in either order. A copy whose only news is the payload change is not
   * checked until the payload has been quiet for `payloadSettleMs`, so the contentHash change
   * that follows rewrites each copy once, instead of a verify-and-rewrite followed by a second
   * rewrite.
   * (A payload that changes alone, or before a delivery that already had the new hash, is still
   * checked after the wait.) Returns the time left to wait, 0 when settled.
   */
  payloadSettling(payloadName: string, now: number): number {
    const at = this.payloadChangedAt.get(payloadName);
    if (at === undefined) return 0;
    const left = at + this.payloadSettleMs - now;
    if (left <= 0) this.payloadChangedAt.delete(payloadName);
    return Math.max(0, left);
  }

  // ---- what the plan sees ----------------------------------------------------------------------

  /**
   * The copies of `delivery` as the plan sees them, `verified` where we know they hold the
   * payload of `payloadVersion`. While the payload is settling, a copy whose only news is the
   * payload change counts as verified and `deferred` says to look again once it settled.
   */
  copyViews(
    delivery: string,
    payloadVersion: string | undefined,
    payloadSettling: boolean,
    generation?: number,
  ): { copies: CopyView[]; deferred: boolean } {
    let deferred = false;
    const out: CopyView[] = [];
    const view = (uid: string, c: CopyObject) => {
      const k = this.known(uid, c);
      // Written from this payload and this delivery spec, its watch event still on its way:
      // the copy is what we would write now (the cache's older version would mean a second,
      // conditional write on a stale resourceVersion: 409).
      const echo = this.echoes.get(uid);
      if (
        echo !== undefined &&
        k !== undefined &&
        echo === `${k.version} ${generation ?? ''}` &&
        k.payload === (payloadVersion ?? '') &&
        newerVersion(k.version, c.metadata.resourceVersion ?? '')
      ) {
        out.push({
          kind: c.kind,
          namespace: c.metadata.namespace,
          name: c.metadata.name,
          uid: c.metadata.uid,
          resourceVersion: k.version,
          labels: c.metadata.labels,
          annotations: c.metadata.annotations,
          verified: true,
          echoPending: true,
        });
        return;
      }
      const untouched = k !== undefined && k.version === (c.metadata.resourceVersion ?? '');
      const onlyPayloadMoved = untouched && k.payload !== (payloadVersion ?? '');
      if (onlyPayloadMoved && payloadSettling) deferred = true;
      out.push({
        kind: c.kind,
        namespace: c.metadata.namespace,
        name: c.metadata.name,
        uid: c.metadata.uid,
        resourceVersion: c.metadata.resourceVersion,
        labels: c.metadata.labels,
        annotations: c.metadata.annotations,
        // The Secret type is not in metadata; a type change is found by the update (422) instead.
        verified: untouched && (!onlyPayloadMoved || payloadSettling),
      });
    };
    for (const uid of this.copyIndex.get(delivery) ?? []) {
      const c = this.copies.Secret.getByUid(uid) ?? this.copies.ConfigMap.getByUid(uid);
      if (c) view(uid, c);
    }
    // Created, answered, not in the cache yet: as the answer showed them. (The plan then sees
    // them as written moments ago; a copy changed since is found by its watch event.)
    const oldest = this.clock.now() - UNSEEN_MAX_AGE_MS;
    for (const [uid, u] of this.unseen) {
      if (u.delivery === delivery && u.at >= oldest) view(uid, u.copy);
    }
    return { copies: out, deferred };
  }

  // ---- internals -------------------------------------------------------------------------------

  /**
   * What we know of copy `uid`'s content, `c` being the copy as the cache (or a create's answer)
   * shows it: the version we wrote or read and the payload it held then; undefined if nothing.
   */
  private known(uid: string, c: CopyObject): Known | undefined {
    const p = this.pending.get(uid);
    if (p !== undefined) return p;
    if (c.heldPayload === undefined) return undefined;
    return { version: c.metadata.resourceVersion ?? '', payload: c.heldPayload };
  }

  /**
   * The cache now shows `c` for copy `uid`: what we knew of the version it shows moves onto it,
   * and what we knew of an older version is dropped (someone wrote after us). Knowledge of a
   * version newer than the cache's stays until its own event arrives.
   */
  private settle(uid: string, c: CopyObject): void {
    const p = this.pending.get(uid);
    if (p === undefined) return;
    const { version } = p;
    const shown = c.metadata.resourceVersion ?? '';
    if (version === shown) {
      c.heldPayload = p.payload;
      this.pending.delete(uid);
    } else if (newerVersion(shown, version)) {
      this.pending.delete(uid);
    }
  }

  /** A copy event whose resourceVersion is the one we wrote (or verified): our own echo. */
  private isOurWrite(c: CopyObject): boolean {
    return c.heldPayload !== undefined;
  }

  private index(c: CopyObject, delta: 1 | -1): void {
    const delivery = deliveryOf(c);
    const key = c.metadata.uid;
    if (!delivery || !key) return;
    let keys = this.copyIndex.get(delivery);
    if (delta > 0) {
      if (!keys) this.copyIndex.set(delivery, (keys = new Set()));
      keys.add(key);
    } else {
      if (!keys?.delete(key)) return;
      if (keys.size === 0) this.copyIndex.delete(delivery);
    }
  }
}

/**
 * Whether resourceVersion `a` is later than `b`. They are etcd revisions here (the agent writes
 * to a kube-apiserver); anything else compares as not newer, so a copy is planned from the cache.
 */
function newerVersion(a: string, b: string): boolean {
  if (!/^\d+$/.test(a) || !/^\d+$/.test(b)) return false;
  return a.length !== b.length ? a.length > b.length : a > b;
}

/** See `CopyKnowledge.unseen`. Longer than any sane watch progress deadline. */
export const UNSEEN_MAX_AGE_MS = 10 * 60_000;

/** The delivery a copy says it belongs to (its mirrorhub.io/delivery label). */
export function deliveryOf(c: CopyObject): string | undefined {
  return c.metadata.labels?.[LABEL_DELIVERY];
}
