import { EventEmitter } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { Shutdown } from './shutdown.js';

describe('Shutdown', () => {
  it('runs closers in reverse order of registration, one at a time', async () => {
    const order: string[] = [];
    const s = new Shutdown();
    for (const name of ['server', 'clients', 'watchers', 'queues', 'leader']) {
      s.register(name, async () => {
        order.push(`start ${name}`);
        await new Promise((r) => setTimeout(r, 5));
        order.push(`end ${name}`);
      });
    }
    const r = await s.shutdown('test');
    expect(r.ok).toBe(true);
    expect(order).toEqual([
      'start leader',
      'end leader',
      'start queues',
      'end queues',
      'start watchers',
      'end watchers',
      'start clients',
      'end clients',
      'start server',
      'end server',
    ]);
  });

  it('keeps going past a failing or throwing closer and reports it', async () => {
    const ran: string[] = [];
    const s = new Shutdown();
    s.register('a', () => void ran.push('a'));
    s.register('sync-throw', () => {
      throw new Error('sync boom');
    });
    s.register('rejects', async () => {
      throw new Error('async boom');
    });
    const r = await s.shutdown();
    expect(ran).toEqual(['a']);
    expect(r.ok).toBe(false);
    expect(r.outcomes.map((o) => [o.name, o.ok, o.error])).toEqual([
      ['rejects', false, 'async boom'],
      ['sync-throw', false, 'sync boom'],
      ['a', true, undefined],
    ]);
  });

  it('abandons closers past the deadline and skips the rest', async () => {
    const s = new Shutdown({ deadlineMs: 50 });
    let signalAborted = false;
    s.register('never-runs', () => undefined);
    s.register('hangs', (signal) => {
      signal.addEventListener('abort', () => (signalAborted = true));
      return new Promise<void>(() => undefined);
    });
    const t = Date.now();
    const r = await s.shutdown();
    expect(Date.now() - t).toBeLessThan(1000);
    expect(signalAborted).toBe(true);
    expect(r.outcomes).toEqual([
      expect.objectContaining({ name: 'hangs', ok: false, timedOut: true }),
      expect.objectContaining({ name: 'never-runs', ok: false, timedOut: true }),
    ]);
  });

  it('is idempotent, aborts its signal, and honours unregister', async () => {
    const s = new Shutdown();
    const fn = vi.fn();
    const off = s.register('gone', fn);
    off();
    const p1 = s.shutdown('one');
    const p2 = s.shutdown('two');
    expect(p1).toBe(p2);
    expect(s.signal.aborted).toBe(true);
    expect((await p1).reason).toBe('one');
    expect(fn).not.toHaveBeenCalled();
  });

  it.each([
    { name: 'all closers ok', fail: false, code: 0 },
    { name: 'a closer failed', fail: true, code: 1 },
  ])('on SIGTERM exits $code when $name', async ({ fail, code }) => {
    const proc = new EventEmitter();
    const exit = vi.fn();
    const s = new Shutdown({ process: proc as unknown as NodeJS.Process, exit });
    s.register('x', () => {
      if (fail) throw new Error('x');
    });
    s.install();
    proc.emit('SIGTERM');
    await vi.waitFor(() => expect(exit).toHaveBeenCalledWith(code));
    expect(proc.listenerCount('SIGTERM')).toBe(0);
  });

  it('exits at once on a second signal', async () => {
    const proc = new EventEmitter();
    const exit = vi.fn();
    const s = new Shutdown({ process: proc as unknown as NodeJS.Process, exit });
    s.register('slow', () => new Promise((r) => setTimeout(r, 200)));
    s.install();
    proc.emit('SIGINT');
    proc.emit('SIGINT');
    expect(exit).toHaveBeenCalledWith(130);
    await vi.waitFor(() => expect(exit).toHaveBeenCalledTimes(2));
  });
});
