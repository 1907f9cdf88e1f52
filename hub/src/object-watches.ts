// Watches of named Secrets and ConfigMaps (mirror sources, Vault connections' credentials): one field-selected watch (metadata.name=<name> in the source's
// namespace) per distinct source (kind, namespace, name), shared by every mirror that reads it
// and stopped when the last one lets go. The hub never watches all Secrets: its memory follows
// the sources it mirrors, not the Secrets a cluster holds.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { DEFAULT_POLL_PERIOD_MS, type KubernetesSource } from '@mirrorhub/shared/api/index';
import { type SourceObject } from '@mirrorhub/shared/mirror/index';
import {
  errorMessage,
  type ControllerMetrics,
  type Logger,
} from '@mirrorhub/shared/kit/runtime/index';
import { createWatcher, instrumentWatcher, watchTuning } from '@mirrorhub/shared/kit/k8s/watcher';
import { ShortestPeriod } from '@mirrorhub/shared/kit/controller/freshness';

/** What a watch shows of its object (a mirror's SourceObservation is one). */
export type ObjectObservation =
  | { state: 'found'; object: SourceObject }
  | { state: 'missing' }
  | { state: 'unreadable'; error: string };

/** What a source watch needs from a watcher (the shared Watcher; fakes in tests). */
export interface SourceWatcher {
  readonly resource: string;
  readonly size: number;
  start(): unknown;
  stop(): Promise<void>;
  setResyncPeriod(ms: number | undefined): void;
  hasSynced(): boolean;
  get(name: string, namespace?: string): KubernetesObject | undefined;
  addHandler(h: {
    onAdd?(obj: KubernetesObject): void;
    onUpdate?(obj: KubernetesObject, old: KubernetesObject): void;
    onDelete?(obj: KubernetesObject): void;
  }): () => void;
  onEvent(listener: (e: import('@mirrorhub/shared').WatcherEvent) => void): () => void;
}

export type SourceWatcherFactory = (source: KubernetesSource) => SourceWatcher;

export interface SourceWatchesOptions {
  /** Which mirrors to reconcile when a source changes (or its watch syncs or fails). */
  onChange(mirrorKeys: readonly string[]): void;
  kubeConfig?: KubeAccess;
  /** See HubConfig.watchProgressDeadlineMs. */
  watchProgressDeadlineMs?: number | undefined;
  /** Builds the watcher of one source (default: a field-selected watch through kubeConfig). */
  factory?: SourceWatcherFactory;
  logger?: Logger;
  metrics?: ControllerMetrics;
}

interface Entry {
  source: KubernetesSource;
  watcher: SourceWatcher;
  mirrors: Set<string>;
  /** The shortest poll period of those mirrors: how often the watch re-lists. */
  period: ShortestPeriod;
  /** The watch failed at least twice in a row without syncing: the source is unreadable. */
  error?: string;
  unsubscribe: (() => void)[];
}

/** Resource label of every source watch in logs and metrics (one series, not one per source). */
const SOURCES_RESOURCE = 'sources';

export function sourceKey(s: KubernetesSource): string {
  return `${s.kind}/${s.namespace}/${s.name}`;
}

export class SourceWatches {
  private readonly entries = new Map<string, Entry>();
  private readonly byMirror = new Map<string, string>();
  private readonly factory: SourceWatcherFactory;
  private stopped = false;

  constructor(private readonly opts: SourceWatchesOptions) {
    const kc = opts.kubeConfig;
    this.factory =
      opts.factory ??
      ((s) => {
        if (!kc) throw new Error('SourceWatches needs kubeConfig or factory');
        return createWatcher<KubernetesObject>(
          kc,
          {
            version: 'v1',
            plural: s.kind === 'Secret' ? 'secrets' : 'configmaps',
            namespace: s.namespace,
            fieldSelector: `metadata.name=${s.name}`,
          },
          // A source is one object: relist quickly after errors, never hold more than it.
          {
            resource: SOURCES_RESOURCE,
            backoff: { initialMs: 500, maxMs: 30_000 },
            ...watchTuning(opts.watchProgressDeadlineMs),
          },
        );
      });
  }

  /** Distinct sources watched. */
  get size(): number {
    return this.entries.size;
  }

  /**
   * Mirror `mirrorKey` reads `source` (undefined: nothing), and wants a fresh look at it at
   * least every `pollPeriodMs`. Starts and stops watches as needed.
   */
  set(mirrorKey: string, source: KubernetesSource | undefined, pollPeriodMs?: number): void {
    if (this.stopped) return;
    const next = source ? sourceKey(source) : undefined;
    const current = this.byMirror.get(mirrorKey);
    if (current !== next) {
      if (current !== undefined) this.release(mirrorKey, current);
      if (source && next !== undefined) {
        this.byMirror.set(mirrorKey, next);
        let entry = this.entries.get(next);
        if (!entry) {
          entry = this.open(source);
          this.entries.set(next, entry);
        }
        entry.mirrors.add(mirrorKey);
      }
    }
    if (next !== undefined) this.entries.get(next)?.period.set(mirrorKey, pollPeriodMs);
  }

  /** What the mirror's source looks like; `unknown` until its watch has listed once. */
  get(source: KubernetesSource): ObjectObservation | { state: 'unknown' } {
    const entry = this.entries.get(sourceKey(source));
    if (!entry) return { state: 'unknown' };
    if (!entry.watcher.hasSynced()) {
      return entry.error ? { state: 'unreadable', error: entry.error } : { state: 'unknown' };
    }
    const obj = entry.watcher.get(source.name, source.namespace);
    return obj ? { state: 'found', object: obj as SourceObject } : { state: 'missing' };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    const all = [...this.entries.values()];
    this.entries.clear();
    this.byMirror.clear();
    await Promise.all(all.map((e) => this.close(e)));
  }

  private reportObjects(): void {
    let n = 0;
    for (const e of this.entries.values()) n += e.watcher.size;
    this.opts.metrics?.watchObjects.set({ resource: SOURCES_RESOURCE }, n);
  }

  private release(mirrorKey: string, key: string): void {
    this.byMirror.delete(mirrorKey);
    const entry = this.entries.get(key);
    if (!entry) return;
    entry.mirrors.delete(mirrorKey);
    entry.period.set(mirrorKey, undefined);
    if (entry.mirrors.size === 0) {
      this.entries.delete(key);
      void this.close(entry);
      this.reportObjects();
    }
  }

  private open(source: KubernetesSource): Entry {
    const watcher = this.factory(source);
    const period = new ShortestPeriod(DEFAULT_POLL_PERIOD_MS, (ms) => watcher.setResyncPeriod(ms));
    watcher.setResyncPeriod(period.ms);
    const entry: Entry = { source, watcher, mirrors: new Set(), period, unsubscribe: [] };
    const notify = (): void => {
      if (entry.mirrors.size > 0) this.opts.onChange([...entry.mirrors]);
    };
    const counted = (): void => {
      this.reportObjects();
      notify();
    };
    if (this.opts.logger || this.opts.metrics) {
      entry.unsubscribe.push(
        instrumentWatcher(watcher, {
          ...(this.opts.logger ? { logger: this.opts.logger } : {}),
          ...(this.opts.metrics ? { metrics: this.opts.metrics } : {}),
        }),
      );
    }
    entry.unsubscribe.push(
      watcher.addHandler({ onAdd: counted, onUpdate: notify, onDelete: counted }),
      watcher.onEvent((e) => {
        // All source watches share one resource label; count their objects together (this
        // listener runs after instrumentWatcher's, which sets one watch's size).
        if (e.type === 'listed' || e.type === 'restarted') this.reportObjects();
        if (e.type === 'listed') {
          // The first list tells a missing source apart from one not read yet.
          const hadError = entry.error !== undefined;
          delete entry.error;
          if (e.reason === 'initial' || hadError) notify();
        } else if (e.type === 'error' && !watcher.hasSynced() && e.attempt >= 2) {
          const error = errorMessage(e.err);
          if (entry.error !== error) {
            entry.error = error;
            notify();
          }
        }
      }),
    );
    watcher.start();
    return entry;
  }

  private async close(entry: Entry): Promise<void> {
    for (const u of entry.unsubscribe.splice(0)) u();
    try {
      await entry.watcher.stop();
    } catch (err) {
      this.opts.logger?.warn({ err: errorMessage(err) }, 'stopping a source watch failed');
    }
  }
}
