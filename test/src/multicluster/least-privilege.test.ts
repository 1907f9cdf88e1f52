// What the hub can do in a follower with the identity it really uses there (the assumed follower
// role, mapped by the access entry to group mirrorhub-hub and bound only by the agent chart's
// hub-access Role): its job in the agent namespace, and nothing outside it.
import type { V1ResourceAttributes } from '@kubernetes/client-node';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';
import { corePath, groupPath, KubeApiError, RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { MirrorDelivery } from '@mirrorhub/shared/api/index';
import { consistently, eventually } from '../support/eventually.js';
import { MultiCluster, SYSTEM_NS } from '../support/multicluster.js';

async function status(p: Promise<unknown>): Promise<number | string> {
  try {
    await p;
    return 200;
  } catch (err) {
    if (err instanceof KubeApiError) return err.code;
    return (err as Error).message;
  }
}

describe("the hub's identity in a follower", () => {
  let m: MultiCluster;
  let kc: KubeAccess;
  let rest: RestClient;

  async function canI(attrs: V1ResourceAttributes): Promise<boolean> {
    const review = await rest.post<{ status?: { allowed?: boolean } }>(
      groupPath('authorization.k8s.io', 'v1', 'selfsubjectaccessreviews'),
      {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectAccessReview',
        spec: { resourceAttributes: attrs },
      },
    );
    return review.status?.allowed === true;
  }

  beforeAll(async () => {
    m = await MultiCluster.start({ followers: [{ name: 'follower-a', labels: { env: 'prod' } }] });
    await m.ensureNamespace('follower-a', 'team-a');
    await m.putSecret('follower-a', 'team-a', 'db-password', { password: 'hunter2' });
    await m.putSecret('follower-a', SYSTEM_NS, 'some-payload', { k: 'v' });
    // The very KubeAccess the hub's connection and health loop use for follower-a.
    kc = await m.hub!.registry.get('follower-a')!.kubeConfig();
    rest = new RestClient(kc);
  });

  afterAll(async () => {
    rest?.close();
    await m?.stop();
  });

  it('is the assumed follower role, not an admin', async () => {
    const review = await rest.post<{
      status?: { userInfo?: { username?: string; groups?: string[] } };
    }>(groupPath('authentication.k8s.io', 'v1', 'selfsubjectreviews'), {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'SelfSubjectReview',
    });
    const account = m.access.get('follower-a')!.accountId;
    expect(review.status?.userInfo?.username).toMatch(
      new RegExp(`^arn:aws:sts::${account}:assumed-role/mirrorhub-follower/mirrorhub-hub-`),
    );
    expect(review.status?.userInfo?.groups).toContain('mirrorhub-hub');
    expect(review.status?.userInfo?.groups).not.toContain('system:masters');
  });

  it('gets 403 reading a Secret outside the agent namespace', async () => {
    expect(await status(rest.get(corePath('secrets', 'team-a', 'db-password')))).toBe(403);
    expect(await status(rest.get(corePath('secrets', 'team-a')))).toBe(403);
    expect(await status(rest.get(corePath('secrets')))).toBe(403);
    expect(await status(rest.get(corePath('secrets', 'kube-system')))).toBe(403);
    expect(
      await status(
        rest.post(corePath('secrets', 'team-a'), {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'x' },
        }),
      ),
    ).toBe(403);
    expect(await status(rest.get(corePath('namespaces')))).toBe(403);
    // ... and does its job inside it.
    expect(await status(rest.get(corePath('secrets', SYSTEM_NS, 'some-payload')))).toBe(200);
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
    expect(await canI(attrs)).toBe(allowed);
  });

  // The attack of the security review, replayed as this identity: it may write a MirrorDelivery
  // in the agent namespace, but without the hub's signing key the agent does nothing for it.
  it('cannot make the agent overwrite or delete a Secret in kube-system', async () => {
    expect(await canI({ verb: 'create', resource: 'secrets', namespace: 'kube-system' })).toBe(
      false,
    );
    await m.putSecret('follower-a', 'kube-system', 'victim', { token: 'original' });
    const deliveries = groupPath('mirrorhub.io', 'v1alpha1', 'mirrordeliveries', SYSTEM_NS);
    await rest.post(corePath('secrets', SYSTEM_NS), {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'attack', labels: { 'mirrorhub.io/payload': 'true' } },
      type: 'Opaque',
      data: { token: Buffer.from('attacker').toString('base64') },
    });
    await rest.post(deliveries, {
      apiVersion: 'mirrorhub.io/v1alpha1',
      kind: 'MirrorDelivery',
      metadata: { name: 'attack' },
      spec: {
        mirror: { kind: 'ClusterSecretMirror', name: 'attack', uid: 'x' },
        originCluster: 'hub',
        payloadSecretName: 'attack',
        target: { kind: 'Secret', name: 'victim' },
        namespaces: ['kube-system'],
        conflictPolicy: 'Adopt',
        contentHash: 'forged',
      },
    });
    const report = await eventually(async () => {
      const d = await rest.get<MirrorDelivery>(`${deliveries}/attack`);
      expect(d.status?.phase).toBe('Error');
      return d;
    });
    expect(report.status?.message).toMatch(/^SignatureInvalid: nothing is written/);
    await consistently(
      async () =>
        expect(await m.secretData('follower-a', 'kube-system', 'victim')).toEqual({
          token: 'original',
        }),
      { forMs: 2_000 },
    );
    await rest.delete(`${deliveries}/attack`);
    await eventually(async () => expect(await status(rest.get(`${deliveries}/attack`))).toBe(404));
    expect(await m.secretData('follower-a', 'kube-system', 'victim')).toEqual({
      token: 'original',
    });
  });
});
