// The charts' ValidatingAdmissionPolicies on a real kube-apiserver: what the agent's
// ServiceAccount and the hub's identities may write once the API server enforces the agent
// chart's `policy` values (and the hub's payload-only rule), whatever the agent or the hub would
// do, and what nobody may write in the agent namespace (a token Secret of mirrorhub's
// ServiceAccounts). Every rule is shown both ways, one request it lets through and one it refuses, with the
// refusal naming the rule. The identities are real: TokenRequest tokens of the charts'
// ServiceAccounts, and the hub's EKS group by impersonation.
//
// test/src/charts.test.ts covers the rendering (values -> CEL) and the RBAC underneath.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import {
  ApiException,
  CoreV1Api,
  RbacAuthorizationV1Api,
  type KubeConfig,
  type V1ConfigMap,
  type V1Secret,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';

import { HASH_KEY_SECRET, LEASES_SECRET } from '@mirrorhub/hub/names';
import { startKit, type Kit } from '@mirrorhub/infra/kit/index';
import { mergePatchOptions } from '@mirrorhub/shared/testing/index';

import { chartsDir } from './support/crds.js';
import { eventually } from './support/eventually.js';
import { isolatedHelm, type Helm } from './support/helm.js';
import { impersonatingKubeConfig, serviceAccountKubeConfig } from './support/serviceaccount.js';

/** The agent namespace (release `mirrorhub` of the agent chart, and of the hub chart). */
const NS = 'mirrorhub-system';
/** A second agent release whose owner allows Adopt. */
const ADOPTING_NS = 'mirrorhub-adopting';
/** A hub release in a namespace of its own, delivering into NS. */
const HUB_APART_NS = 'hub-apart';
/** A ServiceAccount standing in for the hub of a non-EKS follower (hubAccess.users). */
const HUB_USER = { namespace: 'hub-identity', name: 'hub' };
const HUB_GROUP = 'mirrorhub-hub';
/** Someone else who may write Secrets in the agent namespace (a Role there, nothing more). */
const WRITER = { namespace: 'writers', name: 'ns-writer' };
/** The ServiceAccounts the two releases in NS create. */
const AGENT_SA = 'mirrorhub-agent';
const HUB_SA = 'mirrorhub-hub';
/** A token Secret of the agent's ServiceAccount that predates the seal. */
const LEGACY_TOKEN = 'mirrorhub-agent-token-legacy';

// The policies (each bound by a binding of the same name), by release.
const AGENT_POLICY = 'mirrorhub-agent-copies';
const HUB_ACCESS_POLICY = 'mirrorhub-agent-hub-payloads';
const ADOPTING_POLICY = 'adopting-mirrorhub-agent-copies';
const HUB_PAYLOADS = 'mirrorhub-hub-payloads';
const HUB_HASH_KEY = 'mirrorhub-hub-hash-key';
const HUB_APART_PAYLOADS = 'hub-apart-mirrorhub-hub-payloads';
const HUB_APART_HASH_KEY = 'hub-apart-mirrorhub-hub-hash-key';
/** No token Secret of the agent's (agent chart) or the hub's (hub chart) ServiceAccount. */
const AGENT_TOKEN_SECRETS = 'mirrorhub-agent-token-secrets';
const HUB_TOKEN_SECRETS = 'mirrorhub-hub-token-secrets';

/** What the agent chart's admission policies are generated from in the first release. */
const POLICY = {
  namespaces: {
    allow: ['team-.+'],
    deny: ['team-secret'],
    requireLabel: 'mirrorhub.io/accept=true',
  },
  allowAdopt: false,
};
const ACCEPT = { 'mirrorhub.io/accept': 'true' };

/** mirrorhub's marks on a copy. */
const MARKS = {
  'mirrorhub.io/managed-by': 'mirrorhub',
  'mirrorhub.io/delivery': 'csm-tls-0a1b2c3d',
};
const PAYLOAD_LABEL = { 'mirrorhub.io/payload': 'true' };

let helm: Helm;
let kit: Kit;
let admin: KubeConfig;
let asAgent: KubeConfig;
let asAdoptingAgent: KubeConfig;
let asHubUser: KubeConfig;
let asHubGroup: KubeConfig;
let asHubServiceAccount: KubeConfig;
let asHubApart: KubeConfig;
let asWriter: KubeConfig;
let valuesDir: string;

beforeAll(async () => {
  helm = await isolatedHelm();
  kit = await startKit({ clusters: ['follower'], aws: false });
  admin = kit.cluster('follower').kubeConfig();
  valuesDir = await mkdtemp(join(tmpdir(), 'mirrorhub-admission-'));
  const { publicKey } = generateKeyPairSync('ed25519');
  const hubPublicKeys = [publicKey.export({ type: 'spki', format: 'pem' }).toString()];

  const core = admin.makeApiClient(CoreV1Api);
  for (const [name, labels] of [
    ['team-a', ACCEPT],
    ['team-unlabelled', {}],
    ['other-a', ACCEPT],
    ['team-secret', ACCEPT],
    ['team-secretive', ACCEPT],
    [HUB_USER.namespace, {}],
    [HUB_APART_NS, {}],
    [WRITER.namespace, {}],
  ] as const) {
    await core.createNamespace({ body: { metadata: { name, labels } } });
  }
  // A token Secret of the agent made before the charts (and their seal) were installed.
  await core.createNamespace({ body: { metadata: { name: NS } } });
  await createSecret(admin, NS, serviceAccountToken(LEGACY_TOKEN));
  for (const sa of [HUB_USER, WRITER]) {
    await core.createNamespacedServiceAccount({
      namespace: sa.namespace,
      body: { metadata: { name: sa.name } },
    });
  }

  const install = async (release: string, chart: string, ns: string, values: object) => {
    const file = join(valuesDir, `${release}.yaml`);
    await writeFile(file, stringify(values));
    const out = await helm([
      'install',
      release,
      join(chartsDir, chart),
      '--namespace',
      ns,
      '--create-namespace',
      '--kubeconfig',
      kit.cluster('follower').kubeconfigPath,
      '-f',
      file,
    ]);
    expect(out).toContain('STATUS: deployed');
  };
  // A follower's agent, its owner's policy, and the hub bound both as a group (EKS) and as a
  // ServiceAccount user (a non-EKS follower).
  await install('mirrorhub', 'mirrorhub-agent', NS, {
    clusterName: 'follower',
    hubPublicKeys,
    policy: POLICY,
    hubAccess: { group: HUB_GROUP, users: [`system:serviceaccount:${HUB_USER.namespace}:hub`] },
  });
  // An owner who allows Adopt, and lists a token type (refused all the same).
  await install('adopting', 'mirrorhub-agent', ADOPTING_NS, {
    clusterName: 'follower',
    hubPublicKeys,
    policy: { allowAdopt: true, secretTypes: ['Opaque', 'kubernetes.io/service-account-token'] },
    hubAccess: { enabled: false },
  });
  // This cluster as a management cluster too: the hub chart next to the agent (the default), and
  // one in a namespace of its own delivering into the agent's.
  await install('mirrorhub-hub', 'mirrorhub-hub', NS, {
    signing: { existingSecret: 'mirrorhub-hub-signing' },
  });
  await install('hub-apart', 'mirrorhub-hub', HUB_APART_NS, {
    signing: { existingSecret: 'mirrorhub-hub-signing' },
    localAgent: { namespace: NS },
  });

  asAgent = await serviceAccountKubeConfig(admin, { namespace: NS, name: 'mirrorhub-agent' });
  asAdoptingAgent = await serviceAccountKubeConfig(admin, {
    namespace: ADOPTING_NS,
    name: 'adopting-mirrorhub-agent',
  });
  asHubUser = await serviceAccountKubeConfig(admin, HUB_USER);
  asHubGroup = impersonatingKubeConfig(admin, {
    user: 'arn:aws:sts::222222222222:assumed-role/mirrorhub-follower/mirrorhub',
    group: HUB_GROUP,
  });
  asHubServiceAccount = await serviceAccountKubeConfig(admin, {
    namespace: NS,
    name: 'mirrorhub-hub',
  });
  asHubApart = await serviceAccountKubeConfig(admin, {
    namespace: HUB_APART_NS,
    name: 'hub-apart-mirrorhub-hub',
  });
  // A namespace writer: whoever the cluster's owner lets manage Secrets in the agent namespace.
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({
    namespace: NS,
    body: {
      metadata: { name: 'secret-writer' },
      rules: [
        {
          apiGroups: [''],
          resources: ['secrets'],
          verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'],
        },
      ],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: NS,
    body: {
      metadata: { name: 'secret-writer' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'secret-writer' },
      subjects: [{ kind: 'ServiceAccount', ...WRITER }],
    },
  });
  asWriter = await serviceAccountKubeConfig(admin, WRITER);

  // Admission policies take a moment to load after they are created: wait until each one
  // refuses a request it must refuse (dry runs: nothing is written either way).
  const probes: Array<[string, () => Promise<unknown>]> = [
    [AGENT_POLICY, () => createSecret(asAgent, 'team-a', secret('probe'), true)],
    [ADOPTING_POLICY, () => createSecret(asAdoptingAgent, 'team-a', secret('probe'), true)],
    [HUB_ACCESS_POLICY, () => createSecret(asHubUser, NS, secret('probe'), true)],
    [HUB_PAYLOADS, () => createSecret(asHubServiceAccount, NS, secret('probe'), true)],
    [HUB_APART_HASH_KEY, () => createSecret(asHubApart, HUB_APART_NS, secret('probe'), true)],
    [AGENT_TOKEN_SECRETS, () => createSecret(asWriter, NS, serviceAccountToken('probe'), true)],
    [
      HUB_TOKEN_SECRETS,
      () => createSecret(asWriter, NS, serviceAccountToken('probe', {}, HUB_SA), true),
    ],
  ];
  for (const [policy, probe] of probes) {
    await eventually(
      async () =>
        expect((await outcome(probe())).message).toContain(`ValidatingAdmissionPolicy '${policy}'`),
      { timeoutMs: 30_000, intervalMs: 200 },
    );
  }
}, 300_000);

afterAll(async () => {
  await kit?.stop();
  await helm?.cleanup();
  if (valuesDir) await rm(valuesDir, { recursive: true, force: true });
});

describe("the agent's ServiceAccount, under the agent chart's policy values", () => {
  it('policy.namespaces.always-denied: never kube-system, kube-public, kube-node-lease or its own namespace', async () => {
    expect(await outcome(createSecret(asAgent, 'team-a', secret('always-ok', MARKS)))).toEqual(OK);
    for (const ns of ['kube-system', 'kube-public', 'kube-node-lease', NS]) {
      expectDenied(
        await outcome(createSecret(asAgent, ns, secret('copy', MARKS))),
        AGENT_POLICY,
        'policy.namespaces.always-denied',
        `namespace ${ns} is never written by mirrorhub`,
      );
    }
  });

  it('policy.namespaces.deny: a namespace matching a denied pattern, which is anchored', async () => {
    // "team-secret" does not match team-secretive: patterns match whole names.
    expect(await outcome(createSecret(asAgent, 'team-secretive', secret('c', MARKS)))).toEqual(OK);
    expectDenied(
      await outcome(createSecret(asAgent, 'team-secret', secret('c', MARKS))),
      AGENT_POLICY,
      'policy.namespaces.deny',
      'namespace team-secret matches denied pattern "team-secret"',
    );
  });

  it('policy.namespaces.allow: only namespaces matching an allowed pattern', async () => {
    expect(await outcome(createSecret(asAgent, 'team-a', secret('allow-ok', MARKS)))).toEqual(OK);
    expectDenied(
      await outcome(createSecret(asAgent, 'other-a', secret('c', MARKS))),
      AGENT_POLICY,
      'policy.namespaces.allow',
      'namespace other-a matches none of the allowed patterns (team-.+)',
    );
  });

  it('policy.namespaces.requireLabel: only namespaces that carry the label', async () => {
    expect(await outcome(createSecret(asAgent, 'team-a', secret('label-ok', MARKS)))).toEqual(OK);
    expectDenied(
      await outcome(createSecret(asAgent, 'team-unlabelled', secret('c', MARKS))),
      AGENT_POLICY,
      'policy.namespaces.requireLabel',
      'namespace team-unlabelled does not carry the label mirrorhub.io/accept=true',
    );
  });

  it('policy.ownership on CREATE: only objects carrying both of mirrorhub’s marks', async () => {
    expect(await outcome(createSecret(asAgent, 'team-a', secret('marked', MARKS)))).toEqual(OK);
    for (const labels of [
      {} as Record<string, string>,
      { 'mirrorhub.io/managed-by': 'mirrorhub' },
      { 'mirrorhub.io/managed-by': 'someone-else', 'mirrorhub.io/delivery': 'd' },
    ]) {
      expectDenied(
        await outcome(createSecret(asAgent, 'team-a', secret('unmarked', labels))),
        AGENT_POLICY,
        'policy.ownership',
        "does not carry mirrorhub's marks",
      );
    }
    expectDenied(
      await outcome(
        asAgent
          .makeApiClient(CoreV1Api)
          .createNamespacedConfigMap({ namespace: 'team-a', body: configMap('cm') }),
      ),
      AGENT_POLICY,
      'policy.ownership',
      'ConfigMap team-a/cm',
    );
    expect(
      await outcome(
        asAgent
          .makeApiClient(CoreV1Api)
          .createNamespacedConfigMap({ namespace: 'team-a', body: configMap('cm', MARKS) }),
      ),
    ).toEqual(OK);
  });

  it('policy.ownership on UPDATE: its own copies, also to release them (deletePolicy Retain)', async () => {
    await createSecret(asAgent, 'team-a', secret('to-update', MARKS));
    expect(
      await outcome(
        updateSecret(asAgent, 'team-a', 'to-update', (s) => (s.stringData = { k: 'v2' })),
      ),
    ).toEqual(OK);
    // Releasing: the marks go, the object stays.
    expect(
      await outcome(updateSecret(asAgent, 'team-a', 'to-update', (s) => (s.metadata!.labels = {}))),
    ).toEqual(OK);
    // Once released it is not the agent's any more.
    expectDenied(
      await outcome(
        updateSecret(asAgent, 'team-a', 'to-update', (s) => (s.stringData = { k: 'v3' })),
      ),
      AGENT_POLICY,
      'policy.ownership',
      'team-a/to-update is not managed by mirrorhub and would not carry',
    );
  });

  it('policy.ownership on DELETE: only what carries the managed-by mark', async () => {
    await createSecret(asAgent, 'team-a', secret('to-delete', MARKS));
    expect(await outcome(deleteSecret(asAgent, 'team-a', 'to-delete'))).toEqual(OK);
    await createSecret(admin, 'team-a', secret('app-owned'));
    expectDenied(
      await outcome(deleteSecret(asAgent, 'team-a', 'app-owned')),
      AGENT_POLICY,
      'policy.ownership',
      'so the agent may not delete it',
    );
    expect(await exists('team-a', 'app-owned')).toBe(true);
  });

  it('policy.allowAdopt false: no taking over an object mirrorhub does not own', async () => {
    await createSecret(admin, 'team-a', secret('adopt-me'));
    expectDenied(
      await outcome(
        updateSecret(asAgent, 'team-a', 'adopt-me', (s) => {
          s.metadata!.labels = MARKS;
          s.stringData = { k: 'copy' };
        }),
      ),
      AGENT_POLICY,
      'policy.allowAdopt',
      'policy.allowAdopt is false, so the agent may not take it over',
    );
    expect((await read('team-a', 'adopt-me')).metadata?.labels ?? {}).toEqual({});
  });

  it("policy.takeOver (default): another tool's copy of the same source is taken over without allowAdopt, nothing else", async () => {
    const takeOver =
      (origin: string, mirror = 'SecretMirror/src/shared') =>
      (s: V1Secret) => {
        s.metadata!.labels = MARKS;
        s.metadata!.annotations = { 'mirrorhub.io/origin': origin, 'mirrorhub.io/mirror': mirror };
        s.stringData = { k: 'copy' };
      };
    const refused = 'policy.allowAdopt is false, so the agent may not take it over';
    // A reflector copy of src/shared (its reflects annotation proves it).
    await createSecret(admin, 'team-a', {
      ...secret('shared'),
      metadata: {
        name: 'shared',
        annotations: { 'reflector.v1.k8s.emberstack.com/reflects': 'src/shared' },
      },
    });
    // Another source (the same name in another namespace, another name), or no source at all.
    // (That the source is in this cluster, the agent decides: the origin is its own claim.)
    for (const origin of ['follower/other/shared', 'follower/src/other', 'follower/src']) {
      expectDenied(
        await outcome(updateSecret(asAgent, 'team-a', 'shared', takeOver(origin))),
        AGENT_POLICY,
        'policy.allowAdopt',
        refused,
      );
    }
    expect(
      await outcome(updateSecret(asAgent, 'team-a', 'shared', takeOver('follower/src/shared'))),
    ).toEqual(OK);
    // A ClusterSecret copy: only for the ClusterSecretMirror of its name.
    await createSecret(admin, 'team-a', {
      ...secret('cs-copy', { 'clustersecret.io': 'true' }),
    });
    expectDenied(
      await outcome(
        updateSecret(
          asAgent,
          'team-a',
          'cs-copy',
          takeOver('follower/src/cs-copy', 'SecretMirror/src/cs-copy'),
        ),
      ),
      AGENT_POLICY,
      'policy.allowAdopt',
      refused,
    );
    expect(
      await outcome(
        updateSecret(
          asAgent,
          'team-a',
          'cs-copy',
          takeOver('follower/src/cs-copy', 'ClusterSecretMirror//cs-copy'),
        ),
      ),
    ).toEqual(OK);
  });

  it('policy.allowAdopt true: an unmarked object may be taken over, with the marks', async () => {
    await createSecret(admin, 'team-a', secret('adoptable'));
    expectDenied(
      await outcome(
        updateSecret(asAdoptingAgent, 'team-a', 'adoptable', (s) => (s.stringData = { k: 'x' })),
      ),
      ADOPTING_POLICY,
      'policy.ownership',
      'would not carry mirrorhub',
    );
    expect(
      await outcome(
        updateSecret(asAdoptingAgent, 'team-a', 'adoptable', (s) => {
          s.metadata!.labels = MARKS;
          s.stringData = { k: 'copy' };
        }),
      ),
    ).toEqual(OK);
    expect((await read('team-a', 'adoptable')).metadata?.labels).toMatchObject(MARKS);
    // Taking over an object of another Secret type is delete + create (a type cannot change in
    // place): the delete of the still-unmarked object is allowed where Adopt is.
    await createSecret(admin, 'team-a', secret('adoptable-2'));
    expect(await outcome(deleteSecret(asAdoptingAgent, 'team-a', 'adoptable-2'))).toEqual(OK);
  });

  it('policy.secretTypes: listed types only (Opaque when the type is left out)', async () => {
    for (const [name, type, data] of [
      ['tls', 'kubernetes.io/tls', { 'tls.crt': 'c', 'tls.key': 'k' }],
      ['untyped', undefined, { k: 'v' }],
    ] as const) {
      expect(
        await outcome(createSecret(asAgent, 'team-a', { ...secret(name, MARKS, data), type })),
      ).toEqual(OK);
    }
    expectDenied(
      await outcome(
        createSecret(asAgent, 'team-a', { ...secret('custom', MARKS), type: 'example.com/custom' }),
      ),
      AGENT_POLICY,
      'policy.secretTypes',
      "Secret type example.com/custom is not in this cluster's allowed types (Opaque, kubernetes.io/tls,",
    );
  });

  it('policy.secretTypes: never a service-account or bootstrap token, even when listed', async () => {
    for (const [kc, policy] of [
      [asAgent, AGENT_POLICY],
      [asAdoptingAgent, ADOPTING_POLICY],
    ] as const) {
      expectDenied(
        await outcome(createSecret(kc, 'team-a', serviceAccountToken('agent-token', MARKS))),
        policy,
        'policy.secretTypes',
        'Secret type kubernetes.io/service-account-token is never written (it would mint credentials)',
      );
      expectDenied(
        await outcome(
          createSecret(kc, 'team-a', {
            ...secret('bootstrap-token-abcdef', MARKS, {
              'token-id': 'abcdef',
              'token-secret': '0123456789abcdef',
            }),
            type: 'bootstrap.kubernetes.io/token',
          }),
        ),
        policy,
        'policy.secretTypes',
        'Secret type bootstrap.kubernetes.io/token is never written',
      );
    }
    // Listing a type is not nothing: the adopting release lists only Opaque (and the token).
    expectDenied(
      await outcome(
        createSecret(asAdoptingAgent, 'team-a', {
          ...secret('tls-2', MARKS, { 'tls.crt': 'c', 'tls.key': 'k' }),
          type: 'kubernetes.io/tls',
        }),
      ),
      ADOPTING_POLICY,
      'policy.secretTypes',
      "not in this cluster's allowed types (Opaque)",
    );
  });

  it('policy.metadata.deniedDomains: no label or annotation under kubernetes.io or k8s.io, but the allowed keys', async () => {
    expect(
      await outcome(
        createSecret(asAgent, 'team-a', {
          metadata: {
            name: 'keys-ok',
            labels: {
              ...MARKS,
              'app.kubernetes.io/name': 'web',
              'example.com/team': 'a',
              team: 'a',
            },
            annotations: { 'mirrorhub.io/origin': 'hub/ns/x', 'example.com/note': 'n' },
          },
          stringData: { k: 'v' },
        }),
      ),
    ).toEqual(OK);
    expectDenied(
      await outcome(
        createSecret(
          asAgent,
          'team-a',
          secret('node-role', { ...MARKS, 'node-role.kubernetes.io/control-plane': '' }),
        ),
      ),
      AGENT_POLICY,
      'policy.metadata.deniedDomains',
      'would carry label node-role.kubernetes.io/control-plane under a denied domain',
    );
    expectDenied(
      await outcome(
        createSecret(asAgent, 'team-a', {
          metadata: {
            name: 'annotated',
            labels: MARKS,
            annotations: { 'kubectl.kubernetes.io/default-container': 'x' },
          },
          stringData: { k: 'v' },
        }),
      ),
      AGENT_POLICY,
      'policy.metadata.deniedDomains',
      'would carry annotation kubectl.kubernetes.io/default-container',
    );
    // On UPDATE too, the new object's keys are what counts.
    await createSecret(asAgent, 'team-a', secret('relabel', MARKS));
    expectDenied(
      await outcome(
        updateSecret(asAgent, 'team-a', 'relabel', (s) => {
          s.metadata!.labels = { 'k8s.io/x': 'y' };
        }),
      ),
      AGENT_POLICY,
      'policy.metadata.deniedDomains',
      'would carry label k8s.io/x',
    );
  });
});

describe("the agent's ServiceAccount and other controllers' ownership marks", () => {
  const FOREIGN = 'policy.metadata.foreignOwnership';

  it("policy.metadata.foreignOwnership: no copy carries Helm's, Argo CD's or another mirroring tool's marks, allowedKeys or not", async () => {
    // Descriptive app.kubernetes.io keys still travel.
    expect(
      await outcome(
        createSecret(
          asAgent,
          'team-a',
          secret('described', { ...MARKS, 'app.kubernetes.io/name': 'db' }),
        ),
      ),
    ).toEqual(OK);
    // The Helm-adoption squat: the marks `helm install db` adopts a Secret by.
    expectDenied(
      await outcome(
        createSecret(asAgent, 'team-a', {
          metadata: {
            name: 'db-postgresql',
            labels: { ...MARKS, 'app.kubernetes.io/managed-by': 'Helm' },
            annotations: {
              'meta.helm.sh/release-name': 'db',
              'meta.helm.sh/release-namespace': 'team-a',
            },
          },
          stringData: { 'postgres-password': 'planted' },
        }),
      ),
      AGENT_POLICY,
      FOREIGN,
      'would carry label app.kubernetes.io/managed-by, another controller',
    );
    for (const [what, metadata, key] of [
      [
        'annotation',
        { annotations: { 'meta.helm.sh/release-name': 'db' } },
        'meta.helm.sh/release-name',
      ],
      // In allowedKeys, and still refused: the ownership list wins.
      [
        'label',
        { labels: { 'app.kubernetes.io/instance': 'myapp' } },
        'app.kubernetes.io/instance',
      ],
      [
        'annotation',
        { annotations: { 'argocd.argoproj.io/tracking-id': 'myapp:/Secret:team-a/x' } },
        'argocd.argoproj.io/tracking-id',
      ],
      [
        'label',
        { labels: { 'kustomize.toolkit.fluxcd.io/name': 'apps' } },
        'kustomize.toolkit.fluxcd.io/name',
      ],
      [
        'annotation',
        { annotations: { 'reflector.v1.k8s.emberstack.com/reflects': 'team-b/db' } },
        'reflector.v1.k8s.emberstack.com/reflects',
      ],
    ] as const) {
      const m = metadata as {
        labels?: Record<string, string>;
        annotations?: Record<string, string>;
      };
      expectDenied(
        await outcome(
          createSecret(asAgent, 'team-a', {
            metadata: {
              name: 'foreign',
              labels: { ...MARKS, ...m.labels },
              annotations: m.annotations,
            },
            stringData: { k: 'v' },
          }),
        ),
        AGENT_POLICY,
        FOREIGN,
        `would carry ${what} ${key}`,
      );
    }
    expect(await exists('team-a', 'db-postgresql')).toBe(false);
    expect(await exists('team-a', 'foreign')).toBe(false);
  });

  it('on UPDATE: the agent may not add or change such a key, but keeps what another tool put there', async () => {
    await createSecret(asAgent, 'team-a', secret('tracked', MARKS));
    expectDenied(
      await outcome(
        updateSecret(asAgent, 'team-a', 'tracked', (s) => {
          s.metadata!.labels = { ...s.metadata!.labels, 'app.kubernetes.io/managed-by': 'Helm' };
        }),
      ),
      AGENT_POLICY,
      FOREIGN,
      'would carry label app.kubernetes.io/managed-by',
    );
    // Argo CD (here: the admin) tracks the copy itself; the agent's next write keeps the mark...
    await updateSecret(admin, 'team-a', 'tracked', (s) => {
      s.metadata!.annotations = {
        'argocd.argoproj.io/tracking-id': 'myapp:/Secret:team-a/tracked',
      };
    });
    expect(
      await outcome(
        updateSecret(asAgent, 'team-a', 'tracked', (s) => {
          s.data = { k: Buffer.from('v2').toString('base64') };
        }),
      ),
    ).toEqual(OK);
    // ...but may not point it elsewhere.
    expectDenied(
      await outcome(
        updateSecret(asAgent, 'team-a', 'tracked', (s) => {
          s.metadata!.annotations = {
            'argocd.argoproj.io/tracking-id': 'other:/Secret:team-a/tracked',
          };
        }),
      ),
      AGENT_POLICY,
      FOREIGN,
      'would carry annotation argocd.argoproj.io/tracking-id',
    );
  });

  it("an owner's own list: the adopting release keeps the default, so a ConfigMap is refused there too", async () => {
    expectDenied(
      await outcome(
        asAdoptingAgent.makeApiClient(CoreV1Api).createNamespacedConfigMap({
          namespace: 'team-a',
          body: {
            metadata: { name: 'cm-foreign', labels: { ...MARKS, 'kapp.k14s.io/app': '1' } },
            data: { k: 'v' },
          },
        }),
      ),
      ADOPTING_POLICY,
      FOREIGN,
      'would carry label kapp.k14s.io/app',
    );
  });
});

describe('attacks through the agent (a MirrorDelivery aimed where it must not write)', () => {
  it('cannot create, overwrite or delete a Secret in kube-system, marked or not', async () => {
    const victim = await createSecret(admin, 'kube-system', secret('cloud-credentials'));
    await createSecret(admin, 'kube-system', secret('planted', MARKS));
    for (const attempt of [
      () => createSecret(asAgent, 'kube-system', secret('bootstrap', MARKS)),
      () => createSecret(asAgent, 'kube-system', secret('bootstrap-2')),
      () =>
        updateSecret(asAgent, 'kube-system', 'cloud-credentials', (s) => {
          s.metadata!.labels = MARKS;
          s.stringData = { k: 'attacker' };
        }),
      () => deleteSecret(asAgent, 'kube-system', 'cloud-credentials'),
      // Even one that someone labelled as a copy.
      () => deleteSecret(asAgent, 'kube-system', 'planted'),
    ]) {
      expectDenied(
        await outcome(attempt()),
        AGENT_POLICY,
        'policy.namespaces.always-denied',
        'namespace kube-system is never written by mirrorhub',
      );
    }
    const after = await read('kube-system', 'cloud-credentials');
    expect(after.metadata?.resourceVersion).toBe(victim.metadata?.resourceVersion);
    expect(await exists('kube-system', 'planted')).toBe(true);
  });

  it('cannot overwrite or delete an unmarked Secret in an ordinary namespace', async () => {
    const victim = await createSecret(admin, 'team-a', secret('db-password'));
    expectDenied(
      await outcome(
        updateSecret(asAgent, 'team-a', 'db-password', (s) => (s.stringData = { k: 'attacker' })),
      ),
      AGENT_POLICY,
      'policy.ownership',
      'team-a/db-password is not managed by mirrorhub',
    );
    expectDenied(
      await outcome(
        updateSecret(asAgent, 'team-a', 'db-password', (s) => {
          s.metadata!.labels = MARKS;
          s.stringData = { k: 'attacker' };
        }),
      ),
      AGENT_POLICY,
      'policy.allowAdopt',
      'team-a/db-password is not managed by mirrorhub',
    );
    expectDenied(
      await outcome(deleteSecret(asAgent, 'team-a', 'db-password')),
      AGENT_POLICY,
      'policy.ownership',
      'so the agent may not delete it',
    );
    expect((await read('team-a', 'db-password')).metadata?.resourceVersion).toBe(
      victim.metadata?.resourceVersion,
    );
  });

  it('the policy binds the agent only: an administrator still writes anywhere', async () => {
    expect(await outcome(createSecret(admin, 'team-unlabelled', secret('admin-made')))).toEqual(OK);
  });
});

describe("the hub's identity in a follower (hubAccess): payload Secrets only, in the agent namespace", () => {
  const identities = [
    ['a ServiceAccount bound by hubAccess.users (TokenRequest)', () => asHubUser, 'user'],
    [`the EKS group ${HUB_GROUP} (impersonation)`, () => asHubGroup, 'group'],
  ] as const;

  it.each(identities)(
    'payload.type: %s may not create a kubernetes.io/service-account-token Secret',
    async (_who, kc) => {
      // The token of any ServiceAccount (mirrorhub's own are sealed for everyone: see below).
      expectDenied(
        await outcome(
          createSecret(kc(), NS, serviceAccountToken('agent-token', PAYLOAD_LABEL, 'default')),
        ),
        HUB_ACCESS_POLICY,
        'payload.type',
        'may write only payload Secrets here, of type Opaque, not kubernetes.io/service-account-token',
      );
      expect(await exists(NS, 'agent-token')).toBe(false);
    },
  );

  it.each(identities)(
    'payload.type and payload.label: %s creates Opaque payloads',
    async (_who, kc, id) => {
      const name = `payload-${id}`;
      expect(await outcome(createSecret(kc(), NS, secret(name, PAYLOAD_LABEL)))).toEqual(OK);
      expectDenied(
        await outcome(
          createSecret(kc(), NS, {
            ...secret(`${name}-tls`, PAYLOAD_LABEL, { 'tls.crt': 'c', 'tls.key': 'k' }),
            type: 'kubernetes.io/tls',
          }),
        ),
        HUB_ACCESS_POLICY,
        'payload.type',
        'not kubernetes.io/tls',
      );
      expectDenied(
        await outcome(createSecret(kc(), NS, secret(`${name}-unlabelled`))),
        HUB_ACCESS_POLICY,
        'payload.label',
        'labelled mirrorhub.io/payload=true',
      );
    },
  );

  it('payload.existing: changes and deletes payloads, and nothing else', async () => {
    await createSecret(asHubUser, NS, secret('payload-1', PAYLOAD_LABEL));
    expect(
      await outcome(updateSecret(asHubUser, NS, 'payload-1', (s) => (s.stringData = { k: 'v2' }))),
    ).toEqual(OK);
    expect(await outcome(deleteSecret(asHubUser, NS, 'payload-1'))).toEqual(OK);

    await createSecret(admin, NS, secret('agent-settings'));
    expectDenied(
      await outcome(
        updateSecret(asHubUser, NS, 'agent-settings', (s) => (s.metadata!.labels = PAYLOAD_LABEL)),
      ),
      HUB_ACCESS_POLICY,
      'payload.existing',
      'may change or delete only payload Secrets',
    );
    expectDenied(
      await outcome(deleteSecret(asHubGroup, NS, 'agent-settings')),
      HUB_ACCESS_POLICY,
      'payload.existing',
      'may change or delete only payload Secrets',
    );
    expect(await exists(NS, 'agent-settings')).toBe(true);
  });

  it('payload.label: a payload stays a payload', async () => {
    await createSecret(asHubUser, NS, secret('payload-2', PAYLOAD_LABEL));
    expectDenied(
      await outcome(updateSecret(asHubUser, NS, 'payload-2', (s) => (s.metadata!.labels = {}))),
      HUB_ACCESS_POLICY,
      'payload.label',
      'labelled mirrorhub.io/payload=true',
    );
  });
});

describe("the hub's ServiceAccount in its own cluster (hub chart)", () => {
  it('next to the agent: payloads, its hash key and its leases, nothing else', async () => {
    const hub = asHubServiceAccount;
    expect(await outcome(createSecret(hub, NS, secret('hub-payload', PAYLOAD_LABEL)))).toEqual(OK);
    expect(await outcome(createSecret(hub, NS, secret(HASH_KEY_SECRET)))).toEqual(OK);
    expect(await outcome(createSecret(hub, NS, secret(LEASES_SECRET)))).toEqual(OK);
    expect(
      await outcome(updateSecret(hub, NS, HASH_KEY_SECRET, (s) => (s.stringData = { key: 'k2' }))),
    ).toEqual(OK);
    expectDenied(
      await outcome(
        createSecret(hub, NS, serviceAccountToken('agent-token', PAYLOAD_LABEL, 'default')),
      ),
      HUB_PAYLOADS,
      'payload.type',
      "the hub's ServiceAccount may write only payload Secrets here, of type Opaque",
    );
    expectDenied(
      await outcome(createSecret(hub, NS, secret('not-a-payload'))),
      HUB_PAYLOADS,
      'payload.label',
      'labelled mirrorhub.io/payload=true',
    );
    await createSecret(admin, NS, secret('agent-config'));
    expectDenied(
      await outcome(deleteSecret(hub, NS, 'agent-config')),
      HUB_PAYLOADS,
      'payload.existing',
      'may change or delete only payload Secrets',
    );
  });

  it('its hash key is Opaque, even under that name', async () => {
    await rmSecret(NS, HASH_KEY_SECRET);
    expectDenied(
      await outcome(
        createSecret(asHubServiceAccount, NS, serviceAccountToken(HASH_KEY_SECRET, {}, 'default')),
      ),
      HUB_HASH_KEY,
      'hashKey.type',
      "the hub's hash key and leases are Opaque Secrets, not kubernetes.io/service-account-token",
    );
  });

  it('in a namespace of its own: only its hash key there, only payloads in the agent namespace', async () => {
    const hub = asHubApart;
    expect(await outcome(createSecret(hub, HUB_APART_NS, secret(HASH_KEY_SECRET)))).toEqual(OK);
    expect(await outcome(createSecret(hub, HUB_APART_NS, secret(LEASES_SECRET)))).toEqual(OK);
    expectDenied(
      await outcome(createSecret(hub, HUB_APART_NS, serviceAccountToken('default-token'))),
      HUB_APART_HASH_KEY,
      'hashKey.name',
      'writes no Secret in its namespace but mirrorhub-hash-key',
    );
    expect(await outcome(createSecret(hub, NS, secret('apart-payload', PAYLOAD_LABEL)))).toEqual(
      OK,
    );
    // The hash-key name is no pass in the agent's namespace.
    expectDenied(
      await outcome(createSecret(hub, NS, secret(HASH_KEY_SECRET))),
      HUB_APART_PAYLOADS,
      'payload.label',
      'labelled mirrorhub.io/payload=true',
    );
  });
});

describe("the agent namespace is sealed: no token Secret of mirrorhub's ServiceAccounts, from anyone", () => {
  // A kubernetes.io/service-account-token Secret for the agent's (or the hub's) ServiceAccount,
  // in its namespace, is what the token controller fills with a token that never expires, and
  // either token reads every Secret of the cluster. Each identity is refused by the seal; the
  // hub's identities and the agent are refused by their own policies as well, and the API server
  // names whichever it evaluated first.
  const ownPolicy = {
    hubGroup: [HUB_ACCESS_POLICY, 'payload.type', 'not kubernetes.io/service-account-token'],
    hubUser: [HUB_ACCESS_POLICY, 'payload.type', 'not kubernetes.io/service-account-token'],
    hubServiceAccount: [HUB_PAYLOADS, 'payload.type', 'not kubernetes.io/service-account-token'],
    agent: [AGENT_POLICY, 'policy.namespaces.always-denied', `namespace ${NS} is never written`],
  } as const;
  const identities = [
    [`the hub's group ${HUB_GROUP} in a follower`, () => asHubGroup, ownPolicy.hubGroup],
    ['a hub bound by hubAccess.users', () => asHubUser, ownPolicy.hubUser],
    ["the hub's own ServiceAccount", () => asHubServiceAccount, ownPolicy.hubServiceAccount],
    ['the agent itself', () => asAgent, ownPolicy.agent],
    ['someone with a Role to write Secrets in the agent namespace', () => asWriter, undefined],
    ['a cluster administrator', () => admin, undefined],
  ] as const;
  const sealed = [
    [
      AGENT_SA,
      AGENT_TOKEN_SECRETS,
      'a token of the agent, which reads every Secret of the cluster',
    ],
    [HUB_SA, HUB_TOKEN_SECRETS, 'a token of the hub, which reads every Secret of the cluster'],
  ] as const;

  it.each(
    identities.flatMap(([who, kc, own]) => sealed.map((s) => [who, s[0], kc, own, s] as const)),
  )(
    'tokenSecret.serviceAccount: %s may not create a token Secret for %s',
    async (_who, sa, kc, own, [, policy, what]) => {
      const name = `sealed-${sa}`;
      const seal = [
        policy,
        'tokenSecret.serviceAccount',
        `Secret ${NS}/${name}: a kubernetes.io/service-account-token Secret for ServiceAccount ${sa} would hold ${what}`,
      ] as [string, string, string];
      const o = await outcome(createSecret(kc(), NS, serviceAccountToken(name, PAYLOAD_LABEL, sa)));
      if (own) expectDeniedByOneOf(o, [seal, [...own]]);
      else expectDenied(o, ...seal);
      expect(o.message).toContain('enforced by the API server from the');
      // Nothing exists for a token controller to fill.
      expect(await exists(NS, name)).toBe(false);
    },
  );

  it('tokenSecret.serviceAccount on UPDATE: a token Secret of another ServiceAccount cannot be re-aimed at them', async () => {
    // Annotations of a token Secret may change; a controller would then fill in a token of the
    // ServiceAccount it now names (once the old uid annotation and token are gone).
    const core = asWriter.makeApiClient(CoreV1Api);
    expect(
      await outcome(createSecret(asWriter, NS, serviceAccountToken('reaim', {}, 'default'))),
    ).toEqual(OK);
    for (const [sa, policy] of [
      [AGENT_SA, AGENT_TOKEN_SECRETS],
      [HUB_SA, HUB_TOKEN_SECRETS],
    ] as const) {
      expectDenied(
        await outcome(
          updateSecret(asWriter, NS, 'reaim', (s) => {
            s.metadata!.annotations = { 'kubernetes.io/service-account.name': sa };
            s.data = {};
          }),
        ),
        policy,
        'tokenSecret.serviceAccount',
        `for ServiceAccount ${sa} would hold a token of the`,
      );
      expectDenied(
        await outcome(
          core.patchNamespacedSecret(
            {
              namespace: NS,
              name: 'reaim',
              body: { metadata: { annotations: { 'kubernetes.io/service-account.name': sa } } },
            },
            mergePatchOptions(),
          ),
        ),
        policy,
        'tokenSecret.serviceAccount',
        `for ServiceAccount ${sa}`,
      );
    }
    expect((await read(NS, 'reaim')).metadata?.annotations).toEqual({
      'kubernetes.io/service-account.name': 'default',
    });
  });

  it('a token Secret made before the seal may still change (so Kubernetes can mark it invalid) and go, not come back', async () => {
    // Kubernetes' legacy-token cleaner labels an unused one invalid, then deletes it.
    expect(
      await outcome(
        updateSecret(admin, NS, LEGACY_TOKEN, (s) => {
          s.metadata!.labels = { 'kubernetes.io/legacy-token-invalid-since': '2026-01-01' };
        }),
      ),
    ).toEqual(OK);
    expect(await outcome(deleteSecret(admin, NS, LEGACY_TOKEN))).toEqual(OK);
    expectDenied(
      await outcome(createSecret(admin, NS, serviceAccountToken(LEGACY_TOKEN))),
      AGENT_TOKEN_SECRETS,
      'tokenSecret.serviceAccount',
      `for ServiceAccount ${AGENT_SA} would hold a token of the agent`,
    );
    expect(await exists(NS, LEGACY_TOKEN)).toBe(false);
  });

  it('a Secret of another type cannot become a token Secret: the API server keeps a type for good', async () => {
    // Opaque, annotated for the agent: harmless (the token controller reads token Secrets only).
    await createSecret(asWriter, NS, {
      ...secret('retype'),
      metadata: {
        name: 'retype',
        annotations: { 'kubernetes.io/service-account.name': AGENT_SA },
      },
    });
    const o = await outcome(
      updateSecret(asWriter, NS, 'retype', (s) => (s.type = 'kubernetes.io/service-account-token')),
    );
    expect(o.code, o.message).toBe(422);
    expect(o.message).toContain('field is immutable');
    expect((await read(NS, 'retype')).type).toBe('Opaque');
  });

  it("leaves other ServiceAccounts and other namespaces alone: the seal names mirrorhub's own only", async () => {
    // The token controller looks the ServiceAccount up in the Secret's own namespace: a token
    // Secret naming mirrorhub-agent in team-a is one of team-a/mirrorhub-agent (none here).
    expect(
      await outcome(createSecret(admin, 'team-a', serviceAccountToken('elsewhere', {}, AGENT_SA))),
    ).toEqual(OK);
    expect(
      await outcome(
        createSecret(asWriter, NS, serviceAccountToken('default-token', {}, 'default')),
      ),
    ).toEqual(OK);
  });
});

describe("the agent's memory of the deliveries it applied (ConfigMap mirrorhub-agent-sequences)", () => {
  const MEMORY = 'mirrorhub-agent-sequences';
  const POLICY_NAME = 'mirrorhub-agent-sequences';
  const cms = (kc: KubeConfig) => kc.makeApiClient(CoreV1Api);
  const memory = (data: Record<string, string>): V1ConfigMap => ({
    metadata: { name: MEMORY },
    data,
  });
  const replace = async (kc: KubeConfig, data: Record<string, string>) => {
    const cur = await cms(admin).readNamespacedConfigMap({ namespace: NS, name: MEMORY });
    return cms(kc).replaceNamespacedConfigMap({
      namespace: NS,
      name: MEMORY,
      body: { metadata: { name: MEMORY, resourceVersion: cur.metadata!.resourceVersion! }, data },
    });
  };
  const remove = (kc: KubeConfig) =>
    cms(kc).deleteNamespacedConfigMap({ namespace: NS, name: MEMORY });
  const refusedTo = (o: Outcome, who = '') =>
    expectDenied(
      o,
      POLICY_NAME,
      'sequences.writer',
      `only system:serviceaccount:${NS}:mirrorhub-agent writes it, not ${who}`,
    );

  it('only the agent writes it: not the hub’s identity, a namespace admin or a cluster admin', async () => {
    // A namespace admin, whom RBAC lets write ConfigMaps in the agent namespace (the rule of the
    // admin ClusterRole; this API server runs no aggregation controller to fill that one in).
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: NS,
      body: {
        metadata: { name: 'ns-admin' },
        rules: [
          {
            apiGroups: [''],
            resources: ['configmaps'],
            verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'],
          },
        ],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: NS,
      body: {
        metadata: { name: 'ns-admin' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'ns-admin' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'ns-admin' }],
      },
    });
    const asNsAdmin = impersonatingKubeConfig(admin, { user: 'ns-admin' });
    // Before the agent made it: nobody else may create it in its place (admission policies take
    // a moment to load after the install).
    await eventually(
      async () =>
        refusedTo(
          await outcome(
            cms(asNsAdmin).createNamespacedConfigMap({
              namespace: NS,
              body: memory({ d: '1 u' }),
              dryRun: 'All',
            }),
          ),
          'ns-admin',
        ),
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    // The agent creates and updates it: in its own namespace, where it writes no copy, this one
    // ConfigMap is its own.
    expect(
      await outcome(
        cms(asAgent).createNamespacedConfigMap({ namespace: NS, body: memory({ d: '5 u' }) }),
      ),
    ).toEqual(OK);
    expect(await outcome(replace(asAgent, { d: '6 u' }))).toEqual(OK);
    // Nobody else rewrites or deletes it (either would make the agent forget what it applied).
    refusedTo(await outcome(replace(asNsAdmin, { d: '1 u' })), 'ns-admin');
    refusedTo(await outcome(remove(asNsAdmin)), 'ns-admin');
    refusedTo(await outcome(replace(admin, {})));
    // The hub's identity has no ConfigMap rights there at all (RBAC, before admission).
    const hub = await outcome(replace(asHubGroup, {}));
    expect(hub.code).toBe(403);
    expect(hub.message).toMatch(/cannot update resource "configmaps"/);
    expect(
      (await cms(admin).readNamespacedConfigMap({ namespace: NS, name: MEMORY })).data,
    ).toEqual({ d: '6 u' });
    // Any other ConfigMap in its namespace is still refused to the agent, as a copy would be.
    expectDenied(
      await outcome(
        cms(asAgent).createNamespacedConfigMap({ namespace: NS, body: configMap('other', MARKS) }),
      ),
      AGENT_POLICY,
      'policy.namespaces.always-denied',
      `namespace ${NS} is never written by mirrorhub`,
    );
  });
});

// ---- helpers ----------------------------------------------------------------------------------

const OK = { code: 200, message: '' };

interface Outcome {
  code: number;
  message: string;
}

/** 200 when the request succeeds; the API's code and Status message when it is refused. */
async function outcome(p: Promise<unknown>): Promise<Outcome> {
  try {
    await p;
    return OK;
  } catch (err) {
    if (!(err instanceof ApiException)) throw err;
    const body: unknown = typeof err.body === 'string' ? safeJson(err.body) : err.body;
    const message = (body as { message?: string } | undefined)?.message ?? String(err.body);
    return { code: err.code, message };
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return { message: text };
  }
}

/**
 * Refused by the admission policy `policy` (a 403 from admission, not from RBAC), naming `rule`
 * and saying `what`; the agent's rules also say they come from the chart's policy values.
 */
function expectDenied(o: Outcome, policy: string, rule: string, what: string): void {
  expect(o.code, o.message).toBe(403);
  expect(o.message).toContain(`ValidatingAdmissionPolicy '${policy}' with binding '${policy}'`);
  expect(o.message).toContain(`(${rule}): `);
  expect(o.message).toContain(what);
  if (rule.startsWith('policy.')) {
    expect(o.message).toContain('enforced by the API server from the policy values of the');
  }
}

/** Refused by one of `alternatives` ([policy, rule, what]): a request two policies refuse is
 * reported by whichever the API server evaluates first, and that order is not defined. */
function expectDeniedByOneOf(o: Outcome, alternatives: Array<[string, string, string]>): void {
  expect(o.code, o.message).toBe(403);
  const by = alternatives.find(([policy]) =>
    o.message.includes(`ValidatingAdmissionPolicy '${policy}' with binding '${policy}'`),
  );
  expect(by, o.message).toBeDefined();
  expectDenied(o, ...by!);
}

function secret(
  name: string,
  labels: Record<string, string> = {},
  data: Record<string, string> = { k: 'v' },
): V1Secret {
  return { metadata: { name, labels }, type: 'Opaque', stringData: data };
}

/**
 * A token Secret of `serviceAccount` (in the Secret's namespace). The API server validates the
 * annotation; the kit runs no token controller, so nothing fills in a token here: what counts
 * is whether the Secret may exist at all.
 */
function serviceAccountToken(
  name: string,
  labels: Record<string, string> = {},
  serviceAccount = AGENT_SA,
): V1Secret {
  return {
    metadata: {
      name,
      labels,
      annotations: { 'kubernetes.io/service-account.name': serviceAccount },
    },
    type: 'kubernetes.io/service-account-token',
  };
}

function configMap(name: string, labels: Record<string, string> = {}): V1ConfigMap {
  return { metadata: { name, labels }, data: { k: 'v' } };
}

function createSecret(
  kc: KubeConfig,
  namespace: string,
  body: V1Secret,
  dryRun = false,
): Promise<V1Secret> {
  return kc
    .makeApiClient(CoreV1Api)
    .createNamespacedSecret({ namespace, body, ...(dryRun ? { dryRun: 'All' } : {}) });
}

/** Read (as the admin, so a refusal is the write's), change, replace as `kc`. */
async function updateSecret(
  kc: KubeConfig,
  namespace: string,
  name: string,
  change: (s: V1Secret) => void,
): Promise<V1Secret> {
  const cur = await read(namespace, name);
  const body: V1Secret = {
    metadata: { ...cur.metadata, name, namespace },
    type: cur.type,
    data: cur.data,
  };
  change(body);
  return kc.makeApiClient(CoreV1Api).replaceNamespacedSecret({ namespace, name, body });
}

function deleteSecret(kc: KubeConfig, namespace: string, name: string): Promise<unknown> {
  return kc.makeApiClient(CoreV1Api).deleteNamespacedSecret({ namespace, name });
}

function read(namespace: string, name: string): Promise<V1Secret> {
  return admin.makeApiClient(CoreV1Api).readNamespacedSecret({ namespace, name });
}

async function exists(namespace: string, name: string): Promise<boolean> {
  const o = await outcome(read(namespace, name));
  if (o.code === 404) return false;
  if (o.code !== 200) throw new Error(`reading Secret ${namespace}/${name}: ${o.message}`);
  return true;
}

async function rmSecret(namespace: string, name: string): Promise<void> {
  const o = await outcome(deleteSecret(admin, namespace, name));
  if (o.code !== 200 && o.code !== 404) throw new Error(o.message);
}
