// The hub's way into an EKS follower, end to end on real parts: moto as STS/IAM with one account
// per cluster, the EKS emulator's API and TokenReview webhook, and real kube-apiservers that
// authenticate bearer tokens through that webhook and authorise with RBAC.
//
// hub (111111111111) --AssumeRole--> mirrorhub-follower (222222222222)
//   --DescribeCluster--> endpoint + CA --token (x-k8s-aws-id: follower-a)--> kube-apiserver
import {
  DescribeClusterCommand,
  EKSClient,
  AssociateAccessPolicyCommand,
  CreateAccessEntryCommand,
} from '@aws-sdk/client-eks';
import {
  ApiException,
  AuthenticationV1Api,
  CoreV1Api,
  type KubeConfig,
} from '@kubernetes/client-node';
import {
  assumeRole,
  createRole,
  createUserWithAccessKey,
  trustPolicy,
} from '@mirrorhub/infra/aws/moto';
import { startKit, type Kit } from '@mirrorhub/infra/kit/index';
import {
  EKS_TOKEN_PREFIX,
  EksTokenSource,
  mintEksToken,
  type AwsCredentials,
} from '@mirrorhub/hub/clusters/aws/eks-token';
import { kubeConfigForCluster } from '@mirrorhub/infra/aws/eks-kubeconfig';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const AGENT_NS = 'mirrorhub-system';
const EDIT = 'arn:aws:eks::aws:cluster-access-policy/AmazonEKSEditPolicy';

let kit: Kit;
let stsEndpoint: string;
let eksEndpoint: string;
let hub: AwsCredentials;
let followerRoleArn: string;
let region: string;

/** What the hub does: assume the follower role, describe the cluster, build a kubeconfig. */
async function followerSession(): Promise<AwsCredentials> {
  return assumeRole(stsEndpoint, {
    credentials: hub,
    roleArn: followerRoleArn,
    sessionName: 'mirrorhub',
    externalId: 'mirrorhub-test',
    region,
  });
}

async function describe_(credentials: AwsCredentials, name: string) {
  const eks = new EKSClient({ endpoint: eksEndpoint, region, credentials });
  try {
    const { cluster } = await eks.send(new DescribeClusterCommand({ name }));
    return {
      server: cluster!.endpoint!,
      caPem: Buffer.from(cluster!.certificateAuthority!.data!, 'base64').toString('utf8'),
    };
  } finally {
    eks.destroy();
  }
}

async function kubeConfigWith(token: () => Promise<string>): Promise<KubeConfig> {
  const { server, caPem } = await describe_(await followerSession(), 'follower-a');
  return kubeConfigForCluster({ name: 'follower-a', server, caPem, token });
}

async function status(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (err) {
    if (err instanceof ApiException) return err.code;
    throw err;
  }
}

const secret = (name: string) => ({
  metadata: { name },
  type: 'Opaque',
  stringData: { 'tls.crt': 'not-a-real-cert' },
});

beforeAll(async () => {
  kit = await startKit({ clusters: ['hub', 'follower-a', 'follower-b'], aws: true });
  ({ stsEndpoint, eksEndpoint, region } = kit.aws!);
  const follower = kit.cluster('follower-a');

  // What terraform/ sets up: a hub identity, a follower role trusting it, an access entry bound
  // to the agent namespace only.
  const hubUser = await createUserWithAccessKey(stsEndpoint, {
    accountId: kit.cluster('hub').accountId,
    userName: 'mirrorhub-hub',
  });
  hub = hubUser.credentials;
  followerRoleArn = (
    await createRole(stsEndpoint, {
      accountId: follower.accountId,
      roleName: 'mirrorhub-follower',
      trustPolicy: trustPolicy({ principals: [hubUser.arn], externalId: 'mirrorhub-test' }),
    })
  ).arn;
  const platformAdmin = await createUserWithAccessKey(stsEndpoint, {
    accountId: follower.accountId,
    userName: 'platform-admin',
  });
  const eks = new EKSClient({
    endpoint: eksEndpoint,
    region,
    credentials: platformAdmin.credentials,
  });
  await eks.send(
    new CreateAccessEntryCommand({ clusterName: 'follower-a', principalArn: followerRoleArn }),
  );
  await eks.send(
    new AssociateAccessPolicyCommand({
      clusterName: 'follower-a',
      principalArn: followerRoleArn,
      policyArn: EDIT,
      accessScope: { type: 'namespace', namespaces: [AGENT_NS] },
    }),
  );
  eks.destroy();
});

afterAll(async () => {
  await kit?.stop();
});

describe('the hub reaches an EKS follower with an assumed role and a minted token', () => {
  it('(a) writes a Secret into the namespace its access entry is scoped to', async () => {
    const session = await followerSession();
    const tokens = new EksTokenSource({ clusterName: 'follower-a', region, credentials: session });
    const { server, caPem } = await describe_(session, 'follower-a');
    expect(server).toBe(kit.cluster('follower-a').server);
    const core = kubeConfigForCluster({
      name: 'follower-a',
      server,
      caPem,
      token: tokens,
    }).makeApiClient(CoreV1Api);

    await core.createNamespacedSecret({ namespace: AGENT_NS, body: secret('payload-1') });
    const read = await core.readNamespacedSecret({ namespace: AGENT_NS, name: 'payload-1' });
    expect(read.metadata?.name).toBe('payload-1');
  });

  it('is the role session, in its entry group, and never system:masters', async () => {
    const session = await followerSession();
    const kc = await kubeConfigWith(
      async () =>
        (await mintEksToken({ clusterName: 'follower-a', region, credentials: session })).token,
    );
    const review = await kc
      .makeApiClient(AuthenticationV1Api)
      .createSelfSubjectReview({ body: {} });
    const user = review.status?.userInfo;
    expect(user?.username).toBe(
      `arn:aws:sts::${kit.cluster('follower-a').accountId}:assumed-role/mirrorhub-follower/mirrorhub`,
    );
    expect(user?.groups).toContain(
      `eks-access-entry:${kit.cluster('follower-a').accountId}:role/mirrorhub-follower`,
    );
    expect(user?.groups).toContain('system:authenticated');
    expect(user?.groups).not.toContain('system:masters');
  });

  it('(b) gets 403 in every other namespace and cluster-wide', async () => {
    const session = await followerSession();
    const tokens = new EksTokenSource({ clusterName: 'follower-a', region, credentials: session });
    const core = (await kubeConfigWith(async () => (await tokens.getToken()).token)).makeApiClient(
      CoreV1Api,
    );
    await kit
      .cluster('follower-a')
      .kubeConfig()
      .makeApiClient(CoreV1Api)
      .createNamespace({ body: { metadata: { name: 'team-a' } } });

    expect(
      await status(core.createNamespacedSecret({ namespace: 'team-a', body: secret('x') })),
    ).toBe(403);
    expect(
      await status(core.createNamespacedSecret({ namespace: 'default', body: secret('x') })),
    ).toBe(403);
    expect(await status(core.listNamespacedSecret({ namespace: 'kube-system' }))).toBe(403);
    expect(await status(core.listSecretForAllNamespaces())).toBe(403);
    expect(await status(core.createNamespace({ body: { metadata: { name: 'mine' } } }))).toBe(403);
  });

  it.each<{ name: string; token: (session: AwsCredentials) => Promise<string> }>([
    {
      name: 'a token minted for another cluster name',
      token: async (session) =>
        (await mintEksToken({ clusterName: 'follower-b', region, credentials: session })).token,
    },
    {
      name: 'an expired token (signed 16 minutes ago)',
      token: async (session) =>
        (
          await mintEksToken({
            clusterName: 'follower-a',
            region,
            credentials: session,
            now: () => new Date(Date.now() - 16 * 60_000),
          })
        ).token,
    },
    {
      name: 'a tampered query string',
      token: async (session) => {
        const { token } = await mintEksToken({
          clusterName: 'follower-a',
          region,
          credentials: session,
        });
        const url = Buffer.from(token.slice(EKS_TOKEN_PREFIX.length), 'base64url').toString('utf8');
        const tampered = url.replace('X-Amz-Expires=60', 'X-Amz-Expires=900');
        expect(tampered).not.toBe(url);
        return EKS_TOKEN_PREFIX + Buffer.from(tampered).toString('base64url');
      },
    },
    {
      name: "the hub's own identity (no access entry in the follower)",
      token: async () =>
        (await mintEksToken({ clusterName: 'follower-a', region, credentials: hub })).token,
    },
  ])('(c) gets 401 with $name', async (c) => {
    const session = await followerSession();
    const token = await c.token(session);
    const core = (await kubeConfigWith(async () => token)).makeApiClient(CoreV1Api);
    expect(await status(core.listNamespacedSecret({ namespace: AGENT_NS }))).toBe(401);
  });
});
