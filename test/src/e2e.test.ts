// The platform engineer's path, end to end, as docs/getting-started.md walks it and as
// terraform/examples/multi-account/README.md prints it: the README's command block is read from
// the README and run by bash as it is printed (terraform, openssl, kubectl, helm, jq on PATH, kube
// contexts mgmt / eu-prod-1 / us-prod-1), against the kit:
//
//   terraform apply (terraform/examples/multi-account)
//   -> helm install mirrorhub-hub into the management cluster, mirrorhub-agent into each follower,
//      with the values terraform outputs; kubectl apply the MirrorClusters it outputs
//   -> kubectl apply examples/registry-credentials.yaml (a ClusterSecretMirror selecting
//      clusters by label)
//   -> copies in both followers; status with kubectl on the hub.
//
// Every part is real but the AWS cloud: three kube-apiservers (management cluster and two EKS
// followers in accounts 222222222222 and 333333333333), terraform and the hashicorp/aws provider
// built from Go modules, helm, kubectl, and the hub and agents as processes started from the
// charts' Deployments: their entry point, their env (resolved as the kubelet would), and the
// identity the charts created (a TokenRequest token of the chart's ServiceAccount, as a pod
// mounts it). AWS is moto behind the kit's STS gate plus the EKS emulator; the hub's AWS
// identity is what the EKS pod identity webhook injects for the role the chart annotates (IRSA:
// a projected token with audience sts.amazonaws.com, AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE),
// so the hub really uses the roles, ExternalIds and access entries terraform created.
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { ensureTerraformSetup } from '@mirrorhub/infra/components/index';
import { startKit, type Kit } from '@mirrorhub/infra/kit/index';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';

import { deploymentRunner, type DeploymentRunner } from './support/deployment.js';
import { eventually } from './support/eventually.js';
import { isolatedHelm, type Helm } from './support/helm.js';
import {
  prepareExampleAccounts,
  prepareMultiAccountExample,
  terraformRunner,
  type AppliedExample,
  type ExampleFollower,
  type PreparedExample,
} from './support/terraform.js';

const repo = resolve(import.meta.dirname, '../..');
const EXAMPLE = join(repo, 'terraform/examples/multi-account');
const NS = 'mirrorhub-system';

/** The README's command block: the one `sh` block after "The commands". */
function readmeCommands(): string {
  const readme = readFileSync(join(EXAMPLE, 'README.md'), 'utf8');
  const at = readme.indexOf('The commands');
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(at));
  if (at < 0 || !block) throw new Error('README.md: no sh block after "The commands"');
  return block[1]!;
}

/** `labels = { env = "prod", region = "eu" }` of follower `key` in terraform.tfvars.example. */
function exampleLabels(key: 'a' | 'b'): Record<string, string> {
  const tfvars = readFileSync(join(EXAMPLE, 'terraform.tfvars.example'), 'utf8');
  const block = new RegExp(`follower_${key} = \\{([\\s\\S]*?)\\n\\}`).exec(tfvars)?.[1] ?? '';
  const labels = /labels\s*=\s*\{([^}]*)\}/.exec(block)?.[1] ?? '';
  return Object.fromEntries(
    [...labels.matchAll(/([\w.-]+)\s*=\s*"([^"]*)"/g)].map((m) => [m[1]!, m[2]!]),
  );
}

/** The example's followers, labelled as its tfvars example labels them; the kit's clusters. */
const FOLLOWERS: readonly [ExampleFollower, ExampleFollower] = [
  {
    key: 'a',
    cluster: 'follower-a',
    externalId: 'mirrorhub-follower-a-e2e1',
    labels: exampleLabels('a'),
  },
  {
    key: 'b',
    cluster: 'follower-b',
    externalId: 'mirrorhub-follower-b-e2e2',
    labels: exampleLabels('b'),
  },
];
/** The README's kube contexts, for the kit's clusters. */
const CONTEXTS: Record<string, string> = {
  mgmt: 'hub',
  'eu-prod-1': 'follower-a',
  'us-prod-1': 'follower-b',
};
/** The source's value: it must reach the copies and appear in no log line. */
const DOCKER_PASSWORD = 'e2e-registry-password-5b1f9c';

let kit: Kit;
let helm: Helm;
let work: string;
let applied: AppliedExample;
let prepared: PreparedExample;
let tf: Awaited<ReturnType<typeof ensureTerraformSetup>>;
/** What bash printed running the README's commands. */
let readmeRun: { code: number; stdout: string; stderr: string };
/** The source Secret's data as the API server holds it (base64): in the copies, in no log. */
let sourceData: Record<string, string>;
/** The charts' Deployments, run as processes (support/deployment.ts). */
let deployments: DeploymentRunner;

function kubectl(cluster: string, args: string[]): Promise<string> {
  return promisify(execFile)(
    kit.kubectl,
    ['--kubeconfig', kit.cluster(cluster).kubeconfigPath, ...args],
    {
      maxBuffer: 8 * 1024 * 1024,
    },
  ).then((r) => r.stdout);
}

/** Writes `text` to a file under the work dir and returns its path (for `-f`). */
async function file(name: string, text: string): Promise<string> {
  const path = join(work, name);
  await writeFile(path, text, { mode: 0o600 });
  return path;
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'mirrorhub-e2e-'));
  // The builds (once per machine, cached) before the kit, so no API server idles meanwhile.
  tf = await ensureTerraformSetup(work);
  helm = await isolatedHelm();
  kit = await startKit({ clusters: ['hub', ...FOLLOWERS.map((f) => f.cluster)] });
  deployments = deploymentRunner(kit, NS, work);
  const accounts = await prepareExampleAccounts(
    kit,
    FOLLOWERS.map((f) => f.cluster),
  );
  prepared = await prepareMultiAccountExample({
    kit,
    work,
    accounts,
    followers: FOLLOWERS,
  });
  // The teams' namespaces exist in the followers before any mirror does; more come later.
  for (const f of FOLLOWERS) {
    for (const ns of ['team-a', 'team-b', 'other'])
      await kubectl(f.cluster, ['create', 'namespace', ns]);
  }
}, 150 * 60_000);

afterAll(async () => {
  await deployments?.stop();
  await helm?.cleanup();
  await kit?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('terraform apply -> helm install -> kubectl apply -> copies in both followers', () => {
  let hubAdmin: KubeConfig;

  it("runs the example README's commands as printed: terraform, the signing key, helm, the MirrorClusters, the guide's mirror", async () => {
    hubAdmin = kit.cluster('hub').kubeConfig();
    // The operator's machine: the repository (the example a private copy, as terraform writes
    // next to it), the tools on PATH, a kubeconfig with the README's contexts.
    const root = join(work, 'repo');
    await mkdir(join(root, 'terraform'), { recursive: true });
    await symlink(join(repo, 'charts'), join(root, 'charts'));
    await symlink(join(repo, 'examples'), join(root, 'examples'));
    await symlink(join(prepared.tree, 'examples'), join(root, 'terraform/examples'));
    await symlink(join(prepared.tree, 'modules'), join(root, 'terraform/modules'));
    const bin = join(work, 'bin');
    await mkdir(bin);
    await symlink(tf.terraform, join(bin, 'terraform'));
    await symlink(kit.kubectl, join(bin, 'kubectl'));
    await symlink(helm.bin, join(bin, 'helm'));
    const merged = { apiVersion: 'v1', kind: 'Config', clusters: [], users: [], contexts: [] } as {
      clusters: unknown[];
      users: unknown[];
      contexts: unknown[];
      'current-context'?: string;
    };
    for (const [context, cluster] of Object.entries(CONTEXTS)) {
      const doc = parseYaml(await readFile(kit.cluster(cluster).kubeconfigPath, 'utf8')) as Record<
        string,
        Array<{ name: string; cluster?: unknown; user?: unknown }>
      >;
      merged.clusters.push({ name: context, cluster: doc['clusters']![0]!.cluster });
      merged.users.push({ name: context, user: doc['users']![0]!.user });
      merged.contexts.push({ name: context, context: { cluster: context, user: context } });
    }
    const kubeconfig = await file('kubeconfig', stringifyYaml(merged));
    const script = readmeCommands();
    readmeRun = await new Promise((resolvePromise, reject) => {
      const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', script], {
        cwd: root,
        env: {
          ...tf.env,
          ...prepared.env,
          ...helm.env,
          PATH: `${bin}:${process.env['PATH'] ?? ''}`,
          KUBECONFIG: kubeconfig,
          REGISTRY_PASSWORD: DOCKER_PASSWORD,
          // What the operator types at terraform apply's prompt.
          TF_CLI_ARGS_apply: '-auto-approve',
          TF_INPUT: '0',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      child.once('error', reject);
      child.once('close', (code) => resolvePromise({ code: code ?? -1, stdout, stderr }));
    });
    expect(readmeRun.code, `${readmeRun.stderr}\n${readmeRun.stdout}`.slice(-6000)).toBe(0);
    applied = {
      dir: prepared.dir,
      env: prepared.env,
      outputs: JSON.parse(
        (await terraformRunner(tf)(prepared.dir, ['output', '-json'], { env: prepared.env }))
          .stdout,
      ) as AppliedExample['outputs'],
    };
  });

  it('helm installed the hub into the management cluster with the values terraform output', () => {
    expect(readmeRun.stdout).toMatch(/NAME: mirrorhub-hub[\s\S]*?STATUS: deployed/);
  });

  it('the hub chart annotated its ServiceAccount with the hub role terraform made', async () => {
    const sa = await hubAdmin
      .makeApiClient(CoreV1Api)
      .readNamespacedServiceAccount({ namespace: NS, name: 'mirrorhub-hub' });
    expect(sa.metadata?.annotations?.['eks.amazonaws.com/role-arn']).toBe(
      applied.outputs.hub_role_arn!.value,
    );
  });

  it.each(FOLLOWERS)(
    'helm installed an agent into $cluster with its values from terraform',
    async (f) => {
      const all = applied.outputs.agent_helm_values!.value as Record<string, string>;
      expect(parseYaml(all[f.key]!)).toMatchObject({ clusterName: f.cluster });
      const releases = JSON.parse(
        await helm([
          'list',
          '-n',
          NS,
          '-o',
          'json',
          '--kubeconfig',
          kit.cluster(f.cluster).kubeconfigPath,
        ]),
      ) as Array<{ name: string; status: string }>;
      expect(releases).toEqual([
        expect.objectContaining({ name: 'mirrorhub-agent', status: 'deployed' }),
      ]);
    },
  );

  it("kubectl applied terraform's MirrorClusters on the hub, and the guide's mirror", () => {
    expect(readmeRun.stdout).toContain('mirrorcluster.mirrorhub.io/follower-a created');
    expect(readmeRun.stdout).toContain('mirrorcluster.mirrorhub.io/follower-b created');
    expect(readmeRun.stdout).toContain(
      'clustersecretmirror.mirrorhub.io/registry-credentials created',
    );
  });

  it('the agents and the hub run as their Deployments, with the identities the charts and terraform made', async () => {
    for (const f of FOLLOWERS) await deployments.run(f.cluster, 'mirrorhub-agent');
    // The EKS pod identity webhook's part for a ServiceAccount annotated with a role (IRSA).
    const sa = await hubAdmin
      .makeApiClient(CoreV1Api)
      .readNamespacedServiceAccount({ namespace: NS, name: 'mirrorhub-hub' });
    const token = await hubAdmin.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
      namespace: NS,
      name: 'mirrorhub-hub',
      body: { spec: { audiences: ['sts.amazonaws.com'], expirationSeconds: 3600 } },
    });
    await deployments.run('hub', 'mirrorhub-hub', {
      AWS_ROLE_ARN: sa.metadata!.annotations!['eks.amazonaws.com/role-arn']!,
      AWS_WEB_IDENTITY_TOKEN_FILE: await file('hub-web-identity-token', token.status!.token!),
      AWS_STS_REGIONAL_ENDPOINTS: 'regional',
      AWS_EC2_METADATA_DISABLED: 'true',
      // The cloud: what the pod identity webhook injects on EKS, and the kit's STS and EKS in
      // place of AWS's public endpoints (the SDK's web-identity call, IRSA, goes to STS too).
      AWS_REGION: kit.aws!.region,
      MIRRORHUB_STS_ENDPOINT: kit.aws!.stsEndpoint,
      MIRRORHUB_EKS_ENDPOINT: kit.aws!.eksEndpoint,
      AWS_ENDPOINT_URL_STS: kit.aws!.stsEndpoint,
    });
    // Each follower: reachable as the follower role terraform made (which trusts only the hub
    // role, with that follower's ExternalId: the STS gate enforces it), its agent heartbeating.
    await eventually(
      async () => {
        const list = JSON.parse(await kubectl('hub', ['get', 'mirrorclusters', '-o', 'json'])) as {
          items: Array<{
            metadata: { name: string };
            status?: { reachable?: boolean; identity?: string; agent?: { lastHeartbeat?: string } };
          }>;
        };
        expect(
          list.items.map((c) => ({
            name: c.metadata.name,
            reachable: c.status?.reachable,
            // The session name says mirrorhub-hub-<host> (in a pod, the pod's name).
            identity: c.status?.identity?.replace(
              /\/mirrorhub-hub-[\w.@=,+-]+$/,
              '/mirrorhub-hub-<host>',
            ),
            heartbeat: c.status?.agent?.lastHeartbeat !== undefined,
          })),
        ).toEqual(
          FOLLOWERS.map((f) => ({
            name: f.cluster,
            reachable: true,
            identity: `arn:aws:sts::${kit.cluster(f.cluster).accountId}:assumed-role/mirrorhub-follower/mirrorhub-hub-<host>`,
            heartbeat: true,
          })),
        );
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
  });

  it('the ClusterSecretMirror selecting clusters by label puts copies in every cluster its labels say', async () => {
    // Every follower the example labels env=prod, as the guide's mirror selects.
    expect(FOLLOWERS.map((f) => f.labels['env'])).toEqual(['prod', 'prod']);
    const source = await hubAdmin
      .makeApiClient(CoreV1Api)
      .readNamespacedSecret({ namespace: 'platform', name: 'registry-credentials' });
    sourceData = source.data!;
    for (const f of FOLLOWERS) {
      const core = kit.cluster(f.cluster).kubeConfig().makeApiClient(CoreV1Api);
      for (const ns of ['team-a', 'team-b']) {
        const copy = await eventually(
          () => core.readNamespacedSecret({ namespace: ns, name: 'registry-credentials' }),
          { timeoutMs: 60_000, intervalMs: 250 },
        );
        expect(copy.type).toBe('kubernetes.io/dockerconfigjson');
        expect(copy.data).toEqual(source.data);
      }
      // Not selected by the mirror's namespace pattern.
      await expect(
        core.readNamespacedSecret({ namespace: 'other', name: 'registry-credentials' }),
      ).rejects.toMatchObject({ code: 404 });
    }
  });

  it('a team namespace created afterwards in a follower gets its copy', async () => {
    await kubectl('follower-b', ['create', 'namespace', 'team-new']);
    const core = kit.cluster('follower-b').kubeConfig().makeApiClient(CoreV1Api);
    const copy = await eventually(
      () => core.readNamespacedSecret({ namespace: 'team-new', name: 'registry-credentials' }),
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    expect(Buffer.from(copy.data!['.dockerconfigjson']!, 'base64').toString()).toContain(
      DOCKER_PASSWORD,
    );
  });

  it('kubectl on the hub shows the mirror Active, with every copy, per cluster', async () => {
    await eventually(
      async () => {
        const table = await kubectl('hub', ['get', 'clustersecretmirror', 'registry-credentials']);
        const [header, row] = table.trim().split('\n');
        expect(header).toMatch(
          /^NAME\s+SOURCE TYPE\s+SOURCE NAME\s+DESTINATION\s+.*STATUS\s+SYNCED/,
        );
        expect(row).toMatch(
          /^registry-credentials\s+Secret\s+registry-credentials\s+.*\sActive\s+5\/5\s/,
        );
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    const status = JSON.parse(
      await kubectl('hub', [
        'get',
        'clustersecretmirror',
        'registry-credentials',
        '-o',
        'jsonpath={.status}',
      ]),
    ) as {
      counts: Record<string, number>;
      clusters: Array<{ name: string; phase: string; namespaces: number; synced: number }>;
    };
    expect(status.counts).toMatchObject({
      clusters: 2,
      namespaces: 5,
      synced: 5,
      failed: 0,
      conflicts: 0,
    });
    expect(
      status.clusters
        .map(({ name, phase, namespaces, synced }) => ({ name, phase, namespaces, synced }))
        .sort((x, y) => x.name.localeCompare(y.name)),
    ).toEqual([
      { name: 'follower-a', phase: 'Active', namespaces: 2, synced: 2 },
      { name: 'follower-b', phase: 'Active', namespaces: 3, synced: 3 },
    ]);
  });

  it("the doc's other status commands: Events on the hub, the copies' label in a follower", async () => {
    const events = await kubectl('hub', [
      'get',
      'events',
      '-n',
      'default',
      '--field-selector',
      'involvedObject.name=registry-credentials',
    ]);
    expect(events).toMatch(/Normal\s+Synced\s+clustersecretmirror\/registry-credentials/);
    const copies = await kubectl('follower-b', [
      'get',
      'secrets',
      '-A',
      '-l',
      'mirrorhub.io/managed-by=mirrorhub',
      '-o',
      'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{"\\n"}{end}',
    ]);
    expect(copies.trim().split('\n').sort()).toEqual([
      'team-a/registry-credentials',
      'team-b/registry-credentials',
      'team-new/registry-credentials',
    ]);
  });

  it('no process logged the secret value, and none of them died', async () => {
    const procs = deployments.procs;
    expect(procs.map((p) => p.name)).toEqual([
      'follower-a/mirrorhub-agent',
      'follower-b/mirrorhub-agent',
      'hub/mirrorhub-hub',
    ]);
    const encoded = Object.values(sourceData);
    expect(encoded).toHaveLength(1);
    for (const p of procs) {
      expect(p.child.exitCode, `${p.name} is still running`).toBeNull();
      const log = await readFile(p.log, 'utf8');
      expect(log.length, `${p.name} logged something`).toBeGreaterThan(0);
      expect(log).not.toContain(DOCKER_PASSWORD);
      for (const value of encoded) expect(log).not.toContain(value);
    }
  });
});
