/**
 * `npm run demo`: real local clusters, the hub and an agent, sample mirrors, and what to run
 * to watch them work. Stays in the foreground until Ctrl-C; `--exit` checks that the samples
 * converged and stops (that is how the test suite proves this command works).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs, promisify } from 'node:util';

import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';

import { findFreePort } from '@mirrorhub/infra/components/cache';
import { startKit, type Kit } from '@mirrorhub/infra/kit/index';

import { installCrds } from '../support/crds.js';
import { eventually } from '../support/eventually.js';

const root = resolve(import.meta.dirname, '../../..');
const SYSTEM_NS = 'mirrorhub-system';

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
    'starting clusters hub, follower-a, follower-b (real kube-apiserver + etcd), moto and the EKS emulator...',
  );
  const kit = await startKit({
    clusters: ['hub', 'follower-a', 'follower-b'],
    dir,
    log: (l) => say(l),
  });
  const procs: ChildProcess[] = [];
  const stop = async () => {
    for (const p of procs) p.kill('SIGTERM');
    await Promise.all(
      procs.map((p) => new Promise((r) => (p.exitCode !== null ? r(null) : p.once('exit', r)))),
    );
    await kit.stop();
  };
  process.once('SIGINT', () => void stop().then(() => process.exit(0)));
  process.once('SIGTERM', () => void stop().then(() => process.exit(0)));

  try {
    const hub = kit.cluster('hub');
    const kc = hub.kubeConfig();
    await installCrds(kc, 'mirrorhub-hub');
    await ensureNamespace(kc, SYSTEM_NS);
    const [hubPort, agentPort] = [await findFreePort(), await findFreePort()];
    procs.push(
      run('agent', 'agent/dist/main.js', hub.kubeconfigPath, dir, { PORT: String(agentPort) }),
    );
    procs.push(
      run('hub', 'hub/dist/main.js', hub.kubeconfigPath, dir, {
        PORT: String(hubPort),
        POD_NAME: 'hub-demo',
      }),
    );
    await applySamples(kc);
    say('waiting for the sample mirrors to converge...');
    await eventually(
      async () => {
        const core = kc.makeApiClient(CoreV1Api);
        await core.readNamespacedSecret({ name: 'wildcard-tls', namespace: 'project-a-web' });
        await core.readNamespacedSecret({ name: 'wildcard-tls', namespace: 'project-a-api' });
        await core.readNamespacedConfigMap({ name: 'feature-flags', namespace: 'team-blue' });
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    ).catch((err: unknown) => {
      throw new Error(
        `the sample mirrors did not converge in 60s; logs are in ${join(dir, 'logs')}`,
        { cause: err },
      );
    });
    await eventually(async () => {
      const table = await kubectl(kit, ['get', 'secretmirrors', '-A']);
      if (table.split('\n').filter((l) => / Active /.test(l)).length < 2)
        throw new Error('not Active yet');
    });
    printGuide(kit, dir, hubPort, agentPort, await kubectl(kit, ['get', 'secretmirrors', '-A']));
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
  const child = spawn(process.execPath, [join(root, entry)], {
    env: {
      ...process.env,
      KUBECONFIG: kubeconfig,
      MIRRORHUB_NAMESPACE: SYSTEM_NS,
      MIRRORHUB_CLUSTER_NAME: 'hub',
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
  const group = 'mirrorhub.io';
  const version = 'v1alpha1';
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
  dir: string,
  hubPort: number,
  agentPort: number,
  table: string,
): void {
  const hub = kit.cluster('hub');
  const lines = [
    '',
    '$ kubectl get secretmirrors -A',
    table.trimEnd(),
    '',
    'mirrorhub is running. In another terminal:',
    '',
    `  export KUBECONFIG=${hub.kubeconfigPath}`,
    `  alias kubectl=${kit.kubectl}`,
    '',
    '  kubectl get secretmirrors -A                         # where each mirror landed',
    '  kubectl get secrets -A -l mirrorhub.io/managed-by=mirrorhub',
    '  kubectl create namespace project-a-new               # gets wildcard-tls at once',
    '  kubectl get secret wildcard-tls -n project-a-new',
    '  kubectl label namespace project-b-web flags.example.com/enabled=true   # gets feature-flags',
    '  kubectl get mirrordeliveries -n mirrorhub-system     # what the hub asked the agent to do',
    `  curl -s localhost:${hubPort}/metrics | grep mirrorhub_    # hub metrics (agent: ${agentPort})`,
    '',
    `  clusters: ${kit.clusters.map((c) => `${c.name} ${c.server} (account ${c.accountId})`).join(', ')}`,
    `  logs: ${join(dir, 'logs')}`,
    '',
  ];
  for (const l of lines) console.log(l);
}

main().catch((err: unknown) => {
  console.error(`demo: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
