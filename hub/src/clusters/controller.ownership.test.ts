// The MirrorCluster controller on a hub replica that owns some followers only: the others are
// registered as remote targets (so mirrors select them), never read, probed or reported on.
import { afterEach, describe, expect, it } from 'vitest';
import type { MirrorCluster } from '@mirrorhub/shared/api/index';
import { createMetrics, silentLogger } from '@mirrorhub/shared/kit/runtime/index';
import {
  startHttpStub,
  type HttpStub,
  type StubRequest,
} from '@mirrorhub/shared/testing/http-stub';
import { ClusterController } from './controller.js';
import { PendingCleanups } from './pending.js';
import { ClusterRegistry } from './registry.js';
import { DeliveryReportStore } from './reports.js';
import { localTarget } from './target.js';
import type { Ownership } from '../shards/ownership.js';

/** Ownership as a test decides it; `move` fires the listeners and waits for them. */
class FakeOwnership implements Ownership {
  private readonly listeners = new Set<(name: string, owned: boolean) => void | Promise<void>>();
  constructor(
    private readonly mine: Set<string>,
    private readonly owners: Map<string, string>,
  ) {}
  owns(name: string): boolean {
    return this.mine.has(name);
  }
  ownerOf(name: string): string | undefined {
    return this.mine.has(name) ? 'hub-1' : this.owners.get(name);
  }
  onChange(l: (name: string, owned: boolean) => void | Promise<void>): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }
  async move(name: string, owned: boolean, owner: string): Promise<void> {
    if (owned) this.mine.add(name);
    else this.mine.delete(name);
    this.owners.set(name, owner);
    await Promise.all([...this.listeners].map((l) => l(name, owned)));
  }
}

function mirrorCluster(name: string, status?: MirrorCluster['status']): MirrorCluster {
  return {
    apiVersion: 'mirrorhub.io/v1alpha1',
    kind: 'MirrorCluster',
    metadata: {
      name,
      uid: `uid-${name}`,
      generation: 1,
      resourceVersion: '5',
      labels: { env: 'prod' },
    },
    spec: {
      kubeconfigSecretRef: {
        namespace: 'hub-system',
        name: `kubeconfig-${name}`,
        key: 'kubeconfig',
      },
      agentNamespace: 'mirrorhub-system',
    },
    ...(status ? { status } : {}),
  } as MirrorCluster;
}

const REPORT = {
  replica: 'hub-2',
  items: [
    {
      delivery: 'csm-tls-1234',
      mirror: 'ClusterSecretMirror//tls',
      generation: 1,
      present: true,
      phase: 'Active' as const,
      namespaces: 2,
      synced: 2,
    },
  ],
};

let stub: HttpStub | undefined;
let controller: ClusterController | undefined;
afterEach(async () => {
  await controller?.stop();
  await stub?.close();
  controller = undefined;
  stub = undefined;
});

/** An API server holding MirrorClusters a (owned) and b (hub-2's); no kubeconfig Secrets. */
async function apiServer(): Promise<HttpStub> {
  const s = await startHttpStub();
  const clusters = [mirrorCluster('a'), mirrorCluster('b', { deliveries: REPORT })];
  s.reply = (r: StubRequest) => {
    const url = new URL(r.url, 'http://x');
    if (r.method === 'GET' && url.searchParams.get('watch') === 'true') return { status: 200 };
    if (r.method === 'GET' && url.pathname.endsWith('/mirrorclusters')) {
      return { status: 200, body: { metadata: { resourceVersion: '5' }, items: clusters } };
    }
    if (r.method === 'GET' && url.pathname.endsWith('/secrets')) {
      return { status: 200, body: { metadata: { resourceVersion: '5' }, items: [] } };
    }
    if (r.method === 'PATCH') {
      const name = url.pathname.split('/').at(-2) ?? '';
      const mc = clusters.find((c) => c.metadata.name === name)!;
      const body = r.json as { status: MirrorCluster['status'] };
      return { status: 200, body: { ...mc, status: { ...mc.status, ...body.status } } };
    }
    return { status: 201, body: {} };
  };
  return s;
}

function start(s: HttpStub, ownership: Ownership, reports?: DeliveryReportStore) {
  const registry = new ClusterRegistry();
  const local = localTarget({
    name: 'hub',
    agentNamespace: 'mirrorhub-system',
    kubeConfig: s.access,
  });
  registry.set(local);
  controller = new ClusterController({
    kubeConfig: s.access,
    registry,
    localTarget: local,
    hubClusterName: 'hub',
    identity: 'hub-1',
    logger: silentLogger(),
    metrics: createMetrics({ component: 'hub', defaultMetrics: false }),
    pending: new PendingCleanups(),
    ownership,
    ...(reports ? { reports } : {}),
  });
  return { registry, controller };
}

const touching = (s: HttpStub, name: string) =>
  s.requests.filter(
    (r) => r.url.includes(`kubeconfig-${name}`) || r.url.includes(`/mirrorclusters/${name}`),
  );

describe('ClusterController with ownership', () => {
  it('registers a follower it does not own as a remote target and never reads, probes or reports on it', async () => {
    stub = await apiServer();
    const ownership = new FakeOwnership(new Set(['a']), new Map([['b', 'hub-2']]));
    const { registry, controller: c } = start(stub, ownership);
    await c.start();
    await c.idle();

    const b = registry.get('b');
    expect(b).toMatchObject({
      name: 'b',
      agentNamespace: 'mirrorhub-system',
      labels: { env: 'prod' },
      local: false,
      remote: { owner: 'hub-2', report: REPORT },
    });
    await expect(b!.kubeConfig()).rejects.toThrow(/owned by hub replica hub-2/);
    expect(touching(stub, 'b')).toEqual([]);
    // The follower it owns: its kubeconfig Secret is watched and its status written.
    expect(registry.get('a')?.remote).toBeUndefined();
    expect(touching(stub, 'a').some((r) => r.method === 'PATCH')).toBe(true);
  });

  it('takes a follower it gains, and hands one it loses over as a remote target', async () => {
    stub = await apiServer();
    const ownership = new FakeOwnership(new Set(['a']), new Map([['b', 'hub-2']]));
    const { registry, controller: c } = start(stub, ownership);
    await c.start();
    await c.idle();

    await ownership.move('b', true, 'hub-1');
    await c.idle();
    expect(registry.get('b')?.remote).toBeUndefined();
    expect(touching(stub, 'b').some((r) => r.method === 'PATCH')).toBe(true);

    await ownership.move('a', false, 'hub-3');
    await c.idle();
    expect(registry.get('a')?.remote).toMatchObject({ owner: 'hub-3' });
    const before = touching(stub, 'a').length;
    await c.idle();
    expect(touching(stub, 'a').length).toBe(before);
  });

  it('writes the reports of its followers to their status, and none while it has none', async () => {
    stub = await apiServer();
    const reports = new DeliveryReportStore({ coalesceMs: 0 });
    const ownership = new FakeOwnership(new Set(['a']), new Map([['b', 'hub-2']]));
    const { controller: c } = start(stub, ownership, reports);
    await c.start();
    await c.idle();
    const patches = () =>
      touching(stub!, 'a')
        .filter((r) => r.method === 'PATCH')
        .map((r) => (r.json as { status: MirrorCluster['status'] }).status);
    expect(patches().every((s) => s?.deliveries === undefined)).toBe(true);

    reports.set('a', REPORT.items[0]!);
    await new Promise((r) => setTimeout(r, 10));
    await c.idle();
    expect(patches().at(-1)?.deliveries).toEqual({ replica: 'hub-1', items: REPORT.items });
  });
});
