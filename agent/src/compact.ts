// Gives memory back to the system after a burst of work.
//
// A fan-out to 20k copies, or a source change that rewrites every copy, grows V8's heap with
// short-lived request and response objects; afterwards the heap is mostly free pages that V8
// keeps until its memory reducer runs, seconds later and not at a predictable moment (the
// bench saw 109 MB resident five seconds after a fan-out, 77-81 MB once the reducer had run).
// When the agent has written enough and then been quiet for a moment, full GCs compact the
// heap and return those pages at once. It needs `gc`, which node exposes with
// `--expose-gc` (the chart's `v8Flags`); without it this does nothing.

import type { Clock, Timer } from '@mirrorhub/shared/runtime/clock';

export interface CompactorOptions {
  /** Compacts the heap (`exposedGc()`); undefined = never compact. */
  gc: (() => void) | undefined;
  clock: Clock;
  /** Compact after this much work since the last compaction... (default 500) */
  minWork?: number;
  /** ...once no work came for this long (default 1000 ms). */
  quietMs?: number;
}

/**
 * Compaction with node's `gc` (under --expose-gc): two full GCs. The first frees the burst's
 * garbage but leaves pages part-used; the second moves the survivors off the most fragmented
 * pages and releases them (measured: heap 35 MB -> 27 MB after one, 16 MB after two; a third
 * gains nothing). Tens of milliseconds, once per burst.
 */
export function exposedGc(): (() => void) | undefined {
  const gc = (globalThis as { gc?: unknown }).gc;
  if (typeof gc !== 'function') return undefined;
  return () => {
    gc();
    gc();
  };
}

export class Compactor {
  private readonly minWork: number;
  private readonly quietMs: number;
  private work = 0;
  private lastWorkAt = 0;
  private timer: Timer | undefined;
  private stopped = false;
  /** Compactions so far (tests, logs). */
  compactions = 0;

  constructor(private readonly opts: CompactorOptions) {
    this.minWork = opts.minWork ?? 500;
    this.quietMs = opts.quietMs ?? 1000;
  }

  /** Count `n` units of work (copies written); compaction waits for a quiet moment. */
  worked(n = 1): void {
    if (!this.opts.gc || this.stopped) return;
    this.work += n;
    this.lastWorkAt = this.opts.clock.now();
    if (this.work >= this.minWork && !this.timer) this.arm(this.quietMs);
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = undefined;
  }

  private arm(ms: number): void {
    this.timer = this.opts.clock.setTimer(() => this.check(), ms);
  }

  /** One timer per burst: when it fires early (work came since), it waits for the rest. */
  private check(): void {
    this.timer = undefined;
    if (this.stopped) return;
    const quietFor = this.opts.clock.now() - this.lastWorkAt;
    if (quietFor < this.quietMs) return this.arm(this.quietMs - quietFor);
    this.work = 0;
    this.compactions++;
    this.opts.gc?.();
  }
}
