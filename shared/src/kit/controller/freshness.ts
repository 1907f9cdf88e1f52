// How often a controller's caches take a fresh look at the API server: the shortest poll
// period any of its objects asks for. Each mirror's pollPeriodSeconds promises that whatever a
// watch missed is repaired within one period; a cache shared by many mirrors re-lists at the
// shortest of their periods (Watcher.setResyncPeriod), and a cache nobody asks anything of at
// the fallback period.

/** The shortest of the periods that keys ask for, reported to `apply` whenever it changes. */
export class ShortestPeriod {
  private readonly periods = new Map<string, number>();
  private current: number;

  constructor(
    /** The period when no key asks for one. */
    private readonly fallbackMs: number,
    private readonly apply: (ms: number) => void,
  ) {
    this.current = fallbackMs;
  }

  /** The period now in force. */
  get ms(): number {
    return this.current;
  }

  /** `key` asks for `ms` (undefined: it asks for nothing any more). */
  set(key: string, ms: number | undefined): void {
    if (ms === undefined ? !this.periods.has(key) : this.periods.get(key) === ms) return;
    if (ms === undefined) this.periods.delete(key);
    else this.periods.set(key, ms);
    let next = this.periods.size === 0 ? this.fallbackMs : Infinity;
    for (const p of this.periods.values()) if (p < next) next = p;
    if (next === this.current) return;
    this.current = next;
    this.apply(next);
  }
}
