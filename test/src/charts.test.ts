// The Helm charts: lint, render, refuse bad values, install on real API servers, and prove the
// RBAC each identity gets is enough for its job and no more. Identities are real: the charts'
// ServiceAccounts with TokenRequest tokens, and the hub's EKS group by impersonation.
//
// test/src/e2e.test.ts then runs the hub and agents as these charts' Deployments (entry point,
// env, ServiceAccount token) and completes a mirror across clusters with them.
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import {
  ApiException,
  ApiextensionsV1Api,
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  RbacAuthorizationV1Api,
  type KubeConfig,
  type V1ClusterRole,
  type V1ClusterRoleBinding,
  type V1Deployment,
  type V1ResourceAttributes,
  type V1Role,
  type V1RoleBinding,
  type V1ServiceAccount,
  type V1ValidatingAdmissionPolicy,
  type V1ValidatingAdmissionPolicyBinding,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, parseAllDocuments } from 'yaml';

import { DEFAULT_LEASE_NAME, HASH_KEY_SECRET, LEASES_SECRET } from '@mirrorhub/hub/names';
import { FOREIGN_OWNERSHIP_PATTERNS } from '@mirrorhub/shared/mirror/foreign-ownership';
import { parsePolicy } from '@mirrorhub/agent/policy';
import { startKit, type Kit } from '@mirrorhub/infra/kit/index';

import { chartsDir, loadCrds } from './support/crds.js';
import { eventually } from './support/eventually.js';
import { isolatedHelm, type Helm } from './support/helm.js';
import {
  canI,
  deploymentArgs,
  deploymentEnv,
  impersonatingKubeConfig,
  serviceAccountKubeConfig,
} from './support/serviceaccount.js';

const NS = 'mirrorhub-system';
const HUB_CHART = join(chartsDir, 'mirrorhub-hub');
const AGENT_CHART = join(chartsDir, 'mirrorhub-agent');
const ROLE_ARN = 'arn:aws:iam::111111111111:role/mirrorhub-hub';
/** What an EKS access entry makes of the follower role the hub assumes. */
const HUB_IN_FOLLOWER = {
  user: 'arn:aws:sts::222222222222:assumed-role/mirrorhub-follower/mirrorhub',
  group: 'mirrorhub-hub',
};

type Obj = {
  kind: string;
  apiVersion: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
} & Record<string, unknown>;

let helm: Helm;

beforeAll(async () => {
  helm = await isolatedHelm();
}, 20 * 60_000);

afterAll(async () => {
  await helm?.cleanup();
});

const runHelm = (args: string[]) => helm(args);
const helmFails = (args: string[]) => helm.fails(args);

async function render(chart: string, args: string[] = []): Promise<Obj[]> {
  const out = await runHelm(['template', 'mirrorhub', chart, '--namespace', NS, ...args]);
  return parseAllDocuments(out)
    .map((d) => d.toJS() as Obj | null)
    .filter((o): o is Obj => o !== null);
}

function only<T = Obj>(objs: Obj[], kind: string, name?: string): T {
  const found = objs.filter(
    (o) => o.kind === kind && (name === undefined || o.metadata.name === name),
  );
  if (found.length !== 1)
    throw new Error(`expected one ${kind}${name ? ` ${name}` : ''}, found ${found.length}`);
  return found[0] as T;
}

/** A hub public key, as `openssl pkey -in hub-signing.pem -pubout` prints it. */
const publicKeyPem = () =>
  generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString();
const HUB_PUBLIC_KEY = publicKeyPem();
const SIGNING_SECRET = 'mirrorhub-hub-signing';
/** The hub chart's one required value: the hub signs every delivery with this key. */
const HUB_REQUIRED = ['--set', `signing.existingSecret=${SIGNING_SECRET}`];
/**
 * The ValidatingAdmissionPolicies of a rendering, by name, after checking that each has a
 * binding of the same name that denies (and no binding is left without its policy).
 */
function admissionPolicies(objs: Obj[]): Map<string, V1ValidatingAdmissionPolicy> {
  const policies = objs.filter(
    (o) => o.kind === 'ValidatingAdmissionPolicy',
  ) as unknown as V1ValidatingAdmissionPolicy[];
  const bindings = objs.filter(
    (o) => o.kind === 'ValidatingAdmissionPolicyBinding',
  ) as unknown as V1ValidatingAdmissionPolicyBinding[];
  expect(bindings.map((b) => b.metadata?.name).sort()).toEqual(
    policies.map((p) => p.metadata?.name).sort(),
  );
  for (const b of bindings) {
    expect(b.spec).toEqual({ policyName: b.metadata?.name, validationActions: ['Deny'] });
  }
  return new Map(policies.map((p) => [p.metadata!.name!, p]));
}

const HUB_VALUE_SETS: Record<string, string[]> = {
  'defaults (plus the required signing key)': HUB_REQUIRED,
  irsa: [...HUB_REQUIRED, '--set', `aws.roleArn=${ROLE_ARN}`, '--set', 'aws.region=eu-west-1'],
  'agent elsewhere, editors aggregated, tenancy': [
    ...HUB_REQUIRED,
    '--set',
    'localAgent.namespace=mirrorhub-agent',
    '--set',
    'rbac.aggregate.edit=true',
    '--set',
    'tenancy.remoteNamespaces={platform-.+,shared}',
    '--set',
    'tenancy.requireAcceptance=true',
  ],
  'one process, with a strict agent policy': [
    ...HUB_REQUIRED,
    '--set',
    'localAgent.inProcess=true',
    '--set',
    'agent.policy.namespaces.deny={legacy-.*}',
  ],
};
/**
 * The agent chart's required values: the agent does not start without a cluster name, nor
 * without the hub's public key.
 */
const agentRequired = (clusterName: string, keys = [HUB_PUBLIC_KEY]) => [
  '--set',
  `clusterName=${clusterName}`,
  '--set-json',
  `hubPublicKeys=${JSON.stringify(keys)}`,
];
const AGENT_REQUIRED = agentRequired('follower-a');
/** The agent chart's policy values as values.yaml sets them. */
const DEFAULT_POLICY = (
  parseYaml(readFileSync(join(AGENT_CHART, 'values.yaml'), 'utf8')) as { policy: unknown }
).policy;
const AGENT_VALUE_SETS: Record<string, string[]> = {
  'defaults (plus the required cluster name)': AGENT_REQUIRED,
  'group and users, two replicas': [
    ...AGENT_REQUIRED,
    '--set',
    'hubAccess.users={system:serviceaccount:ops:hub,alice}',
    '--set',
    'replicaCount=2',
  ],
  'a strict policy, no admission policies': [
    ...AGENT_REQUIRED,
    '--set',
    'policy.namespaces.allow={team-.+}',
    '--set',
    'policy.namespaces.deny={team-secret}',
    '--set',
    'policy.namespaces.requireLabel=mirrorhub.io/accept=true',
    '--set',
    'policy.allowAdopt=true',
    '--set',
    'policy.secretTypes={Opaque}',
    '--set',
    'admissionPolicies.enabled=false',
  ],
};

describe('charts, rendered', () => {
  it.each([
    ['mirrorhub-hub', HUB_CHART, HUB_VALUE_SETS],
    ['mirrorhub-agent', AGENT_CHART, AGENT_VALUE_SETS],
  ] as const)(
    '%s passes helm lint --strict with every documented value set',
    async (_name, chart, sets) => {
      for (const args of Object.values(sets)) {
        const out = await runHelm(['lint', '--strict', chart, ...args]);
        expect(out).toContain('0 chart(s) failed');
      }
    },
  );

  it('hub: two replicas that spread, leader identity from the pod name, probes, locked-down pods', async () => {
    const objs = await render(HUB_CHART, HUB_REQUIRED);
    const dep = only<V1Deployment>(objs, 'Deployment');
    expect(dep.spec?.replicas).toBe(2);
    const pod = dep.spec!.template.spec!;
    const c = pod.containers[0]!;
    // V8 flags NODE_OPTIONS refuses go before the script; none when v8Flags is empty.
    expect(deploymentArgs(dep)).toEqual([
      '--optimize-for-size',
      '--max-opt=1',
      '/app/hub/dist/main.js',
    ]);
    expect(
      deploymentArgs(
        only<V1Deployment>(
          await render(HUB_CHART, [...HUB_REQUIRED, '--set', 'v8Flags=']),
          'Deployment',
        ),
      ),
    ).toEqual(['/app/hub/dist/main.js']);
    expect(deploymentEnv(dep, 'mirrorhub-hub-abc')).toEqual({
      MIRRORHUB_NAMESPACE: NS,
      POD_NAME: 'mirrorhub-hub-abc',
      MIRRORHUB_CLUSTER_NAME: 'hub',
      MIRRORHUB_AGENT_NAMESPACE: NS,
      MIRRORHUB_SIGNING_KEY_FILE: '/etc/mirrorhub/signing/private.pem',
      MIRRORHUB_REMOTE_NAMESPACES: '[]',
      MIRRORHUB_REQUIRE_ACCEPTANCE: 'false',
      MIRRORHUB_SERVICE_ACCOUNT: 'mirrorhub-hub',
      MIRRORHUB_VAULT_SERVICE_ACCOUNT_TOKENS: 'false',
      MIRRORHUB_DASHBOARD: 'true',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      PORT: '8080',
      MALLOC_ARENA_MAX: '2',
      NODE_OPTIONS: '--no-node-snapshot --max-semi-space-size=2 --max-old-space-size=256',
    });
    expect(
      deploymentEnv(
        only<V1Deployment>(
          await render(HUB_CHART, [...HUB_REQUIRED, '--set', 'mallocArenaMax=0']),
          'Deployment',
        ),
        'p',
      ).MALLOC_ARENA_MAX,
    ).toBeUndefined();
    // The signing key: the one key of the Secret, read-only, where MIRRORHUB_SIGNING_KEY_FILE
    // says, readable by the hub's group (fsGroup) only.
    expect(pod.volumes).toEqual([
      {
        name: 'signing-key',
        secret: {
          secretName: SIGNING_SECRET,
          items: [{ key: 'private.pem', path: 'private.pem' }],
          defaultMode: 0o440,
        },
      },
    ]);
    expect(c.volumeMounts).toEqual([
      { name: 'signing-key', mountPath: '/etc/mirrorhub/signing', readOnly: true },
    ]);
    expect(pod.securityContext?.fsGroup).toBe(65532);
    expect(c.livenessProbe?.httpGet).toMatchObject({ path: '/healthz', port: 'http' });
    expect(c.readinessProbe?.httpGet).toMatchObject({ path: '/readyz', port: 'http' });
    expect(c.resources?.requests).toBeDefined();
    expect(c.resources?.limits?.memory).toBeDefined();
    expectLockedDown(dep);
    expect(pod.topologySpreadConstraints?.map((t) => t.topologyKey)).toEqual([
      'kubernetes.io/hostname',
      'topology.kubernetes.io/zone',
    ]);
    expect(pod.topologySpreadConstraints?.[0]?.labelSelector?.matchLabels).toEqual(
      dep.spec?.selector.matchLabels,
    );
    expect(only(objs, 'PodDisruptionBudget').spec).toMatchObject({
      minAvailable: 1,
      selector: { matchLabels: dep.spec?.selector.matchLabels },
    });
    expect(only(objs, 'Service').spec).toMatchObject({
      selector: dep.spec?.selector.matchLabels,
      ports: [{ port: 8080, targetPort: 'http' }],
    });
    expect(objs.some((o) => o.kind === 'ServiceMonitor')).toBe(false);
    for (const o of objs) {
      expect(o.metadata.labels, `${o.kind} ${o.metadata.name}`).toMatchObject({
        'app.kubernetes.io/name': 'mirrorhub-hub',
        'app.kubernetes.io/instance': 'mirrorhub',
        'app.kubernetes.io/managed-by': 'Helm',
        'app.kubernetes.io/part-of': 'mirrorhub',
        'app.kubernetes.io/component': 'hub',
      });
    }
  });

  it('hub: aws.roleArn annotates the ServiceAccount for IRSA; without it there is no annotation', async () => {
    const irsa = only<V1ServiceAccount>(
      await render(HUB_CHART, HUB_VALUE_SETS.irsa),
      'ServiceAccount',
    );
    expect(irsa.metadata?.annotations).toEqual({ 'eks.amazonaws.com/role-arn': ROLE_ARN });
    const dep = only<V1Deployment>(await render(HUB_CHART, HUB_VALUE_SETS.irsa), 'Deployment');
    expect(deploymentEnv(dep, 'p').AWS_REGION).toBe('eu-west-1');
    expectLockedDown(dep);

    const plain = only<V1ServiceAccount>(await render(HUB_CHART, HUB_REQUIRED), 'ServiceAccount');
    expect(plain.metadata?.annotations?.['eks.amazonaws.com/role-arn']).toBeUndefined();
  });

  it('hub: a ServiceMonitor only when the cluster serves the Prometheus Operator API', async () => {
    const on = [...HUB_REQUIRED, '--set', 'serviceMonitor.enabled=true'];
    expect((await render(HUB_CHART, on)).some((o) => o.kind === 'ServiceMonitor')).toBe(false);
    const sm = only(
      await render(HUB_CHART, [...on, '--api-versions', 'monitoring.coreos.com/v1/ServiceMonitor']),
      'ServiceMonitor',
    );
    expect(sm.spec).toMatchObject({ endpoints: [{ port: 'http', path: '/metrics' }] });
  });

  it('hub: with the local agent in another namespace, the delivery Role goes there and nothing else does', async () => {
    const objs = await render(
      HUB_CHART,
      HUB_VALUE_SETS['agent elsewhere, editors aggregated, tenancy'],
    );
    const roles = objs.filter((o) => o.kind === 'Role' || o.kind === 'RoleBinding');
    expect(roles.map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`).sort()).toEqual(
      [
        'Role mirrorhub-agent/mirrorhub-hub-delivery',
        `Role ${NS}/mirrorhub-hub`,
        'RoleBinding mirrorhub-agent/mirrorhub-hub-delivery',
        `RoleBinding ${NS}/mirrorhub-hub`,
      ],
    );
    const binding = only<V1RoleBinding>(objs, 'RoleBinding', 'mirrorhub-hub-delivery');
    expect(binding.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'mirrorhub-hub', namespace: NS },
    ]);
    // ...and the hub is told to deliver there, under the tenancy values.
    expect(deploymentEnv(only(objs, 'Deployment'), 'p')).toMatchObject({
      MIRRORHUB_AGENT_NAMESPACE: 'mirrorhub-agent',
      MIRRORHUB_REMOTE_NAMESPACES: '["platform-.+","shared"]',
      MIRRORHUB_REQUIRE_ACCEPTANCE: 'true',
    });
    // Namespace editors may now create SecretMirrors and VaultConnections (opt-in), and only
    // those (a VaultConnection names only its own namespace's Secrets and ServiceAccounts).
    const edit = only<V1ClusterRole>(objs, 'ClusterRole', 'mirrorhub-hub-edit');
    expect(edit.metadata?.labels).toMatchObject({
      'rbac.authorization.k8s.io/aggregate-to-edit': 'true',
    });
    expect(edit.rules?.flatMap((r) => r.resources)).toEqual(['secretmirrors', 'vaultconnections']);
    expect(
      (await render(HUB_CHART, HUB_REQUIRED)).some((o) => o.metadata.name === 'mirrorhub-hub-edit'),
    ).toBe(false);
  });

  it('hub: the leader Lease, hash-key and leases Secrets it may touch are the names the hub uses', async () => {
    const role = only<V1Role>(await render(HUB_CHART, HUB_REQUIRED), 'Role', 'mirrorhub-hub');
    const named = (resource: string) =>
      (role.rules ?? [])
        .filter((r) => r.resources?.includes(resource) && r.resourceNames)
        .flatMap((r) => r.resourceNames!);
    expect(named('leases')).toEqual([DEFAULT_LEASE_NAME]);
    expect(named('secrets')).toEqual([HASH_KEY_SECRET, LEASES_SECRET]);
    // Kubernetes auth of ClusterVaultConnections: tokens of its own ServiceAccount only.
    expect(named('serviceaccounts/token')).toEqual(['mirrorhub-hub']);
  });

  it('hub: tokens of other ServiceAccounts only with vault.serviceAccountTokens (off by default)', async () => {
    const tokenRules = async (args: string[]) =>
      (
        only<V1ClusterRole>(await render(HUB_CHART, args), 'ClusterRole', 'mirrorhub-hub').rules ??
        []
      ).filter((r) => r.resources?.includes('serviceaccounts/token'));
    expect(await tokenRules(HUB_REQUIRED)).toEqual([]);
    const on = [...HUB_REQUIRED, '--set', 'vault.serviceAccountTokens=true'];
    expect(await tokenRules(on)).toEqual([
      { apiGroups: [''], resources: ['serviceaccounts/token'], verbs: ['create'] },
    ]);
    expect(deploymentEnv(only(await render(HUB_CHART, on), 'Deployment'), 'p')).toMatchObject({
      MIRRORHUB_VAULT_SERVICE_ACCOUNT_TOKENS: 'true',
    });
  });

  it('hub: the dashboard may ask TokenReview and SubjectAccessReview, and neither without it', async () => {
    const reviewRules = async (args: string[]) =>
      (
        only<V1ClusterRole>(await render(HUB_CHART, args), 'ClusterRole', 'mirrorhub-hub').rules ??
        []
      ).filter((r) => r.resources?.some((x) => x.endsWith('reviews')));
    expect(await reviewRules(HUB_REQUIRED)).toEqual([
      { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
      {
        apiGroups: ['authorization.k8s.io'],
        resources: ['subjectaccessreviews'],
        verbs: ['create'],
      },
    ]);
    const off = await render(HUB_CHART, [...HUB_REQUIRED, '--set', 'dashboard.enabled=false']);
    expect(deploymentEnv(only<V1Deployment>(off, 'Deployment'), 'p')['MIRRORHUB_DASHBOARD']).toBe(
      'false',
    );
    expect(await reviewRules([...HUB_REQUIRED, '--set', 'dashboard.enabled=false'])).toEqual([]);
  });

  it('hub: an Ingress to the dashboard only when asked, with its host and TLS Secret', async () => {
    expect((await render(HUB_CHART, HUB_REQUIRED)).filter((o) => o.kind === 'Ingress')).toEqual([]);
    const on = [...HUB_REQUIRED, '--set', 'dashboard.ingress.enabled=true'];
    expect(await helmFails(['template', 'mirrorhub', HUB_CHART, '--namespace', NS, ...on])).toMatch(
      /dashboard\.ingress\.host is required/,
    );
    const ing = only<{ spec: Record<string, unknown> }>(
      await render(HUB_CHART, [
        ...on,
        '--set',
        'dashboard.ingress.host=mirrorhub.example.com',
        '--set',
        'dashboard.ingress.tlsSecretName=mirrorhub-tls',
        '--set',
        'dashboard.ingress.className=nginx',
      ]),
      'Ingress',
    );
    expect(ing.spec).toEqual({
      ingressClassName: 'nginx',
      tls: [{ hosts: ['mirrorhub.example.com'], secretName: 'mirrorhub-tls' }],
      rules: [
        {
          host: 'mirrorhub.example.com',
          http: {
            paths: [
              {
                path: '/',
                pathType: 'Prefix',
                backend: { service: { name: 'mirrorhub-hub', port: { name: 'http' } } },
              },
            ],
          },
        },
      ],
    });
  });

  it("the hub has the same rights in its own cluster's agent namespace as in every follower's", async () => {
    const hubDelivery = only<V1Role>(
      await render(HUB_CHART, HUB_REQUIRED),
      'Role',
      'mirrorhub-hub-delivery',
    );
    const hubAccess = only<V1Role>(
      await render(AGENT_CHART, AGENT_REQUIRED),
      'Role',
      'mirrorhub-agent-hub-access',
    );
    expect(hubDelivery.rules).toEqual(hubAccess.rules);
  });

  it('agent: one replica by default, locked-down pod, env from values and the downward API', async () => {
    const objs = await render(AGENT_CHART, AGENT_REQUIRED);
    const dep = only<V1Deployment>(objs, 'Deployment');
    expect(dep.spec?.replicas).toBe(1);
    // V8 flags NODE_OPTIONS refuses go on the command line (values.yaml says why).
    expect(deploymentArgs(dep)).toEqual([
      '--expose-gc',
      '--optimize-for-size',
      '--max-opt=1',
      '/app/agent/dist/main.js',
    ]);
    const env = deploymentEnv(dep, 'agent-0');
    expect(env).toEqual({
      MIRRORHUB_NAMESPACE: NS,
      POD_NAME: 'agent-0',
      MIRRORHUB_CLUSTER_NAME: 'follower-a',
      MIRRORHUB_LEADER_ELECTION: 'false',
      MIRRORHUB_POLICY: expect.any(String),
      MIRRORHUB_HUB_PUBLIC_KEYS: HUB_PUBLIC_KEY.trim(),
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      PORT: '8080',
      MALLOC_ARENA_MAX: '2',
      NODE_OPTIONS: '--no-node-snapshot --max-semi-space-size=2 --max-old-space-size=256',
    });
    const plain = only<V1Deployment>(
      await render(AGENT_CHART, [
        ...AGENT_REQUIRED,
        '--set',
        'v8Flags=',
        '--set',
        'mallocArenaMax=0',
      ]),
      'Deployment',
    );
    expect(deploymentArgs(plain)).toEqual(['/app/agent/dist/main.js']);
    // The policy the agent enforces is the chart's policy values, as JSON.
    expect(JSON.parse(env.MIRRORHUB_POLICY!)).toEqual(DEFAULT_POLICY);
    expect(deploymentEnv(plain, 'agent-0').MALLOC_ARENA_MAX).toBeUndefined();
    // No leader election with one replica, so never two agents at once during an update.
    expect(dep.spec?.strategy?.type).toBe('Recreate');
    const c = dep.spec!.template.spec!.containers[0]!;
    expect(c.livenessProbe?.httpGet).toMatchObject({ path: '/healthz', port: 'http' });
    expect(c.readinessProbe?.httpGet).toMatchObject({ path: '/readyz', port: 'http' });
    expectLockedDown(dep);
    // A single replica gets no PodDisruptionBudget (it would block every drain). Two elect a
    // leader, roll, and keep one through disruptions.
    expect(objs.some((o) => o.kind === 'PodDisruptionBudget')).toBe(false);
    const two = await render(AGENT_CHART, AGENT_VALUE_SETS['group and users, two replicas']);
    const twoDep = only<V1Deployment>(two, 'Deployment');
    expect(deploymentEnv(twoDep, 'agent-0').MIRRORHUB_LEADER_ELECTION).toBe('true');
    expect(twoDep.spec?.strategy?.type).toBe('RollingUpdate');
    expect(only(two, 'PodDisruptionBudget').spec).toMatchObject({ minAvailable: 1 });
  });

  it('agent: hub access is bound to the EKS group and any listed users, in the agent namespace only', async () => {
    const objs = await render(AGENT_CHART, AGENT_VALUE_SETS['group and users, two replicas']);
    const binding = only<V1RoleBinding>(objs, 'RoleBinding', 'mirrorhub-agent-hub-access');
    expect(binding.metadata?.namespace).toBe(NS);
    expect(binding.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: 'mirrorhub-agent-hub-access',
    });
    expect(binding.subjects).toEqual([
      { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'mirrorhub-hub' },
      {
        kind: 'User',
        apiGroup: 'rbac.authorization.k8s.io',
        name: 'system:serviceaccount:ops:hub',
      },
      { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice' },
    ]);
    const off = await render(AGENT_CHART, [...AGENT_REQUIRED, '--set', 'hubAccess.enabled=false']);
    expect(off.some((o) => o.metadata.name === 'mirrorhub-agent-hub-access')).toBe(false);
  });

  it('agent: MIRRORHUB_POLICY follows the policy values, and every hub key is trusted', async () => {
    const second = publicKeyPem();
    const dep = only<V1Deployment>(
      await render(AGENT_CHART, [
        ...agentRequired('follower-a', [HUB_PUBLIC_KEY, second]),
        '--set',
        'policy.allowAdopt=true',
        '--set',
        'policy.namespaces.allow={team-.+}',
      ]),
      'Deployment',
    );
    const env = deploymentEnv(dep, 'agent-0');
    expect(JSON.parse(env.MIRRORHUB_POLICY!)).toMatchObject({
      allowAdopt: true,
      namespaces: { allow: ['team-.+'], deny: [], requireLabel: '' },
    });
    // One PEM block per key, as the agent reads them.
    expect(env.MIRRORHUB_HUB_PUBLIC_KEYS).toBe(`${HUB_PUBLIC_KEY.trim()}\n${second.trim()}`);
  });

  it('agent: admission policies generated from the policy values, each bound to Deny', async () => {
    const objs = await render(AGENT_CHART, [
      ...AGENT_VALUE_SETS['group and users, two replicas']!,
      '--set',
      'policy.namespaces.allow={team-.+}',
      '--set',
      'policy.namespaces.deny={team-secret}',
      '--set',
      'policy.namespaces.requireLabel=mirrorhub.io/accept',
      '--set',
      'policy.secretTypes={Opaque,kubernetes.io/service-account-token}',
    ]);
    const policies = admissionPolicies(objs);
    expect([...policies.keys()].sort()).toEqual([
      'mirrorhub-agent-copies',
      'mirrorhub-agent-hub-payloads',
      'mirrorhub-agent-sequences',
      'mirrorhub-agent-token-secrets',
    ]);
    for (const [, vap] of policies) expect(vap.spec?.failurePolicy).toBe('Fail');

    const copies = policies.get('mirrorhub-agent-copies')!.spec!;
    expect(copies.matchConstraints?.resourceRules).toEqual([
      {
        apiGroups: [''],
        apiVersions: ['v1'],
        operations: ['CREATE', 'UPDATE', 'DELETE'],
        resources: ['secrets', 'configmaps'],
      },
    ]);
    expect(copies.matchConditions).toEqual([
      {
        name: 'agent-service-account',
        expression: `request.userInfo.username == "system:serviceaccount:${NS}:mirrorhub-agent"`,
      },
      {
        name: 'not-agent-memory',
        expression: `!(request.resource.resource == "configmaps" && request.namespace == "${NS}" && request.name == "mirrorhub-agent-sequences")`,
      },
    ]);
    // The agent's memory of the sequences it applied: its ServiceAccount alone writes it.
    const sequences = policies.get('mirrorhub-agent-sequences')!.spec!;
    expect(sequences.matchConstraints?.namespaceSelector).toEqual({
      matchLabels: { 'kubernetes.io/metadata.name': NS },
    });
    expect(sequences.matchConstraints?.resourceRules?.map((r) => r.resources)).toEqual([
      ['configmaps'],
    ]);
    expect(sequences.matchConditions?.map((c) => c.expression.trim())).toEqual([
      'request.name == "mirrorhub-agent-sequences"',
    ]);
    expect(sequences.validations?.[0]?.expression).toContain(
      `request.userInfo.username == "system:serviceaccount:${NS}:mirrorhub-agent" ||`,
    );
    const variable = (name: string) =>
      copies.variables?.find((v) => v.name === name)?.expression.trim();
    const rule = (name: string) =>
      (copies.validations ?? []).filter((v) => v.messageExpression?.includes(`(${name}): `));
    // One validation per rule, in the order the API server reports the first that fails.
    expect(
      (copies.validations ?? []).map(
        (v) => /\((policy\.[\w.-]+)\)/.exec(v.messageExpression!)?.[1],
      ),
    ).toEqual([
      'policy.namespaces.always-denied',
      'policy.namespaces.deny',
      'policy.namespaces.allow',
      'policy.namespaces.requireLabel',
      'policy.ownership',
      'policy.allowAdopt',
      'policy.secretTypes',
      'policy.metadata.foreignOwnership',
      'policy.metadata.deniedDomains',
    ]);
    expect(rule('policy.namespaces.always-denied')[0]!.expression).toContain(
      `["kube-system","kube-public","kube-node-lease","${NS}"]`,
    );
    expect(variable('deniedBy')).toContain('["team-secret"].filter(p,');
    expect(rule('policy.namespaces.allow')[0]!.expression).toContain('["team-.+"].exists(p,');
    expect(rule('policy.namespaces.requireLabel')[0]!.expression).toContain(
      'namespaceObject.metadata.?labels[?"mirrorhub.io/accept"].hasValue()',
    );
    // Token types are refused even when listed.
    expect(variable('secretTypes')).toBe('["Opaque"]');
    expect(variable('deniedDomains')).toBe('["kubernetes.io","k8s.io"]');
    for (const v of copies.validations ?? []) {
      expect(v.reason).toBe('Forbidden');
      expect(v.messageExpression).toContain('variables.source');
    }
    expect(variable('source')).toBe(
      '"; enforced by the API server from the policy values of the mirrorhub-agent chart (release mirrorhub in namespace mirrorhub-system)"',
    );

    // The hub's identity: the hub-access RoleBinding's subjects.
    const hub = policies.get('mirrorhub-agent-hub-payloads')!.spec!;
    expect(hub.matchConstraints?.namespaceSelector).toEqual({
      matchLabels: { 'kubernetes.io/metadata.name': NS },
    });
    expect(hub.matchConditions?.[0]?.expression.replace(/\s+/g, ' ').trim()).toBe(
      '"mirrorhub-hub" in request.userInfo.?groups.orValue([]) || request.userInfo.username in ["system:serviceaccount:ops:hub","alice"]',
    );

    // Unset namespace rules are not rendered; allowAdopt true drops its rule.
    const loose = admissionPolicies(
      await render(AGENT_CHART, [...AGENT_REQUIRED, '--set', 'policy.allowAdopt=true']),
    ).get('mirrorhub-agent-copies')!.spec!;
    expect(
      loose.validations?.map((v) => /\((policy\.[\w.-]+)\)/.exec(v.messageExpression!)?.[1]),
    ).toEqual([
      'policy.namespaces.always-denied',
      'policy.ownership',
      'policy.secretTypes',
      'policy.metadata.foreignOwnership',
      'policy.metadata.deniedDomains',
    ]);
  });

  it("agent: other controllers' ownership marks, one list for the agent and the admission policy", async () => {
    // values.yaml's default is foreign-ownership.ts's list, which the agent uses when unset.
    expect(
      (DEFAULT_POLICY as { metadata: { foreignOwnership: string[] } }).metadata.foreignOwnership,
    ).toEqual(FOREIGN_OWNERSHIP_PATTERNS);
    expect(parsePolicy({}, NS).summary['foreignOwnership']).toEqual(FOREIGN_OWNERSHIP_PATTERNS);
    const variables = async (args: string[]) => {
      const objs = await render(AGENT_CHART, [...AGENT_REQUIRED, ...args]);
      const spec = admissionPolicies(objs).get('mirrorhub-agent-copies')!.spec!;
      const env = deploymentEnv(only<V1Deployment>(objs, 'Deployment'), 'agent-0');
      const v = (name: string) =>
        JSON.parse(spec.variables!.find((x) => x.name === name)!.expression.trim()) as string[];
      return {
        keys: v('foreignKeys'),
        prefixes: v('foreignPrefixes'),
        agent: (JSON.parse(env.MIRRORHUB_POLICY!) as { metadata: { foreignOwnership: string[] } })
          .metadata.foreignOwnership,
      };
    };
    // Exact keys and prefixes (a pattern's * dropped) from the same values as the agent's policy.
    const defaults = await variables([]);
    expect(defaults.agent).toEqual(FOREIGN_OWNERSHIP_PATTERNS);
    expect(defaults.keys).toEqual(FOREIGN_OWNERSHIP_PATTERNS.filter((p) => !p.endsWith('*')));
    expect(defaults.prefixes).toEqual(
      FOREIGN_OWNERSHIP_PATTERNS.filter((p) => p.endsWith('*')).map((p) => p.slice(0, -1)),
    );
    expect(defaults.keys).toContain('app.kubernetes.io/managed-by');
    expect(defaults.prefixes).toContain('meta.helm.sh/');
    // An owner's own list replaces the default in both places.
    const own = await variables([
      '--set-json',
      'policy.metadata.foreignOwnership=["example.com/owner","tool.example.com/*"]',
    ]);
    expect(own).toEqual({
      keys: ['example.com/owner'],
      prefixes: ['tool.example.com/'],
      agent: ['example.com/owner', 'tool.example.com/*'],
    });
    expect(await variables(['--set-json', 'policy.metadata.foreignOwnership=[]'])).toEqual({
      keys: [],
      prefixes: [],
      agent: [],
    });
    // A * before the end is refused before anything is rendered, as the agent would refuse it.
    expect(
      await helmFails([
        'template',
        AGENT_CHART,
        ...AGENT_REQUIRED,
        '--set-json',
        'policy.metadata.foreignOwnership=["a/*/b"]',
      ]),
    ).toMatch(/foreignOwnership/);
  });

  it('agent: admission policies can be turned off, and the hub one goes with hubAccess', async () => {
    expect(
      admissionPolicies(
        await render(AGENT_CHART, AGENT_VALUE_SETS['a strict policy, no admission policies']),
      ).size,
    ).toBe(0);
    expect(
      [
        ...admissionPolicies(
          await render(AGENT_CHART, [...AGENT_REQUIRED, '--set', 'hubAccess.enabled=false']),
        ).keys(),
      ].sort(),
    ).toEqual([
      'mirrorhub-agent-copies',
      'mirrorhub-agent-sequences',
      'mirrorhub-agent-token-secrets',
    ]);
  });

  it('hub: its Secret writes are limited to payloads in the agent namespace and its hash key in its own', async () => {
    const same = admissionPolicies(await render(HUB_CHART, HUB_REQUIRED));
    expect([...same.keys()].sort()).toEqual([
      'mirrorhub-hub-hash-key',
      'mirrorhub-hub-payloads',
      'mirrorhub-hub-token-secrets',
    ]);
    const user = `request.userInfo.username == "system:serviceaccount:${NS}:mirrorhub-hub"`;
    const payloads = same.get('mirrorhub-hub-payloads')!.spec!;
    expect(payloads.matchConditions?.map((c) => c.expression.trim())).toEqual([
      user,
      `!(request.namespace == "${NS}" && request.name in ["${HASH_KEY_SECRET}", "${LEASES_SECRET}"])`,
    ]);
    // Next to the agent, the hash-key policy takes only the hash key and the leases.
    expect(
      same.get('mirrorhub-hub-hash-key')!.spec!.matchConditions?.map((c) => c.expression.trim()),
    ).toEqual([user, `request.name in ["${HASH_KEY_SECRET}", "${LEASES_SECRET}"]`]);
    // In a namespace of its own, it takes every Secret there.
    const apart = admissionPolicies(
      await render(HUB_CHART, HUB_VALUE_SETS['agent elsewhere, editors aggregated, tenancy']),
    );
    expect(apart.get('mirrorhub-hub-payloads')!.spec!.matchConstraints?.namespaceSelector).toEqual({
      matchLabels: { 'kubernetes.io/metadata.name': 'mirrorhub-agent' },
    });
    expect(apart.get('mirrorhub-hub-hash-key')!.spec!.matchConditions).toHaveLength(1);
    expect(
      admissionPolicies(
        await render(HUB_CHART, [...HUB_REQUIRED, '--set', 'admissionPolicies.enabled=false']),
      ).size,
    ).toBe(0);
  });

  it("hub with localAgent.inProcess: one Deployment; the agent chart's ServiceAccount, RBAC and admission policies as that chart renders them", async () => {
    const objs = await render(HUB_CHART, HUB_VALUE_SETS['one process, with a strict agent policy']);
    // The agent chart on its own, with the same policy, for the same release name.
    const alone = await render(AGENT_CHART, [
      ...agentRequired('hub'),
      '--set',
      'policy.namespaces.deny={legacy-.*}',
      '--set',
      'hubAccess.enabled=false',
    ]);
    const dep = only<V1Deployment>(objs, 'Deployment');
    expect(objs.filter((o) => o.kind === 'Deployment').map((o) => o.metadata.name)).toEqual([
      'mirrorhub-hub',
    ]);
    expect(deploymentArgs(dep)).toEqual([
      '--expose-gc',
      '--optimize-for-size',
      '--max-opt=1',
      '/app/standalone/dist/main.js',
    ]);
    const env = deploymentEnv(dep, 'mirrorhub-hub-abc');
    expect(env).toMatchObject({
      MIRRORHUB_LOCAL_AGENT_SERVICE_ACCOUNT: 'mirrorhub-agent',
      MIRRORHUB_LOCAL_AGENT_PORT: '8081',
      MALLOC_ARENA_MAX: '2',
      MIRRORHUB_AGENT_NAMESPACE: NS,
    });
    // The agent half enforces the same policy the admission policies are rendered from.
    const aloneEnv = deploymentEnv(only<V1Deployment>(alone, 'Deployment'), 'x');
    expect(JSON.parse(env.MIRRORHUB_POLICY!)).toEqual(JSON.parse(aloneEnv.MIRRORHUB_POLICY!));
    expect(JSON.parse(env.MIRRORHUB_POLICY!).namespaces.deny).toEqual(['legacy-.*']);
    expect(dep.spec!.template.spec!.containers[0]!.ports?.map((p) => p.name)).toEqual([
      'http',
      'agent-http',
    ]);
    expect(only(objs, 'Service').spec.ports).toMatchObject([
      { name: 'http', port: 8080 },
      { name: 'agent-http', port: 8081, targetPort: 'agent-http' },
    ]);
    // The agent's identity and rights, rule for rule.
    expect(only(objs, 'ServiceAccount', 'mirrorhub-agent')).toBeDefined();
    for (const kind of ['ClusterRole', 'Role', 'ClusterRoleBinding', 'RoleBinding']) {
      const strip = (o: Obj) => ({ ...o, metadata: { name: o.metadata.name } });
      expect(strip(only(objs, kind, 'mirrorhub-agent')), kind).toEqual(
        strip(only(alone, kind, 'mirrorhub-agent')),
      );
    }
    const vap = (list: Obj[]) => {
      const spec = admissionPolicies(list).get('mirrorhub-agent-copies')!.spec!;
      // The message's "from the policy values of the <chart> chart" names the chart that rendered it.
      return { ...spec, variables: spec.variables?.filter((v) => v.name !== 'source') };
    };
    expect(vap(objs)).toEqual(vap(alone));
    // Sealed for everyone: no token Secret of the agent's nor of the hub's ServiceAccount.
    const sealed = admissionPolicies(objs);
    for (const sa of ['mirrorhub-agent', 'mirrorhub-hub']) {
      expect(sealed.get(`${sa}-token-secrets`)!.spec!.validations![0]!.expression.trim()).toBe(
        `variables.serviceAccount != "${sa}" || variables.oldServiceAccount == "${sa}"`,
      );
    }
    const memoryPolicy = (list: Obj[]) => {
      const spec = admissionPolicies(list).get('mirrorhub-agent-sequences')!.spec!;
      return { ...spec, validations: spec.validations?.map((v) => v.expression) };
    };
    expect(memoryPolicy(objs)).toEqual(memoryPolicy(alone));
    // No agent workload, and no hub-access Role: the hub chart grants the hub its own.
    expect(objs.some((o) => o.metadata.name === 'mirrorhub-agent-hub-access')).toBe(false);
    expect(
      objs.filter((o) => o.kind === 'Service' || o.kind === 'PodDisruptionBudget'),
    ).toHaveLength(2);
    // The hub may request tokens of the agent's ServiceAccount, and of no other.
    const tokenRole = only<V1Role>(objs, 'Role', 'mirrorhub-hub-local-agent-token');
    expect(tokenRole.rules).toEqual([
      {
        apiGroups: [''],
        resources: ['serviceaccounts/token'],
        resourceNames: ['mirrorhub-agent'],
        verbs: ['create'],
      },
    ]);
    expect(
      only<V1RoleBinding>(objs, 'RoleBinding', 'mirrorhub-hub-local-agent-token').subjects,
    ).toEqual([{ kind: 'ServiceAccount', name: 'mirrorhub-hub', namespace: NS }]);
    // Off by default: nothing of it.
    const plain = await render(HUB_CHART, HUB_REQUIRED);
    expect(plain.map((o) => o.metadata.name).filter((n) => n.includes('agent'))).toEqual([]);
    expect(deploymentArgs(only<V1Deployment>(plain, 'Deployment'))).toEqual([
      '--optimize-for-size',
      '--max-opt=1',
      '/app/hub/dist/main.js',
    ]);
  });

  it('hub with localAgent.inProcess refuses an agent namespace other than its own', async () => {
    const err = await helmFails([
      'template',
      'mirrorhub',
      HUB_CHART,
      '--namespace',
      NS,
      ...HUB_VALUE_SETS['one process, with a strict agent policy']!,
      '--set',
      'localAgent.namespace=elsewhere',
    ]);
    expect(err).toContain(`localAgent.inProcess runs the agent in the release namespace (${NS})`);
  });

  it("the hub's payload-only rule is the same in its own cluster as in every follower's", async () => {
    const hub = admissionPolicies(await render(HUB_CHART, HUB_REQUIRED)).get(
      'mirrorhub-hub-payloads',
    )!;
    const agent = admissionPolicies(await render(AGENT_CHART, AGENT_REQUIRED)).get(
      'mirrorhub-agent-hub-payloads',
    )!;
    expect(hub.spec?.validations).toEqual(agent.spec?.validations);
    expect(hub.spec?.validations).toHaveLength(3);
  });

  it.each([
    ['mirrorhub-agent', AGENT_CHART, AGENT_REQUIRED, 'agent'],
    ['mirrorhub-hub', HUB_CHART, HUB_REQUIRED, 'hub'],
  ] as const)(
    "%s: no token Secret of the chart's ServiceAccount in its namespace, whoever writes it",
    async (name, chart, required, what) => {
      const policy = async (args: string[] = []) =>
        admissionPolicies(await render(chart, [...required, ...args])).get(`${name}-token-secrets`)!
          .spec!;
      const spec = await policy();
      expect(spec.failurePolicy).toBe('Fail');
      // Every identity: no condition on who asks (the other policies bind the agent or the hub).
      expect(spec.matchConditions ?? []).toEqual([]);
      expect(spec.matchConstraints).toEqual({
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
        resourceRules: [
          {
            apiGroups: [''],
            apiVersions: ['v1'],
            operations: ['CREATE', 'UPDATE'],
            resources: ['secrets'],
          },
        ],
      });
      const tokenSecretOf = (o: string) =>
        `${o}.?type.orValue("Opaque") == "kubernetes.io/service-account-token" ? ` +
        `${o}.metadata.?annotations[?"kubernetes.io/service-account.name"].orValue("") : ""`;
      expect(spec.variables?.map((v) => [v.name, v.expression.trim()])).toEqual([
        ['serviceAccount', tokenSecretOf('object')],
        ['oldServiceAccount', `oldObject != null && ${tokenSecretOf('oldObject')}`],
      ]);
      // Refused: a write that makes one (CREATE, or UPDATE of anything else into one).
      const seal = (sa: string) =>
        `variables.serviceAccount != "${sa}" || variables.oldServiceAccount == "${sa}"`;
      expect(spec.validations).toHaveLength(1);
      expect(spec.validations![0]!.expression.trim()).toBe(seal(name));
      expect(spec.validations![0]!.reason).toBe('Forbidden');
      expect(spec.validations![0]!.messageExpression).toContain(
        `"NoTokenSecret (tokenSecret.serviceAccount): Secret " + request.namespace + "/" + request.name +`,
      );
      expect(spec.validations![0]!.messageExpression).toContain(
        `for ServiceAccount ${name} would hold a token of the ${what}, which reads every Secret of the cluster`,
      );
      // The ServiceAccount the chart runs as, whatever it is named.
      expect(
        (
          await policy([
            '--set',
            'serviceAccount.create=false',
            '--set',
            'serviceAccount.name=ops-sa',
          ])
        ).validations![0]!.expression.trim(),
      ).toBe(seal('ops-sa'));
    },
  );

  it.each([
    ['mirrorhub-hub', HUB_CHART, HUB_VALUE_SETS],
    ['mirrorhub-agent', AGENT_CHART, AGENT_VALUE_SETS],
  ] as const)(
    '%s: no wildcard, no RBAC or CRD rights, no escalation verbs, no binding to cluster-admin or system:masters',
    async (_name, chart, sets) => {
      for (const args of Object.values(sets)) {
        const objs = await render(chart, args);
        const rules = objs
          .filter((o) => o.kind === 'ClusterRole' || o.kind === 'Role')
          .flatMap((r) => (r as unknown as V1ClusterRole).rules ?? []);
        expect(rules.length).toBeGreaterThan(0);
        for (const r of rules) {
          const where = JSON.stringify(r);
          expect(r.verbs, where).not.toContain('*');
          expect(r.resources ?? [], where).not.toContain('*');
          expect(r.apiGroups ?? [], where).not.toContain('*');
          expect(r.nonResourceURLs ?? [], where).toEqual([]);
          for (const forbidden of ['escalate', 'bind', 'impersonate'])
            expect(r.verbs, where).not.toContain(forbidden);
          for (const forbidden of [
            'rbac.authorization.k8s.io',
            'apiextensions.k8s.io',
            'admissionregistration.k8s.io',
            'certificates.k8s.io',
          ])
            expect(r.apiGroups ?? [], where).not.toContain(forbidden);
        }
        const bindings = objs.filter(
          (o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding',
        ) as unknown as Array<V1ClusterRoleBinding | V1RoleBinding>;
        expect(bindings.length).toBeGreaterThan(0);
        for (const b of bindings) {
          expect(['cluster-admin', 'admin', 'edit', 'view']).not.toContain(b.roleRef.name);
          for (const s of b.subjects ?? [])
            expect(s.name).not.toMatch(/^system:(masters|authenticated|unauthenticated)$/);
        }
      }
    },
  );

  it.each<[string, string, string[], RegExp]>([
    [
      'a string where a number belongs',
      HUB_CHART,
      [...HUB_REQUIRED, '--set', 'replicaCount=two'],
      /replicaCount: Invalid type\. Expected: integer, given: string/,
    ],
    [
      'an unknown key (a typo)',
      HUB_CHART,
      [...HUB_REQUIRED, '--set', 'replicas=3'],
      /Additional property replicas is not allowed/,
    ],
    [
      'a typo in the security context',
      HUB_CHART,
      [...HUB_REQUIRED, '--set', 'securityContext.readOnlyRootFileSystem=true'],
      /securityContext: Additional property readOnlyRootFileSystem is not allowed/,
    ],
    [
      'an IRSA role that is not an IAM role ARN',
      HUB_CHART,
      [...HUB_REQUIRED, '--set', 'aws.roleArn=mirrorhub-hub'],
      /aws\.roleArn: Does not match pattern/,
    ],
    [
      'a privileged port for a non-root process',
      HUB_CHART,
      [...HUB_REQUIRED, '--set', 'port=80'],
      /port: Must be greater than or equal to 1024/,
    ],
    [
      'an agent without a cluster name',
      AGENT_CHART,
      ['--set-json', `hubPublicKeys=${JSON.stringify([HUB_PUBLIC_KEY])}`],
      /clusterName is required: the name of this cluster's MirrorCluster on the hub/,
    ],
    [
      'a negative replica count',
      AGENT_CHART,
      [...AGENT_REQUIRED, '--set', 'replicaCount=-1'],
      /replicaCount: Must be greater than or equal to 0/,
    ],
    [
      'an unknown key in hubAccess',
      AGENT_CHART,
      [...AGENT_REQUIRED, '--set', 'hubAccess.groups=x'],
      /hubAccess: Additional property groups is not allowed/,
    ],
    [
      'V8 flags that are not flags (they go on the command line of node)',
      AGENT_CHART,
      [...AGENT_REQUIRED, '--set', 'v8Flags=--expose-gc /tmp/other.js'],
      /v8Flags: Does not match pattern/,
    ],
    [
      "the hub's V8 flags naming another script",
      HUB_CHART,
      [...HUB_REQUIRED, '--set', 'v8Flags=--max-opt=1 /tmp/other.js'],
      /v8Flags: Does not match pattern/,
    ],
    [
      'hub access bound to nobody',
      AGENT_CHART,
      [...AGENT_REQUIRED, '--set', 'hubAccess.group='],
      /neither hubAccess\.group nor hubAccess\.users names anyone/,
    ],
    [
      'an agent without the hub public key',
      AGENT_CHART,
      ['--set', 'clusterName=follower-a'],
      /hubPublicKeys is required: the hub's Ed25519 public key in PEM .*openssl pkey -in hub-signing\.pem -pubout/,
    ],
    [
      'a hub public key that is not a PEM public key',
      AGENT_CHART,
      [...agentRequired('follower-a', ['ssh-ed25519 AAAAC3Nza hub'])],
      /hubPublicKeys\.0: Does not match pattern/,
    ],
    [
      'a namespace pattern that is not a regular expression',
      AGENT_CHART,
      [...AGENT_REQUIRED, '--set', 'policy.namespaces.deny={team-(a}'],
      /policy\.namespaces\.deny\[0\] "team-\(a" is not a valid RE2 regular expression/,
    ],
    [
      'a pattern that would escape its anchors',
      AGENT_CHART,
      [...AGENT_REQUIRED, '--set', 'policy.namespaces.allow={team-a)|(.*}'],
      /policy\.namespaces\.allow\[0\] .* is not a valid RE2 regular expression/,
    ],
    [
      'an unknown key in policy',
      AGENT_CHART,
      [...AGENT_REQUIRED, '--set', 'policy.allowAdoption=true'],
      /policy: Additional property allowAdoption is not allowed/,
    ],
    [
      'an agent on a cluster without ValidatingAdmissionPolicy',
      AGENT_CHART,
      [...AGENT_REQUIRED, '--api-versions', 'v1/Secret'],
      /does not serve admissionregistration\.k8s\.io\/v1 ValidatingAdmissionPolicy \(Kubernetes >= 1\.30\)\. Upgrade the cluster, or set admissionPolicies\.enabled=false/,
    ],
    [
      'a hub without its signing key',
      HUB_CHART,
      [],
      /signing\.existingSecret is required: the name of a Secret in namespace mirrorhub-system whose key private\.pem holds the hub's Ed25519 private key \(PKCS#8 PEM\)\. Create it with `openssl genpkey -algorithm ed25519/,
    ],
    [
      'a hub on a cluster without ValidatingAdmissionPolicy',
      HUB_CHART,
      [...HUB_REQUIRED, '--api-versions', 'v1/Secret'],
      /does not serve admissionregistration\.k8s\.io\/v1 ValidatingAdmissionPolicy/,
    ],
    [
      'tenancy.requireAcceptance that is not a boolean',
      HUB_CHART,
      [...HUB_REQUIRED, '--set-string', 'tenancy.requireAcceptance=yes'],
      /tenancy\.requireAcceptance: Invalid type\. Expected: boolean, given: string/,
    ],
  ])('refuses %s, saying which value is wrong', async (_what, chart, args, message) => {
    expect(await helmFails(['template', 'mirrorhub', chart, '--namespace', NS, ...args])).toMatch(
      message,
    );
  });
});

function expectLockedDown(dep: V1Deployment): void {
  const pod = dep.spec!.template.spec!;
  expect(pod.securityContext).toMatchObject({
    runAsNonRoot: true,
    runAsUser: 65532,
    seccompProfile: { type: 'RuntimeDefault' },
  });
  for (const c of pod.containers) {
    expect(c.securityContext).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      privileged: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(c.securityContext?.capabilities?.add ?? []).toEqual([]);
  }
  expect(pod.hostNetwork ?? false).toBe(false);
  // Nothing to write to: Secret volumes only (the hub's signing key), mounted read-only.
  for (const v of pod.volumes ?? []) expect(Object.keys(v).sort()).toEqual(['name', 'secret']);
  for (const c of pod.containers)
    for (const m of c.volumeMounts ?? []) expect(m.readOnly, m.name).toBe(true);
}

/** HTTP status of a request: 200 when it succeeds, the API's code when it fails. */
async function status(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (err) {
    if (err instanceof ApiException) return err.code;
    throw err;
  }
}

const secret = (name: string) => ({ metadata: { name }, type: 'Opaque', stringData: { k: 'v' } });
/** mirrorhub's marks: the agent's admission policy lets it write nothing else. */
const MARKS = {
  'mirrorhub.io/managed-by': 'mirrorhub',
  'mirrorhub.io/delivery': 'csm-wildcard-tls',
};
const copy = (name: string) => ({ ...secret(name), metadata: { name, labels: MARKS } });
/** A payload Secret: the hub's admission policies let it write nothing else there. */
const payload = (name: string) => ({
  ...secret(name),
  metadata: { name, labels: { 'mirrorhub.io/payload': 'true' } },
});

const delivery = (name: string) => ({
  apiVersion: 'mirrorhub.io/v1alpha1',
  kind: 'MirrorDelivery',
  metadata: { name },
  spec: {
    mirror: { kind: 'ClusterSecretMirror', name: 'wildcard-tls', uid: 'b4c1f3e2' },
    originCluster: 'hub',
    payloadSecretName: `${name}-payload`,
    target: { kind: 'Secret', name: 'wildcard-tls' },
    namespaces: ['team-.+'],
    contentHash: 'h1',
  },
});

type Check = { can: boolean } & V1ResourceAttributes;
const allow = (
  verb: string,
  resource: string,
  more: Partial<V1ResourceAttributes> = {},
): Check => ({ can: true, verb, resource, ...more });
const deny = (verb: string, resource: string, more: Partial<V1ResourceAttributes> = {}): Check => ({
  can: false,
  verb,
  resource,
  ...more,
});
const MH = { group: 'mirrorhub.io' };
const label = (c: Check) =>
  `${c.can ? 'may' : 'may not'} ${c.verb} ${c.group ? `${c.resource}.${c.group}` : c.resource}${c.subresource ? `/${c.subresource}` : ''}${c.name ? ` ${c.name}` : ''} ${c.namespace ? `in ${c.namespace}` : 'cluster-wide'}`;

describe('charts, installed on real API servers', () => {
  let kit: Kit;
  let hubAdmin: KubeConfig;
  let followerAdmin: KubeConfig;
  let asHub: KubeConfig;
  let asAgent: KubeConfig;
  let asHubInFollower: KubeConfig;
  const installed: Record<string, string> = {};

  const install = (release: string, chart: string, cluster: string, args: string[] = []) =>
    runHelm([
      'install',
      release,
      chart,
      '--namespace',
      NS,
      '--create-namespace',
      '--kubeconfig',
      kit.cluster(cluster).kubeconfigPath,
      ...args,
    ]);

  beforeAll(async () => {
    kit = await startKit({ clusters: ['hub', 'follower-a'], aws: false });
    hubAdmin = kit.cluster('hub').kubeConfig();
    followerAdmin = kit.cluster('follower-a').kubeConfig();
    // The management cluster gets the hub and its local agent; the follower only the agent.
    installed.hub = await install('mirrorhub-hub', HUB_CHART, 'hub', [
      ...HUB_REQUIRED,
      '--set',
      `aws.roleArn=${ROLE_ARN}`,
    ]);
    installed.localAgent = await install(
      'mirrorhub-agent',
      AGENT_CHART,
      'hub',
      agentRequired('hub'),
    );
    installed.agent = await install('mirrorhub-agent', AGENT_CHART, 'follower-a', AGENT_REQUIRED);
    for (const [kc, ns] of [
      [hubAdmin, 'team-a'],
      [followerAdmin, 'team-a'],
      [followerAdmin, 'team-b'],
    ] as const) {
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: ns } } });
    }
    asHub = await serviceAccountKubeConfig(hubAdmin, { namespace: NS, name: 'mirrorhub-hub' });
    asAgent = await serviceAccountKubeConfig(followerAdmin, {
      namespace: NS,
      name: 'mirrorhub-agent',
    });
    asHubInFollower = impersonatingKubeConfig(followerAdmin, HUB_IN_FOLLOWER);
  });

  afterAll(async () => {
    await kit?.stop();
  });

  it('installs with CRDs, workloads, ServiceAccounts and RBAC, and prints its next steps', async () => {
    expect(installed.hub).toContain('STATUS: deployed');
    // How to reach the dashboard and sign in to it.
    expect(installed.hub).toContain(
      `kubectl mirrorhub dashboard --hub-namespace ${NS} --service mirrorhub-hub`,
    );
    expect(installed.hub).toContain(`kubectl -n ${NS} port-forward svc/mirrorhub-hub 8080`);
    expect(installed.hub).toContain('kubectl create token <serviceaccount> -n <namespace>');
    expect(installed.hub).toContain(
      `IRSA: the ServiceAccount mirrorhub-hub is annotated with ${ROLE_ARN}`,
    );
    expect(installed.agent).toContain('STATUS: deployed');
    expect(installed.agent).toContain('group mirrorhub-hub');
    expect(installed.agent).toContain('ValidatingAdmissionPolicy mirrorhub-agent-copies');
    expect(installed.agent).toContain(
      "ValidatingAdmissionPolicy mirrorhub-agent-token-secrets   everyone's: no token Secret of ServiceAccount mirrorhub-agent",
    );
    expect(installed.agent).toContain(
      "Who may create pods or workloads, pods/exec or serviceaccounts/token in mirrorhub-system holds the agent's",
    );
    expect(installed.hub).toContain(
      'ValidatingAdmissionPolicy mirrorhub-hub-token-secrets refuses everyone a token Secret of ServiceAccount mirrorhub-hub.',
    );
    for (const [cluster, kc, chart] of [
      ['hub', hubAdmin, 'mirrorhub-hub'],
      ['follower-a', followerAdmin, 'mirrorhub-agent'],
    ] as const) {
      const ext = kc.makeApiClient(ApiextensionsV1Api);
      for (const crd of loadCrds(chart)) {
        await eventually(async () => {
          const cur = await ext.readCustomResourceDefinition({ name: crd.metadata!.name! });
          expect(
            cur.status?.conditions?.find((c) => c.type === 'Established')?.status,
            `${cluster} ${crd.metadata!.name}`,
          ).toBe('True');
        });
      }
    }
    expect(loadCrds('mirrorhub-hub')).toHaveLength(6);
    const apps = (kc: KubeConfig) => kc.makeApiClient(AppsV1Api);
    const hubDep = await apps(hubAdmin).readNamespacedDeployment({
      namespace: NS,
      name: 'mirrorhub-hub',
    });
    expect(hubDep.spec?.replicas).toBe(2);
    expect(
      (await apps(hubAdmin).readNamespacedDeployment({ namespace: NS, name: 'mirrorhub-agent' }))
        .spec?.replicas,
    ).toBe(1);
    expect(
      (
        await apps(followerAdmin).readNamespacedDeployment({
          namespace: NS,
          name: 'mirrorhub-agent',
        })
      ).spec?.replicas,
    ).toBe(1);
    // Only the agent chart in the follower: no hub objects there.
    expect(
      (await apps(followerAdmin).listNamespacedDeployment({ namespace: NS })).items.map(
        (d) => d.metadata?.name,
      ),
    ).toEqual(['mirrorhub-agent']);
    const sa = await hubAdmin
      .makeApiClient(CoreV1Api)
      .readNamespacedServiceAccount({ namespace: NS, name: 'mirrorhub-hub' });
    expect(sa.metadata?.annotations?.['eks.amazonaws.com/role-arn']).toBe(ROLE_ARN);
    const rbac = followerAdmin.makeApiClient(RbacAuthorizationV1Api);
    expect(
      (await rbac.listNamespacedRole({ namespace: NS })).items.map((r) => r.metadata?.name).sort(),
    ).toEqual(['mirrorhub-agent', 'mirrorhub-agent-hub-access']);
    expect((await rbac.readClusterRole({ name: 'mirrorhub-agent' })).rules).toHaveLength(2);
  });

  it('helm install refuses a values typo before touching the cluster', async () => {
    const err = await helmFails([
      'install',
      'typo',
      HUB_CHART,
      '--namespace',
      'typo',
      '--create-namespace',
      '--kubeconfig',
      kit.cluster('hub').kubeconfigPath,
      '--set',
      'replicas=3',
    ]);
    expect(err).toMatch(/Additional property replicas is not allowed/);
    const names = (await hubAdmin.makeApiClient(CoreV1Api).listNamespace()).items.map(
      (n) => n.metadata?.name,
    );
    expect(names).not.toContain('typo');
  });

  describe('the agent ServiceAccount (follower-a)', () => {
    it('copies into any namespace and watches namespaces, for real', async () => {
      const core = asAgent.makeApiClient(CoreV1Api);
      await core.createNamespacedSecret({ namespace: 'team-b', body: copy('wildcard-tls') });
      await core.createNamespacedConfigMap({
        namespace: 'team-a',
        body: { metadata: { name: 'ca-bundle', labels: MARKS }, data: { 'ca.crt': 'x' } },
      });
      expect((await core.listNamespace()).items.map((n) => n.metadata?.name)).toContain('team-b');
      await core.deleteNamespacedSecret({ namespace: 'team-b', name: 'wildcard-tls' });
    });

    it('is refused CRDs, RBAC and nodes, for real', async () => {
      const crd = loadCrds('mirrorhub-agent')[0]!;
      expect(
        await status(
          asAgent
            .makeApiClient(ApiextensionsV1Api)
            .deleteCustomResourceDefinition({ name: crd.metadata!.name! }),
        ),
      ).toBe(403);
      expect(
        await status(
          asAgent.makeApiClient(RbacAuthorizationV1Api).createClusterRoleBinding({
            body: {
              metadata: { name: 'me-admin' },
              roleRef: {
                apiGroup: 'rbac.authorization.k8s.io',
                kind: 'ClusterRole',
                name: 'cluster-admin',
              },
              subjects: [{ kind: 'ServiceAccount', name: 'mirrorhub-agent', namespace: NS }],
            },
          }),
        ),
      ).toBe(403);
      expect(await status(asAgent.makeApiClient(CoreV1Api).listNode())).toBe(403);
    });

    it.each(
      (
        [
          allow('create', 'secrets', { namespace: 'team-a' }),
          allow('delete', 'secrets', { namespace: 'any-namespace' }),
          allow('update', 'configmaps', { namespace: 'team-b' }),
          allow('watch', 'namespaces'),
          allow('list', 'secrets'),
          allow('watch', 'mirrordeliveries', { ...MH, namespace: NS }),
          allow('patch', 'mirrordeliveries', { ...MH, namespace: NS, subresource: 'status' }),
          allow('update', 'mirrordeliveries', { ...MH, namespace: NS, subresource: 'finalizers' }),
          allow('update', 'leases', { group: 'coordination.k8s.io', namespace: NS }),
          allow('patch', 'leases', { group: 'coordination.k8s.io', namespace: NS }),
          allow('create', 'events', { namespace: NS }),
          // The hub writes deliveries; the agent only reports on them.
          deny('create', 'mirrordeliveries', { ...MH, namespace: NS }),
          deny('delete', 'mirrordeliveries', { ...MH, namespace: NS }),
          deny('watch', 'mirrordeliveries', { ...MH, namespace: 'team-a' }),
          deny('create', 'customresourcedefinitions', { group: 'apiextensions.k8s.io' }),
          deny('update', 'customresourcedefinitions', { group: 'apiextensions.k8s.io' }),
          deny('create', 'roles', { group: 'rbac.authorization.k8s.io', namespace: NS }),
          deny('create', 'rolebindings', {
            group: 'rbac.authorization.k8s.io',
            namespace: 'team-a',
          }),
          deny('create', 'clusterroles', { group: 'rbac.authorization.k8s.io' }),
          deny('create', 'clusterrolebindings', { group: 'rbac.authorization.k8s.io' }),
          deny('bind', 'clusterroles', { group: 'rbac.authorization.k8s.io' }),
          deny('get', 'nodes'),
          deny('list', 'nodes'),
          deny('create', 'namespaces'),
          deny('delete', 'namespaces'),
          deny('create', 'pods', { namespace: 'team-a' }),
          // Nothing that runs as a ServiceAccount of its namespace or reads a pod's token.
          deny('create', 'pods', { namespace: NS }),
          deny('create', 'pods', { namespace: NS, subresource: 'exec' }),
          deny('create', 'deployments', { group: 'apps', namespace: NS }),
          deny('update', 'serviceaccounts', { namespace: NS }),
          deny('create', 'serviceaccounts', {
            subresource: 'token',
            namespace: NS,
            name: 'mirrorhub-agent',
          }),
          deny('impersonate', 'users'),
          deny('create', 'events', { namespace: 'team-a' }),
        ] satisfies Check[]
      ).map((c) => [label(c), c] as const),
    )('%s', async (_label, check) => {
      const { can, ...attrs } = check;
      expect(await canI(asAgent, attrs)).toBe(can);
    });
  });

  describe('the hub ServiceAccount (hub cluster)', () => {
    it('delivers into its namespace and is refused Secrets elsewhere, for real', async () => {
      const custom = asHub.makeApiClient(CustomObjectsApi);
      await custom.createNamespacedCustomObject({
        group: 'mirrorhub.io',
        version: 'v1alpha1',
        namespace: NS,
        plural: 'mirrordeliveries',
        body: delivery('csm-wildcard-tls-0a1b2c3d'),
      });
      const core = asHub.makeApiClient(CoreV1Api);
      await core.createNamespacedSecret({
        namespace: NS,
        body: payload('csm-wildcard-tls-0a1b2c3d-payload'),
      });
      await core.createNamespacedSecret({ namespace: NS, body: secret(HASH_KEY_SECRET) });
      expect(
        (await core.readNamespacedSecret({ namespace: NS, name: HASH_KEY_SECRET })).metadata?.name,
      ).toBe(HASH_KEY_SECRET);
      expect(
        await status(core.createNamespacedSecret({ namespace: 'team-a', body: secret('x') })),
      ).toBe(403);
      expect(
        await status(
          custom.createNamespacedCustomObject({
            group: 'mirrorhub.io',
            version: 'v1alpha1',
            namespace: 'team-a',
            plural: 'mirrordeliveries',
            body: delivery('x'),
          }),
        ),
      ).toBe(403);
      // Sources are read anywhere.
      await hubAdmin
        .makeApiClient(CoreV1Api)
        .createNamespacedSecret({ namespace: 'team-a', body: secret('source') });
      expect(
        (await core.readNamespacedSecret({ namespace: 'team-a', name: 'source' })).metadata?.name,
      ).toBe('source');
    });

    it.each(
      (
        [
          allow('watch', 'secretmirrors', MH),
          allow('patch', 'secretmirrors', { ...MH, namespace: 'team-a', subresource: 'status' }),
          allow('update', 'secretmirrors', { ...MH, namespace: 'team-a' }),
          allow('patch', 'clustersecretmirrors', { ...MH, subresource: 'status' }),
          allow('update', 'mirrorclusters', { ...MH, subresource: 'finalizers' }),
          allow('watch', 'secrets', { namespace: 'team-a' }),
          allow('watch', 'configmaps'),
          allow('create', 'events', { namespace: 'team-a' }),
          allow('create', 'mirrordeliveries', { ...MH, namespace: NS }),
          allow('delete', 'mirrordeliveries', { ...MH, namespace: NS }),
          allow('get', 'mirrordeliveries', { ...MH, namespace: NS, subresource: 'status' }),
          allow('delete', 'secrets', { namespace: NS }),
          allow('create', 'leases', { group: 'coordination.k8s.io', namespace: NS }),
          allow('update', 'leases', {
            group: 'coordination.k8s.io',
            namespace: NS,
            name: 'mirrorhub-hub',
          }),
          allow('watch', 'leases', { group: 'coordination.k8s.io', namespace: NS }),
          allow('watch', 'vaultconnections', MH),
          allow('watch', 'clustervaultconnections', MH),
          allow('patch', 'vaultconnections', { ...MH, namespace: 'team-a', subresource: 'status' }),
          allow('patch', 'clustervaultconnections', { ...MH, subresource: 'status' }),
          allow('get', 'namespaces', { name: 'team-a' }),
          // The dashboard: who a viewer is and what it may list; the answers grant nothing.
          allow('create', 'tokenreviews', { group: 'authentication.k8s.io' }),
          allow('create', 'subjectaccessreviews', { group: 'authorization.k8s.io' }),
          // A standby finds the leader's pod IP (dashboard behind a Service or Ingress).
          allow('get', 'pods', { namespace: NS, name: 'mirrorhub-hub-abc' }),
          deny('list', 'pods', { namespace: NS }),
          deny('get', 'pods', { namespace: 'team-a', name: 'app' }),
          // Nothing that runs as the agent's ServiceAccount or reads its pod's token.
          deny('create', 'pods', { namespace: NS }),
          deny('create', 'pods', { namespace: NS, subresource: 'exec' }),
          deny('create', 'deployments', { group: 'apps', namespace: NS }),
          deny('create', 'jobs', { group: 'batch', namespace: NS }),
          deny('create', 'serviceaccounts', {
            subresource: 'token',
            namespace: NS,
            name: 'mirrorhub-agent',
          }),
          deny('create', 'localsubjectaccessreviews', {
            group: 'authorization.k8s.io',
            namespace: 'team-a',
          }),
          allow('create', 'serviceaccounts', {
            subresource: 'token',
            namespace: NS,
            name: 'mirrorhub-hub',
          }),
          deny('create', 'serviceaccounts', {
            subresource: 'token',
            namespace: 'team-a',
            name: 'app',
          }),
          deny('create', 'vaultconnections', { ...MH, namespace: 'team-a' }),
          deny('update', 'clustervaultconnections', MH),
          deny('update', 'leases', {
            group: 'coordination.k8s.io',
            namespace: NS,
            name: 'mirrorhub-agent',
          }),
          deny('update', 'leases', {
            group: 'coordination.k8s.io',
            namespace: 'kube-system',
            name: 'mirrorhub-hub',
          }),
          deny('create', 'secrets', { namespace: 'team-a' }),
          deny('update', 'secrets', { namespace: 'team-a' }),
          deny('delete', 'configmaps', { namespace: 'team-a' }),
          deny('create', 'mirrordeliveries', { ...MH, namespace: 'team-a' }),
          deny('update', 'mirrordeliveries', { ...MH, namespace: NS, subresource: 'status' }),
          deny('create', 'secretmirrors', { ...MH, namespace: 'team-a' }),
          deny('delete', 'clustersecretmirrors', MH),
          deny('create', 'mirrorclusters', MH),
          deny('create', 'customresourcedefinitions', { group: 'apiextensions.k8s.io' }),
          deny('create', 'rolebindings', { group: 'rbac.authorization.k8s.io', namespace: NS }),
          deny('list', 'namespaces'),
          deny('list', 'nodes'),
          deny('impersonate', 'groups'),
        ] satisfies Check[]
      ).map((c) => [label(c), c] as const),
    )('%s', async (_label, check) => {
      const { can, ...attrs } = check;
      expect(await canI(asHub, attrs)).toBe(can);
    });
  });

  describe("the hub's group in a follower (hubAccess, by impersonation)", () => {
    it('delivers into the agent namespace and is refused Secrets everywhere else, for real', async () => {
      const custom = asHubInFollower.makeApiClient(CustomObjectsApi);
      await custom.createNamespacedCustomObject({
        group: 'mirrorhub.io',
        version: 'v1alpha1',
        namespace: NS,
        plural: 'mirrordeliveries',
        body: delivery('csm-wildcard-tls-9f8e7d6c'),
      });
      const core = asHubInFollower.makeApiClient(CoreV1Api);
      await core.createNamespacedSecret({
        namespace: NS,
        body: payload('csm-wildcard-tls-9f8e7d6c-payload'),
      });
      expect(
        (await core.listNamespacedSecret({ namespace: NS })).items.map((s) => s.metadata?.name),
      ).toContain('csm-wildcard-tls-9f8e7d6c-payload');
      expect(await status(core.listSecretForAllNamespaces())).toBe(403);
      expect(await status(core.listNamespacedSecret({ namespace: 'team-a' }))).toBe(403);
      expect(
        await status(core.createNamespacedSecret({ namespace: 'team-b', body: secret('x') })),
      ).toBe(403);
      expect(await status(core.listNamespace())).toBe(403);
    });

    it('is granted by the group: the same user without it gets nothing', async () => {
      const bare = impersonatingKubeConfig(followerAdmin, { user: HUB_IN_FOLLOWER.user });
      expect(
        await canI(bare, {
          group: 'mirrorhub.io',
          resource: 'mirrordeliveries',
          verb: 'create',
          namespace: NS,
        }),
      ).toBe(false);
      expect(
        await status(bare.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace: NS })),
      ).toBe(403);
    });

    it.each(
      (
        [
          allow('create', 'mirrordeliveries', { ...MH, namespace: NS }),
          allow('watch', 'mirrordeliveries', { ...MH, namespace: NS }),
          allow('delete', 'mirrordeliveries', { ...MH, namespace: NS }),
          allow('get', 'mirrordeliveries', { ...MH, namespace: NS, subresource: 'status' }),
          allow('update', 'secrets', { namespace: NS }),
          allow('watch', 'leases', { group: 'coordination.k8s.io', namespace: NS }),
          deny('update', 'mirrordeliveries', { ...MH, namespace: NS, subresource: 'status' }),
          deny('update', 'leases', { group: 'coordination.k8s.io', namespace: NS }),
          deny('list', 'secrets'),
          deny('get', 'secrets', { namespace: 'team-a' }),
          deny('list', 'configmaps', { namespace: 'team-a' }),
          deny('create', 'mirrordeliveries', { ...MH, namespace: 'team-a' }),
          deny('list', 'namespaces'),
          deny('create', 'roles', { group: 'rbac.authorization.k8s.io', namespace: NS }),
          // Nothing that runs as the agent's ServiceAccount, mints its token or reads its pod's.
          deny('create', 'pods', { namespace: NS }),
          deny('create', 'pods', { namespace: NS, subresource: 'exec' }),
          deny('patch', 'pods', { namespace: NS, subresource: 'ephemeralcontainers' }),
          deny('create', 'deployments', { group: 'apps', namespace: NS }),
          deny('update', 'deployments', { group: 'apps', namespace: NS }),
          deny('create', 'replicasets', { group: 'apps', namespace: NS }),
          deny('create', 'statefulsets', { group: 'apps', namespace: NS }),
          deny('create', 'daemonsets', { group: 'apps', namespace: NS }),
          deny('create', 'jobs', { group: 'batch', namespace: NS }),
          deny('create', 'cronjobs', { group: 'batch', namespace: NS }),
          deny('update', 'serviceaccounts', { namespace: NS }),
          deny('impersonate', 'serviceaccounts', { namespace: NS }),
          deny('create', 'serviceaccounts', {
            subresource: 'token',
            namespace: NS,
            name: 'mirrorhub-agent',
          }),
        ] satisfies Check[]
      ).map((c) => [label(c), c] as const),
    )('%s', async (_label, check) => {
      const { can, ...attrs } = check;
      expect(await canI(asHubInFollower, attrs)).toBe(can);
    });
  });
});
