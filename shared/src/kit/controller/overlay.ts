// Our own writes, until the watch shows them.
//
// After a write, the cache still holds the old object until the watch event arrives; a
// reconcile in between would plan from stale state (writing twice, emitting an Event twice).
// So the write's result is kept and preferred over the cache until the event carrying its
// resourceVersion arrives. That event may also arrive *before* the write call returns; the
// resourceVersions seen per key are remembered (a few) so a late result is then ignored instead
// of shadowing newer state forever.
const SEEN_PER_KEY = 8;

export class WriteOverlay<T> {
  private readonly written = new Map<string, { rv: string; value: T }>();
  private readonly seen = new Map<string, string[]>();

  /**
   * A watch event showed `key` at `rv`. Returns true when that is the echo of our own write
   * (the overlay is dropped).
   */
  observed(key: string, rv: string | undefined): boolean {
    if (!rv) return false;
    const list = this.seen.get(key) ?? [];
    list.push(rv);
    if (list.length > SEEN_PER_KEY) list.shift();
    this.seen.set(key, list);
    const w = this.written.get(key);
    if (w?.rv === rv) {
      this.written.delete(key);
      return true;
    }
    return false;
  }

  /** The object is gone: forget everything about it. */
  deleted(key: string): void {
    this.written.delete(key);
    this.seen.delete(key);
  }

  /** We wrote `key`, and the API server answered with `rv`. */
  wrote(key: string, rv: string | undefined, value: T): void {
    if (!rv || this.seen.get(key)?.includes(rv)) return;
    this.written.set(key, { rv, value });
  }

  /** Forget a write without having seen it (e.g. superseded by another kind of write). */
  drop(key: string): void {
    this.written.delete(key);
  }

  get(key: string): T | undefined {
    return this.written.get(key)?.value;
  }

  has(key: string): boolean {
    return this.written.has(key);
  }

  /** A fresh list replaced the cache: it is the truth now. */
  clear(): void {
    this.written.clear();
  }
}
