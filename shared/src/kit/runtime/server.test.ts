import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createMetrics } from './metrics.js';
import { startHealthServer, type HealthServer, type HealthServerOptions } from './server.js';

let server: HealthServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(opts: Partial<HealthServerOptions> = {}): Promise<HealthServer> {
  server = await startHealthServer({ port: 0, host: '127.0.0.1', ...opts });
  return server;
}

async function get(
  path: string,
  method = 'GET',
): Promise<{ status: number; body: string; type: string | null }> {
  const res = await fetch(`http://127.0.0.1:${server?.port}${path}`, { method });
  return { status: res.status, body: await res.text(), type: res.headers.get('content-type') };
}

describe('health server', () => {
  it('binds port 0 and reports the port it got', async () => {
    const s = await start();
    expect(s.port).toBeGreaterThan(0);
  });

  it('serves the process registry on /metrics', async () => {
    const m = createMetrics({ component: 'hub', defaultMetrics: false });
    m.reconcileTotal.inc({ controller: 'mirror', result: 'success' });
    await start({ registry: m.registry });
    const r = await get('/metrics');
    expect(r.status).toBe(200);
    expect(r.type).toContain('text/plain');
    expect(r.body).toContain(
      'mirrorhub_reconcile_total{controller="mirror",result="success",component="hub"} 1',
    );
  });

  it.each(['/healthz', '/livez'])('%s is ok while the event loop turns', async (path) => {
    await start({ loopCheckIntervalMs: 10, loopStallMs: 1000 });
    expect(await get(path)).toMatchObject({ status: 200, body: 'ok\n' });
  });

  it('/healthz fails when the event loop was blocked', async () => {
    await start({ loopCheckIntervalMs: 20, loopStallMs: 100 });
    const until = Date.now() + 250;
    while (Date.now() < until) {
      // block the loop
    }
    const r = await get('/healthz');
    expect(r.status).toBe(500);
    expect(r.body).toMatch(/\[-\]eventloop failed/);
  });

  describe('/readyz', () => {
    it.each([
      { name: 'no checks', checks: {}, status: 200, lines: [] },
      {
        name: 'all pass',
        checks: { caches: () => true, leader: async () => ({ ok: true, message: 'standby' }) },
        status: 200,
        lines: [],
      },
      {
        name: 'false',
        checks: { caches: () => false, leader: () => true },
        status: 503,
        lines: ['[-]caches failed', '[+]leader ok'],
      },
      {
        name: 'a reason string',
        checks: { caches: () => 'secrets not synced' },
        status: 503,
        lines: ['[-]caches failed: secrets not synced'],
      },
      {
        name: 'a throw',
        checks: {
          caches: () => {
            throw new Error('boom');
          },
        },
        status: 503,
        lines: ['[-]caches failed: boom'],
      },
      {
        name: 'a rejection',
        checks: { caches: () => Promise.reject(new Error('nope')) },
        status: 503,
        lines: ['[-]caches failed: nope'],
      },
      {
        name: 'a hang',
        checks: { caches: () => new Promise<boolean>(() => undefined) },
        status: 503,
        lines: ['[-]caches failed: timed out after 50ms'],
      },
    ])('$name -> $status', async ({ checks, status, lines }) => {
      const s = await start({ checkTimeoutMs: 50 });
      for (const [n, c] of Object.entries(checks)) s.addReadinessCheck(n, c as () => boolean);
      const r = await get('/readyz');
      expect(r.status).toBe(status);
      for (const l of lines) expect(r.body).toContain(l);
    });

    it('lists passing checks with ?verbose and forgets removed checks', async () => {
      const s = await start();
      const remove = s.addReadinessCheck('caches', () => false);
      s.addReadinessCheck('leader', () => true);
      expect((await get('/readyz')).status).toBe(503);
      remove();
      const r = await get('/readyz?verbose');
      expect(r).toMatchObject({ status: 200, body: '[+]leader ok\nok\n' });
    });
  });

  it('answers 404 for unknown paths, 405 for writes, and serves extra routes', async () => {
    const s = await start();
    s.route('/api/summary', (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"clusters":2}');
    });
    expect((await get('/nope')).status).toBe(404);
    expect((await get('/healthz', 'POST')).status).toBe(405);
    expect(await get('/api/summary')).toMatchObject({ status: 200, body: '{"clusters":2}' });
    expect((await get('/api/summary/more')).status).toBe(404); // exact unless it ends in /
  });

  it('serves everything under a route ending in /', async () => {
    const s = await start();
    s.route('/api/items/', (req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(req.url);
    });
    expect(await get('/api/items/a/b')).toMatchObject({ status: 200, body: '/api/items/a/b' });
    expect((await get('/api/items')).status).toBe(404);
    expect((await get('/healthz')).status).toBe(200); // built-in paths still win
  });

  it('answers 400 to a request target that is not a path: nothing here is a proxy', async () => {
    const s = await start();
    s.route('/api/items/', (_req, res) => void res.end('served'));
    // fetch() sends only paths; a socket sends the request line as written.
    const raw = (target: string) =>
      new Promise<string>((resolve, reject) => {
        const sock = net.connect(s.port, '127.0.0.1', () =>
          sock.end(`GET ${target} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`),
        );
        let text = '';
        sock.on('data', (d: Buffer) => (text += d.toString()));
        sock.on('end', () => resolve(text.split('\r\n')[0]!));
        sock.on('error', reject);
      });
    for (const target of [
      'http://127.0.0.1:9/api/items/a',
      '//127.0.0.1:9/api/items/a',
      '/\\127.0.0.1:9/api/items/a',
      'http://127.0.0.1:9/healthz',
    ]) {
      expect(await raw(target), target).toBe('HTTP/1.1 400 Bad Request');
    }
    expect(await raw('/api/items/a?b=//c')).toBe('HTTP/1.1 200 OK');
  });

  it('closes even with keep-alive clients connected', async () => {
    const s = await start();
    await get('/healthz');
    const t = Date.now();
    await s.close();
    server = undefined;
    expect(Date.now() - t).toBeLessThan(1000);
  });
});
