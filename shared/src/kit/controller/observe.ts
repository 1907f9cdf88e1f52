// The reconcile observer: what every controller records about each processed key. Counts and
// times reconciles by result, counts retries, and logs: failures at warn with the retry delay
// (at info when the error is an expected one the status already reports), terminal failures at
// error, successes at debug. Keys are names, never data.

import type { ProcessObservation } from '../k8s/workqueue.js';

/** What the observer records into; a subset of ControllerMetrics. */
export interface ReconcileMetricsSink {
  reconcileTotal: { inc(labels: { controller: string; result: string }): void };
  reconcileDuration: { observe(labels: { controller: string }, seconds: number): void };
  queueRetriesTotal: { inc(labels: { controller: string }): void };
}

export interface ReconcileLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

export interface ObserveOptions {
  metrics?: ReconcileMetricsSink | undefined;
  logger?: ReconcileLogger | undefined;
  /**
   * Errors that are part of normal operation and already reported elsewhere (e.g. writes that
   * failed and are in the object's status): logged at info instead of warn.
   */
  expected?: ((err: unknown) => boolean) | undefined;
  /** Called after each observation (e.g. to note that work happened). */
  after?: ((o: ProcessObservation) => void) | undefined;
}

/** An `observe` callback for a WorkQueue. */
export function observeReconciles(
  controller: string,
  deps: ObserveOptions,
): (o: ProcessObservation) => void {
  const { metrics, logger } = deps;
  return (o) => {
    metrics?.reconcileTotal.inc({ controller, result: o.result });
    metrics?.reconcileDuration.observe({ controller }, o.durationMs / 1000);
    if (o.result === 'error') {
      metrics?.queueRetriesTotal.inc({ controller });
      const level = deps.expected?.(o.error) ? 'info' : 'warn';
      logger?.[level](
        { controller, key: o.key, err: o.error, failures: o.failures, retryInMs: o.retryInMs },
        'reconcile failed, retrying',
      );
    } else if (o.result === 'terminal') {
      logger?.error({ controller, key: o.key, err: o.error }, 'reconcile failed, not retrying');
    } else {
      logger?.debug(
        { controller, key: o.key, result: o.result, durationMs: o.durationMs },
        'reconciled',
      );
    }
    deps.after?.(o);
  };
}
