// The kit's AWS fault hooks, wired end to end: KitAws.outage for STS and EKS, and
// KitOptions.awsLifetimeSeconds reaching the STS gate and the API server's TokenReview webhook.
import { CreateAccessEntryCommand, DescribeClusterCommand, EKSClient } from '@aws-sdk/client-eks';
import { CoreV1Api } from '@kubernetes/client-node';
import { mintEksToken, type AwsCredentials } from '@mirrorhub/hub/clusters/aws/eks-token';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  assumeRole,
  createRole,
  createUserWithAccessKey,
  getCallerIdentity,
  trustPolicy,
  type Principal,
} from '../aws/moto.js';
import { startKit, type Kit, type KitAws, type KitCluster } from './index.js';

const LIFETIME_S = 120;

describe('KitAws fault hooks', () => {
  let kit: Kit;
  let aws: KitAws;
  let hub: KitCluster;
  let ops: Principal;
  let roleArn: string;

  const eks = () =>
    new EKSClient({
      endpoint: aws.eksEndpoint,
      region: aws.region,
      credentials: ops.credentials,
      maxAttempts: 1,
    });

  /** The HTTP status of a namespace list with an EKS token: 403 authenticated, 401 not. */
  const statusWith = async (credentials: AwsCredentials, signedAt: Date) => {
    const { token } = await mintEksToken({
      clusterName: 'hub',
      region: aws.region,
      credentials,
      now: () => signedAt,
    });
    const kc = hub.kubeConfig();
    kc.loadFromOptions({
      clusters: [
        { name: 'hub', server: hub.server, caData: Buffer.from(hub.caPem).toString('base64') },
      ],
      users: [{ name: 'eks', token }],
      contexts: [{ name: 'eks', cluster: 'hub', user: 'eks' }],
      currentContext: 'eks',
    });
    const err = (await kc
      .makeApiClient(CoreV1Api)
      .listNamespace()
      .then(
        () => ({ code: 200 }),
        (e: unknown) => e,
      )) as { code?: number };
    return err.code;
  };

  beforeAll(async () => {
    kit = await startKit({ clusters: ['hub'], awsLifetimeSeconds: LIFETIME_S });
    aws = kit.aws!;
    hub = kit.cluster('hub');
    ops = await createUserWithAccessKey(aws.motoEndpoint, {
      accountId: hub.accountId,
      userName: 'ops',
    });
    roleArn = (
      await createRole(aws.motoEndpoint, {
        accountId: hub.accountId,
        roleName: 'reader',
        trustPolicy: trustPolicy({ principals: [ops.arn] }),
      })
    ).arn;
    // An access entry without policies: its tokens authenticate, and RBAC then says 403.
    await eks().send(new CreateAccessEntryCommand({ clusterName: 'hub', principalArn: roleArn }));
  }, 180_000);

  afterAll(async () => {
    await kit?.stop();
  }, 30_000);

  const session = () =>
    assumeRole(aws.stsEndpoint, { credentials: ops.credentials, roleArn, sessionName: 'ops' });

  it('awsLifetimeSeconds shortens sessions and EKS tokens', async () => {
    const t0 = Date.now();
    const s = await session();
    expect(s.expiration.getTime()).toBeGreaterThanOrEqual(t0 - 1000 + LIFETIME_S * 1000);
    expect(s.expiration.getTime()).toBeLessThanOrEqual(Date.now() + LIFETIME_S * 1000);
    expect(await statusWith(s, new Date())).toBe(403);
    expect(await statusWith(s, new Date(Date.now() - (LIFETIME_S + 30) * 1000))).toBe(401);
  }, 60_000);

  it('an STS outage refuses STS, then ends', async () => {
    const before = aws.refused('sts');
    aws.outage('sts', true);
    try {
      await expect(getCallerIdentity(aws.stsEndpoint, ops.credentials)).rejects.toMatchObject({
        name: 'ServiceUnavailable',
        $metadata: { httpStatusCode: 503 },
      });
      expect(aws.refused('sts')).toBeGreaterThan(before);
      // moto itself stays reachable for administration.
      expect((await getCallerIdentity(aws.motoEndpoint, ops.credentials)).arn).toBe(ops.arn);
    } finally {
      aws.outage('sts', false);
    }
    expect((await getCallerIdentity(aws.stsEndpoint, ops.credentials)).arn).toBe(ops.arn);
  }, 60_000);

  it('an EKS outage refuses the EKS API while the cluster still authenticates tokens', async () => {
    const s = await session();
    const before = aws.refused('eks');
    aws.outage('eks', true);
    try {
      await expect(eks().send(new DescribeClusterCommand({ name: 'hub' }))).rejects.toMatchObject({
        name: 'ServiceUnavailableException',
        $metadata: { httpStatusCode: 503 },
      });
      expect(aws.refused('eks')).toBe(before + 1);
      expect(await statusWith(s, new Date())).toBe(403);
    } finally {
      aws.outage('eks', false);
    }
    const { cluster } = await eks().send(new DescribeClusterCommand({ name: 'hub' }));
    expect(cluster?.endpoint).toBe(hub.server);
  }, 60_000);

  it('describeEndpoint changes what DescribeCluster answers, and refuses an unknown cluster', async () => {
    const describe = async () =>
      (await eks().send(new DescribeClusterCommand({ name: 'hub' }))).cluster?.endpoint;
    aws.describeEndpoint('hub', 'https://127.0.0.1:1');
    try {
      expect(await describe()).toBe('https://127.0.0.1:1');
    } finally {
      aws.describeEndpoint('hub', hub.server);
    }
    expect(await describe()).toBe(hub.server);
    expect(() => aws.describeEndpoint('nope', 'https://127.0.0.1:1')).toThrow(
      /unknown cluster "nope": this kit has hub/,
    );
  });
});
