// What the hub can do in a follower with the identity it really uses there (the assumed follower
// role, mapped by the access entry to group mirrorhub-hub and bound only by the agent chart's
// hub-access Role): its job in the agent namespace, and nothing outside it.
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { canI } from '../support/serviceaccount.js';
import { MultiCluster, SYSTEM_NS } from '../support/multicluster.js';

async function status(p: Promise<unknown>): Promise<number | string> {
  try {
    await p;
    return 200;
  } catch (err) {
    if (err instanceof ApiException) return err.code;
    return (err as Error).message;
  }
}

describe("the hub's identity in a follower", () => {
  let m: MultiCluster;
  let kc: KubeConfig;

  beforeAll(async () => {
    m = await MultiCluster.start({ followers: [{ name: 'follower-a', labels: { env: 'prod' } }] });
    await m.ensureNamespace('follower-a', 'team-a');
    await m.putSecret('follower-a', 'team-a', 'db-password', { password: 'hunter2' });
    await m.putSecret('follower-a', SYSTEM_NS, 'some-payload', { k: 'v' });
    // The very KubeConfig the hub's connection and health loop use for follower-a.
    kc = await m.hub!.registry.get('follower-a')!.kubeConfig();
  });

  afterAll(async () => {
    await m?.stop();
  });

  it('is the assumed follower role, not an admin', async () => {
    const review = (await kc.makeApiClient(CustomObjectsApi).createClusterCustomObject({
      group: 'authentication.k8s.io',
      version: 'v1',
      plural: 'selfsubjectreviews',
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    })) as { status?: { userInfo?: { username?: string; groups?: string[] } } };
    const account = m.access.get('follower-a')!.accountId;
    expect(review.status?.userInfo?.username).toMatch(
      new RegExp(`^arn:aws:sts::${account}:assumed-role/mirrorhub-follower/mirrorhub-hub-`),
    );
    expect(review.status?.userInfo?.groups).toContain('mirrorhub-hub');
    expect(review.status?.userInfo?.groups).not.toContain('system:masters');
  });

  it('gets 403 reading a Secret outside the agent namespace', async () => {
    const core = kc.makeApiClient(CoreV1Api);
    expect(
      await status(core.readNamespacedSecret({ namespace: 'team-a', name: 'db-password' })),
    ).toBe(403);
    expect(await status(core.listNamespacedSecret({ namespace: 'team-a' }))).toBe(403);
    expect(await status(core.listSecretForAllNamespaces())).toBe(403);
    expect(await status(core.listNamespacedSecret({ namespace: 'kube-system' }))).toBe(403);
    expect(
      await status(
        core.createNamespacedSecret({ namespace: 'team-a', body: { metadata: { name: 'x' } } }),
      ),
    ).toBe(403);
    expect(await status(core.listNamespace())).toBe(403);
    // ... and does its job inside it.
    expect(
      await status(core.readNamespacedSecret({ namespace: SYSTEM_NS, name: 'some-payload' })),
    ).toBe(200);
  });

  it.each([
    [
      'may',
      true,
      { verb: 'create', resource: 'mirrordeliveries', group: 'mirrorhub.io', namespace: SYSTEM_NS },
    ],
    ['may', true, { verb: 'delete', resource: 'secrets', namespace: SYSTEM_NS }],
    [
      'may',
      true,
      { verb: 'get', resource: 'leases', group: 'coordination.k8s.io', namespace: SYSTEM_NS },
    ],
    [
      'may not',
      false,
      { verb: 'update', resource: 'leases', group: 'coordination.k8s.io', namespace: SYSTEM_NS },
    ],
    ['may not', false, { verb: 'get', resource: 'secrets', namespace: 'team-a' }],
    [
      'may not',
      false,
      { verb: 'create', resource: 'mirrordeliveries', group: 'mirrorhub.io', namespace: 'team-a' },
    ],
    [
      'may not',
      false,
      {
        verb: 'create',
        resource: 'rolebindings',
        group: 'rbac.authorization.k8s.io',
        namespace: SYSTEM_NS,
      },
    ],
    [
      'may not',
      false,
      {
        verb: 'update',
        resource: 'mirrordeliveries',
        group: 'mirrorhub.io',
        subresource: 'status',
        namespace: SYSTEM_NS,
      },
    ],
  ])('%s %j', async (_, allowed, attrs) => {
    expect(await canI(kc, attrs)).toBe(allowed);
  });
});
