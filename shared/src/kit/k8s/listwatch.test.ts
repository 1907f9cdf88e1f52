import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig, type V1ConfigMap } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { K8sHttpError, kubeListerWatcher, resourcePath, type WatchEvent } from './listwatch.js';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;
let server: http.Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

async function serve(handler: Handler): Promise<KubeConfig> {
  server = http.createServer(handler);
  await new Promise<void>((r) => server?.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'tok' }],
    contexts: [{ name: 'c', cluster: 'c', user: 'u' }],
    currentContext: 'c',
  });
  return kc;
}

function watchUntilClosed<T>(lw: ReturnType<typeof kubeListerWatcher<V1ConfigMap>>, rv = '5') {
  const events: WatchEvent<T>[] = [];
  let connected = false;
  const closed = new Promise<unknown>((resolve) => {
    lw.watch(
      { resourceVersion: rv, timeoutSeconds: 30, allowWatchBookmarks: true },
      {
        onConnected: () => (connected = true),
        onEvent: (e) => void events.push(e as WatchEvent<T>),
        onClose: (err) => resolve(err ?? 'clean'),
      },
    );
  });
  return { events, closed, connected: () => connected };
}

describe('resourcePath', () => {
  it.each([
    [{ version: 'v1', plural: 'namespaces' }, '/api/v1/namespaces'],
    [
      { version: 'v1', plural: 'secrets', namespace: 'mirrorhub-system' },
      '/api/v1/namespaces/mirrorhub-system/secrets',
    ],
    [
      { group: 'mirrorhub.io', version: 'v1alpha1', plural: 'secretmirrors' },
      '/apis/mirrorhub.io/v1alpha1/secretmirrors',
    ],
    [
      { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', namespace: 'ns' },
      '/apis/coordination.k8s.io/v1/namespaces/ns/leases',
    ],
  ])('%j -> %s', (t, want) => expect(resourcePath(t)).toBe(want));
});

describe('kubeListerWatcher', () => {
  it('lists with selectors, paging and auth, and reads the list metadata', async () => {
    const seen: { url?: string; auth?: string; accept?: string }[] = [];
    const kc = await serve((req, res) => {
      seen.push({ url: req.url, auth: req.headers.authorization, accept: req.headers.accept });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'ConfigMapList',
          metadata: { resourceVersion: '77', continue: 'next' },
          items: [{ metadata: { name: 'a' } }],
        }),
      );
    });
    const lw = kubeListerWatcher<V1ConfigMap>(kc, {
      version: 'v1',
      plural: 'configmaps',
      namespace: 'ns',
      labelSelector: 'mirrorhub.io/managed-by=mirrorhub',
      fieldSelector: 'metadata.name=a',
    });
    const page = await lw.list({ limit: 500, continue: 'tok1' });
    expect(page).toEqual({
      items: [{ metadata: { name: 'a' } }],
      resourceVersion: '77',
      continue: 'next',
    });
    const u = new URL(`http://x${seen[0]?.url}`);
    expect(u.pathname).toBe('/api/v1/namespaces/ns/configmaps');
    expect(Object.fromEntries(u.searchParams)).toEqual({
      labelSelector: 'mirrorhub.io/managed-by=mirrorhub',
      fieldSelector: 'metadata.name=a',
      limit: '500',
      continue: 'tok1',
    });
    expect(seen[0]?.auth).toBe('Bearer tok');
    expect(seen[0]?.accept).toBe('application/json');
  });

  it('asks for PartialObjectMetadata when metadataOnly', async () => {
    const accepts: (string | undefined)[] = [];
    const kc = await serve((req, res) => {
      accepts.push(req.headers.accept);
      res.writeHead(200);
      res.end(
        req.url?.includes('watch=true') ? '' : '{"items":[],"metadata":{"resourceVersion":"1"}}',
      );
    });
    const lw = kubeListerWatcher<V1ConfigMap>(kc, {
      version: 'v1',
      plural: 'secrets',
      metadataOnly: true,
    });
    await lw.list({});
    await watchUntilClosed(lw).closed;
    expect(accepts[0]).toMatch(
      /^application\/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1/,
    );
    expect(accepts[1]).toMatch(/^application\/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1/);
  });

  it('turns a non-200 list into K8sHttpError with the Status reason', async () => {
    const kc = await serve((_req, res) => {
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'Status',
          code: 403,
          reason: 'Forbidden',
          message: 'secrets is forbidden',
        }),
      );
    });
    const lw = kubeListerWatcher<V1ConfigMap>(kc, { version: 'v1', plural: 'secrets' });
    const err = await lw.list({}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(K8sHttpError);
    expect(err).toMatchObject({ code: 403, reason: 'Forbidden' });
    expect((err as Error).message).toContain('403 Forbidden: secrets is forbidden');
  });

  it('streams events split across chunks and closes cleanly at the end', async () => {
    let query: URLSearchParams | undefined;
    const kc = await serve((req, res) => {
      query = new URL(`http://x${req.url}`).searchParams;
      res.writeHead(200, { 'content-type': 'application/json' });
      const e1 = JSON.stringify({
        type: 'ADDED',
        object: { metadata: { name: 'a', resourceVersion: '6' }, data: { k: 'ü' } },
      });
      const e2 = JSON.stringify({
        type: 'BOOKMARK',
        object: { metadata: { resourceVersion: '9' } },
      });
      const bytes = Buffer.from(`${e1}\n${e2}\n`);
      // split inside the multi-byte character and inside a line
      const cut = bytes.indexOf(Buffer.from('ü')) + 1;
      res.write(bytes.subarray(0, cut));
      setTimeout(() => {
        res.write(bytes.subarray(cut));
        res.end();
      }, 20);
    });
    const lw = kubeListerWatcher<V1ConfigMap>(kc, { version: 'v1', plural: 'configmaps' });
    const w = watchUntilClosed<V1ConfigMap>(lw);
    expect(await w.closed).toBe('clean');
    expect(w.connected()).toBe(true);
    expect(w.events.map((e) => e.type)).toEqual(['ADDED', 'BOOKMARK']);
    expect((w.events[0]?.object as V1ConfigMap).data).toEqual({ k: 'ü' });
    expect(Object.fromEntries(query ?? [])).toEqual({
      watch: 'true',
      resourceVersion: '5',
      timeoutSeconds: '30',
      allowWatchBookmarks: 'true',
    });
  });

  it('reports a 410 on the watch request as K8sHttpError 410', async () => {
    const kc = await serve((_req, res) => {
      res.writeHead(410, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'Status',
          code: 410,
          reason: 'Expired',
          message: 'too old resource version',
        }),
      );
    });
    const w = watchUntilClosed(
      kubeListerWatcher<V1ConfigMap>(kc, { version: 'v1', plural: 'configmaps' }),
    );
    expect(await w.closed).toMatchObject({ code: 410, reason: 'Expired' });
  });

  it('reports a connection dropped mid-stream as an error', async () => {
    const kc = await serve((_req, res) => {
      res.writeHead(200);
      res.write(JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a' } } }) + '\n');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    const w = watchUntilClosed(
      kubeListerWatcher<V1ConfigMap>(kc, { version: 'v1', plural: 'configmaps' }),
    );
    const err = await w.closed;
    expect(err).toBeInstanceOf(Error);
    expect(w.events).toHaveLength(1);
  });

  it('closes a silent (half-open) watch after the idle timeout', async () => {
    const kc = await serve((_req, res) => {
      res.writeHead(200);
      res.flushHeaders();
    });
    const lw = kubeListerWatcher<V1ConfigMap>(
      kc,
      { version: 'v1', plural: 'configmaps' },
      { idleTimeoutMs: 100 },
    );
    const err = await watchUntilClosed(lw).closed;
    expect(String((err as Error).message)).toMatch(/nothing received for 100ms/);
  });

  it('fails the stream on an undecodable line', async () => {
    const kc = await serve((_req, res) => {
      res.writeHead(200);
      res.write('{not json}\n');
    });
    const err = await watchUntilClosed(
      kubeListerWatcher<V1ConfigMap>(kc, { version: 'v1', plural: 'configmaps' }),
    ).closed;
    expect(String((err as Error).message)).toMatch(/undecodable event/);
  });

  it('calls nothing after abort()', async () => {
    let calls = 0;
    const kc = await serve((_req, res) => {
      res.writeHead(200);
      const t = setInterval(
        () =>
          res.write(
            JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '1' } } }) +
              '\n',
          ),
        5,
      );
      res.on('close', () => clearInterval(t));
    });
    const lw = kubeListerWatcher<V1ConfigMap>(kc, { version: 'v1', plural: 'configmaps' });
    const h = lw.watch(
      { resourceVersion: '1', timeoutSeconds: 30, allowWatchBookmarks: true },
      { onEvent: () => void calls++, onClose: () => void (calls += 1000) },
    );
    await new Promise((r) => setTimeout(r, 50));
    h.abort();
    const at = calls;
    expect(at).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 50));
    expect(calls).toBe(at);
  });
});
