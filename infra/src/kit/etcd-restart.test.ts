// Kit.restartEtcd against a real kit: etcd goes away under a running kube-apiserver and comes
// back with its data at the same address, and the API server carries on by itself.
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { pidAlive, waitFor } from '../components/cache.js';
import { startKit, type Kit } from './index.js';

describe('Kit.restartEtcd', () => {
  let kit: Kit;
  let core: CoreV1Api;

  beforeAll(async () => {
    kit = await startKit({ clusters: ['hub'], aws: false });
    core = kit.cluster('hub').kubeConfig().makeApiClient(CoreV1Api);
  }, 180_000);

  afterAll(async () => {
    await kit?.stop();
  }, 30_000);

  it('keeps the objects, and the API server writes again once it has reconnected', async () => {
    const before = await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'before' }, data: { k: 'v' } },
    });
    // pids(): etcd first, then the API server.
    const [etcdPid, apiPid] = kit.pids();

    await kit.restartEtcd(500);

    const [newEtcdPid, sameApiPid] = kit.pids();
    expect(kit.pids()).toHaveLength(2);
    expect(newEtcdPid).not.toBe(etcdPid);
    expect(pidAlive(etcdPid!)).toBe(false);
    expect(pidAlive(newEtcdPid!)).toBe(true);
    expect(sameApiPid).toBe(apiPid);

    const cm = await waitFor(
      () => core.readNamespacedConfigMap({ namespace: 'default', name: 'before' }),
      { what: 'the ConfigMap written before the restart', timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(cm.data).toEqual({ k: 'v' });
    await waitFor(
      () =>
        core
          .createNamespacedConfigMap({
            namespace: 'default',
            body: { metadata: { name: 'after' }, data: { k: 'w' } },
          })
          .catch((err: { code?: number }) => {
            // A create that reached etcd but whose answer was lost is retried into a 409.
            if (err.code === 409) return true;
            throw err;
          }),
      { what: 'a ConfigMap write after the restart', timeoutMs: 30_000, intervalMs: 250 },
    );
    const after = await core.readNamespacedConfigMap({ namespace: 'default', name: 'after' });
    expect(after.data).toEqual({ k: 'w' });
    // The same etcd history goes on: revisions did not start over.
    expect(Number(after.metadata?.resourceVersion)).toBeGreaterThan(
      Number(before.metadata?.resourceVersion),
    );
  }, 90_000);

  it('refuses a negative downtime', async () => {
    await expect(kit.restartEtcd(-1)).rejects.toThrow(
      'restartEtcd: downMs must be a number >= 0, not -1',
    );
  });
});
