import { describe, expect, it } from 'vitest';
import { TerminalError } from '../k8s/workqueue.js';
import { createMetrics } from '../runtime/metrics.js';
import { observeReconciles } from './observe.js';

describe('observeReconciles', () => {
  it('counts, times and logs each outcome', async () => {
    const m = createMetrics({ component: 'agent', defaultMetrics: false });
    const logged: [string, Record<string, unknown>][] = [];
    const logger = {
      warn: (o: object) => void logged.push(['warn', o as Record<string, unknown>]),
      error: (o: object) => void logged.push(['error', o as Record<string, unknown>]),
      debug: (o: object) => void logged.push(['debug', o as Record<string, unknown>]),
      info: (o: object) => void logged.push(['info', o as Record<string, unknown>]),
    };
    const observe = observeReconciles('delivery', { metrics: m, logger });
    observe({ key: 'ns/a', result: 'success', durationMs: 20, failures: 0 });
    observe({
      key: 'ns/b',
      result: 'error',
      durationMs: 5,
      failures: 2,
      retryInMs: 400,
      error: new Error('x'),
    });
    observe({
      key: 'ns/c',
      result: 'terminal',
      durationMs: 1,
      failures: 0,
      error: new TerminalError('bad'),
    });
    const out = await m.render();
    expect(out).toContain(
      'mirrorhub_reconcile_total{controller="delivery",result="success",component="agent"} 1',
    );
    expect(out).toContain(
      'mirrorhub_reconcile_total{controller="delivery",result="error",component="agent"} 1',
    );
    expect(out).toContain(
      'mirrorhub_workqueue_retries_total{controller="delivery",component="agent"} 1',
    );
    expect(out).toContain(
      'mirrorhub_reconcile_duration_seconds_count{component="agent",controller="delivery"} 3',
    );
    expect(logged.map(([l, o]) => [l, o['key']])).toEqual([
      ['debug', 'ns/a'],
      ['warn', 'ns/b'],
      ['error', 'ns/c'],
    ]);
  });

  it('logs expected failures at info and calls `after` for every key', () => {
    const logged: string[] = [];
    const seen: string[] = [];
    const logger = {
      warn: () => void logged.push('warn'),
      error: () => void logged.push('error'),
      debug: () => void logged.push('debug'),
      info: () => void logged.push('info'),
    };
    class Expected extends Error {}
    const observe = observeReconciles('delivery', {
      logger,
      expected: (err) => err instanceof Expected,
      after: (o) => void seen.push(o.key),
    });
    const failed = { result: 'error', durationMs: 1, failures: 1, retryInMs: 10 } as const;
    observe({ ...failed, key: 'a', error: new Expected('writes failed') });
    observe({ ...failed, key: 'b', error: new Error('boom') });
    expect(logged).toEqual(['info', 'warn']);
    expect(seen).toEqual(['a', 'b']);
  });
});
