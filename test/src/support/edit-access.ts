// The AWS side of one follower as the EKS-access tests set it up: the hub's identity (an IAM user
// in the hub account), a role in the follower's account that trusts it with an ExternalId, and an
// EKS access entry for that role with AWS's Edit policy scoped to one namespace.
import {
  AssociateAccessPolicyCommand,
  CreateAccessEntryCommand,
  EKSClient,
} from '@aws-sdk/client-eks';
import {
  createRole,
  createUserWithAccessKey,
  trustPolicy,
  type Principal,
} from '@mirrorhub/infra/aws/moto';
import type { Kit } from '@mirrorhub/infra/kit/index';

export const EKS_EDIT_POLICY = 'arn:aws:eks::aws:cluster-access-policy/AmazonEKSEditPolicy';

export async function hubWithEditAccess(
  kit: Kit,
  opts: { hubCluster: string; follower: string; externalId: string; namespace: string },
): Promise<{ hub: Principal; roleArn: string }> {
  const { stsEndpoint, eksEndpoint, region } = kit.aws!;
  const follower = kit.cluster(opts.follower);
  const hub = await createUserWithAccessKey(stsEndpoint, {
    accountId: kit.cluster(opts.hubCluster).accountId,
    userName: 'mirrorhub-hub',
  });
  const roleArn = (
    await createRole(stsEndpoint, {
      accountId: follower.accountId,
      roleName: 'mirrorhub-follower',
      trustPolicy: trustPolicy({ principals: [hub.arn], externalId: opts.externalId }),
    })
  ).arn;
  const admin = await createUserWithAccessKey(stsEndpoint, {
    accountId: follower.accountId,
    userName: 'platform-admin',
  });
  const eks = new EKSClient({ endpoint: eksEndpoint, region, credentials: admin.credentials });
  try {
    await eks.send(
      new CreateAccessEntryCommand({ clusterName: opts.follower, principalArn: roleArn }),
    );
    await eks.send(
      new AssociateAccessPolicyCommand({
        clusterName: opts.follower,
        principalArn: roleArn,
        policyArn: EKS_EDIT_POLICY,
        accessScope: { type: 'namespace', namespaces: [opts.namespace] },
      }),
    );
  } finally {
    eks.destroy();
  }
  return { hub, roleArn };
}
