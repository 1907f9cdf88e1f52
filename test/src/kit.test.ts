import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startKit, type Kit } from '@mirrorhub/infra/kit/index';

/** Processes still alive: the kit's own list, plus anything whose command line names its dir. */
function alive(kit: Kit, pids: number[]): number[] {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  const running = out.split('\n').map((l) => ({ pid: Number(l.trim().split(/\s+/)[0]), args: l }));
  return running
    .filter((p) => pids.includes(p.pid) || (p.args.includes(kit.dir) && !p.args.includes(' ps ')))
    .map((p) => p.pid);
}

describe('local kit', () => {
  let kit: Kit;

  beforeAll(async () => {
    kit = await startKit({ clusters: ['hub', 'follower-a', 'follower-b'] });
  });

  afterAll(async () => {
    await kit?.stop();
  });

  it('starts three real API servers, each its own cluster', async () => {
    expect(kit.clusters.map((c) => c.name)).toEqual(['hub', 'follower-a', 'follower-b']);
    for (const c of kit.clusters) {
      const core = c.kubeConfig().makeApiClient(CoreV1Api);
      await core.createNamespace({ body: { metadata: { name: `only-in-${c.name}` } } });
    }
    for (const c of kit.clusters) {
      const core = c.kubeConfig().makeApiClient(CoreV1Api);
      const names = (await core.listNamespace()).items.map((n) => n.metadata?.name);
      expect(names).toContain(`only-in-${c.name}`);
      // Clusters share one etcd but not their objects.
      for (const other of kit.clusters.filter((o) => o !== c)) {
        expect(names).not.toContain(`only-in-${other.name}`);
      }
    }
  });

  it('issues service-account tokens through TokenRequest, and RBAC is enforced', async () => {
    const c = kit.cluster('follower-a');
    const core = c.kubeConfig().makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: 'team' } } });
    await core.createNamespacedServiceAccount({
      namespace: 'team',
      body: { metadata: { name: 'reader' } },
    });
    const tr = await core.createNamespacedServiceAccountToken({
      name: 'reader',
      namespace: 'team',
      body: { spec: { audiences: [], expirationSeconds: 600 } },
    });
    const token = tr.status?.token;
    expect(token).toMatch(/^ey/);
    const asReader = c.kubeConfig();
    asReader.loadFromOptions({
      clusters: [
        { name: c.name, server: c.server, caData: Buffer.from(c.caPem).toString('base64') },
      ],
      users: [{ name: 'reader', token }],
      contexts: [{ name: 'reader', cluster: c.name, user: 'reader' }],
      currentContext: 'reader',
    });
    const err = await asReader
      .makeApiClient(CoreV1Api)
      .listNamespacedSecret({ namespace: 'team' })
      .catch((e: { code?: number }) => e);
    expect((err as { code?: number }).code).toBe(403);
  });

  it('names an unknown cluster in a one-line error', () => {
    expect(() => kit.cluster('nope')).toThrow(
      'unknown cluster "nope": this kit has hub, follower-a, follower-b',
    );
  });

  it('stops every process it started', async () => {
    const pids = kit.pids();
    // etcd, three API servers, moto
    expect(pids).toHaveLength(5);
    expect(alive(kit, pids)).toHaveLength(5);
    await kit.stop();
    expect(alive(kit, pids)).toEqual([]);
    expect(existsSync(kit.dir)).toBe(false);
  });
});
