import { describe, expect, it } from 'vitest';
import { createMetrics, labelValue } from './metrics.js';

describe('metrics', () => {
  it('keeps one registry per process object, so two can coexist', async () => {
    const hub = createMetrics({ component: 'hub' });
    const agent = createMetrics({ component: 'agent', defaultMetrics: false });
    hub.reconcileTotal.inc({ controller: 'mirror', result: 'success' });
    agent.reconcileTotal.inc({ controller: 'delivery', result: 'error' }, 2);
    const h = await hub.render();
    const a = await agent.render();
    expect(h).toContain(
      'mirrorhub_reconcile_total{controller="mirror",result="success",component="hub"} 1',
    );
    expect(h).not.toContain('delivery');
    expect(a).toContain(
      'mirrorhub_reconcile_total{controller="delivery",result="error",component="agent"} 2',
    );
    expect(h).toContain('mirrorhub_process_cpu_user_seconds_total'); // default metrics
    expect(a).not.toContain('process_cpu');
  });

  it('defines the controller metrics', async () => {
    const m = createMetrics({
      component: 'agent',
      defaultMetrics: false,
      defaultLabels: { cluster: 'eu-1' },
    });
    m.reconcileDuration.observe({ controller: 'delivery' }, 0.2);
    m.writesTotal.inc({ kind: 'Secret', verb: 'apply' });
    m.writeErrorsTotal.inc({ kind: 'Secret', verb: 'create', code: '409' });
    m.watchEventsTotal.inc({ resource: 'namespaces', type: 'ADDED' });
    m.watchRestartsTotal.inc({ resource: 'namespaces', reason: 'gone' });
    m.isLeader.set({ lease: 'mirrorhub-hub' }, 1);
    m.observeQueue('delivery', { len: () => 7, inFlight: () => 2 });
    const out = await m.render();
    for (const line of [
      'mirrorhub_reconcile_duration_seconds_bucket{le="0.25",component="agent",cluster="eu-1",controller="delivery"} 1',
      'mirrorhub_writes_total{kind="Secret",verb="apply",component="agent",cluster="eu-1"} 1',
      'mirrorhub_write_errors_total{kind="Secret",verb="create",code="409",component="agent",cluster="eu-1"} 1',
      'mirrorhub_watch_events_total{resource="namespaces",type="ADDED",component="agent",cluster="eu-1"} 1',
      'mirrorhub_watch_restarts_total{resource="namespaces",reason="gone",component="agent",cluster="eu-1"} 1',
      'mirrorhub_leader{lease="mirrorhub-hub",component="agent",cluster="eu-1"} 1',
      'mirrorhub_workqueue_depth{controller="delivery",component="agent",cluster="eu-1"} 7',
      'mirrorhub_workqueue_inflight{controller="delivery",component="agent",cluster="eu-1"} 2',
    ]) {
      expect(out).toContain(line);
    }
  });

  it('returns the existing metric when a helper defines the same name twice', () => {
    const m = createMetrics({ component: 'hub', defaultMetrics: false });
    const g1 = m.gauge('clusters', 'Clusters by phase.', ['phase']);
    const g2 = m.gauge('mirrorhub_clusters', 'Clusters by phase.', ['phase']);
    expect(g2).toBe(g1);
  });

  it.each([
    ['project-a-1', 'project-a-1'],
    ['mirrorhub-system/sm-a-1234abcd', 'mirrorhub-system/sm-a-1234abcd'],
    ['Secret', 'Secret'],
    ['', '_none_'],
    [undefined, '_none_'],
    ['has space', '_invalid_'],
    ['c3VwZXItc2VjcmV0+/==', '_invalid_'],
    ['line\nbreak', '_invalid_'],
    ['x'.repeat(300), '_invalid_'],
  ])('labelValue(%j) = %j', (input, want) => {
    expect(labelValue(input)).toBe(want);
  });
});
