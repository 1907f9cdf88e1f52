// One process for one cluster, as a platform engineer installs it: `helm install` of the hub chart
// with localAgent.inProcess on a real API server, and its Deployment run as the kubelet would run
// the pod (support/deployment.ts: its entry point standalone/dist/main.js, its env, the signing
// key volume, and the hub ServiceAccount's token). The agent half of that process must act as the
// agent chart's ServiceAccount, so the agent's RBAC and admission policies hold for it exactly as
// for a separate agent pod; the engine suites run every behaviour in this mode too
// (MIRRORHUB_ENGINE_MODE=one-process, scripts/run.mjs).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ApiException, AppsV1Api, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { findFreePort } from '@mirrorhub/infra/components/cache';
import { startKit, type Kit } from '@mirrorhub/infra/kit/index';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { chartsDir } from './support/crds.js';
import { deploymentRunner, exited, type DeploymentRunner } from './support/deployment.js';
import { eventually } from './support/eventually.js';
import { isolatedHelm, type Helm } from './support/helm.js';
import { ClusterObjects, secretMirror } from './support/objects.js';
import { canI, deploymentEnv, serviceAccountKubeConfig } from './support/serviceaccount.js';
import { generateHubKeyPair } from './support/signing.js';

const NS = 'mirrorhub-system';
const RELEASE = 'mirrorhub-hub';
/** The agent chart's ServiceAccount, as the hub chart includes it (alias "agent"). */
const AGENT_SA = 'mirrorhub-hub-agent';
const HUB_SA = 'mirrorhub-hub';
const SECRET_VALUE = 'one-process-value-8c1d2e';

let kit: Kit;
let helm: Helm;
let work: string;
let admin: KubeConfig;
let objs: ClusterObjects;
let deployments: DeploymentRunner;
let installed: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'mirrorhub-one-process-'));
  helm = await isolatedHelm();
  kit = await startKit({ clusters: ['hub'], aws: false });
  admin = kit.cluster('hub').kubeConfig();
  objs = new ClusterObjects(admin);
  deployments = deploymentRunner(kit, NS, work);
  await objs.ensureNamespace(NS);
  for (const ns of ['src', 'team-a', 'team-secret']) await objs.ensureNamespace(ns);
  const key = generateHubKeyPair();
  await objs.putSecret(NS, 'mirrorhub-hub-signing', { 'private.pem': key.privateKeyPem });
  installed = await helm([
    'install',
    RELEASE,
    join(chartsDir, 'mirrorhub-hub'),
    '--namespace',
    NS,
    '--kubeconfig',
    kit.cluster('hub').kubeconfigPath,
    '--set',
    'signing.existingSecret=mirrorhub-hub-signing',
    '--set',
    'localAgent.inProcess=true',
    // The cluster owner's policy, in the included agent chart's values.
    '--set',
    'agent.policy.namespaces.deny={team-secret}',
  ]);
  await objs.putSecret('src', 'app-token', { token: SECRET_VALUE });
}, 20 * 60_000);

afterAll(async () => {
  await deployments?.stop();
  await helm?.cleanup();
  await kit?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('the hub chart with localAgent.inProcess', () => {
  it("installs one workload, with the agent chart's ServiceAccount, RBAC and admission policies", async () => {
    expect(installed).toContain('STATUS: deployed');
    // Its next steps say the agent runs inside, and ask for no agent chart here.
    expect(installed).toContain('One process (localAgent.inProcess)');
    expect(installed).toContain('Install the agent chart in every follower (none is needed here)');
    expect(installed).not.toContain('--set clusterName=hub');
    const apps = admin.makeApiClient(AppsV1Api);
    const deps = (await apps.listNamespacedDeployment({ namespace: NS })).items;
    expect(deps.map((d) => d.metadata?.name)).toEqual([RELEASE]);
    const container = deps[0]!.spec!.template.spec!.containers[0]!;
    expect(container.args?.at(-1)).toBe('/app/standalone/dist/main.js');
    expect(container.ports?.map((p) => p.name)).toEqual(['http', 'agent-http']);
    expect(deploymentEnv(deps[0]!, 'pod')).toMatchObject({
      MIRRORHUB_LOCAL_AGENT_SERVICE_ACCOUNT: AGENT_SA,
      MIRRORHUB_LOCAL_AGENT_PORT: '8081',
    });
    await admin
      .makeApiClient(CoreV1Api)
      .readNamespacedServiceAccount({ namespace: NS, name: AGENT_SA });

    const asHub = await serviceAccountKubeConfig(admin, { namespace: NS, name: HUB_SA });
    const asAgent = await serviceAccountKubeConfig(admin, { namespace: NS, name: AGENT_SA });
    const token = { resource: 'serviceaccounts', subresource: 'token', verb: 'create' };
    // The hub's identity may act as the agent's ServiceAccount, and as no other.
    expect(await canI(asHub, { ...token, namespace: NS, name: AGENT_SA })).toBe(true);
    expect(await canI(asHub, { ...token, namespace: NS, name: 'default' })).toBe(false);
    expect(await canI(asHub, { ...token, namespace: 'team-a', name: 'default' })).toBe(false);
    // Copies outside the agent namespace are the agent's to write, never the hub's.
    const create = { resource: 'secrets', verb: 'create', namespace: 'team-a' };
    expect(await canI(asHub, create)).toBe(false);
    expect(await canI(asAgent, create)).toBe(true);
  });

  it("seals the namespace: no token Secret of the hub's or the agent's ServiceAccount, whoever asks", async () => {
    // Both identities read every Secret of the cluster; a token Secret of either would hold a
    // token that never expires. The included agent chart seals the agent's, the hub chart the
    // hub's (an administrator is refused too: no policy here binds only the hub or the agent).
    const core = admin.makeApiClient(CoreV1Api);
    for (const [sa, policy, what] of [
      [AGENT_SA, 'mirrorhub-hub-agent-token-secrets', 'the agent'],
      [HUB_SA, 'mirrorhub-hub-token-secrets', 'the hub'],
    ] as const) {
      const body = {
        metadata: {
          name: `${sa}-token`,
          annotations: { 'kubernetes.io/service-account.name': sa },
        },
        type: 'kubernetes.io/service-account-token',
      };
      const refusal = (dryRun?: 'All') =>
        core.createNamespacedSecret({ namespace: NS, body, dryRun }).then(
          () => undefined,
          (e: unknown) => e,
        );
      const expectRefused = (err: unknown) => {
        expect(err).toBeInstanceOf(ApiException);
        expect((err as ApiException<string>).code).toBe(403);
        expect(String((err as ApiException<string>).body)).toContain(
          `ValidatingAdmissionPolicy '${policy}' with binding '${policy}' denied request: NoTokenSecret (tokenSecret.serviceAccount): Secret ${NS}/${sa}-token: a kubernetes.io/service-account-token Secret for ServiceAccount ${sa} would hold a token of ${what}`,
        );
      };
      // Policies take a moment to load after the install: a dry run until this one does.
      await eventually(async () => expectRefused(await refusal('All')));
      expectRefused(await refusal());
      expect(await objs.readSecret(NS, `${sa}-token`)).toBeUndefined();
    }
  });

  it('runs hub and agent as one process: copies land, also in a namespace made later', async () => {
    // A free port for the agent half here; in the pod it is the chart's 8081.
    const agentPort = await findFreePort();
    const p = await deployments.run('hub', RELEASE, {
      MIRRORHUB_LOCAL_AGENT_PORT: String(agentPort),
    });
    const readyz = await (await fetch(`http://127.0.0.1:${p.port}/readyz?verbose`)).text();
    expect(readyz).toContain('[+]local-agent ok');
    await objs.applyMirror(
      secretMirror('src', 'app-token', {
        source: { kind: 'Secret', name: 'app-token' },
        destination: { namespaces: ['team-.+'], excludeNamespaces: ['team-secret'] },
      }),
    );
    await eventually(async () =>
      expect(await objs.secretData('team-a', 'app-token')).toEqual({ token: SECRET_VALUE }),
    );
    await objs.ensureNamespace('team-b');
    await eventually(async () =>
      expect(await objs.secretData('team-b', 'app-token')).toEqual({ token: SECRET_VALUE }),
    );
    await objs.mirrorStatus('SecretMirror', 'app-token', 'src', (m) =>
      expect(m.status).toMatchObject({ phase: 'Active', synced: '2/2' }),
    );
    // The agent half serves its own metrics; the hub's registry has the process's.
    const agentMetrics = await (await fetch(`http://127.0.0.1:${agentPort}/metrics`)).text();
    expect(agentMetrics).toMatch(/^mirrorhub_writes_total\{.*component="agent".*\} \d+/m);
    const hubMetrics = await (await fetch(`http://127.0.0.1:${p.port}/metrics`)).text();
    expect(hubMetrics).toMatch(/^mirrorhub_process_resident_memory_bytes\{component="hub"\}/m);
  });

  it("the agent half is held by the agent's admission policies, even when its own check would let it through", async () => {
    // The agent half's own policy check refuses team-secret (PolicyDenied in the delivery).
    await objs.applyMirror(
      secretMirror('src', 'into-secret', {
        source: { kind: 'Secret', name: 'app-token' },
        destination: { namespaces: ['team-secret'] },
      }),
    );
    await objs.mirrorStatus('SecretMirror', 'into-secret', 'src', (m) =>
      expect(m.status?.problems?.[0]).toMatchObject({
        namespace: 'team-secret',
        state: 'PolicyDenied',
      }),
    );
    // Now the same process with that check opened: the API server still refuses the write, with
    // the agent chart's admission policy, because the agent half writes as the agent's
    // ServiceAccount and not as an identity the policies do not bind.
    await deployments.stop();
    await deployments.run('hub', RELEASE, {
      MIRRORHUB_POLICY: '{}',
      MIRRORHUB_LOCAL_AGENT_PORT: String(await findFreePort()),
    });
    await objs.mirrorStatus(
      'SecretMirror',
      'into-secret',
      'src',
      (m) =>
        expect(m.status?.problems?.[0]).toMatchObject({
          namespace: 'team-secret',
          state: 'Failed',
        }),
      60_000,
    );
    // The agent's report says who refused: the API server, with the agent chart's policy.
    const delivery = (await objs.deliveries()).find((d) => d.spec.mirror.name === 'into-secret');
    const entry = delivery?.status?.namespaces?.find((n) => n.name === 'team-secret');
    expect(entry?.state).toBe('Failed');
    expect(entry?.message).toContain(
      "ValidatingAdmissionPolicy 'mirrorhub-hub-agent-copies' with binding 'mirrorhub-hub-agent-copies' denied request: " +
        'PolicyDenied (policy.namespaces.deny): Secret team-secret/app-token',
    );
    expect(entry?.message).toContain('enforced by the API server');
    expect(await objs.readSecret('team-secret', 'app-token')).toBeUndefined();
  });

  it('stops at start-up, saying what to grant, when it may not act as the named ServiceAccount', async () => {
    await deployments.stop();
    const p = await deployments.spawn('hub', RELEASE, {
      MIRRORHUB_LOCAL_AGENT_SERVICE_ACCOUNT: 'default',
    });
    expect(await exited(p.child)).toBe(2);
    const log = await readFile(p.log, 'utf8');
    expect(log).toContain('the agent half cannot act as its ServiceAccount');
    expect(log).toContain('cannot request a token of ServiceAccount mirrorhub-system/default');
    expect(log).toContain('create on serviceaccounts/token');
  });

  it('no line of any run holds the secret value', async () => {
    const encoded = Buffer.from(SECRET_VALUE).toString('base64');
    expect(deployments.procs.length).toBeGreaterThanOrEqual(3);
    for (const p of deployments.procs) {
      const log = await readFile(p.log, 'utf8');
      expect(log.length, `${p.name} logged something`).toBeGreaterThan(0);
      expect(log).not.toContain(SECRET_VALUE);
      expect(log).not.toContain(encoded);
    }
  });
});
