// terraform/ applied as a platform engineer applies it, against the kit's AWS: terraform and the
// hashicorp/aws provider built from Go modules (infra/src/components/terraform.ts), moto behind
// the STS gate for IAM/STS in each account, the EKS emulator for the follower clusters.
//
// The accounts are set up the way an AWS Organization is: terraform runs as a user of the
// management account and assumes OrganizationAccountAccessRole in each member account; the
// management cluster's IAM OIDC provider names the kit hub cluster's real ServiceAccount issuer.
import { spawn } from 'node:child_process';
import { cp, mkdtemp, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

import {
  createRole,
  createUserWithAccessKey,
  iamCall,
  trustPolicy,
  xmlValue,
  type Principal,
} from '@mirrorhub/infra/aws/moto';
import type { TerraformSetup } from '@mirrorhub/infra/components/index';
import { serviceAccountIssuer, type Kit } from '@mirrorhub/infra/kit/index';

export const TERRAFORM_DIR = resolve(import.meta.dirname, '../../../terraform');

export interface TerraformRun {
  code: number;
  stdout: string;
  stderr: string;
}

export type Terraform = (
  cwd: string,
  args: string[],
  opts?: { env?: NodeJS.ProcessEnv; allowFailure?: boolean; timeoutMs?: number },
) => Promise<TerraformRun>;

/** Runs `tf`'s terraform; rejects with its stderr unless `allowFailure`. */
export function terraformRunner(tf: TerraformSetup): Terraform {
  return (cwd, args, opts = {}) =>
    new Promise((resolvePromise, reject) => {
      // Plain output for the commands that colour it (version, output and state have no flag).
      const color = ['init', 'validate', 'plan', 'apply', 'destroy'].includes(args[0]!)
        ? ['-no-color']
        : [];
      const child = spawn(tf.terraform, [...args, ...color], {
        cwd,
        env: { ...tf.env, ...opts.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 600_000);
      child.once('error', reject);
      child.once('close', (code) => {
        clearTimeout(timer);
        const run = { code: code ?? -1, stdout, stderr };
        if (run.code !== 0 && !opts.allowFailure) {
          reject(
            new Error(
              `terraform ${args.join(' ')} in ${cwd} exited ${run.code}:\n${stderr || stdout}`.slice(
                0,
                6000,
              ),
            ),
          );
        } else resolvePromise(run);
      });
    });
}

/** A private copy of terraform/ under `work` (init writes .terraform/ and a lock file next to the code). */
export async function copyOfTerraformDir(work: string): Promise<string> {
  const dir = await mkdtemp(join(work, 'tree-'));
  for (const sub of ['modules', 'examples']) {
    await cp(join(TERRAFORM_DIR, sub), join(dir, sub), {
      recursive: true,
      filter: (src) => !/[/\\](\.terraform|terraform\.tfstate[^/\\]*)$/.test(src),
    });
  }
  return dir;
}

export interface ExampleAccounts {
  /** terraform's base identity: an IAM user in the management (hub) account. */
  operator: Principal;
  /** Per follower cluster: an administrator user of its account (for reads the hub never makes). */
  followerAdmins: Map<string, Principal>;
  /** The management cluster's IAM OIDC provider (IRSA), for the kit hub cluster's issuer. */
  oidcProviderArn: string;
  /** Host of that issuer, as IAM condition keys name it (`<host>:sub`). */
  issuerHost: string;
}

/** The accounts as an AWS Organization has them before anyone runs terraform/examples. */
export async function prepareExampleAccounts(
  kit: Kit,
  followers: readonly string[],
  hub = 'hub',
): Promise<ExampleAccounts> {
  const sts = kit.aws!.stsEndpoint;
  const operator = await createUserWithAccessKey(sts, {
    accountId: kit.cluster(hub).accountId,
    userName: 'terraform',
  });
  const followerAdmins = new Map<string, Principal>();
  for (const f of followers) {
    const accountId = kit.cluster(f).accountId;
    await createRole(sts, {
      accountId,
      roleName: 'OrganizationAccountAccessRole',
      trustPolicy: trustPolicy({ principals: [operator.arn] }),
    });
    followerAdmins.set(
      f,
      await createUserWithAccessKey(sts, { accountId, userName: 'platform-admin' }),
    );
  }
  const issuer = serviceAccountIssuer(hub);
  const issuerHost = issuer.replace(/^https:\/\//, '');
  const xml = await iamCall(sts, kit.cluster(hub).accountId, 'CreateOpenIDConnectProvider', {
    Url: issuer,
    'ClientIDList.member.1': 'sts.amazonaws.com',
    'ThumbprintList.member.1': '9e99a48a9960b14926bb7f3b02e22da2b0ab7280',
  });
  const oidcProviderArn = xmlValue(xml, 'OpenIDConnectProviderArn') ?? '';
  return { operator, followerAdmins, oidcProviderArn, issuerHost };
}

export interface ExampleFollower {
  /** The example's follower slot: `a` or `b`. */
  key: 'a' | 'b';
  cluster: string;
  externalId: string;
  labels: Record<string, string>;
}

export interface AppliedExample {
  /** The example's directory in the private copy. */
  dir: string;
  /** The environment terraform ran with (the operator's keys only). */
  env: NodeJS.ProcessEnv;
  outputs: Record<string, { value: unknown }>;
}

export interface PreparedExample {
  /** The private copy of terraform/ (modules/, examples/). */
  tree: string;
  /** examples/multi-account in it. */
  dir: string;
  /** The environment terraform runs with (the operator's keys only). */
  env: NodeJS.ProcessEnv;
}

/**
 * examples/multi-account as a user has it before `terraform init`, plus two files: an override
 * pointing every provider at the kit's emulators (IAM and STS are moto, EKS is the emulator;
 * never the metadata API), and terraform.tfvars.json with the kit's accounts, which terraform
 * loads after a terraform.tfvars copied from the example, so its values win.
 */
export async function prepareMultiAccountExample(o: {
  kit: Kit;
  work: string;
  accounts: ExampleAccounts;
  followers: readonly [ExampleFollower, ExampleFollower];
}): Promise<PreparedExample> {
  const tree = await copyOfTerraformDir(o.work);
  const dir = join(tree, 'examples/multi-account');
  const { stsEndpoint, eksEndpoint, region } = o.kit.aws!;
  const endpoints = (alias: string) => `provider "aws" {
  alias                   = "${alias}"
  skip_metadata_api_check = true
  endpoints {
    iam = "${stsEndpoint}"
    sts = "${stsEndpoint}"
    eks = "${eksEndpoint}"
  }
}
`;
  await writeFile(
    join(dir, 'kit_override.tf'),
    ['management', 'follower_a', 'follower_b'].map(endpoints).join('\n'),
  );
  const follower = (f: ExampleFollower) => ({
    region,
    cluster_name: f.cluster,
    external_id: f.externalId,
    assume_role_arn: `arn:aws:iam::${o.kit.cluster(f.cluster).accountId}:role/OrganizationAccountAccessRole`,
    labels: f.labels,
  });
  const [a, b] = o.followers;
  await writeFile(
    join(dir, 'terraform.tfvars.json'),
    JSON.stringify({
      management: {
        region,
        oidc_provider_arn: o.accounts.oidcProviderArn,
        enable_pod_identity: true,
      },
      follower_a: follower(a),
      follower_b: follower(b),
    }),
  );
  const env: NodeJS.ProcessEnv = {
    AWS_ACCESS_KEY_ID: o.accounts.operator.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: o.accounts.operator.credentials.secretAccessKey,
    AWS_SESSION_TOKEN: '',
    AWS_PROFILE: '',
    AWS_CONFIG_FILE: join(o.work, 'no-aws-config'),
    AWS_SHARED_CREDENTIALS_FILE: join(o.work, 'no-aws-credentials'),
    AWS_EC2_METADATA_DISABLED: 'true',
  };
  return { tree, dir, env };
}

/**
 * `terraform init` + `apply` of examples/multi-account as a user applies it (prepared by
 * prepareMultiAccountExample). Returns `terraform output -json`.
 */
export async function applyMultiAccountExample(o: {
  terraform: Terraform;
  kit: Kit;
  work: string;
  accounts: ExampleAccounts;
  followers: readonly [ExampleFollower, ExampleFollower];
  log?: (line: string) => void;
}): Promise<AppliedExample> {
  const { dir, env } = await prepareMultiAccountExample(o);
  await o.terraform(dir, ['init', '-input=false'], { env });
  const started = Date.now();
  await o.terraform(dir, ['apply', '-auto-approve', '-input=false'], { env });
  o.log?.(`timing: terraform apply in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  const outputs = JSON.parse(
    (await o.terraform(dir, ['output', '-json'], { env })).stdout,
  ) as Record<string, { value: unknown }>;
  return { dir, env, outputs };
}
