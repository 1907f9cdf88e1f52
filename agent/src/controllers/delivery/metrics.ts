// What the delivery controller counts and logs about its work, beyond what the kit observes of
// every reconcile: gauges of copies and of namespaces in trouble (sampled on scrape), counters
// of copy writes, and one summary line per reconcile that wrote copies.

import { Gauge } from 'prom-client';
import type { SourceKind } from '@mirrorhub/shared/api/types.gen';
import { httpStatusOf } from '@mirrorhub/shared/kit/runtime/errors';
import type { Logger } from '@mirrorhub/shared/kit/runtime/log';
import type { ControllerMetrics, Registry } from '@mirrorhub/shared/kit/runtime/metrics';
import type { WriteObserver } from './apply.js';
import type { DeliveryNotes } from './notes.js';
import type { Outcome } from './plan.js';

/** mirrorhub_agent_copies{kind}, _conflicts, _failed_namespaces and _denied_namespaces, on scrape. */
export function registerGauges(
  registry: Registry,
  copies: Record<SourceKind, { readonly size: number }>,
  notes: Pick<DeliveryNotes, 'totals'>,
): void {
  if (!registry.getSingleMetric('mirrorhub_agent_copies')) {
    new Gauge({
      name: 'mirrorhub_agent_copies',
      help: 'Copies (Secrets and ConfigMaps marked as mirrorhub copies) in this cluster.',
      labelNames: ['kind'],
      registers: [registry],
      collect() {
        this.set({ kind: 'Secret' }, copies.Secret.size);
        this.set({ kind: 'ConfigMap' }, copies.ConfigMap.size);
      },
    });
  }
  if (!registry.getSingleMetric('mirrorhub_agent_conflicts')) {
    new Gauge({
      name: 'mirrorhub_agent_conflicts',
      help: 'Namespaces where a copy is blocked by an object mirrorhub does not own.',
      registers: [registry],
      collect() {
        this.set(notes.totals().conflicts);
      },
    });
  }
  if (!registry.getSingleMetric('mirrorhub_agent_failed_namespaces')) {
    new Gauge({
      name: 'mirrorhub_agent_failed_namespaces',
      help: 'Namespaces where the last write of a copy failed.',
      registers: [registry],
      collect() {
        this.set(notes.totals().failures);
      },
    });
  }
  if (!registry.getSingleMetric('mirrorhub_agent_denied_namespaces')) {
    new Gauge({
      name: 'mirrorhub_agent_denied_namespaces',
      help: "Selected namespaces where this cluster's policy refuses a copy (PolicyDenied).",
      registers: [registry],
      collect() {
        this.set(notes.totals().denied);
      },
    });
  }
}

/** Counts copy writes (writes_total, write_errors_total); `worked` is told of every write. */
export function countWrites(
  metrics: Pick<ControllerMetrics, 'writesTotal' | 'writeErrorsTotal'>,
  worked: () => void,
): Pick<WriteObserver, 'written' | 'failed'> {
  return {
    written: (kind, verb) => {
      metrics.writesTotal.inc({ kind, verb });
      worked();
    },
    failed: (kind, verb, err) =>
      metrics.writeErrorsTotal.inc({ kind, verb, code: String(httpStatusOf(err) ?? 'none') }),
  };
}

/** One line per reconcile (info when copies were written), and one per copy in trouble. */
export function logOutcomes(log: Logger, outcomes: readonly Outcome[], key?: string): void {
  if (outcomes.length === 0) return;
  // The delivery's name as a field of each line, as a child logger would bind it: a child per
  // reconcile costs more than the lines (pino redacts its bindings when it is made).
  const base = key === undefined ? {} : { key };
  const counts: Record<string, number> = {};
  for (const o of outcomes) {
    const k = o.result === 'ok' ? o.op : o.result;
    counts[k] = (counts[k] ?? 0) + 1;
  }
  const wrote = outcomes.some((o) => o.result === 'ok');
  (wrote ? log.info : log.debug).call(log, { ...base, ...counts }, 'copies reconciled');
  for (const o of outcomes) {
    if (o.result === 'failed')
      log.warn({ ...base, namespace: o.namespace, op: o.op, err: o.message }, 'copy write failed');
    else if (o.result === 'conflict')
      log.info({ ...base, namespace: o.namespace, reason: o.message }, 'copy conflict');
    else if (o.result === 'ok' && o.takenOver)
      log.info({ ...base, namespace: o.namespace, from: o.takenOver }, 'copy taken over');
  }
}
