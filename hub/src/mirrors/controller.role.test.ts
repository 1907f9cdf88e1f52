// The mirror controller on a hub replica that does not lead: it applies the plans for the
// followers it owns once the mirror holds the hub's finalizer, reports what it holds there, and
// writes no status, finalizer or Event.
import { generateKeyPairSync } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { ClusterSecretMirror } from '@mirrorhub/shared/api/index';
import { createSigner } from '@mirrorhub/shared/mirror/signing';
import { createMetrics, silentLogger } from '@mirrorhub/shared/kit/runtime/index';
import {
  startHttpStub,
  type HttpStub,
  type StubRequest,
} from '@mirrorhub/shared/testing/http-stub';
import { ClusterRegistry } from '../clusters/registry.js';
import { DeliveryReportStore } from '../clusters/reports.js';
import type { ClusterTarget } from '../clusters/target.js';
import { HUB_FINALIZER } from '../names.js';
import type { Ownership, Role } from '../shards/ownership.js';
import { VaultConnections, vaultRequests } from '../vault/connections.js';
import { MirrorController } from './controller.js';

const FOLLOWING: Role = { leading: () => false, onChange: () => () => undefined };
/** Owns follower "b" only. */
const OWNS_B: Ownership = {
  owns: (name) => name === 'b',
  ownerOf: (name) => (name === 'b' ? 'hub-2' : 'hub-1'),
  onChange: () => () => undefined,
};
const SIGNER = createSigner(
  generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
);

function mirror(finalizers: string[]): ClusterSecretMirror {
  return {
    apiVersion: 'mirrorhub.io/v1alpha1',
    kind: 'ClusterSecretMirror',
    metadata: {
      name: 'tls',
      uid: 'uid-tls',
      generation: 1,
      resourceVersion: '5',
      finalizers,
    },
    spec: {
      source: { kind: 'Secret', name: 'tls', namespace: 'src' },
      destination: { namespaces: ['app-.*'], clusters: { names: ['a', 'b'] } },
    },
  } as unknown as ClusterSecretMirror;
}

let stub: HttpStub | undefined;
let stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.reverse()) await s();
  stops = [];
  await stub?.close();
  stub = undefined;
});

/** One stub plays the hub's cluster and follower b (distinct paths: the agent namespace). */
async function apiServer(m: ClusterSecretMirror): Promise<HttpStub> {
  const s = await startHttpStub();
  const list = (items: unknown[]) => ({
    status: 200,
    body: { metadata: { resourceVersion: '5' }, items },
  });
  s.reply = (r: StubRequest) => {
    const url = new URL(r.url, 'http://x');
    const path = url.pathname;
    if (r.method === 'GET' && url.searchParams.get('watch') === 'true') return { status: 200 };
    if (r.method === 'GET') {
      if (path.endsWith('/clustersecretmirrors')) return list([m]);
      if (path === '/api/v1/namespaces/src/secrets') {
        return list([
          {
            metadata: { name: 'tls', namespace: 'src', uid: 'uid-src', resourceVersion: '3' },
            type: 'Opaque',
            data: { password: Buffer.from('s3cret').toString('base64') },
          },
        ]);
      }
      if (/\/(mirrordeliveries|secrets)\/[^/]+$/.test(path)) {
        return { status: 404, body: { kind: 'Status', code: 404, reason: 'NotFound' } };
      }
      return list([]);
    }
    return { status: 201, body: { ...(r.json as object), metadata: { resourceVersion: '6' } } };
  };
  return s;
}

async function start(s: HttpStub, reports: DeliveryReportStore) {
  const logger = silentLogger();
  const metrics = createMetrics({ component: 'hub', defaultMetrics: false });
  const registry = new ClusterRegistry();
  const target = (name: string, o: Partial<ClusterTarget> = {}): ClusterTarget => ({
    name,
    agentNamespace: 'mirrorhub-system',
    labels: {},
    local: false,
    type: 'Kubeconfig',
    kubeConfig: () => Promise.resolve(s.access),
    ...o,
  });
  registry.set(target('hub', { local: true, type: 'InCluster' }));
  registry.set(target('a', { remote: { owner: 'hub-1', report: undefined } }));
  registry.set(target('b'));
  const vaultConnections = new VaultConnections({
    kubeConfig: s.access,
    onChange: () => undefined,
    identity: 'hub-2',
    logger,
    metrics,
    requests: vaultRequests(metrics),
    role: FOLLOWING,
  });
  const c = new MirrorController({
    kubeConfig: s.access,
    registry,
    originCluster: 'hub',
    hubSecret: Buffer.alloc(32, 1),
    signer: SIGNER,
    identity: 'hub-2',
    logger,
    metrics,
    vaultConnections,
    ownership: OWNS_B,
    role: FOLLOWING,
    reports,
  });
  stops.push(() => c.stop());
  await c.start();
  return c;
}

/** Requests that write (anything but a GET), by path. */
const writes = (s: HttpStub) =>
  s.requests.filter((r) => r.method !== 'GET').map((r) => `${r.method} ${r.url.split('?')[0]}`);

/** Wait until `check` holds (each look lets the controller's asynchronous work move on). */
async function eventually(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(check()).toBe(true);
}

describe('MirrorController on a replica that does not lead', () => {
  it('writes nothing before the leader set the finalizer: no status, no finalizer, no delivery', async () => {
    stub = await apiServer(mirror([]));
    const reports = new DeliveryReportStore({ coalesceMs: 0 });
    const c = await start(stub, reports);
    await eventually(() => reports.list('b').length > 0);
    await c.idle();
    expect(writes(stub)).toEqual([]);
    expect(reports.list('b')[0]).toMatchObject({
      mirror: 'ClusterSecretMirror//tls',
      present: false,
    });
    expect(reports.list('a')).toEqual([]);
  });

  it('delivers to the follower it owns once the mirror holds the finalizer, and only there', async () => {
    stub = await apiServer(mirror([HUB_FINALIZER]));
    const reports = new DeliveryReportStore({ coalesceMs: 0 });
    const c = await start(stub, reports);
    await eventually(() => writes(stub!).some((w) => w.includes('/mirrordeliveries')));
    await c.idle();
    const all = writes(stub);
    // Only the agent namespace of its follower: no mirror status or finalizer, no Event.
    expect(all.every((w) => w.includes('/namespaces/mirrorhub-system/'))).toBe(true);
    expect(all.some((w) => w.includes('clustersecretmirrors'))).toBe(false);
    expect(all.some((w) => w.includes('events'))).toBe(false);
    expect(JSON.stringify(reports.list('b'))).not.toContain('s3cret');
  });
});
