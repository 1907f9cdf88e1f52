import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiException, KubeConfig } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../runtime/clock.js';
import { errorMessage } from '../runtime/errors.js';
import {
  applyStatus,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isNotFound,
  isRetriable,
  isUnauthorized,
  makeClients,
  mergePatchStatus,
  objectKey,
  retryOnConflict,
  splitKey,
} from './client.js';
import { K8sHttpError } from './listwatch.js';
import { FIELD_MANAGER } from '../contract.js';

function apiErr(code: number, reason?: string, message = 'x'): ApiException<string> {
  return new ApiException(
    code,
    'msg',
    JSON.stringify({ kind: 'Status', code, reason, message }),
    {},
  );
}

describe('error predicates', () => {
  const cases: [string, unknown, Record<string, boolean>][] = [
    ['404 NotFound', apiErr(404, 'NotFound'), { isNotFound: true }],
    ['409 Conflict', apiErr(409, 'Conflict'), { isConflict: true }],
    ['409 AlreadyExists', apiErr(409, 'AlreadyExists'), { isAlreadyExists: true }],
    ['409 without body', new ApiException(409, 'm', undefined, {}), { isConflict: true }],
    ['410 Expired', apiErr(410, 'Expired'), { isGone: true }],
    ['403 Forbidden', apiErr(403, 'Forbidden'), { isForbidden: true }],
    ['401 Unauthorized', apiErr(401, 'Unauthorized'), { isUnauthorized: true }],
    ['500', apiErr(500, 'InternalError'), { isRetriable: true }],
    ['429', apiErr(429, 'TooManyRequests'), { isRetriable: true }],
    ['transport 410', new K8sHttpError(410, { reason: 'Expired' }, 'watch'), { isGone: true }],
    [
      'transport 409 AlreadyExists',
      new K8sHttpError(409, { reason: 'AlreadyExists' }, 'x'),
      { isAlreadyExists: true },
    ],
    ['network error', new Error('ECONNRESET'), { isRetriable: true }],
    ['undefined', undefined, { isRetriable: true }],
  ];
  const preds = {
    isNotFound,
    isConflict,
    isAlreadyExists,
    isGone,
    isForbidden,
    isUnauthorized,
    isRetriable,
  };
  it.each(cases)('%s', (_name, err, truthy) => {
    for (const [name, p] of Object.entries(preds)) expect(p(err), name).toBe(truthy[name] ?? false);
  });

  it('summarises API errors without the body dump', () => {
    expect(errorMessage(apiErr(409, 'Conflict', 'the object has been modified'))).toBe(
      '409 Conflict: the object has been modified',
    );
  });
});

describe('retryOnConflict', () => {
  it.each([
    { name: 'succeeds first time', failures: [], calls: 1, ok: true },
    { name: 'retries conflicts', failures: [409, 409], calls: 3, ok: true },
    { name: 'gives up after steps', failures: [409, 409, 409, 409, 409, 409], calls: 5, ok: false },
    { name: 'does not retry other errors', failures: [500], calls: 1, ok: false },
    { name: 'does not retry AlreadyExists', failures: ['exists'], calls: 1, ok: false },
  ])('$name', async ({ failures, calls, ok }) => {
    const clock = new FakeClock();
    let n = 0;
    const p = retryOnConflict(
      async () => {
        const f = failures[n++];
        if (f === 'exists') throw apiErr(409, 'AlreadyExists');
        if (f !== undefined) throw apiErr(f as number, f === 409 ? 'Conflict' : 'InternalError');
        return 'done';
      },
      { clock, random: () => 0 },
    );
    const settled = p.then(
      (v) => ({ ok: true, v }),
      (e: unknown) => ({ ok: false, e }),
    );
    for (let i = 0; i < 10; i++) await clock.tick();
    expect((await settled).ok).toBe(ok);
    expect(n).toBe(calls);
  });
});

describe('keys', () => {
  it.each([
    [{ metadata: { name: 'a', namespace: 'ns' } }, 'ns/a'],
    [{ metadata: { name: 'cluster-scoped' } }, 'cluster-scoped'],
  ])('objectKey(%j) = %s and back', (obj, key) => {
    expect(objectKey(obj)).toBe(key);
    expect(splitKey(key)).toEqual(obj.metadata);
  });
});

describe('status patches send the right Content-Type', () => {
  let server: http.Server | undefined;
  afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

  async function capture(): Promise<{
    kc: KubeConfig;
    seen: { method?: string; url?: string; type?: string; body: string }[];
  }> {
    const seen: { method?: string; url?: string; type?: string; body: string }[] = [];
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ method: req.method, url: req.url, type: req.headers['content-type'], body });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            apiVersion: 'mirrorhub.io/v1alpha1',
            kind: 'SecretMirror',
            metadata: { name: 'm' },
          }),
        );
      });
    });
    await new Promise<void>((r) => server?.listen(0, '127.0.0.1', () => r()));
    const port = (server?.address() as AddressInfo).port;
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'c', cluster: 'c', user: 'u' }],
      currentContext: 'c',
    });
    return { kc, seen };
  }

  const ref = {
    group: 'mirrorhub.io',
    version: 'v1alpha1',
    plural: 'secretmirrors',
    namespace: 'team-a',
    name: 'm',
  };

  it('JSON merge patch for mergePatchStatus', async () => {
    const { kc, seen } = await capture();
    const { custom } = makeClients(kc);
    await mergePatchStatus(
      custom,
      ref,
      { phase: 'Active' },
      { fieldManager: FIELD_MANAGER.hub, resourceVersion: '42' },
    );
    expect(seen[0]).toMatchObject({ method: 'PATCH', type: 'application/merge-patch+json' });
    expect(seen[0]?.url).toBe(
      '/apis/mirrorhub.io/v1alpha1/namespaces/team-a/secretmirrors/m/status?fieldManager=mirrorhub-hub',
    );
    expect(JSON.parse(seen[0]?.body ?? '')).toEqual({
      status: { phase: 'Active' },
      metadata: { resourceVersion: '42' },
    });
  });

  it('server-side apply for applyStatus, cluster-scoped too', async () => {
    const { kc, seen } = await capture();
    const { custom } = makeClients(kc);
    const { namespace: _ns, ...clusterRef } = ref;
    await applyStatus(
      custom,
      { ...clusterRef, plural: 'clustersecretmirrors' },
      { phase: 'Error' },
      {
        fieldManager: FIELD_MANAGER.hub,
        apiVersion: 'mirrorhub.io/v1alpha1',
        kind: 'ClusterSecretMirror',
      },
    );
    expect(seen[0]).toMatchObject({ method: 'PATCH', type: 'application/apply-patch+yaml' });
    expect(seen[0]?.url).toBe(
      '/apis/mirrorhub.io/v1alpha1/clustersecretmirrors/m/status?fieldManager=mirrorhub-hub&force=true',
    );
    expect(JSON.parse(seen[0]?.body ?? '')).toEqual({
      apiVersion: 'mirrorhub.io/v1alpha1',
      kind: 'ClusterSecretMirror',
      metadata: { name: 'm' },
      status: { phase: 'Error' },
    });
  });

  it('does not leak the override into later calls on the same client', async () => {
    const { kc, seen } = await capture();
    const { custom } = makeClients(kc);
    await mergePatchStatus(custom, ref, { phase: 'Active' }, { fieldManager: 'x' });
    await custom.patchNamespacedCustomObjectStatus({
      ...ref,
      body: [{ op: 'add', path: '/status/x', value: 1 }],
    });
    expect(seen.map((s) => s.type)).toEqual([
      'application/merge-patch+json',
      'application/json-patch+json',
    ]);
  });
});
