import { describe, expect, it } from 'vitest';
import { createMetrics } from '@mirrorhub/shared/kit/runtime/metrics';
import type { Logger } from '@mirrorhub/shared/kit/runtime/log';
import { countWrites, logOutcomes, registerGauges } from './metrics.js';
import type { Outcome } from './plan.js';

describe('delivery controller metrics', () => {
  it('samples copies, conflicts, failed and denied namespaces on scrape', async () => {
    const m = createMetrics({ component: 'agent', defaultMetrics: false });
    const copies = { Secret: { size: 3 }, ConfigMap: { size: 1 } };
    let totals = { conflicts: 2, failures: 1, denied: 3 };
    registerGauges(m.registry, copies, { totals: () => totals });
    // A second controller on the same registry does not register them twice.
    registerGauges(m.registry, copies, {
      totals: () => ({ conflicts: 9, failures: 9, denied: 9 }),
    });
    let out = await m.render();
    expect(out).toContain('mirrorhub_agent_copies{kind="Secret",component="agent"} 3');
    expect(out).toContain('mirrorhub_agent_copies{kind="ConfigMap",component="agent"} 1');
    expect(out).toContain('mirrorhub_agent_conflicts{component="agent"} 2');
    expect(out).toContain('mirrorhub_agent_failed_namespaces{component="agent"} 1');
    expect(out).toContain('mirrorhub_agent_denied_namespaces{component="agent"} 3');
    totals = { conflicts: 0, failures: 4, denied: 0 };
    copies.Secret.size = 5;
    out = await m.render();
    expect(out).toContain('mirrorhub_agent_copies{kind="Secret",component="agent"} 5');
    expect(out).toContain('mirrorhub_agent_failed_namespaces{component="agent"} 4');
    expect(out).toContain('mirrorhub_agent_denied_namespaces{component="agent"} 0');
  });

  it('counts copy writes and failed writes by status code, and tells of work', async () => {
    const m = createMetrics({ component: 'agent', defaultMetrics: false });
    let worked = 0;
    const count = countWrites(m, () => void worked++);
    count.written('Secret', 'patch');
    count.written('Secret', 'patch');
    count.failed('ConfigMap', 'delete', Object.assign(new Error('no'), { statusCode: 403 }));
    count.failed('Secret', 'patch', new Error('socket hang up'));
    const out = await m.render();
    expect(out).toContain('mirrorhub_writes_total{kind="Secret",verb="patch",component="agent"} 2');
    expect(out).toContain(
      'mirrorhub_write_errors_total{kind="ConfigMap",verb="delete",code="403",component="agent"} 1',
    );
    expect(out).toContain(
      'mirrorhub_write_errors_total{kind="Secret",verb="patch",code="none",component="agent"} 1',
    );
    expect(worked).toBe(2);
  });

  it('logs a reconcile that wrote at info, one that only checked at debug, and each problem', () => {
    const lines: string[] = [];
    const log = Object.fromEntries(
      ['info', 'debug', 'warn'].map((level) => [
        level,
        (o: object, msg: string) => void lines.push(`${level} ${msg} ${JSON.stringify(o)}`),
      ]),
    ) as unknown as Logger;
    const outcomes: Outcome[] = [
      { namespace: 'a', op: 'create', result: 'ok' },
      { namespace: 'b', op: 'create', result: 'ok' },
      { namespace: 'c', op: 'verify', result: 'unchanged' },
      { namespace: 'd', op: 'update', result: 'failed', message: '403 Forbidden' },
      { namespace: 'e', op: 'create', result: 'conflict', message: 'not ours', adoptable: true },
    ];
    logOutcomes(log, outcomes);
    logOutcomes(log, [{ namespace: 'c', op: 'verify', result: 'unchanged' }]);
    logOutcomes(log, [outcomes[3]!], 'd-1');
    logOutcomes(log, []);
    expect(lines).toEqual([
      'info copies reconciled {"create":2,"unchanged":1,"failed":1,"conflict":1}',
      'warn copy write failed {"namespace":"d","op":"update","err":"403 Forbidden"}',
      'info copy conflict {"namespace":"e","reason":"not ours"}',
      'debug copies reconciled {"unchanged":1}',
      'debug copies reconciled {"key":"d-1","failed":1}',
      'warn copy write failed {"key":"d-1","namespace":"d","op":"update","err":"403 Forbidden"}',
    ]);
  });
});
