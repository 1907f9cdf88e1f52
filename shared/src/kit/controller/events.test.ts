import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../testing/fake.js';
import { createMetrics } from '../runtime/metrics.js';
import { groupPath, RestClient } from '../k8s/rest.js';
import { startHttpStub, type HttpStub } from '../../testing/http-stub.js';
import { EventRecorder } from './events.js';

describe('EventRecorder', () => {
  let api: HttpStub;
  beforeAll(async () => (api = await startHttpStub()));
  afterAll(() => api.close());

  const delivery = {
    apiVersion: 'mirrorhub.io/v1alpha1',
    kind: 'MirrorDelivery',
    metadata: { name: 'd', namespace: 'ns', uid: 'u-1', resourceVersion: '7' },
  };

  it('records an events.k8s.io Event with microsecond time and a bounded note', async () => {
    api.requests.length = 0;
    api.reply = () => ({ status: 201, body: {} });
    const rest = new RestClient(api.access);
    const metrics = createMetrics({ component: 'agent', defaultMetrics: false });
    const events = new EventRecorder({
      rest,
      controller: 'mirrorhub-agent',
      instance: 'pod-1',
      metrics,
      clock: new FakeClock(Date.UTC(2026, 0, 2, 3, 4, 5, 678)),
    });
    await events.record(delivery, {
      type: 'Warning',
      reason: 'Degraded',
      message: 'x'.repeat(2000),
    });
    rest.close();
    expect(api.requests[0]!.url).toBe(groupPath('events.k8s.io', 'v1', 'events', 'ns'));
    const body = api.requests[0]!.json as Record<string, unknown>;
    expect(body).toMatchObject({
      reportingController: 'mirrorhub-agent',
      reportingInstance: 'pod-1',
      action: 'Reconcile',
      reason: 'Degraded',
      type: 'Warning',
      eventTime: '2026-01-02T03:04:05.678000Z',
      regarding: { kind: 'MirrorDelivery', name: 'd', namespace: 'ns', uid: 'u-1' },
    });
    expect(Buffer.byteLength(body['note'] as string)).toBeLessThanOrEqual(1024);
    expect(body['note']).toMatch(/^x+…$/);
    expect(await metrics.render()).toContain(
      'mirrorhub_writes_total{kind="Event",verb="create",component="agent"} 1',
    );
  });

  it('keeps a note within 1024 bytes of UTF-8, the limit the API server enforces', async () => {
    api.requests.length = 0;
    api.reply = () => ({ status: 201, body: {} });
    const rest = new RestClient(api.access);
    const events = new EventRecorder({ rest, controller: 'mirrorhub-hub', instance: 'hub-0' });
    const fits = 'é'.repeat(512); // 1024 bytes
    await events.record(delivery, { type: 'Normal', reason: 'R', message: fits });
    await events.record(delivery, { type: 'Normal', reason: 'R', message: `${fits}x` });
    rest.close();
    const notes = api.requests.map((r) => (r.json as { note: string }).note);
    expect(notes[0]).toBe(fits);
    expect(Buffer.byteLength(notes[1]!)).toBeLessThanOrEqual(1024);
    expect(notes[1]).toMatch(/^é+…$/);
  });

  it('puts Events about cluster-scoped objects in "default"', async () => {
    api.requests.length = 0;
    api.reply = () => ({ status: 201, body: {} });
    const rest = new RestClient(api.access);
    await new EventRecorder({ rest, controller: 'mirrorhub-hub', instance: 'hub-0' }).record(
      { apiVersion: 'mirrorhub.io/v1alpha1', kind: 'ClusterSecretMirror', metadata: { name: 'c' } },
      { type: 'Normal', reason: 'Synced', message: 'ok' },
    );
    rest.close();
    expect(api.requests[0]!.url).toBe(groupPath('events.k8s.io', 'v1', 'events', 'default'));
    const regarding = (api.requests[0]!.json as { regarding: Record<string, unknown> }).regarding;
    expect(regarding).toEqual({
      apiVersion: 'mirrorhub.io/v1alpha1',
      kind: 'ClusterSecretMirror',
      name: 'c',
    });
  });

  it('an Event that cannot be written is counted, not thrown', async () => {
    api.reply = () => ({ status: 403, body: { code: 403, reason: 'Forbidden' } });
    const rest = new RestClient(api.access);
    const metrics = createMetrics({ component: 'hub', defaultMetrics: false });
    await expect(
      new EventRecorder({ rest, controller: 'c', instance: 'i', metrics }).record(delivery, {
        type: 'Normal',
        reason: 'R',
        message: 'note',
      }),
    ).resolves.toBeUndefined();
    rest.close();
    expect(await metrics.render()).toContain(
      'mirrorhub_write_errors_total{kind="Event",verb="create",code="403",component="hub"} 1',
    );
  });
});
