// KitOptions.sharing against real kube-apiservers: clusters that are EKS clusters of their own
// (account, access entries, tokens) served by another cluster's API server, and the call counts
// KitAws.calls() reports.
import {
  AssociateAccessPolicyCommand,
  CreateAccessEntryCommand,
  DescribeClusterCommand,
  EKSClient,
} from '@aws-sdk/client-eks';
import { AuthenticationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { mintEksToken, type AwsCredentials } from '@mirrorhub/hub/clusters/aws/eks-token';
import { kubeConfigForCluster } from '@mirrorhub/infra/aws/eks-kubeconfig';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { assumeRole, createRole, createUserWithAccessKey, trustPolicy } from '../aws/moto.js';
import { KitError, startKit, validateSharing, type Kit, type KitAws } from './index.js';

const CLUSTERS = ['host', 'guest-a', 'guest-b', 'solo'];

describe('validateSharing', () => {
  it.each([
    [
      'a sharing cluster missing from clusters',
      { nope: 'host' },
      /^sharing names cluster "nope", which is not in clusters \(the clusters are host, guest-a, guest-b, solo\): add it to clusters or remove it from sharing$/,
    ],
    [
      'a host missing from clusters',
      { 'guest-a': 'nope' },
      /^cluster "guest-a" shares the API server of "nope", which is not in clusters \(.*\): add "nope" to clusters or share another's$/,
    ],
    [
      'a host that shares itself',
      { 'guest-a': 'host', 'guest-b': 'guest-a' },
      /^cluster "guest-b" shares the API server of "guest-a", which shares that of "host" itself: share "host" instead$/,
    ],
    [
      'a cluster sharing its own API server',
      { solo: 'solo' },
      /^cluster "solo" cannot share its own API server: remove it from sharing$/,
    ],
  ])('refuses %s', (_what, sharing, message) => {
    expect(() => validateSharing(CLUSTERS, sharing)).toThrow(KitError);
    expect(() => validateSharing(CLUSTERS, sharing)).toThrow(message);
  });

  it('is what startKit checks, before it starts anything', async () => {
    await expect(
      startKit({ clusters: CLUSTERS, sharing: { 'guest-a': 'nope' }, aws: false }),
    ).rejects.toThrow(/shares the API server of "nope", which is not in clusters/);
  });
});

describe('clusters sharing an API server', () => {
  let kit: Kit;
  let aws: KitAws;
  let roleArn: string;
  let session: AwsCredentials;
  /** A user in each cluster's account that may call its EKS API. */
  const admins: Record<string, AwsCredentials> = {};

  const eks = (cluster: string) =>
    new EKSClient({
      endpoint: aws.eksEndpoint,
      region: aws.region,
      credentials: admins[cluster]!,
      maxAttempts: 1,
    });

  /** A client for `server`'s API server (a cluster name) with a token minted for `mintedFor`. */
  const asRole = (server: string, mintedFor: string) => {
    const c = kit.cluster(server);
    return kubeConfigForCluster({
      name: server,
      server: c.server,
      caPem: c.caPem,
      token: async () =>
        (await mintEksToken({ clusterName: mintedFor, region: aws.region, credentials: session }))
          .token,
    });
  };
  const groups = async (server: string, mintedFor: string) =>
    (
      await asRole(server, mintedFor)
        .makeApiClient(AuthenticationV1Api)
        .createSelfSubjectReview({ body: {} })
    ).status?.userInfo?.groups;
  /** The HTTP status of a namespace list: 200, 403 (authenticated) or 401 (not). */
  const listStatus = (server: string, mintedFor: string) =>
    asRole(server, mintedFor)
      .makeApiClient(CoreV1Api)
      .listNamespace()
      .then(
        () => 200,
        (e: { code?: number }) => e.code,
      );

  beforeAll(async () => {
    kit = await startKit({ clusters: CLUSTERS, sharing: { 'guest-a': 'host', 'guest-b': 'host' } });
    aws = kit.aws!;
    const hub = await createUserWithAccessKey(aws.motoEndpoint, {
      accountId: kit.cluster('host').accountId,
      userName: 'hub',
    });
    for (const c of kit.clusters) {
      admins[c.name] = (
        await createUserWithAccessKey(aws.motoEndpoint, {
          accountId: c.accountId,
          userName: 'platform-admin',
        })
      ).credentials;
    }
    // One role (in guest-a's account) with an entry in host, guest-a and solo, none in guest-b.
    roleArn = (
      await createRole(aws.motoEndpoint, {
        accountId: kit.cluster('guest-a').accountId,
        roleName: 'follower',
        trustPolicy: trustPolicy({ principals: [hub.arn] }),
      })
    ).arn;
    for (const c of ['host', 'guest-a', 'solo']) {
      await eks(c).send(
        new CreateAccessEntryCommand({
          clusterName: c,
          principalArn: roleArn,
          kubernetesGroups: [`team-${c}`],
        }),
      );
    }
    await eks('guest-a').send(
      new AssociateAccessPolicyCommand({
        clusterName: 'guest-a',
        principalArn: roleArn,
        policyArn: 'arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy',
        accessScope: { type: 'cluster' },
      }),
    );
    session = await assumeRole(aws.stsEndpoint, {
      credentials: hub.credentials,
      roleArn,
      sessionName: 'hub',
    });
  }, 180_000);

  afterAll(async () => {
    await kit?.stop();
  }, 30_000);

  it("a sharing cluster has its own name and account, and its host's API server", async () => {
    const [host, a, b, solo] = CLUSTERS.map((n) => kit.cluster(n));
    expect(kit.clusters.map((c) => [c.name, c.host, c.accountId])).toEqual([
      ['host', 'host', '111111111111'],
      ['guest-a', 'host', '222222222222'],
      ['guest-b', 'host', '333333333333'],
      ['solo', 'solo', '444444444444'],
    ]);
    for (const c of [a!, b!]) {
      expect([c.server, c.port, c.caPem, c.kubeconfigPath, c.running()]).toEqual([
        host!.server,
        host!.port,
        host!.caPem,
        host!.kubeconfigPath,
        true,
      ]);
    }
    expect(solo!.server).not.toBe(host!.server);
    // etcd, two API servers, moto.
    expect(new Set(kit.pids()).size).toBe(4);
    expect(kit.pids()).toHaveLength(4);
    await expect(a!.stopApiServer()).rejects.toThrow(
      new KitError('cluster guest-a shares the API server of host: stop host'),
    );
    await expect(a!.startApiServer()).rejects.toThrow(/: start host$/);
    expect(host!.running()).toBe(true);
    // The admin kubeconfig of a sharing cluster reaches the host's API server.
    await a!.kubeConfig().makeApiClient(CoreV1Api).readNamespace({ name: 'default' });
  });

  it("the host's API server takes a sharing cluster's token with that cluster's access entry", async () => {
    const groupOf = (cluster: string, account: string) =>
      `eks-access-entry:${cluster}${account}:role/follower`;
    const account = kit.cluster('guest-a').accountId;
    expect(await groups('host', 'guest-a')).toEqual(
      expect.arrayContaining(['team-guest-a', groupOf('guest-a:', account)]),
    );
    expect(await groups('host', 'guest-a')).not.toContain('team-host');
    // The host's own entry for the same role: its own groups, unchanged in form.
    expect(await groups('host', 'host')).toEqual(
      expect.arrayContaining(['team-host', groupOf('', account)]),
    );
    expect(await groups('host', 'host')).not.toContain('team-guest-a');
    // guest-a's view policy is bound to guest-a's entry group only.
    expect(await listStatus('host', 'guest-a')).toBe(200);
    expect(await listStatus('host', 'host')).toBe(403);
  });

  it('refuses a token for a cluster without an entry for the role, or on another API server', async () => {
    expect(await listStatus('host', 'guest-b')).toBe(401);
    expect(await listStatus('host', 'solo')).toBe(401);
    expect(await listStatus('solo', 'guest-a')).toBe(401);
    // solo takes its own, so the refusals above are about where the token was presented.
    expect(await groups('solo', 'solo')).toContain('team-solo');
  });

  it('counts AssumeRole by role ARN and DescribeCluster by cluster name', async () => {
    const before = aws.calls();
    const { cluster } = await eks('guest-a').send(new DescribeClusterCommand({ name: 'guest-a' }));
    expect(cluster).toMatchObject({
      name: 'guest-a',
      arn: `arn:aws:eks:${aws.region}:222222222222:cluster/guest-a`,
      endpoint: kit.cluster('host').server,
    });
    // Refused calls count too: admins of solo's account are not trusted by the role.
    await expect(
      assumeRole(aws.stsEndpoint, { credentials: admins.solo!, roleArn, sessionName: 'x' }),
    ).rejects.toMatchObject({ name: 'AccessDenied' });
    const after = aws.calls();
    expect(before.assumeRole[roleArn]).toBe(1);
    expect(after.assumeRole[roleArn]).toBe(2);
    expect(after.describeCluster['guest-a']).toBe((before.describeCluster['guest-a'] ?? 0) + 1);
    expect(after.describeCluster.host).toBe(before.describeCluster.host);
  });
});
