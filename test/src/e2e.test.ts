// The platform engineer's path, end to end, as docs/getting-started.md walks it:
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
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { ensureTerraformSetup } from '@mirrorhub/infra/components/index';
import { startKit, type Kit } from '@mirrorhub/infra/kit/index';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';

import { chartsDir } from './support/crds.js';
import { deploymentRunner, type DeploymentRunner } from './support/deployment.js';
import { eventually } from './support/eventually.js';
import { isolatedHelm, type Helm } from './support/helm.js';
import { generateHubKeyPair } from './support/signing.js';
import {
  applyMultiAccountExample,
  prepareExampleAccounts,
  terraformRunner,
  type AppliedExample,
  type ExampleFollower,
} from './support/terraform.js';

const repo = resolve(import.meta.dirname, '../..');
/** The hub's signing key pair, made as docs/getting-started.md makes it. */
const HUB_KEY = generateHubKeyPair();
const NS = 'mirrorhub-system';
const FOLLOWERS: readonly [ExampleFollower, ExampleFollower] = [
  {
    key: 'a',
    cluster: 'follower-a',
    externalId: 'mirrorhub-follower-a-e2e1',
    labels: { env: 'prod', region: 'eu' },
  },
  {
    key: 'b',
    cluster: 'follower-b',
    externalId: 'mirrorhub-follower-b-e2e2',
    labels: { env: 'prod', region: 'us' },
  },
];
/** The source's value: it must reach the copies and appear in no log line. */
const DOCKER_PASSWORD = 'e2e-registry-password-5b1f9c';

let kit: Kit;
let helm: Helm;
let work: string;
let applied: AppliedExample;
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
  const tf = await ensureTerraformSetup(work);
  helm = await isolatedHelm();
  kit = await startKit({ clusters: ['hub', ...FOLLOWERS.map((f) => f.cluster)] });
  deployments = deploymentRunner(kit, NS, work);
  const accounts = await prepareExampleAccounts(
    kit,
    FOLLOWERS.map((f) => f.cluster),
  );
  applied = await applyMultiAccountExample({
    terraform: terraformRunner(tf),
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

  it('helm installs the hub into the management cluster with the values terraform output', async () => {
    hubAdmin = kit.cluster('hub').kubeConfig();
    const values = await file('hub-values.yaml', applied.outputs.hub_helm_values!.value as string);
    // What a cluster with private endpoints adds: the kit's STS and EKS stand in for AWS's.
    const { stsEndpoint, eksEndpoint, region } = kit.aws!;
    const endpoints = await file(
      'hub-endpoints.yaml',
      [
        `aws:`,
        `  region: ${region}`,
        `env:`,
        `  - { name: MIRRORHUB_STS_ENDPOINT, value: "${stsEndpoint}" }`,
        `  - { name: MIRRORHUB_EKS_ENDPOINT, value: "${eksEndpoint}" }`,
        // The SDK's web-identity call (IRSA) goes to STS too.
        `  - { name: AWS_ENDPOINT_URL_STS, value: "${stsEndpoint}" }`,
        '',
      ].join('\n'),
    );
    // The signing key, as the page makes it (openssl genpkey / pkey -pubout make the same PEMs).
    await kubectl('hub', ['create', 'namespace', NS]);
    await kubectl('hub', [
      '-n',
      NS,
      'create',
      'secret',
      'generic',
      'mirrorhub-hub-signing',
      `--from-file=private.pem=${await file('hub-signing.pem', HUB_KEY.privateKeyPem)}`,
    ]);
    const out = await helm([
      'install',
      'mirrorhub-hub',
      join(chartsDir, 'mirrorhub-hub'),
      '--namespace',
      NS,
      '--create-namespace',
      '--kubeconfig',
      kit.cluster('hub').kubeconfigPath,
      '-f',
      values,
      '-f',
      endpoints,
      '--set',
      'signing.existingSecret=mirrorhub-hub-signing',
    ]);
    expect(out).toContain('STATUS: deployed');
    const sa = await hubAdmin
      .makeApiClient(CoreV1Api)
      .readNamespacedServiceAccount({ namespace: NS, name: 'mirrorhub-hub' });
    expect(sa.metadata?.annotations?.['eks.amazonaws.com/role-arn']).toBe(
      applied.outputs.hub_role_arn!.value,
    );
  });

  it.each(FOLLOWERS)(
    'helm installs an agent into $cluster with its values from terraform',
    async (f) => {
      const all = applied.outputs.agent_helm_values!.value as Record<string, string>;
      expect(parseYaml(all[f.key]!)).toMatchObject({ clusterName: f.cluster });
      const out = await helm([
        'install',
        'mirrorhub-agent',
        join(chartsDir, 'mirrorhub-agent'),
        '--namespace',
        NS,
        '--create-namespace',
        '--kubeconfig',
        kit.cluster(f.cluster).kubeconfigPath,
        '-f',
        await file(`agent-${f.key}-values.yaml`, all[f.key]!),
        '--set-file',
        `hubPublicKeys[0]=${await file('hub-signing.pub', HUB_KEY.publicKeyPem)}`,
      ]);
      expect(out).toContain('STATUS: deployed');
    },
  );

  it("kubectl applies terraform's MirrorClusters on the hub", async () => {
    const manifest = await file(
      'mirrorclusters.yaml',
      applied.outputs.mirror_clusters_manifest!.value as string,
    );
    const out = await kubectl('hub', ['apply', '-f', manifest]);
    expect(out).toContain('mirrorcluster.mirrorhub.io/follower-a created');
    expect(out).toContain('mirrorcluster.mirrorhub.io/follower-b created');
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

  it('kubectl apply of a ClusterSecretMirror selecting clusters by label puts copies in both followers', async () => {
    await kubectl('hub', ['create', 'namespace', 'platform']);
    await kubectl('hub', [
      'create',
      'secret',
      'docker-registry',
      'registry-credentials',
      '-n',
      'platform',
      '--docker-server=registry.example.com',
      '--docker-username=ci',
      `--docker-password=${DOCKER_PASSWORD}`,
    ]);
    const out = await kubectl('hub', [
      'apply',
      '-f',
      join(repo, 'examples/registry-credentials.yaml'),
    ]);
    expect(out).toContain('clustersecretmirror.mirrorhub.io/registry-credentials created');

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
