/**
 * Prometheus metrics: one `Registry` per process object (never prom-client's global default), so
 * a hub and an agent can live in one test process without "metric already registered" errors.
 *
 * Label values are names only (controller, kind, verb, resource, reason, cluster). Nothing
 * derived from payload data may become a label value; `labelValue()` enforces the shape for
 * values that come from user objects (a Kubernetes name), collapsing anything else.
 */
import {
  Counter,
  Gauge,
  Histogram,
  Registry,
  collectDefaultMetrics,
  type CounterConfiguration,
  type GaugeConfiguration,
  type HistogramConfiguration,
} from 'prom-client';

export { Registry } from 'prom-client';
export type { Counter, Gauge, Histogram } from 'prom-client';

export const METRICS_PREFIX = 'mirrorhub_';

/** Outcome label of one reconcile. */
export type ReconcileResult = 'success' | 'requeue' | 'error' | 'terminal';
/** Verb label of one write to an API server. */
export type WriteVerb = 'create' | 'update' | 'patch' | 'apply' | 'delete';

export interface MetricsOptions {
  /** `hub` or `agent`; becomes the `component` default label. */
  component: string;
  /** Collect process/Node.js metrics (CPU, memory, event-loop lag, GC). Default true. */
  defaultMetrics?: boolean;
  /** More constant labels on every series (e.g. `{ cluster }` for an agent). */
  defaultLabels?: Record<string, string>;
}

/** What writers count into (the kit's StatusWriter and EventRecorder); a subset of ControllerMetrics. */
export interface WriteMetrics {
  writesTotal: { inc(labels: { kind: string; verb: string }): void };
  writeErrorsTotal: { inc(labels: { kind: string; verb: string; code: string }): void };
}

export interface ControllerMetrics {
  readonly registry: Registry;
  /** mirrorhub_reconcile_total{controller,result} */
  readonly reconcileTotal: Counter<'controller' | 'result'>;
  /** mirrorhub_reconcile_duration_seconds{controller} */
  readonly reconcileDuration: Histogram<'controller'>;
  /** mirrorhub_writes_total{kind,verb}: every write that reached an API server and succeeded. */
  readonly writesTotal: Counter<'kind' | 'verb'>;
  /** mirrorhub_write_errors_total{kind,verb,code} */
  readonly writeErrorsTotal: Counter<'kind' | 'verb' | 'code'>;
  /** mirrorhub_watch_events_total{resource,type} (ADDED, MODIFIED, DELETED, BOOKMARK) */
  readonly watchEventsTotal: Counter<'resource' | 'type'>;
  /** mirrorhub_watch_restarts_total{resource,reason} */
  readonly watchRestartsTotal: Counter<'resource' | 'reason'>;
  /** mirrorhub_watch_relists_total{resource,reason} */
  readonly watchRelistsTotal: Counter<'resource' | 'reason'>;
  /** mirrorhub_watch_errors_total{resource,phase} */
  readonly watchErrorsTotal: Counter<'resource' | 'phase'>;
  /** mirrorhub_watch_objects{resource}: objects in the cache (memory follows this). */
  readonly watchObjects: Gauge<'resource'>;
  /** mirrorhub_workqueue_depth{controller} / _inflight{controller}, sampled on scrape. */
  readonly queueDepth: Gauge<'controller'>;
  readonly queueInFlight: Gauge<'controller'>;
  /** mirrorhub_workqueue_retries_total{controller} */
  readonly queueRetriesTotal: Counter<'controller'>;
  /** mirrorhub_leader{lease}: 1 while this process holds the lease. */
  readonly isLeader: Gauge<'lease'>;

  /** Define (or return the already defined) counter `mirrorhub_<name>` on this registry. */
  counter<L extends string>(name: string, help: string, labelNames?: readonly L[]): Counter<L>;
  gauge<L extends string>(name: string, help: string, labelNames?: readonly L[]): Gauge<L>;
  histogram<L extends string>(
    name: string,
    help: string,
    labelNames?: readonly L[],
    buckets?: number[],
  ): Histogram<L>;

  /** Sample a work queue's depth and in-flight count at scrape time. */
  observeQueue(controller: string, queue: { len(): number; inFlight(): number }): void;
  /** Prometheus text exposition. */
  render(): Promise<string>;
  readonly contentType: string;
}

const NAME_RE = /^[A-Za-z0-9]([A-Za-z0-9._:/-]{0,251}[A-Za-z0-9])?$/;

/**
 * A label value from something that should be a Kubernetes-style name. Anything else (empty,
 * too long, spaces, newlines, base64 blobs with `+`/`=`) becomes `"_invalid_"`, so a bug that
 * passes the wrong string can never leak data through a label.
 */
export function labelValue(v: string | undefined): string {
  if (v === undefined || v === '') return '_none_';
  return NAME_RE.test(v) ? v : '_invalid_';
}

export function createMetrics(opts: MetricsOptions): ControllerMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ component: opts.component, ...(opts.defaultLabels ?? {}) });
  if (opts.defaultMetrics !== false) {
    collectDefaultMetrics({ register: registry, prefix: METRICS_PREFIX });
  }

  const full = (name: string): string =>
    name.startsWith(METRICS_PREFIX) ? name : METRICS_PREFIX + name;

  function counter<L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[] = [],
  ): Counter<L> {
    const existing = registry.getSingleMetric(full(name));
    if (existing) return existing as Counter<L>;
    const cfg: CounterConfiguration<L> = {
      name: full(name),
      help,
      labelNames,
      registers: [registry],
    };
    return new Counter<L>(cfg);
  }
  function gauge<L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[] = [],
  ): Gauge<L> {
    const existing = registry.getSingleMetric(full(name));
    if (existing) return existing as Gauge<L>;
    const cfg: GaugeConfiguration<L> = {
      name: full(name),
      help,
      labelNames,
      registers: [registry],
    };
    return new Gauge<L>(cfg);
  }
  function histogram<L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[] = [],
    buckets?: number[],
  ): Histogram<L> {
    const existing = registry.getSingleMetric(full(name));
    if (existing) return existing as Histogram<L>;
    const cfg: HistogramConfiguration<L> = {
      name: full(name),
      help,
      labelNames,
      registers: [registry],
      ...(buckets ? { buckets } : {}),
    };
    return new Histogram<L>(cfg);
  }

  const queues = new Map<string, { len(): number; inFlight(): number }>();
  const queueDepth = new Gauge<'controller'>({
    name: full('workqueue_depth'),
    help: 'Keys waiting in a controller work queue.',
    labelNames: ['controller'],
    registers: [registry],
    collect() {
      for (const [c, q] of queues) this.set({ controller: c }, q.len());
    },
  });
  const queueInFlight = new Gauge<'controller'>({
    name: full('workqueue_inflight'),
    help: 'Keys being processed by a controller right now.',
    labelNames: ['controller'],
    registers: [registry],
    collect() {
      for (const [c, q] of queues) this.set({ controller: c }, q.inFlight());
    },
  });

  return {
    registry,
    reconcileTotal: counter('reconcile_total', 'Reconciles by controller and result.', [
      'controller',
      'result',
    ]),
    reconcileDuration: histogram(
      'reconcile_duration_seconds',
      'Time spent in one reconcile.',
      ['controller'],
      [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    ),
    writesTotal: counter('writes_total', 'Successful writes to an API server by kind and verb.', [
      'kind',
      'verb',
    ]),
    writeErrorsTotal: counter('write_errors_total', 'Failed writes by kind, verb and HTTP code.', [
      'kind',
      'verb',
      'code',
    ]),
    watchEventsTotal: counter('watch_events_total', 'Watch events received by resource and type.', [
      'resource',
      'type',
    ]),
    watchRestartsTotal: counter(
      'watch_restarts_total',
      'Watch connections ended and restarted, by resource and reason.',
      ['resource', 'reason'],
    ),
    watchRelistsTotal: counter(
      'watch_relists_total',
      'Lists of a whole watched set by resource and reason (checked: a periodic metadata check found the cache current).',
      ['resource', 'reason'],
    ),
    watchErrorsTotal: counter('watch_errors_total', 'List/watch errors by resource and phase.', [
      'resource',
      'phase',
    ]),
    watchObjects: gauge('watch_objects', 'Objects held in a watch cache.', ['resource']),
    queueDepth,
    queueInFlight,
    queueRetriesTotal: counter('workqueue_retries_total', 'Rate-limited requeues after failures.', [
      'controller',
    ]),
    isLeader: gauge('leader', '1 while this process holds the leader lease.', ['lease']),
    counter,
    gauge,
    histogram,
    observeQueue(controller, queue) {
      queues.set(controller, queue);
    },
    render: () => registry.metrics(),
    contentType: registry.contentType,
  };
}
