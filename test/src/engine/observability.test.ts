import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { Engine, secretMirror, SYSTEM_NS } from '../support/engine.js';
import { eventually } from '../support/eventually.js';

// A value that must never appear anywhere but in Secrets' data.
const SECRET_VALUE = 'S3cr3t-V4lue-do-not-leak-7f1c';

describe('logs, metrics, health, and where secret values may appear', () => {
  let e: Engine;

  beforeAll(async () => {
    e = await Engine.start({ hub: { healthPort: 0 }, agent: { healthPort: 0 } });
    for (const ns of ['src', 'app-1', 'app-2']) await e.ensureNamespace(ns);
    await e.putSecret('src', 'leaky', { password: SECRET_VALUE });
    await e.putSecret('app-2', 'leaky', { password: 'someone-elses' });
    await e.applyMirror(
      secretMirror('src', 'leaky', {
        source: { kind: 'Secret', name: 'leaky' },
        destination: { namespaces: ['app-.*', 'bad-('] },
        pollPeriodSeconds: 3600,
      }),
    );
    await e.mirrorStatus('SecretMirror', 'leaky', 'src', (m) =>
      expect(m.status?.phase).toBe('Error'),
    );
    // Fix the regex: now a sync and a conflict (app-2) happen, which log and emit Events.
    const m = await e.getMirror('SecretMirror', 'leaky', 'src');
    await e.applyMirror({ ...m!, spec: { ...m!.spec, destination: { namespaces: ['app-.*'] } } });
    await eventually(async () =>
      expect(await e.secretData('app-1', 'leaky')).toEqual({ password: SECRET_VALUE }),
    );
    await e.mirrorStatus('SecretMirror', 'leaky', 'src', (m) =>
      expect(m.status?.counts?.conflicts).toBe(1),
    );
  });

  afterAll(async () => {
    await e?.stop();
  });

  it('serves /healthz, /readyz and Prometheus /metrics on hub and agent', async () => {
    for (const [who, port] of [
      ['hub', e.hub!.port],
      ['agent', e.agent!.port],
    ] as const) {
      expect(port, who).toBeGreaterThan(0);
      expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status, who).toBe(200);
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status, who).toBe(200);
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics, who).toMatch(/^# TYPE mirrorhub_\w+/m);
      expect(metrics, who).toMatch(/mirrorhub_reconcile_total\{[^}]*\} [1-9]/);
    }
  });

  it("the hub's /readyz covers the agent exactly when they share a process (the install mode this run tests)", async () => {
    const readyz = await (await fetch(`http://127.0.0.1:${e.hub!.port}/readyz?verbose`)).text();
    if (e.mode === 'one-process') expect(readyz).toContain('[+]local-agent ok');
    else expect(readyz).not.toContain('local-agent');
    expect(readyz).toContain('[+]caches ok');
  });

  it('writes structured JSON logs bound with component and controller', () => {
    const records = e.logs
      .text()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records.length).toBeGreaterThan(5);
    expect(records.some((r) => r.component === 'hub' && typeof r.controller === 'string')).toBe(
      true,
    );
    expect(records.some((r) => r.component === 'agent' && typeof r.controller === 'string')).toBe(
      true,
    );
  });

  it('never puts a secret value in a log line, Event, status, custom resource or metric', async () => {
    const b64 = Buffer.from(SECRET_VALUE).toString('base64');
    const places: Record<string, string> = {
      logs: e.logs.text(),
      events: JSON.stringify((await e.core().listEventForAllNamespaces()).items),
      mirrors: JSON.stringify(
        await e.custom().listCustomObjectForAllNamespaces({
          group: 'mirrorhub.io',
          version: 'v1alpha1',
          plural: 'secretmirrors',
        }),
      ),
      deliveries: JSON.stringify(await e.deliveries()),
      hubMetrics: await (await fetch(`http://127.0.0.1:${e.hub!.port}/metrics`)).text(),
      agentMetrics: await (await fetch(`http://127.0.0.1:${e.agent!.port}/metrics`)).text(),
    };
    for (const [where, text] of Object.entries(places)) {
      expect(text.length, where).toBeGreaterThan(0);
      expect(text.includes(SECRET_VALUE), `${where} contains the secret value`).toBe(false);
      expect(text.includes(b64), `${where} contains the base64 secret value`).toBe(false);
      expect(text.includes('someone-elses'), `${where} contains a foreign secret value`).toBe(
        false,
      );
    }
    // The payload itself is a Secret in the agent namespace, as it should be.
    const payloads = await e
      .core()
      .listNamespacedSecret({ namespace: SYSTEM_NS, labelSelector: 'mirrorhub.io/payload=true' });
    expect(payloads.items).toHaveLength(1);
  });
});
