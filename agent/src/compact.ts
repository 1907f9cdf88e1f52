// Gives memory back to the system after a burst of work.
//
// A fan-out to 20k copies, a source change that rewrites every copy, or the periodic resync of
// every delivery grows V8's heap with short-lived objects (requests, answers, watch events,
// plans); afterwards the heap is mostly free pages that V8 keeps until its memory reducer runs,
// seconds later and not at a predictable moment, so resident memory stays high meanwhile
// (docs/BENCHMARKS.md, Memory as the load grows). So once the agent has been quiet for a
// moment after work, and the heap has grown well past its size after the last compaction, it
// compacts the heap and returns those pages at once. That needs `gc`, which node exposes with
// `--expose-gc` (the chart's `v8Flags`); without it this does nothing.

import { getHeapStatistics } from 'node:v8';
import type { Clock, Timer } from '@mirrorhub/shared/kit/runtime/clock';

export interface CompactorOptions {
  /** Compacts the heap (`exposedGc()`); undefined = never compact. */
  gc: (() => void) | undefined;
  clock: Clock;
  /** Bytes of heap V8 holds now (default: v8's total_heap_size). */
  heapSize?: () => number;
  /** Compact once the heap is this much larger than after the last compaction... (4 MiB) */
  minGrowthBytes?: number;
  /** ...and no work came for this long (default 1000 ms). */
  quietMs?: number;
}

/**
 * Compaction with node's `gc` (under --expose-gc): two full GCs. The first frees the burst's
 * garbage but leaves pages part-used; the second moves the survivors off the most fragmented
 * pages and releases them; a third gains nothing. It runs once per burst, not per reconcile.
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
  private readonly heapSize: () => number;
  private readonly minGrowth: number;
  private readonly quietMs: number;
  /** Heap size after the last compaction (or at start). */
  private baseline: number;
  private lastWorkAt = 0;
  private timer: Timer | undefined;
  private stopped = false;
  /** Compactions so far (tests, logs). */
  compactions = 0;

  constructor(private readonly opts: CompactorOptions) {
    this.heapSize = opts.heapSize ?? (() => getHeapStatistics().total_heap_size);
    this.minGrowth = opts.minGrowthBytes ?? 4 * 2 ** 20;
    this.quietMs = opts.quietMs ?? 1000;
    this.baseline = opts.gc ? this.heapSize() : 0;
  }

  /** Work was done (a reconcile, a copy written): look at the heap once it is quiet again. */
  worked(): void {
    if (!this.opts.gc || this.stopped) return;
    this.lastWorkAt = this.opts.clock.now();
    if (!this.timer) this.arm(this.quietMs);
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
    const size = this.heapSize();
    // The heap may also have shrunk on its own (V8's memory reducer): measure from there.
    if (size - this.baseline < this.minGrowth) {
      this.baseline = Math.min(this.baseline, size);
      return;
    }
    this.compactions++;
    this.opts.gc?.();
    this.baseline = this.heapSize();
  }
}
