import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../testing/fake.js';
import { createMetrics } from '../runtime/metrics.js';
import { RestClient } from '../k8s/rest.js';
import { startHttpStub, type HttpStub } from '../../testing/http-stub.js';
import { StatusWriter, type WritableObject } from './status.js';

interface Thing extends WritableObject {
  status?: { phase?: string; message?: string; lastSyncTime?: string };
}

const PATH = '/apis/example.io/v1/namespaces/ns/things/t';

function thing(rv: string, status?: Thing['status'], finalizers?: string[]): Thing {
  return {
    apiVersion: 'example.io/v1',
    kind: 'Thing',
    metadata: { name: 't', namespace: 'ns', uid: 'u-1', resourceVersion: rv, finalizers },
    ...(status ? { status } : {}),
  };
}

describe('StatusWriter', () => {
  let api: HttpStub;
  let rest: RestClient;
  let clock: FakeClock;
  let metrics: ReturnType<typeof createMetrics>;
  let writer: StatusWriter<Thing>;

  beforeAll(async () => {
    api = await startHttpStub();
    rest = new RestClient(api.access);
  });
  afterAll(async () => {
    rest.close();
    await api.close();
  });
  beforeEach(() => {
    api.requests.length = 0;
    clock = new FakeClock(1_000);
    metrics = createMetrics({ component: 'hub', defaultMetrics: false });
    writer = new StatusWriter<Thing>({
      rest,
      pathOf: () => PATH,
      keyOf: (t) => `${t.metadata.namespace}/${t.metadata.name}`,
      fieldManager: 'mirrorhub-hub',
      metrics,
      reportingInstance: 'hub-0',
      clock,
    });
  });

  it('writes nothing when the status is unchanged', async () => {
    const t = thing('1', { phase: 'Active', lastSyncTime: '2026-01-01T00:00:00Z' });
    const out = await writer.writeStatus(t, {
      phase: 'Active',
      lastSyncTime: '2026-01-01T00:00:00Z',
    });
    expect(out).toBe(t);
    expect(api.requests).toEqual([]);
    expect(writer.lastWriteAt('ns/t')).toBeUndefined();
  });

  it('with the status unchanged, still records the Events it is given (news that is no transition)', async () => {
    api.reply = () => ({ status: 201, body: {} });
    const t = thing('1', { phase: 'Active' });
    const out = await writer.writeStatus(t, { phase: 'Active' }, [
      { type: 'Normal', reason: 'LeaseRotated', message: 'new credentials' },
    ]);
    expect(out).toBe(t);
    expect(api.requests.map((r) => `${r.method} ${r.url.split('?')[0]}`)).toEqual([
      'POST /apis/events.k8s.io/v1/namespaces/ns/events',
    ]);
  });

  it('merge-patches the difference, nulls what is no longer reported, then records the Events', async () => {
    api.reply = (r) =>
      r.url.includes('/events')
        ? { status: 201, body: {} }
        : { status: 200, body: thing('2', { phase: 'Error' }) };
    const out = await writer.writeStatus(
      thing('1', { phase: 'Active', message: 'all good' }),
      { phase: 'Error' },
      [{ type: 'Warning', reason: 'Error', message: 'source missing' }],
    );
    expect(out?.metadata.resourceVersion).toBe('2');
    expect(api.requests.map((r) => `${r.method} ${r.url.split('?')[0]}`)).toEqual([
      `PATCH ${PATH}/status`,
      'POST /apis/events.k8s.io/v1/namespaces/ns/events',
    ]);
    expect(api.requests[0]!.headers['content-type']).toBe('application/merge-patch+json');
    expect(api.requests[0]!.url).toContain('fieldManager=mirrorhub-hub');
    expect(api.requests[0]!.json).toEqual({ status: { phase: 'Error', message: null } });
    expect(writer.lastWriteAt('ns/t')).toBe(1_000);
    expect(await metrics.render()).toContain(
      'mirrorhub_writes_total{kind="Thing",verb="patch",component="hub"} 1',
    );
  });

  it('records Events as its field manager from `reportingInstance`', async () => {
    api.reply = (r) =>
      r.url.includes('/events')
        ? { status: 201, body: {} }
        : { status: 200, body: thing('2', { phase: 'Error' }) };
    const own = new StatusWriter<Thing>({
      rest,
      pathOf: () => PATH,
      keyOf: () => 'ns/t',
      fieldManager: 'mirrorhub-agent',
      reportingInstance: 'agent-0',
      metrics,
      clock,
    });
    await own.writeStatus(thing('1', { phase: 'Active' }), { phase: 'Error' }, [
      { type: 'Warning', reason: 'Error', message: 'source missing' },
    ]);
    expect(api.requests[1]!.json).toMatchObject({
      reportingController: 'mirrorhub-agent',
      reportingInstance: 'agent-0',
      reason: 'Error',
      regarding: { kind: 'Thing', name: 't', namespace: 'ns' },
    });
    expect(await metrics.render()).toContain(
      'mirrorhub_writes_total{kind="Event",verb="create",component="hub"} 1',
    );
  });

  it('shadows the cache with our write until the watch shows it', async () => {
    api.reply = () => ({ status: 200, body: thing('2', { phase: 'Active' }) });
    const cached = thing('1', { phase: 'Pending' });
    await writer.writeStatus(cached, { phase: 'Active' });
    expect(writer.current('ns/t', cached)?.status?.phase).toBe('Active');
    expect(writer.observed(thing('2', { phase: 'Active' }))).toBe(true); // our echo
    expect(writer.current('ns/t', cached)).toBe(cached);
    // A re-created object (new uid) is never shadowed by what we wrote to the old one.
    await writer.writeStatus(cached, { phase: 'Active' });
    const recreated = { ...thing('9'), metadata: { ...thing('9').metadata, uid: 'u-2' } };
    expect(writer.current('ns/t', recreated)).toBe(recreated);
  });

  it('queueStatus: shown by current() at once, written in order, a newer one replacing one not sent', async () => {
    let rv = 1;
    api.reply = (r) =>
      r.url.includes('/events')
        ? { status: 201, body: {} }
        : {
            status: 200,
            body: thing(String(++rv), (r.json as { status: Thing['status'] }).status),
          };
    const cached = thing('1', { phase: 'Pending', message: 'waiting' });
    writer.queueStatus(cached, { phase: 'Active', message: 'first' });
    // Not sent yet: replaced, and its Events kept.
    writer.queueStatus(writer.current('ns/t', cached)!, { phase: 'Active', message: 'second' }, [
      { type: 'Normal', reason: 'Synced', message: 'copies written' },
    ]);
    expect(writer.current('ns/t', cached)?.status).toEqual({ phase: 'Active', message: 'second' });
    await new Promise((r) => setImmediate(r)); // now in flight
    writer.queueStatus(writer.current('ns/t', cached)!, { phase: 'Error' });
    expect(writer.current('ns/t', cached)?.status).toEqual({ phase: 'Error' });
    await writer.flushed();
    const patches = api.requests.filter((r) => r.method === 'PATCH').map((r) => r.json);
    // One write per status sent, each the difference from the one before.
    expect(patches).toEqual([
      { status: { phase: 'Active', message: 'second' } },
      { status: { phase: 'Error', message: null } },
    ]);
    expect(api.requests.filter((r) => r.url.includes('/events'))).toHaveLength(1);
    expect(writer.current('ns/t', cached)?.metadata.resourceVersion).toBe('3');
  });

  it('queueStatus: waits for beforeQueuedWrite, replaced meanwhile; sent() does not wait', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const w = new StatusWriter<Thing>({
      rest,
      pathOf: () => PATH,
      keyOf: () => 'ns/t',
      fieldManager: 'mirrorhub-agent',
      beforeQueuedWrite: () => gate,
    });
    api.reply = (r) => ({
      status: 200,
      body: thing('2', (r.json as { status: Thing['status'] }).status),
    });
    const cached = thing('1', { phase: 'Pending' });
    w.queueStatus(cached, { phase: 'Progressing' });
    await new Promise((r) => setImmediate(r));
    expect(api.requests).toEqual([]); // held
    w.queueStatus(w.current('ns/t', cached)!, { phase: 'Active' });
    release();
    await w.flushed();
    expect(api.requests.map((r) => r.json)).toEqual([{ status: { phase: 'Active' } }]);

    // Someone waiting for the key (a finalizer write) does not wait for the gate.
    const closed = new StatusWriter<Thing>({
      rest,
      pathOf: () => PATH,
      keyOf: () => 'ns/t',
      fieldManager: 'mirrorhub-agent',
      beforeQueuedWrite: () => new Promise<void>(() => {}),
    });
    closed.queueStatus(cached, { phase: 'Error' });
    await new Promise((r) => setImmediate(r)); // waiting for the gate
    expect(api.requests).toHaveLength(1);
    await closed.sent('ns/t');
    expect(api.requests).toHaveLength(2);
  });

  it('queueStatus: a failed write drops what was queued behind it and hands the key back', async () => {
    const failed: string[] = [];
    const w = new StatusWriter<Thing>({
      rest,
      pathOf: () => PATH,
      keyOf: () => 'ns/t',
      fieldManager: 'mirrorhub-agent',
      onQueuedWriteFailed: (key) => failed.push(key),
    });
    api.reply = () => ({ status: 500, body: { code: 500, reason: 'InternalError' } });
    const cached = thing('1', { phase: 'Pending' });
    w.queueStatus(cached, { phase: 'Active' });
    await new Promise((r) => setImmediate(r));
    // Planned on top of the write that is about to fail: never sent.
    w.queueStatus(w.current('ns/t', cached)!, { phase: 'Active', message: 'more' });
    await w.flushed();
    expect(api.requests.filter((r) => r.method === 'PATCH')).toHaveLength(1);
    expect(failed).toEqual(['ns/t']);
    // The cache is the truth again, and a new status is sent from it.
    expect(w.current('ns/t', cached)).toBe(cached);
    api.reply = () => ({ status: 200, body: thing('2', { phase: 'Active' }) });
    w.queueStatus(cached, { phase: 'Active' });
    await w.flushed();
    expect(api.requests.filter((r) => r.method === 'PATCH').map((r) => r.json)).toEqual([
      { status: { phase: 'Active' } },
      { status: { phase: 'Active' } },
    ]);
  });

  it('adds and removes a finalizer conditionally on the resourceVersion', async () => {
    api.reply = () => ({ status: 200, body: thing('2', undefined, ['other', 'mine']) });
    const t = thing('1', undefined, ['other']);
    const added = await writer.setFinalizer(t, 'mine', true);
    expect(api.requests[0]!.url.split('?')[0]).toBe(PATH);
    expect(api.requests[0]!.json).toEqual({
      metadata: { finalizers: ['other', 'mine'], resourceVersion: '1' },
    });
    expect(added?.metadata.finalizers).toEqual(['other', 'mine']);
    expect(await writer.setFinalizer(added!, 'mine', true)).toBe(added); // already there
    expect(api.requests).toHaveLength(1);
    api.reply = () => ({ status: 200, body: thing('3', undefined, ['other']) });
    await writer.setFinalizer(added!, 'mine', false);
    expect(api.requests[1]!.json).toEqual({
      metadata: { finalizers: ['other'], resourceVersion: '2' },
    });
  });

  it('logs a changed summary at info with its detail, an unchanged one at debug', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = pino(
      { level: 'debug' },
      { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) },
    );
    const logged = new StatusWriter<Thing>({
      rest,
      pathOf: () => PATH,
      keyOf: () => 'ns/t',
      fieldManager: 'mirrorhub-hub',
      logger,
      summary: (s) => ({ phase: s?.phase }),
      detail: (s) => ({ message: s?.message }),
    });
    api.reply = () => ({ status: 200, body: thing('2', { phase: 'Error', message: 'gone' }) });
    await logged.writeStatus(thing('1', { phase: 'Active' }), { phase: 'Error', message: 'gone' });
    await logged.writeStatus(thing('2', { phase: 'Error', message: 'gone' }), {
      phase: 'Error',
      message: 'still gone',
    });
    expect(
      lines.map(({ level, msg, phase, message, from }) => [level, msg, phase, message, from]),
    ).toEqual([
      [30, 'status changed', 'Error', 'gone', { phase: 'Active' }],
      [20, 'status updated', 'Error', undefined, undefined],
    ]);
  });

  it('an object a write found gone stays gone for current() until the cache shows it', async () => {
    api.reply = () => ({ status: 404, body: { code: 404, reason: 'NotFound' } });
    const stale = thing('1', undefined, ['mine']);
    expect(await writer.setFinalizer(stale, 'mine', false)).toBeUndefined();
    // The cache (its watch down) still holds the object: it is not handed out again.
    expect(writer.current('ns/t', stale)).toBeUndefined();
    // Another object under the same name is not that one.
    const recreated = { ...thing('5'), metadata: { ...thing('5').metadata, uid: 'u-2' } };
    expect(writer.current('ns/t', recreated)).toBe(recreated);
    // The cache caught up (a re-list, or the delete event): it is the truth again.
    writer.relisted();
    expect(writer.current('ns/t', stale)).toBe(stale);
    expect(await writer.writeStatus(stale, { phase: 'Active' })).toBeUndefined();
    writer.deleted('ns/t');
    expect(writer.current('ns/t', stale)).toBe(stale);
  });

  it('a gone object is undefined; a concurrent change says so; both are counted', async () => {
    api.reply = () => ({ status: 404, body: { code: 404, reason: 'NotFound' } });
    expect(await writer.writeStatus(thing('1'), { phase: 'Active' })).toBeUndefined();
    api.reply = () => ({ status: 409, body: { code: 409, reason: 'Conflict' } });
    await expect(writer.setFinalizer(thing('1'), 'mine', true)).rejects.toThrow(
      'Thing ns/t changed while we patched it; reconciling again',
    );
    const out = await metrics.render();
    expect(out).toContain(
      'mirrorhub_write_errors_total{kind="Thing",verb="patch",code="404",component="hub"} 1',
    );
    expect(out).toContain(
      'mirrorhub_write_errors_total{kind="Thing",verb="patch",code="409",component="hub"} 1',
    );
  });
});
