// terraform/ on real tools: terraform and the hashicorp/aws provider built from Go modules
// (infra/src/components/terraform.ts), the provider installed from a local filesystem mirror.
//
// 1. `terraform fmt -check -recursive`, and `terraform validate` of each module and the example.
// 2. Variable validation refuses what must never be applied (system:masters, any EKS access
//    policy, a missing or malformed ExternalId), each with its message.
// 3. `terraform apply` of examples/multi-account against the kit: moto is IAM/STS for accounts
//    111111111111 (management), 222222222222 and 333333333333 (followers), the EKS emulator
//    holds the clusters follower-a and follower-b. Then the roles are used as the hub uses
//    them: a real ServiceAccount token of the hub cluster -> AssumeRoleWithWebIdentity into the
//    hub role -> AssumeRole with the ExternalId into each follower role -> DescribeCluster ->
//    an EKS token the follower's kube-apiserver accepts, as group mirrorhub-hub and nothing
//    more. The kit's STS gate holds AssumeRole and AssumeRoleWithWebIdentity to the roles'
//    trust policies as STS does (moto alone would not), and each policy terraform wrote is also
//    read back and evaluated here, which covers what no real call here can (Pod Identity).
// 4. The outputs feed the charts (helm template) and the MirrorCluster CRD (the API server
//    validates them); a second plan is empty; `terraform destroy` leaves nothing behind.
import { spawn } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import {
  DescribeAccessEntryCommand,
  DescribeClusterCommand,
  EKSClient,
  ListAccessEntriesCommand,
  ListAssociatedAccessPoliciesCommand,
} from '@aws-sdk/client-eks';
import { AssumeRoleWithWebIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import {
  AuthenticationV1Api,
  AuthorizationV1Api,
  CoreV1Api,
  CustomObjectsApi,
} from '@kubernetes/client-node';
import {
  AwsQueryError,
  assumeRole,
  getCallerIdentity,
  iamCall,
  xmlValue,
} from '@mirrorhub/infra/aws/moto';
import {
  AWS_PROVIDER_VERSION,
  TERRAFORM_VERSION,
  ensureHelm,
  ensureTerraformSetup,
  type TerraformSetup,
} from '@mirrorhub/infra/components/index';
import { startKit, type Kit } from '@mirrorhub/infra/kit/index';
import { mintEksToken, type AwsCredentials } from '@mirrorhub/hub/clusters/aws/eks-token';
import { kubeConfigForCluster } from '@mirrorhub/infra/aws/eks-kubeconfig';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';

import { installCrds } from './support/crds.js';
import { TEST_HUB_KEY } from './support/signing.js';
import {
  TERRAFORM_DIR,
  applyMultiAccountExample,
  copyOfTerraformDir,
  prepareExampleAccounts,
  terraformRunner,
  type ExampleAccounts,
  type Terraform,
} from './support/terraform.js';

const repo = resolve(import.meta.dirname, '../..');
const NS = 'mirrorhub-system';
const HUB_SA = 'mirrorhub-hub';
const FOLLOWERS = [
  { key: 'a', cluster: 'follower-a', externalId: 'mirrorhub-follower-a-7f3c' },
  { key: 'b', cluster: 'follower-b', externalId: 'mirrorhub-follower-b-19d2' },
] as const;

let tf: TerraformSetup;
let terraform: Terraform;
let work: string;
const copyTree = () => copyOfTerraformDir(work);

// ---- IAM, as the administrator of an account -----------------------------------------------

/** A policy document as IAM returns it (URL-encoded JSON on the real service). */
function policyJson(text: string | undefined): PolicyDocument {
  if (!text) throw new Error('no policy document in the IAM response');
  try {
    return JSON.parse(text) as PolicyDocument;
  } catch {
    return JSON.parse(decodeURIComponent(text)) as PolicyDocument;
  }
}

async function getRole(
  account: string,
  name: string,
): Promise<{ arn: string; trust: PolicyDocument }> {
  const xml = await iamCall(kit.aws!.stsEndpoint, account, 'GetRole', { RoleName: name });
  return {
    arn: xmlValue(xml, 'Arn') ?? '',
    trust: policyJson(xmlValue(xml, 'AssumeRolePolicyDocument')),
  };
}

async function getRolePolicy(
  account: string,
  role: string,
  policy: string,
): Promise<PolicyDocument> {
  const xml = await iamCall(kit.aws!.stsEndpoint, account, 'GetRolePolicy', {
    RoleName: role,
    PolicyName: policy,
  });
  return policyJson(xmlValue(xml, 'PolicyDocument'));
}

async function roleExists(account: string, name: string): Promise<boolean> {
  try {
    await iamCall(kit.aws!.stsEndpoint, account, 'GetRole', { RoleName: name });
    return true;
  } catch (err) {
    if (err instanceof AwsQueryError && err.code === 'NoSuchEntity') return false;
    throw err;
  }
}

// ---- a small evaluator for the trust and permission policies terraform wrote ----------------
// moto does not evaluate trust policies, so the test does, for exactly the subset the modules
// emit: Allow statements, Action (string or list, no wildcards), Principal AWS / Federated /
// Service, Resource (ARNs or "*"), and StringEquals conditions.

type OneOrMany = string | string[];
interface Statement {
  Sid?: string;
  Effect: 'Allow' | 'Deny';
  Action: OneOrMany;
  Principal?: Record<string, OneOrMany>;
  Resource?: OneOrMany;
  Condition?: Record<string, Record<string, OneOrMany>>;
}
interface PolicyDocument {
  Version: string;
  Statement: Statement[];
}

const many = (v: OneOrMany | undefined): string[] => (v === undefined ? [] : [v].flat());

interface Request {
  action: string;
  principal?: { type: 'AWS' | 'Federated' | 'Service'; id: string };
  resource?: string;
  context?: Record<string, string>;
}

function allows(doc: PolicyDocument, req: Request): boolean {
  const matching = doc.Statement.filter((s) => {
    if (!many(s.Action).includes(req.action)) return false;
    if (req.principal && !many(s.Principal?.[req.principal.type]).includes(req.principal.id))
      return false;
    if (req.resource) {
      const res = many(s.Resource);
      if (!res.includes('*') && !res.includes(req.resource)) return false;
    }
    for (const [op, kv] of Object.entries(s.Condition ?? {})) {
      if (op !== 'StringEquals') throw new Error(`the test's evaluator does not know ${op}`);
      for (const [key, values] of Object.entries(kv)) {
        const got = req.context?.[key];
        if (got === undefined || !many(values).includes(got)) return false;
      }
    }
    return true;
  });
  return matching.some((s) => s.Effect === 'Allow') && !matching.some((s) => s.Effect === 'Deny');
}

function jwtClaims(token: string): { iss: string; sub: string; aud: string[] } {
  const payload = token.split('.')[1] ?? '';
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as {
    iss: string;
    sub: string;
    aud: string[];
  };
}

// ---- the kit and the accounts ----------------------------------------------------------------

let kit: Kit;
let accounts: ExampleAccounts;
function account(cluster: string): string {
  return kit.cluster(cluster).accountId;
}

async function serviceAccountToken(name: string): Promise<string> {
  const core = kit.cluster('hub').kubeConfig().makeApiClient(CoreV1Api);
  await core
    .createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name } } })
    .catch((err: { code?: number }) => {
      if (err.code !== 409) throw err;
    });
  const tr = await core.createNamespacedServiceAccountToken({
    namespace: NS,
    name,
    body: { spec: { audiences: ['sts.amazonaws.com'], expirationSeconds: 3600 } },
  });
  return tr.status!.token!;
}

beforeAll(
  async () => {
    work = await mkdtemp(join(tmpdir(), 'mirrorhub-terraform-test-'));
    // The builds (once per machine) come before the kit, so no API server idles meanwhile.
    const started = Date.now();
    tf = await ensureTerraformSetup(work);
    terraform = terraformRunner(tf);
    console.error(
      `timing: terraform + aws provider (${tf.provider.flavour} build) ready in ${((Date.now() - started) / 1000).toFixed(1)}s`,
    );
    kit = await startKit({ clusters: ['hub', 'follower-a', 'follower-b'] });
    accounts = await prepareExampleAccounts(
      kit,
      FOLLOWERS.map((f) => f.cluster),
    );
    expect(accounts.oidcProviderArn).toBe(
      `arn:aws:iam::${account('hub')}:oidc-provider/${accounts.issuerHost}`,
    );
    await kit
      .cluster('hub')
      .kubeConfig()
      .makeApiClient(CoreV1Api)
      .createNamespace({ body: { metadata: { name: NS } } });
  },
  // A cold build of the provider is long (docs/terraform.md); warm, this is the kit's ~10 s.
  150 * 60_000,
);

afterAll(async () => {
  await kit?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

// ---- 1. static checks ------------------------------------------------------------------------

describe('terraform/ passes fmt and validate', () => {
  it(`uses terraform ${TERRAFORM_VERSION} and hashicorp/aws ${AWS_PROVIDER_VERSION} from the local mirror`, async () => {
    const v = JSON.parse((await terraform(work, ['version', '-json'])).stdout) as {
      terraform_version: string;
    };
    expect(`v${v.terraform_version}`).toBe(TERRAFORM_VERSION);
    expect(await readFile(tf.cliConfigFile, 'utf8')).toContain(tf.provider.mirrorDir);
  });

  it('is formatted (terraform fmt -check -recursive)', async () => {
    const run = await terraform(TERRAFORM_DIR, ['fmt', '-check', '-recursive', '-diff'], {
      allowFailure: true,
    });
    expect(run.stdout, 'run `terraform fmt -recursive terraform/`').toBe('');
    expect(run.code).toBe(0);
  });

  it.each(['modules/hub', 'modules/follower', 'examples/multi-account'])(
    '%s validates with no errors and no warnings',
    async (sub) => {
      const dir = join(await copyTree(), sub);
      const init = await terraform(dir, ['init', '-backend=false', '-input=false']);
      expect(init.stdout).toContain(`Installed hashicorp/aws v${AWS_PROVIDER_VERSION}`);
      const lock = await readFile(join(dir, '.terraform.lock.hcl'), 'utf8');
      expect(lock).toContain(`version     = "${AWS_PROVIDER_VERSION}"`);
      const run = await terraform(dir, ['validate', '-json'], { allowFailure: true });
      const result = JSON.parse(run.stdout) as {
        valid: boolean;
        error_count: number;
        warning_count: number;
        diagnostics: Array<{ severity: string; summary: string; detail?: string }>;
      };
      expect(result.diagnostics).toEqual([]);
      expect(result.valid).toBe(true);
    },
  );
});

// ---- 2. what variable validation refuses ----------------------------------------------------

describe('the modules refuse dangerous inputs', () => {
  let root: string;

  beforeAll(async () => {
    root = join(await copyTree(), 'refuse');
    await cp(join(root, '..', 'modules'), join(root, 'modules'), { recursive: true });
  });

  const follower = (extra: string, externalId: string | null = 'external_id  = "abc-123"') => `
module "follower" {
  source       = "./modules/follower"
  hub_role_arn = "arn:aws:iam::111111111111:role/mirrorhub-hub"
  ${externalId ?? ''}
  cluster_name = "follower-a"
  ${extra}
}
`;
  const accessPolicy = (name: string) =>
    follower(`access_policy_arn = "arn:aws:eks::aws:cluster-access-policy/${name}"`);
  const externalId = (value: string) => follower('', `external_id  = ${JSON.stringify(value)}`);
  const NO_ACCESS_POLICY = 'Install the agent chart with hubAccess.enabled = true';
  const BAD_EXTERNAL_ID = 'external_id must be 2-1224 characters of letters, digits and +=,.@:/_-';

  async function validate(hcl: string) {
    await writeFile(join(root, 'main.tf'), hcl);
    await terraform(root, ['init', '-backend=false', '-input=false']);
    const run = await terraform(root, ['validate', '-json'], { allowFailure: true });
    const result = JSON.parse(run.stdout) as {
      valid: boolean;
      diagnostics: Array<{ summary: string; detail?: string }>;
    };
    return {
      valid: result.valid,
      messages: result.diagnostics.map((d) => `${d.summary}: ${d.detail ?? ''}`).join('\n'),
    };
  }

  it.each([
    {
      name: 'system:masters as a Kubernetes group',
      hcl: follower('kubernetes_groups = ["system:masters"]'),
      error: 'none starting with system: (no system:masters)',
    },
    {
      name: 'associating an EKS access policy at all',
      hcl: follower('associate_access_policy = true'),
      error: `associate_access_policy is no longer supported: the hub's EKS access entry gets no access policy`,
    },
    ...[
      'AmazonEKSClusterAdminPolicy',
      'AmazonEKSAdminPolicy',
      'AmazonEKSEditPolicy',
      // Even view: it reads Pods, ConfigMaps and more in the agent namespace, which the hub never needs.
      'AmazonEKSViewPolicy',
    ].map((policy) => ({
      name: `the access policy ${policy}`,
      hcl: accessPolicy(policy),
      error: 'access_policy_arn is no longer supported',
    })),
    {
      name: 'a trusted hub "role" that is a wildcard',
      hcl: follower('').replace('role/mirrorhub-hub', 'role/*'),
      error: 'hub_role_arn must be a role ARN without wildcards',
    },
    {
      name: 'a follower role without an ExternalId',
      hcl: follower('', null),
      error: 'The argument "external_id" is required',
    },
    {
      name: 'a null ExternalId',
      hcl: follower('', 'external_id  = null'),
      error: 'required variable may not be set to null',
    },
    ...[
      { what: 'an empty ExternalId', value: '' },
      { what: 'a one-character ExternalId', value: 'x' },
      { what: 'an ExternalId of 1225 characters', value: 'x'.repeat(1225) },
      { what: 'an ExternalId with a space', value: 'mirrorhub follower-a' },
      { what: 'an ExternalId with a character AWS refuses', value: 'mirrorhub#follower-a' },
    ].map(({ what, value }) => ({ name: what, hcl: externalId(value), error: BAD_EXTERNAL_ID })),
    {
      name: 'a wildcard follower role for the hub',
      hcl: `module "hub" {
  source             = "./modules/hub"
  oidc_provider_arn  = "arn:aws:iam::111111111111:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/X"
  follower_role_arns = ["arn:aws:iam::*:role/mirrorhub-follower"]
}
`,
      error: 'Each follower_role_arns entry must be a role ARN without wildcards',
    },
  ])('refuses $name', async ({ hcl, error }) => {
    const { valid, messages } = await validate(hcl);
    expect(valid).toBe(false);
    expect(messages).toContain(error);
  });

  it('says what to do instead of an access policy, and how to choose an ExternalId', async () => {
    expect((await validate(follower('associate_access_policy = true'))).messages).toContain(
      NO_ACCESS_POLICY,
    );
    expect((await validate(accessPolicy('AmazonEKSViewPolicy'))).messages).toMatch(
      /hub-access Role \(hubAccess\.enabled = true, hubAccess\.group = this module's kubernetes_groups\[0\]\) and remove access_policy_arn/,
    );
    expect((await validate(externalId(''))).messages).toContain(
      "set the same value as the MirrorCluster's spec.eks.externalId",
    );
  });

  it.each([
    { name: 'the shortest ExternalId', hcl: externalId('ab') },
    { name: 'the longest ExternalId', hcl: externalId('x'.repeat(1224)) },
    {
      name: 'every character AWS allows in an ExternalId',
      hcl: externalId('AZaz09+=,.@:/_-'),
    },
    { name: 'associate_access_policy = false', hcl: follower('associate_access_policy = false') },
    {
      name: 'a hub with no follower roles yet (and so no inline policy)',
      hcl: `module "hub" {
  source            = "./modules/hub"
  oidc_provider_arn = "arn:aws:iam::111111111111:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/X"
}
`,
    },
  ])('accepts $name', async ({ hcl }) => {
    const { valid, messages } = await validate(hcl);
    expect(messages).toBe('');
    expect(valid).toBe(true);
  });
});

// ---- 3. apply against the kit ----------------------------------------------------------------

describe('examples/multi-account applied to moto and the EKS emulator', () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let outputs: Record<string, { value: unknown }>;
  const hubRoleArn = () => `arn:aws:iam::${account('hub')}:role/mirrorhub-hub`;
  const followerRoleArn = (cluster: string) =>
    `arn:aws:iam::${account(cluster)}:role/mirrorhub-follower`;
  const clusterArn = (cluster: string) =>
    `arn:aws:eks:${kit.aws!.region}:${account(cluster)}:cluster/${cluster}`;

  /** The hub role's session, as the AWS SDK's web-identity provider gets it in the hub's pod (IRSA). */
  async function hubSession(): Promise<AwsCredentials> {
    const sts = new STSClient({ endpoint: kit.aws!.stsEndpoint, region: kit.aws!.region });
    try {
      const web = await sts.send(
        new AssumeRoleWithWebIdentityCommand({
          RoleArn: hubRoleArn(),
          RoleSessionName: 'mirrorhub-hub-test',
          WebIdentityToken: await serviceAccountToken(HUB_SA),
        }),
      );
      return {
        accessKeyId: web.Credentials!.AccessKeyId!,
        secretAccessKey: web.Credentials!.SecretAccessKey!,
        sessionToken: web.Credentials!.SessionToken!,
      };
    } finally {
      sts.destroy();
    }
  }

  beforeAll(async () => {
    ({ dir, env, outputs } = await applyMultiAccountExample({
      terraform,
      kit,
      work,
      accounts,
      followers: [
        { ...FOLLOWERS[0], labels: { env: 'test', follower: 'a' } },
        { ...FOLLOWERS[1], labels: { env: 'test', follower: 'b' } },
      ],
      log: (l) => console.error(l),
    }));
  }, 600_000);

  it('created each role in its own account', () => {
    expect(outputs.hub_role_arn?.value).toBe(hubRoleArn());
    expect(outputs.follower_role_arns?.value).toEqual({
      a: followerRoleArn('follower-a'),
      b: followerRoleArn('follower-b'),
    });
    expect(outputs.external_ids?.value).toEqual({
      a: FOLLOWERS[0].externalId,
      b: FOLLOWERS[1].externalId,
    });
  });

  it("trusts only the hub's ServiceAccount (IRSA and Pod Identity), as a real token shows", async () => {
    const { trust } = await getRole(account('hub'), 'mirrorhub-hub');
    const token = await serviceAccountToken(HUB_SA);
    const claims = jwtClaims(token);
    expect(claims.iss).toBe(`https://${accounts.issuerHost}`);
    const webIdentity = (c: { sub: string; aud: string }): Request => ({
      action: 'sts:AssumeRoleWithWebIdentity',
      principal: { type: 'Federated', id: accounts.oidcProviderArn },
      context: { [`${accounts.issuerHost}:sub`]: c.sub, [`${accounts.issuerHost}:aud`]: c.aud },
    });
    expect(allows(trust, webIdentity({ sub: claims.sub, aud: claims.aud[0]! }))).toBe(true);
    const other = jwtClaims(await serviceAccountToken('someone-else'));
    expect(allows(trust, webIdentity({ sub: other.sub, aud: other.aud[0]! }))).toBe(false);
    expect(allows(trust, webIdentity({ sub: claims.sub, aud: 'another-audience' }))).toBe(false);
    // And STS (the kit's gate verifies the token and the trust policy) agrees.
    const sts = new STSClient({ endpoint: kit.aws!.stsEndpoint, region: kit.aws!.region });
    const irsa = async (t: string) =>
      sts
        .send(
          new AssumeRoleWithWebIdentityCommand({
            RoleArn: `arn:aws:iam::${account('hub')}:role/mirrorhub-hub`,
            RoleSessionName: 'trust-check',
            WebIdentityToken: t,
          }),
        )
        .then(
          () => 'allowed',
          (err: Error) => err.name,
        );
    expect(await irsa(token)).toBe('allowed');
    expect(await irsa(await serviceAccountToken('someone-else'))).toBe('AccessDenied');
    sts.destroy();

    const podIdentity = (ns: string, sa: string) => ({
      principal: { type: 'Service' as const, id: 'pods.eks.amazonaws.com' },
      context: {
        'aws:RequestTag/kubernetes-namespace': ns,
        'aws:RequestTag/kubernetes-service-account': sa,
      },
    });
    for (const action of ['sts:AssumeRole', 'sts:TagSession']) {
      expect(allows(trust, { action, ...podIdentity(NS, HUB_SA) })).toBe(true);
      expect(allows(trust, { action, ...podIdentity(NS, 'someone-else') })).toBe(false);
      expect(allows(trust, { action, ...podIdentity('default', HUB_SA) })).toBe(false);
    }
  });

  it('lets the hub assume exactly the follower roles, and nothing else (no EKS permission)', async () => {
    const policy = await getRolePolicy(account('hub'), 'mirrorhub-hub', 'mirrorhub-hub');
    for (const f of FOLLOWERS) {
      for (const action of ['sts:AssumeRole', 'sts:TagSession']) {
        expect(allows(policy, { action, resource: followerRoleArn(f.cluster) })).toBe(true);
      }
    }
    const stranger = `arn:aws:iam::${account('follower-a')}:role/OrganizationAccountAccessRole`;
    expect(allows(policy, { action: 'sts:AssumeRole', resource: stranger })).toBe(false);
    // The hub describes a follower cluster as the follower role; as itself it may describe none.
    for (const resource of [
      '*',
      ...FOLLOWERS.map((f) => clusterArn(f.cluster)),
      `arn:aws:eks:${kit.aws!.region}:${account('hub')}:cluster/hub`,
    ]) {
      expect(allows(policy, { action: 'eks:DescribeCluster', resource })).toBe(false);
      expect(allows(policy, { action: 'eks:ListClusters', resource })).toBe(false);
    }
    // One statement: these actions on exactly these resources (the order IAM keeps is not ours).
    expect(policy.Statement).toHaveLength(1);
    const [st] = policy.Statement;
    expect(st).toMatchObject({ Sid: 'AssumeFollowerRoles', Effect: 'Allow' });
    expect(Object.keys(st!).sort()).toEqual(['Action', 'Effect', 'Resource', 'Sid']);
    expect(many(st!.Action).sort()).toEqual(['sts:AssumeRole', 'sts:TagSession']);
    expect(many(st!.Resource).sort()).toEqual(
      FOLLOWERS.map((f) => followerRoleArn(f.cluster)).sort(),
    );
  });

  it("STS refuses AssumeRole into a follower role without its ExternalId, and EKS finds no cluster outside the caller's account", async () => {
    const { stsEndpoint, eksEndpoint, region } = kit.aws!;
    const hub = await hubSession();
    const assume = (roleArn: string, externalId: string | undefined) =>
      assumeRole(stsEndpoint, {
        credentials: hub,
        roleArn,
        sessionName: 'mirrorhub-hub-test',
        externalId,
        region,
      }).then(
        () => 'allowed',
        (err: Error) => err.name,
      );
    const [a, b] = FOLLOWERS;
    // Through the kit's STS gate, which holds AssumeRole to the trust policy as STS does.
    expect(await assume(followerRoleArn(a.cluster), undefined)).toBe('AccessDenied');
    expect(await assume(followerRoleArn(a.cluster), b.externalId)).toBe('AccessDenied');
    expect(await assume(followerRoleArn(b.cluster), a.externalId)).toBe('AccessDenied');
    expect(await assume(followerRoleArn(a.cluster), a.externalId)).toBe('allowed');

    // DescribeCluster works only with credentials of the cluster's own account (EKS has no
    // resource policies): the hub's own session cannot describe a follower cluster whatever its
    // policy says, and one follower's session cannot describe the other's. (The emulator, like
    // EKS, looks clusters up in the caller's account; it evaluates no identity policy, which the
    // policy documents above cover.)
    const describe = async (credentials: AwsCredentials, name: string) => {
      const eks = new EKSClient({ endpoint: eksEndpoint, region, credentials });
      try {
        const { cluster } = await eks.send(new DescribeClusterCommand({ name }));
        return cluster?.arn;
      } catch (err) {
        return (err as Error).name;
      } finally {
        eks.destroy();
      }
    };
    expect(await describe(hub, a.cluster)).toBe('ResourceNotFoundException');
    const sessionA = await assumeRole(stsEndpoint, {
      credentials: hub,
      roleArn: followerRoleArn(a.cluster),
      sessionName: 'mirrorhub-hub-test',
      externalId: a.externalId,
      region,
    });
    expect(await describe(sessionA, a.cluster)).toBe(clusterArn(a.cluster));
    expect(await describe(sessionA, b.cluster)).toBe('ResourceNotFoundException');
  });

  it.each(FOLLOWERS)(
    'follower $cluster trusts only the hub role with its ExternalId, and may describe only its cluster',
    async (f) => {
      const { trust } = await getRole(account(f.cluster), 'mirrorhub-follower');
      const asHub = (externalId: string | undefined, id = hubRoleArn()): Request => ({
        action: 'sts:AssumeRole',
        principal: { type: 'AWS', id },
        context: externalId === undefined ? {} : { 'sts:ExternalId': externalId },
      });
      expect(allows(trust, asHub(f.externalId))).toBe(true);
      expect(allows(trust, asHub(undefined))).toBe(false);
      expect(allows(trust, asHub('guessed'))).toBe(false);
      expect(allows(trust, asHub(f.externalId, accounts.operator.arn))).toBe(false);
      for (const st of trust.Statement) {
        expect(st.Condition?.StringEquals?.['sts:ExternalId']).toBe(f.externalId);
      }

      const policy = await getRolePolicy(
        account(f.cluster),
        'mirrorhub-follower',
        'mirrorhub-follower',
      );
      expect(policy.Statement).toEqual([
        {
          Sid: 'DescribeThisCluster',
          Effect: 'Allow',
          Action: 'eks:DescribeCluster',
          Resource: clusterArn(f.cluster),
        },
      ]);
      const other = FOLLOWERS.find((o) => o !== f)!;
      expect(
        allows(policy, { action: 'eks:DescribeCluster', resource: clusterArn(f.cluster) }),
      ).toBe(true);
      expect(
        allows(policy, { action: 'eks:DescribeCluster', resource: clusterArn(other.cluster) }),
      ).toBe(false);
      expect(
        allows(policy, {
          action: 'eks:DescribeCluster',
          resource: `arn:aws:eks:${kit.aws!.region}:${account(f.cluster)}:cluster/another`,
        }),
      ).toBe(false);
    },
  );

  it.each(FOLLOWERS)(
    'the hub, from its ServiceAccount token, reaches $cluster as group mirrorhub-hub and nothing more',
    async (f) => {
      const { stsEndpoint, eksEndpoint, region } = kit.aws!;
      const hub = await hubSession();
      expect((await getCallerIdentity(stsEndpoint, hub)).arn).toBe(
        `arn:aws:sts::${account('hub')}:assumed-role/mirrorhub-hub/mirrorhub-hub-test`,
      );

      const session = await assumeRole(stsEndpoint, {
        credentials: hub,
        roleArn: followerRoleArn(f.cluster),
        sessionName: 'mirrorhub-hub-test',
        externalId: f.externalId,
        region,
      });
      expect((await getCallerIdentity(stsEndpoint, session)).arn).toBe(
        `arn:aws:sts::${account(f.cluster)}:assumed-role/mirrorhub-follower/mirrorhub-hub-test`,
      );

      const eks = new EKSClient({ endpoint: eksEndpoint, region, credentials: session });
      const { cluster } = await eks.send(new DescribeClusterCommand({ name: f.cluster }));
      eks.destroy();
      expect(cluster?.endpoint).toBe(kit.cluster(f.cluster).server);

      const kc = kubeConfigForCluster({
        name: f.cluster,
        server: cluster!.endpoint!,
        caPem: Buffer.from(cluster!.certificateAuthority!.data!, 'base64').toString('utf8'),
        token: async () =>
          (await mintEksToken({ clusterName: f.cluster, region, credentials: session })).token,
      });
      const review = await kc.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({
        body: {},
      });
      const user = review.status!.userInfo!;
      expect(user.username).toBe(
        `arn:aws:sts::${account(f.cluster)}:assumed-role/mirrorhub-follower/mirrorhub-hub-test`,
      );
      expect(user.groups).toContain('mirrorhub-hub');
      expect(user.groups).not.toContain('system:masters');

      // No access policy: without the agent chart's Role the group may do nothing at all.
      const can = async (verb: string, resource: string, namespace?: string) =>
        (
          await kc.makeApiClient(AuthorizationV1Api).createSelfSubjectAccessReview({
            body: { spec: { resourceAttributes: { verb, resource, namespace } } },
          })
        ).status?.allowed;
      expect(await can('list', 'secrets')).toBe(false);
      expect(await can('create', 'secrets', NS)).toBe(false);
      expect(await can('list', 'namespaces')).toBe(false);
    },
  );

  it.each(FOLLOWERS)(
    'the access entry in $cluster maps the follower role to mirrorhub-hub, with no access policy',
    async (f) => {
      const eks = new EKSClient({
        endpoint: kit.aws!.eksEndpoint,
        region: kit.aws!.region,
        credentials: accounts.followerAdmins.get(f.cluster)!.credentials,
      });
      try {
        const { accessEntry } = await eks.send(
          new DescribeAccessEntryCommand({
            clusterName: f.cluster,
            principalArn: followerRoleArn(f.cluster),
          }),
        );
        expect(accessEntry?.kubernetesGroups).toEqual(['mirrorhub-hub']);
        expect(accessEntry?.type).toBe('STANDARD');
        expect(accessEntry?.tags).toEqual({ 'app.kubernetes.io/part-of': 'mirrorhub' });
        const { associatedAccessPolicies } = await eks.send(
          new ListAssociatedAccessPoliciesCommand({
            clusterName: f.cluster,
            principalArn: followerRoleArn(f.cluster),
          }),
        );
        expect(associatedAccessPolicies).toEqual([]);
      } finally {
        eks.destroy();
      }
    },
  );

  it('outputs MirrorClusters that the hub cluster accepts as they are', async () => {
    const manifest = outputs.mirror_clusters_manifest?.value as string;
    const docs = parseAllDocuments(manifest).map((d) => d.toJS() as Record<string, unknown>);
    expect(docs).toEqual(
      FOLLOWERS.map((f) => ({
        apiVersion: 'mirrorhub.io/v1alpha1',
        kind: 'MirrorCluster',
        metadata: { name: f.cluster, labels: { env: 'test', follower: f.key } },
        spec: {
          eks: {
            name: f.cluster,
            region: kit.aws!.region,
            roleArn: followerRoleArn(f.cluster),
            externalId: f.externalId,
          },
          agentNamespace: NS,
        },
      })),
    );
    const hub = kit.cluster('hub');
    await installCrds(hub.kubeConfig());
    const manifestFile = join(work, 'mirrorclusters.yaml');
    await writeFile(manifestFile, manifest);
    await new Promise<void>((ok, fail) => {
      const child = spawn(
        kit.kubectl,
        ['--kubeconfig', hub.kubeconfigPath, 'apply', '-f', manifestFile],
        {
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      let err = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
      child.once('close', (code) => (code === 0 ? ok() : fail(new Error(`kubectl apply: ${err}`))));
    });
    const stored = (await hub.kubeConfig().makeApiClient(CustomObjectsApi).getClusterCustomObject({
      group: 'mirrorhub.io',
      version: 'v1alpha1',
      plural: 'mirrorclusters',
      name: 'follower-a',
    })) as { spec: unknown };
    expect(stored.spec).toEqual(docs[0]!.spec);
  });

  it('outputs the legacy aws-auth entry: the role without path, the group, never system:masters', () => {
    const entries = outputs.aws_auth_map_roles?.value as Record<string, string>;
    for (const f of FOLLOWERS) {
      expect(parseYaml(entries[f.key]!)).toEqual([
        {
          rolearn: followerRoleArn(f.cluster),
          username: 'mirrorhub-hub:{{SessionName}}',
          groups: ['mirrorhub-hub'],
        },
      ]);
    }
  });

  it('outputs Helm values the charts render: IRSA on the hub, the group on the agents', async () => {
    const helm = await ensureHelm();
    // What a chart needs that terraform cannot know: the hub's signing key (the hub chart's
    // signing.existingSecret, the agents' hubPublicKeys), given here only to charts that have it.
    const signingValues = async (chart: string): Promise<string[]> => {
      const defaults = parseYaml(
        await readFile(join(repo, 'charts', chart, 'values.yaml'), 'utf8'),
      ) as Record<string, unknown>;
      if ('signing' in defaults) return ['--set', 'signing.existingSecret=mirrorhub-hub-signing'];
      if (!('hubPublicKeys' in defaults)) return [];
      const pub = join(work, 'hub-signing.pub');
      await writeFile(pub, TEST_HUB_KEY.publicKeyPem);
      return ['--set-file', `hubPublicKeys[0]=${pub}`];
    };
    const render = async (chart: string, values: string) => {
      const file = join(work, `${chart}-values.yaml`);
      await writeFile(file, values);
      const child = spawn(
        helm,
        [
          'template',
          'x',
          join(repo, 'charts', chart),
          '-n',
          NS,
          '-f',
          file,
          ...(await signingValues(chart)),
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      let err = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
      const code = await new Promise<number | null>((ok) => child.once('close', ok));
      if (code !== 0) throw new Error(`helm template ${chart}: ${err}`);
      return parseAllDocuments(out)
        .map((d) => d.toJS() as { kind?: string; metadata?: Record<string, unknown> } | null)
        .filter((d): d is NonNullable<typeof d> => d !== null);
    };
    const hub = await render('mirrorhub-hub', outputs.hub_helm_values?.value as string);
    const sa = hub.find((d) => d.kind === 'ServiceAccount');
    expect(sa?.metadata?.name).toBe(HUB_SA);
    expect(sa?.metadata?.annotations).toMatchObject({ 'eks.amazonaws.com/role-arn': hubRoleArn() });

    const agentValues = outputs.agent_helm_values?.value as Record<string, string>;
    for (const f of FOLLOWERS) {
      expect(parseYaml(agentValues[f.key]!)).toEqual({
        clusterName: f.cluster,
        hubAccess: { enabled: true, group: 'mirrorhub-hub' },
      });
      const agent = await render('mirrorhub-agent', agentValues[f.key]!);
      const binding = agent.find(
        (d) => d.kind === 'RoleBinding' && String(d.metadata?.name).endsWith('hub-access'),
      ) as { subjects?: Array<{ kind: string; name: string }> } | undefined;
      expect(binding?.subjects).toContainEqual(
        expect.objectContaining({ kind: 'Group', name: 'mirrorhub-hub' }),
      );
    }
  });

  it('has nothing left to change (a second plan is empty)', async () => {
    const run = await terraform(dir, ['plan', '-detailed-exitcode', '-input=false'], {
      env,
      allowFailure: true,
    });
    expect(run.stderr).toBe('');
    expect(run.code, run.stdout).toBe(0);
  });

  it('destroys everything it created', async () => {
    const started = Date.now();
    await terraform(dir, ['destroy', '-auto-approve', '-input=false'], { env });
    console.error(`timing: terraform destroy in ${((Date.now() - started) / 1000).toFixed(1)}s`);
    expect(await roleExists(account('hub'), 'mirrorhub-hub')).toBe(false);
    for (const f of FOLLOWERS) {
      expect(await roleExists(account(f.cluster), 'mirrorhub-follower')).toBe(false);
      // What the test itself made stays.
      expect(await roleExists(account(f.cluster), 'OrganizationAccountAccessRole')).toBe(true);
      const eks = new EKSClient({
        endpoint: kit.aws!.eksEndpoint,
        region: kit.aws!.region,
        credentials: accounts.followerAdmins.get(f.cluster)!.credentials,
      });
      const { accessEntries } = await eks.send(
        new ListAccessEntriesCommand({ clusterName: f.cluster }),
      );
      eks.destroy();
      expect(accessEntries).toEqual([]);
    }
    const state = await terraform(dir, ['state', 'list'], { env, allowFailure: true });
    expect(state.stdout.trim()).toBe('');
  });
});
