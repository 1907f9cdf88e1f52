/**
 * `npm run demo`: real local clusters, the hub and an agent, an OpenBao dev server, sample
 * mirrors (one of them Vault-sourced), and what to run to watch them work. Stays in the
 * foreground until Ctrl-C; `--exit` checks that the samples converged and stops (that is how the
 * test suite proves this command works).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, writeFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs, promisify } from 'node:util';

import {
  AdmissionregistrationV1Api,
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
} from '@kubernetes/client-node';

import { tokenAuth, VaultClient, type VaultEnvelope } from '@mirrorhub/hub/vault/index';
import { findFreePort } from '@mirrorhub/infra/components/cache';
import { ensureBao, startOpenBao, type OpenBao } from '@mirrorhub/infra/components/index';
import { startKit, type Kit } from '@mirrorhub/infra/kit/index';

import { createUserWithAccessKey } from '@mirrorhub/infra/aws/moto';

import { installCrds } from '../support/crds.js';
import { applyRendered, renderChart } from '../support/helm.js';
import { registerCluster } from '../support/objects.js';
import {
  HUB_GROUP,
  hubAwsEnv,
  prepareFollower,
  type FollowerAccess,
} from '../support/multicluster.js';
import { eventually } from '../support/eventually.js';
import {
  impersonatingKubeConfig,
  serviceAccountKubeConfig,
  writeKubeConfig,
} from '../support/serviceaccount.js';
import { clusterViewerToken } from '../support/viewers.js';
import { generateHubKeyPair } from '../support/signing.js';

const root = resolve(import.meta.dirname, '../../..');
const SYSTEM_NS = 'mirrorhub-system';
/** The demo hub's signing key, made afresh each run. */
const HUB_KEY = generateHubKeyPair();
/** The charts' releases and the ServiceAccounts they create (docs/getting-started.md's names). */
const HUB_RELEASE = 'mirrorhub-hub';
const AGENT_RELEASE = 'mirrorhub-agent';
const HUB_SA = 'mirrorhub-hub';
const AGENT_SA = 'mirrorhub-agent';
/** Lifetime of the hub's and the agents' tokens (a pod's are renewed by the kubelet): 7 days. */
const PROCESS_TOKEN_SECONDS = 7 * 24 * 3600;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      exit: { type: 'boolean', default: false },
      dir: { type: 'string', default: join(root, '.kit', 'demo') },
    },
  });
  const dir = resolve(values.dir!);
  await rm(dir, { recursive: true, force: true });
  await mkdir(join(dir, 'logs'), { recursive: true });

  say(
    'starting clusters hub, follower-a, follower-b (real kube-apiserver + etcd), moto, the EKS emulator and OpenBao...',
  );
  // The emulators' per-request lines go to a file; the console gets the summary.
  const kitLog = createWriteStream(join(dir, 'logs', 'kit.log'));
  // OpenBao starts beside the clusters: a dev server (in memory, unsealed, KV v2 at secret/).
  const baoStarting = startOpenBao();
  baoStarting.catch(() => {}); // awaited below, once the clusters are up
  let kit: Kit;
  try {
    kit = await startKit({
      clusters: ['hub', 'follower-a', 'follower-b'],
      dir,
      log: (l) => (/cluster\(s\) ready/.test(l) ? say(l) : kitLog.write(`${l}\n`)),
    });
  } catch (err) {
    await baoStarting.then((b) => b.stop()).catch(() => {});
    throw err;
  }
  const bao = await baoStarting.catch(async (err: unknown) => {
    await kit.stop();
    throw err;
  });
  say(`OpenBao ${bao.address} (dev server) ready`);
  const procs: ChildProcess[] = [];
  const stop = async () => {
    for (const p of procs) p.kill('SIGTERM');
    await Promise.all(
      procs.map((p) => new Promise((r) => (p.exitCode !== null ? r(null) : p.once('exit', r)))),
    );
    await Promise.all([kit.stop(), bao.stop()]);
  };
  process.once('SIGINT', () => void stop().then(() => process.exit(0)));
  process.once('SIGTERM', () => void stop().then(() => process.exit(0)));

  try {
    const hub = kit.cluster('hub');
    const kc = hub.kubeConfig();
    await installCrds(kc, 'mirrorhub-hub');
    await ensureNamespace(kc, SYSTEM_NS);
    // The hub's AWS identity (IRSA or Pod Identity in EKS) is a user in the hub's account here;
    // each follower gets what terraform's follower module and the agent chart would create.
    const hubUser = await createUserWithAccessKey(kit.aws!.stsEndpoint, {
      accountId: hub.accountId,
      userName: 'mirrorhub-hub',
    });
    const followers = ['follower-a', 'follower-b'];
    // What `helm install` of the charts creates but the workloads: the hub chart's and an agent
    // chart's ServiceAccounts, RBAC and admission policies here, an agent chart's in each
    // follower, rendered from charts/ with the values docs/getting-started.md uses. The hub and
    // the agents then run as those ServiceAccounts, held by what the charts grant and refuse.
    await installHubCharts(kc);
    const access = new Map<string, FollowerAccess>();
    for (const f of followers) {
      access.set(f, await prepareFollower(kit, f, hubUser.arn, { agentChart: agentValues(f) }));
    }
    await checkSealed(kit);
    const ports = new Map<string, number>();
    for (const c of kit.clusters) {
      ports.set(c.name, await findFreePort());
      procs.push(
        run(
          `agent-${c.name}`,
          'agent/dist/main.js',
          await asServiceAccount(kit, c.name, AGENT_SA, dir),
          dir,
          {
            PORT: String(ports.get(c.name)),
            MIRRORHUB_CLUSTER_NAME: c.name,
          },
        ),
      );
    }
    const hubPort = await findFreePort();
    procs.push(
      run('hub', 'hub/dist/main.js', await asServiceAccount(kit, 'hub', HUB_SA, dir), dir, {
        PORT: String(hubPort),
        POD_NAME: 'hub-demo',
        MIRRORHUB_SERVICE_ACCOUNT: HUB_SA,
        ...hubAwsEnv(kit, hubUser),
      }),
    );
    const custom = kc.makeApiClient(CustomObjectsApi);
    // The hub's own cluster, registered as the chart's NOTES say (so the dashboard lists it).
    await registerCluster(custom, 'hub', { env: 'management', region: 'eu' }, { inCluster: true });
    for (const f of followers) {
      const a = access.get(f)!;
      await registerCluster(
        custom,
        f,
        { env: 'prod', region: 'eu' },
        { eks: { name: f, region: kit.aws!.region, roleArn: a.roleArn, externalId: a.externalId } },
      );
      for (const ns of ['team-a', 'team-b']) await ensureNamespace(kit.cluster(f).kubeConfig(), ns);
    }
    await applySamples(kc);
    await applyVaultSample(kc, bao);
    say('waiting for the sample mirrors to converge...');
    await eventually(
      async () => {
        const core = kc.makeApiClient(CoreV1Api);
        await core.readNamespacedSecret({ name: 'wildcard-tls', namespace: 'project-a-web' });
        await core.readNamespacedSecret({ name: 'wildcard-tls', namespace: 'project-a-api' });
        await core.readNamespacedConfigMap({ name: 'feature-flags', namespace: 'team-blue' });
        for (const f of ['follower-a', 'follower-b']) {
          for (const ns of ['team-a', 'team-b']) {
            const fcore = kit.cluster(f).kubeConfig().makeApiClient(CoreV1Api);
            await fcore.readNamespacedSecret({ name: 'registry-credentials', namespace: ns });
            await fcore.readNamespacedSecret({ name: 'api-credentials', namespace: ns });
          }
        }
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    ).catch((err: unknown) => {
      throw new Error(
        `the sample mirrors did not converge in 60s; logs are in ${join(dir, 'logs')}`,
        { cause: err },
      );
    });
    await eventually(async () => {
      const table = await kubectl(kit, ['get', 'secretmirrors,clustersecretmirrors', '-A']);
      // wildcard-tls, feature-flags, registry-credentials and the Vault-sourced api-credentials
      if (table.split('\n').filter((l) => / Active /.test(l)).length < 4)
        throw new Error('not Active yet');
    });
    // A platform engineer's view: every mirror and cluster.
    const viewerToken = await clusterViewerToken(kc, SYSTEM_NS, 'dashboard-viewer', 24 * 3600);
    // The dashboard answers that token with the samples before the guide points at it.
    await eventually(async () => {
      const res = await fetch(`http://127.0.0.1:${hubPort}/api/v1/snapshot`, {
        headers: { authorization: `Bearer ${viewerToken}` },
      });
      const snap = (await res.json()) as { mirrors?: unknown[] };
      if (res.status !== 200 || (snap.mirrors?.length ?? 0) < 4) {
        throw new Error(`dashboard not ready: ${res.status}`);
      }
    });
    printGuide(kit, bao, await ensureBao(), dir, hubPort, viewerToken, [
      [
        'kubectl get secretmirrors,clustersecretmirrors -A',
        await kubectl(kit, ['get', 'secretmirrors,clustersecretmirrors', '-A']),
      ],
      ['kubectl get mirrorclusters', await kubectl(kit, ['get', 'mirrorclusters'])],
      [
        'kubectl get clustervaultconnections',
        await kubectl(kit, ['get', 'clustervaultconnections']),
      ],
    ]);
    if (values.exit) {
      await stop();
      say('demo converged; stopped (--exit)');
      return;
    }
    say('Ctrl-C stops everything.');
    await new Promise(() => {});
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The agent chart's values for `cluster`, as docs/getting-started.md installs it. */
function agentValues(cluster: string): Record<string, unknown> {
  return { clusterName: cluster, hubPublicKeys: [HUB_KEY.publicKeyPem] };
}

/** The management cluster: the hub chart and, next to it, the agent chart (docs/helm.md). */
async function installHubCharts(kc: KubeConfig): Promise<void> {
  const hubChart = await renderChart('mirrorhub-hub', HUB_RELEASE, SYSTEM_NS, {
    signing: { existingSecret: 'mirrorhub-hub-signing' },
  });
  await applyRendered(kc, hubChart, SYSTEM_NS);
  const agentChart = await renderChart(
    'mirrorhub-agent',
    AGENT_RELEASE,
    SYSTEM_NS,
    agentValues('hub'),
  );
  await applyRendered(kc, agentChart, SYSTEM_NS);
}

/**
 * A kubeconfig (in the demo's directory) that authenticates as ServiceAccount `name` of the
 * agent namespace of `cluster`, with a token from TokenRequest, as a pod of the chart mounts one.
 */
async function asServiceAccount(
  kit: Kit,
  cluster: string,
  name: string,
  dir: string,
): Promise<string> {
  const kc = await serviceAccountKubeConfig(kit.cluster(cluster).kubeConfig(), {
    namespace: SYSTEM_NS,
    name,
    expirationSeconds: PROCESS_TOKEN_SECONDS,
  });
  return writeKubeConfig(kc, join(dir, `${cluster}-${name}.kubeconfig`));
}

/**
 * The agent namespace of every cluster is sealed as the charts seal it: the charts' admission
 * policies are in force, and the hub's identity there (its ServiceAccount in the management
 * cluster, the group its EKS access entry maps to in a follower) is refused a
 * kubernetes.io/service-account-token Secret for the agent's ServiceAccount, which would hand it
 * a token that reads every Secret of the cluster. Dry runs: nothing is written either way. Policies
 * take a moment to load after they are created, hence the wait.
 */
async function checkSealed(kit: Kit): Promise<void> {
  for (const c of kit.clusters) {
    const admin = c.kubeConfig();
    const [who, asHub] =
      c.name === 'hub'
        ? [
            `ServiceAccount ${SYSTEM_NS}/${HUB_SA}`,
            await serviceAccountKubeConfig(admin, { namespace: SYSTEM_NS, name: HUB_SA }),
          ]
        : [
            `group ${HUB_GROUP}`,
            impersonatingKubeConfig(admin, {
              user: `arn:aws:sts::${c.accountId}:assumed-role/mirrorhub-follower/mirrorhub-hub-demo`,
              group: HUB_GROUP,
            }),
          ];
    const policies = (
      await admin
        .makeApiClient(AdmissionregistrationV1Api)
        .listValidatingAdmissionPolicy({ labelSelector: 'app.kubernetes.io/part-of=mirrorhub' })
    ).items.map((p) => p.metadata!.name!);
    if (!policies.includes(`${AGENT_RELEASE}-token-secrets`))
      throw new Error(
        `${c.name}: the agent chart's admission policies are not installed (${policies.join(', ')})`,
      );
    const refusal = await eventually(
      async () => {
        try {
          await asHub.makeApiClient(CoreV1Api).createNamespacedSecret({
            namespace: SYSTEM_NS,
            dryRun: 'All',
            body: {
              metadata: {
                name: 'agent-token',
                annotations: { 'kubernetes.io/service-account.name': AGENT_SA },
              },
              type: 'kubernetes.io/service-account-token',
            },
          });
        } catch (err) {
          const body = err instanceof ApiException ? String(err.body) : '';
          const by = /ValidatingAdmissionPolicy '([^']+)'/.exec(body);
          if (err instanceof ApiException && err.code === 403 && by) return by[1]!;
          throw err;
        }
        throw new Error(
          `${c.name}: the hub's identity (${who}) may create a token Secret for ${AGENT_SA}`,
        );
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    say(
      `${c.name}: admission policies ${policies.sort().join(', ')}; the hub's identity (${who}) is refused a service-account-token Secret for ${AGENT_SA} (by ${refusal})`,
    );
  }
}

function say(line: string): void {
  console.log(`[demo] ${line}`);
}

function run(
  name: string,
  entry: string,
  kubeconfig: string,
  dir: string,
  env: Record<string, string>,
): ChildProcess {
  const log = createWriteStream(join(dir, 'logs', `${name}.log`));
  // The hub signs every delivery; each agent trusts that key only (docs/security.md).
  const keyFile = join(dir, 'hub-signing.pem');
  writeFileSync(keyFile, HUB_KEY.privateKeyPem, { mode: 0o600 });
  const child = spawn(process.execPath, [join(root, entry)], {
    env: {
      ...process.env,
      KUBECONFIG: kubeconfig,
      MIRRORHUB_NAMESPACE: SYSTEM_NS,
      MIRRORHUB_CLUSTER_NAME: 'hub',
      MIRRORHUB_SIGNING_KEY_FILE: keyFile,
      MIRRORHUB_HUB_PUBLIC_KEYS: HUB_KEY.publicKeyPem,
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  child.once('exit', (code, signal) => {
    if (code !== 0 && signal !== 'SIGTERM')
      say(`${name} exited (${code ?? signal}); see ${join(dir, 'logs', `${name}.log`)}`);
  });
  return child;
}

async function ensureNamespace(
  kc: KubeConfig,
  name: string,
  labels: Record<string, string> = {},
): Promise<void> {
  await kc
    .makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name, labels } } })
    .catch((err: { code?: number }) => {
      if (err.code !== 409) throw err;
    });
}

async function applySamples(kc: KubeConfig): Promise<void> {
  // Registry credentials the platform team keeps on the hub, for every prod cluster's teams.
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  for (const ns of ['cert-manager', 'platform', 'project-a-web', 'project-a-api', 'project-b-web'])
    await ensureNamespace(kc, ns);
  await ensureNamespace(kc, 'team-blue', { 'flags.example.com/enabled': 'true' });
  // Stand-ins for what cert-manager and a platform team would own (not real key material).
  await core.createNamespacedSecret({
    namespace: 'cert-manager',
    body: {
      metadata: {
        name: 'wildcard-tls',
        annotations: { 'cert-manager.io/common-name': '*.example.com' },
      },
      type: 'kubernetes.io/tls',
      stringData: { 'tls.crt': 'demo certificate', 'tls.key': 'demo key' },
    },
  });
  await core.createNamespacedConfigMap({
    namespace: 'platform',
    body: { metadata: { name: 'feature-flags' }, data: { 'flags.yaml': 'newCheckout: true\n' } },
  });
  await core.createNamespacedSecret({
    namespace: 'platform',
    body: {
      metadata: { name: 'registry-credentials' },
      type: 'kubernetes.io/dockerconfigjson',
      stringData: {
        '.dockerconfigjson': '{"auths":{"registry.example.com":{"auth":"ZGVtbzpkZW1v"}}}',
      },
    },
  });
  const group = 'mirrorhub.io';
  const version = 'v1alpha1';
  await custom.createClusterCustomObject({
    group,
    version,
    plural: 'clustersecretmirrors',
    body: {
      apiVersion: `${group}/${version}`,
      kind: 'ClusterSecretMirror',
      metadata: { name: 'registry-credentials' },
      spec: {
        source: { kind: 'Secret', name: 'registry-credentials', namespace: 'platform' },
        destination: {
          clusters: { selector: { matchLabels: { env: 'prod' } } },
          namespaces: ['team-.+'],
        },
      },
    },
  });
  await custom.createNamespacedCustomObject({
    group,
    version,
    namespace: 'cert-manager',
    plural: 'secretmirrors',
    body: {
      apiVersion: `${group}/${version}`,
      kind: 'SecretMirror',
      metadata: { name: 'wildcard-tls' },
      spec: {
        source: { kind: 'Secret', name: 'wildcard-tls' },
        destination: { namespaces: ['project-a-.+'] },
      },
    },
  });
  await custom.createNamespacedCustomObject({
    group,
    version,
    namespace: 'platform',
    plural: 'secretmirrors',
    body: {
      apiVersion: `${group}/${version}`,
      kind: 'SecretMirror',
      metadata: { name: 'feature-flags' },
      spec: {
        source: { kind: 'ConfigMap', name: 'feature-flags' },
        destination: {
          namespaceSelector: { matchLabels: { 'flags.example.com/enabled': 'true' } },
        },
      },
    },
  });
}

/** Where the Vault-sourced sample reads from, and how often the hub polls it. */
const VAULT_PATH = 'secret/demo/api';
const VAULT_POLL_SECONDS = 10;

/**
 * A Vault-sourced sample: a KV v2 secret in OpenBao, a read-only token for the hub (in a Secret
 * in mirrorhub-system), a ClusterVaultConnection and a ClusterSecretMirror delivering the secret
 * as `api-credentials` into the prod followers' team namespaces, like registry-credentials.
 */
async function applyVaultSample(kc: KubeConfig, bao: OpenBao): Promise<void> {
  const root = new VaultClient({
    address: bao.address,
    auth: tokenAuth({ token: bao.rootToken }),
  });
  const post = async (path: string, body: unknown) =>
    (await root.request<VaultEnvelope>({ method: 'POST', path, body })).body;
  try {
    await post('sys/policies/acl/mirrorhub-demo', {
      policy: `
        path "secret/data/demo/*" { capabilities = ["read"] }
        path "secret/metadata/demo/*" { capabilities = ["read"] }`,
    });
    const token = (await post('auth/token/create', { policies: ['mirrorhub-demo'], ttl: '168h' }))
      ?.auth?.client_token as string | undefined;
    if (!token) throw new Error('OpenBao did not return a token for the hub');
    // A harmless stand-in value; `bao kv put` in the printed hints changes it.
    await post(`secret/data/demo/api`, {
      data: { api_key: 'demo-api-key-v1', endpoint: 'https://api.example.com' },
    });
    await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace: SYSTEM_NS,
      body: { metadata: { name: 'openbao-token' }, stringData: { token } },
    });
  } finally {
    await root.close();
  }
  const custom = kc.makeApiClient(CustomObjectsApi);
  const group = 'mirrorhub.io';
  const version = 'v1alpha1';
  // A ClusterSecretMirror may use any ClusterVaultConnection: no allowedNamespaces needed (they
  // are for namespaced SecretMirrors). The hub reads the token Secret with the rights the hub
  // chart grants it (docs/helm.md).
  await custom.createClusterCustomObject({
    group,
    version,
    plural: 'clustervaultconnections',
    body: {
      apiVersion: `${group}/${version}`,
      kind: 'ClusterVaultConnection',
      metadata: { name: 'openbao' },
      spec: {
        address: bao.address, // http:// is accepted for loopback only
        auth: {
          token: { secretRef: { namespace: SYSTEM_NS, name: 'openbao-token', key: 'token' } },
        },
      },
    },
  });
  await custom.createClusterCustomObject({
    group,
    version,
    plural: 'clustersecretmirrors',
    body: {
      apiVersion: `${group}/${version}`,
      kind: 'ClusterSecretMirror',
      metadata: { name: 'api-credentials' },
      spec: {
        source: {
          kind: 'Vault',
          vault: {
            connectionRef: { kind: 'ClusterVaultConnection', name: 'openbao' },
            path: VAULT_PATH,
          },
        },
        destination: {
          clusters: { selector: { matchLabels: { env: 'prod' } } },
          namespaces: ['team-.+'],
          name: 'api-credentials',
        },
        pollPeriodSeconds: VAULT_POLL_SECONDS,
      },
    },
  });
}

async function kubectl(kit: Kit, args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)(kit.kubectl, [
    '--kubeconfig',
    kit.cluster('hub').kubeconfigPath,
    ...args,
  ]);
  return stdout;
}

function printGuide(
  kit: Kit,
  bao: OpenBao,
  baoBinary: string,
  dir: string,
  hubPort: number,
  viewerToken: string,
  tables: Array<[string, string]>,
): void {
  const hub = kit.cluster('hub');
  const followerB = kit.cluster('follower-b').kubeconfigPath;
  const lines = [''];
  for (const [cmd, out] of tables) lines.push(`$ ${cmd}`, out.trimEnd(), '');
  lines.push(
    'mirrorhub is running: a hub cluster and two EKS followers in two AWS accounts (emulated).',
    '',
    `  Dashboard: http://127.0.0.1:${hubPort}/`,
    `  sign in with this token (ServiceAccount ${SYSTEM_NS}/dashboard-viewer, valid 24 h):`,
    `  ${viewerToken}`,
    '',
    'In another terminal:',
    '',
    `  export KUBECONFIG=${hub.kubeconfigPath}`,
    `  alias kubectl=${kit.kubectl}`,
    '',
    '  kubectl get clustersecretmirror registry-credentials -o yaml   # per-cluster status',
    '  kubectl get mirrorclusters -o wide                             # reachable, agent, heartbeat',
    '  kubectl get secretmirrors -A                                   # in-cluster mirrors',
    '  kubectl create namespace project-a-new                         # gets wildcard-tls at once',
    `  kubectl --kubeconfig ${kit.cluster('follower-a').kubeconfigPath} create namespace team-c`,
    `  kubectl --kubeconfig ${kit.cluster('follower-a').kubeconfigPath} get secret registry-credentials -n team-c`,
    `  curl -s localhost:${hubPort}/metrics | grep mirrorhub_           # hub metrics`,
    '',
    `  # ${VAULT_PATH} lives in OpenBao (dev server); the hub polls it every ${VAULT_POLL_SECONDS} s. Change it:`,
    `  export BAO_ADDR=${bao.address} BAO_TOKEN=${bao.rootToken}`,
    `  ${baoBinary} kv put ${VAULT_PATH} api_key=demo-api-key-v2 endpoint=https://api.example.com`,
    `  kubectl --kubeconfig ${followerB} get secret api-credentials -n team-a -o jsonpath='{.data.api_key}' | base64 -d`,
    '                                                                 # demo-api-key-v2 within ~10 s',
    '  kubectl get clustersecretmirror api-credentials -o yaml        # conditions, per-cluster status',
    `  curl -s localhost:${hubPort}/metrics | grep mirrorhub_vault_    # one metadata read per poll`,
    '',
    `  clusters: ${kit.clusters.map((c) => `${c.name} ${c.server} (account ${c.accountId})`).join(', ')}`,
    `  OpenBao: ${bao.address} (log ${bao.logFile})`,
    `  logs: ${join(dir, 'logs')}`,
    '',
  );
  for (const l of lines) console.log(l);
}

main().catch((err: unknown) => {
  console.error(`demo: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
