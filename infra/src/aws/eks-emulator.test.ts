// The EKS emulator against real moto. The clusters' admin KubeConfigs point at a small fake of
// the Kubernetes APIs the emulator writes (namespaces, clusterroles, (cluster)rolebindings), so this file
// can assert the exact RBAC an access policy turns into; test/src/aws-access.test.ts proves the
// same path end to end against real kube-apiservers.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  AssociateAccessPolicyCommand,
  CreateAccessEntryCommand,
  DeleteAccessEntryCommand,
  DescribeAccessEntryCommand,
  DescribeClusterCommand,
  DisassociateAccessPolicyCommand,
  EKSClient,
  ListAccessEntriesCommand,
  ListAssociatedAccessPoliciesCommand,
  ListClustersCommand,
  UpdateAccessEntryCommand,
} from '@aws-sdk/client-eks';
import { KubeConfig } from '@kubernetes/client-node';
import { mintEksToken, type AwsCredentials } from '@mirrorhub/hub/clusters/aws/eks-token';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEksEmulator, type EksEmulator } from './eks-emulator.js';
import {
  assumeRole,
  createRole,
  createUserWithAccessKey,
  startMoto,
  trustPolicy,
  type MotoServer,
} from './moto.js';

const REGION = 'eu-west-1';
const HUB = '111111111111';
const A = '222222222222';
const B = '333333333333';
const C = '444444444444';
const VIEW = 'arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy';
const EDIT = 'arn:aws:eks::aws:cluster-access-policy/AmazonEKSEditPolicy';
const CA = '-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n';

// ---- a fake Kubernetes API holding namespaces and RBAC bindings in memory ----------------------

interface FakeKube {
  server: Server;
  kubeConfig: KubeConfig;
  objects: Map<string, { kind: string; namespace?: string; body: Record<string, unknown> }>;
  stop(): Promise<void>;
}

// The bootstrap shape of an aggregated role: no rules of its own, filled in by aggregation.
const AGG = 'rbac.authorization.k8s.io/aggregate-to-';
const EDIT_RULES = [{ apiGroups: [''], resources: ['secrets'], verbs: ['create', 'update'] }];
const VIEW_RULES = [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }];

async function startFakeKube(): Promise<FakeKube> {
  const objects: FakeKube['objects'] = new Map();
  const role = (name: string, body: Record<string, unknown>) =>
    objects.set(`cr/${name}`, { kind: 'ClusterRole', body: { metadata: { name }, ...body } });
  for (const r of ['edit', 'view']) {
    role(r, {
      aggregationRule: { clusterRoleSelectors: [{ matchLabels: { [`${AGG}${r}`]: 'true' } }] },
    });
  }
  objects.set('cr/system:aggregate-to-edit', {
    kind: 'ClusterRole',
    body: {
      metadata: { name: 'system:aggregate-to-edit', labels: { [`${AGG}edit`]: 'true' } },
      rules: EDIT_RULES,
    },
  });
  objects.set('cr/system:aggregate-to-view', {
    kind: 'ClusterRole',
    body: {
      metadata: {
        name: 'system:aggregate-to-view',
        labels: { [`${AGG}edit`]: 'true', [`${AGG}view`]: 'true' },
      },
      rules: VIEW_RULES,
    },
  });
  const RBAC = '/apis/rbac.authorization.k8s.io/v1';
  const matches = (body: Record<string, unknown>, selector: string | null) => {
    const labels = (body.metadata as { labels?: Record<string, string> }).labels ?? {};
    return (selector ?? '')
      .split(',')
      .filter(Boolean)
      .every((term) => {
        const [k, v] = term.split('=');
        return labels[k!] === v;
      });
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      const p = url.pathname;
      const body = chunks.length
        ? (JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>)
        : {};
      const name = (body.metadata as { name?: string } | undefined)?.name;
      let m: RegExpExecArray | null;
      const create = (key: string, kind: string, namespace?: string) => {
        if (objects.has(key))
          return send(409, { kind: 'Status', code: 409, reason: 'AlreadyExists' });
        objects.set(key, { kind, ...(namespace ? { namespace } : {}), body });
        return send(201, body);
      };
      const list = (kind: string) =>
        send(200, {
          items: [...objects.values()]
            .filter(
              (o) => o.kind === kind && matches(o.body, url.searchParams.get('labelSelector')),
            )
            .map((o) => o.body),
        });
      const del = (key: string) =>
        objects.delete(key)
          ? send(200, { kind: 'Status', code: 200 })
          : send(404, { kind: 'Status', code: 404 });
      if (req.method === 'GET' && p === `${RBAC}/clusterroles`) return list('ClusterRole');
      if (req.method === 'POST' && p === `${RBAC}/clusterroles`)
        return create(`cr/${name}`, 'ClusterRole');
      if ((m = new RegExp(`^${RBAC}/clusterroles/([^/]+)$`).exec(p))) {
        const key = `cr/${decodeURIComponent(m[1]!)}`;
        const o = objects.get(key);
        if (!o) return send(404, { kind: 'Status', code: 404 });
        if (req.method === 'GET') return send(200, o.body);
        if (req.method === 'PUT') {
          objects.set(key, { kind: 'ClusterRole', body });
          return send(200, body);
        }
      }
      if (req.method === 'POST' && p === '/api/v1/namespaces')
        return create(`ns/${name}`, 'Namespace');
      if (req.method === 'GET' && p === `${RBAC}/clusterrolebindings`)
        return list('ClusterRoleBinding');
      if (req.method === 'GET' && p === `${RBAC}/rolebindings`) return list('RoleBinding');
      if (req.method === 'POST' && p === `${RBAC}/clusterrolebindings`)
        return create(`crb/${name}`, 'ClusterRoleBinding');
      if (
        (m = new RegExp(`^${RBAC}/namespaces/([^/]+)/rolebindings$`).exec(p)) &&
        req.method === 'POST'
      ) {
        if (!objects.has(`ns/${m[1]}`)) return send(404, { kind: 'Status', code: 404 });
        return create(`rb/${m[1]}/${name}`, 'RoleBinding', m[1]);
      }
      if (
        (m = new RegExp(`^${RBAC}/clusterrolebindings/([^/]+)$`).exec(p)) &&
        req.method === 'DELETE'
      ) {
        return del(`crb/${m[1]}`);
      }
      if (
        (m = new RegExp(`^${RBAC}/namespaces/([^/]+)/rolebindings/([^/]+)$`).exec(p)) &&
        req.method === 'DELETE'
      ) {
        return del(`rb/${m[1]}/${m[2]}`);
      }
      return send(404, { kind: 'Status', code: 404, message: `fake kube: ${req.method} ${p}` });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const kc = new KubeConfig();
  kc.loadFromClusterAndUser(
    {
      name: 'fake',
      server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      skipTLSVerify: true,
    },
    { name: 'admin', token: 'admin' },
  );
  return {
    server,
    kubeConfig: kc,
    objects,
    stop: () => new Promise<void>((r) => server.close(() => r())),
  };
}

// ---- suite -------------------------------------------------------------------------------------

let moto: MotoServer;
let emu: EksEmulator;
const kubes: Record<string, FakeKube> = {};
const admin: Record<string, AwsCredentials> = {};
let hub: AwsCredentials;
const followerRole = (acct: string) => `arn:aws:iam::${acct}:role/mirrorhub-follower`;

const eks = (credentials: AwsCredentials, region = REGION) =>
  new EKSClient({ endpoint: emu.endpoint, region, credentials, maxAttempts: 1 });

async function rejection(
  p: Promise<unknown>,
): Promise<{ name: string; status: number | undefined; message: string }> {
  try {
    await p;
  } catch (err) {
    const e = err as { name: string; message: string; $metadata?: { httpStatusCode?: number } };
    return { name: e.name, status: e.$metadata?.httpStatusCode, message: e.message };
  }
  throw new Error('expected the call to fail');
}

async function review(cluster: string, token: string, apiVersion = 'authentication.k8s.io/v1') {
  const res = await fetch(emu.webhookUrl(cluster), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ apiVersion, kind: 'TokenReview', spec: { token } }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as {
    apiVersion: string;
    status: {
      authenticated: boolean;
      error?: string;
      user?: { username: string; groups: string[]; uid: string };
    };
  };
}

beforeAll(async () => {
  moto = await startMoto();
  emu = await startEksEmulator({ stsEndpoint: moto.endpoint });
  const hubUser = await createUserWithAccessKey(moto.endpoint, {
    accountId: HUB,
    userName: 'mirrorhub-hub',
  });
  hub = hubUser.credentials;
  for (const [name, acct] of [
    ['follower-a', A],
    ['follower-b', B],
  ] as const) {
    kubes[name] = await startFakeKube();
    emu.addCluster({
      name,
      region: REGION,
      accountId: acct,
      endpoint: `https://${name}.example:6443`,
      caPem: CA,
      version: '1.33',
      admin: kubes[name]!.kubeConfig,
    });
    admin[acct] = (
      await createUserWithAccessKey(moto.endpoint, { accountId: acct, userName: 'platform-admin' })
    ).credentials;
    await createRole(moto.endpoint, {
      accountId: acct,
      roleName: 'mirrorhub-follower',
      trustPolicy: trustPolicy({ principals: [hubUser.arn] }),
    });
  }
}, 120_000);

afterAll(async () => {
  await emu?.stop();
  await Promise.all(Object.values(kubes).map((k) => k.stop()));
  await moto?.stop();
});

describe('EKS API', () => {
  it('DescribeCluster answers with the endpoint, the real CA and API_AND_CONFIG_MAP', async () => {
    const { cluster } = await eks(admin[A]!).send(
      new DescribeClusterCommand({ name: 'follower-a' }),
    );
    expect(cluster).toMatchObject({
      name: 'follower-a',
      arn: `arn:aws:eks:${REGION}:${A}:cluster/follower-a`,
      endpoint: 'https://follower-a.example:6443',
      status: 'ACTIVE',
      version: '1.33',
      accessConfig: { authenticationMode: 'API_AND_CONFIG_MAP' },
    });
    expect(Buffer.from(cluster!.certificateAuthority!.data!, 'base64').toString()).toBe(CA);
    expect(cluster!.createdAt).toBeInstanceOf(Date);
  });

  it.each([
    { who: 'account 222..', creds: () => admin[A]!, region: REGION, want: ['follower-a'] },
    { who: 'account 333..', creds: () => admin[B]!, region: REGION, want: ['follower-b'] },
    { who: 'the hub account', creds: () => hub, region: REGION, want: [] },
    {
      who: 'account 222.. in another region',
      creds: () => admin[A]!,
      region: 'us-east-1',
      want: [],
    },
  ])('ListClusters as $who', async ({ creds, region, want }) => {
    const out = await eks(creds(), region).send(new ListClustersCommand({}));
    expect(out.clusters).toEqual(want);
  });

  it.each([
    { who: 'another account', creds: () => admin[B]!, region: REGION },
    { who: 'the hub account', creds: () => hub, region: REGION },
    { who: 'the right account in another region', creds: () => admin[A]!, region: 'us-east-1' },
  ])("someone else's cluster does not exist for $who", async ({ creds, region }) => {
    const e = await rejection(
      eks(creds(), region).send(new DescribeClusterCommand({ name: 'follower-a' })),
    );
    expect(e).toMatchObject({ name: 'ResourceNotFoundException', status: 404 });
    expect(e.message).toContain('No cluster found for name: follower-a');
  });

  it.each([
    {
      name: 'a key moto does not know',
      creds: { accessKeyId: 'AKIAUNKNOWN000000001', secretAccessKey: 'x' },
      error: 'UnrecognizedClientException',
    },
    {
      name: 'a known key with the wrong secret',
      creds: () => ({ ...admin[A]!, secretAccessKey: 'wrong' }),
      error: 'InvalidSignatureException',
    },
    {
      name: 'a session key without its session token',
      creds: async () => {
        const s = await assumeRole(moto.endpoint, {
          credentials: hub,
          roleArn: followerRole(A),
          sessionName: 'x',
        });
        return { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey };
      },
      error: 'UnrecognizedClientException',
    },
  ])('refuses $name', async (c) => {
    const creds = typeof c.creds === 'function' ? await c.creds() : c.creds;
    const e = await rejection(eks(creds).send(new ListClustersCommand({})));
    expect(e).toMatchObject({ name: c.error, status: 403 });
  });

  it('access entries: create, describe, list, update, errors', async () => {
    const client = eks(admin[A]!);
    const created = await client.send(
      new CreateAccessEntryCommand({
        clusterName: 'follower-a',
        principalArn: followerRole(A),
        kubernetesGroups: ['mirrorhub-agents'],
        tags: { team: 'platform' },
      }),
    );
    expect(created.accessEntry).toMatchObject({
      clusterName: 'follower-a',
      principalArn: followerRole(A),
      kubernetesGroups: ['mirrorhub-agents'],
      username: `arn:aws:sts::${A}:assumed-role/mirrorhub-follower/{{SessionName}}`,
      type: 'STANDARD',
      tags: { team: 'platform' },
    });
    expect(created.accessEntry!.accessEntryArn).toMatch(
      new RegExp(
        `^arn:aws:eks:${REGION}:${A}:access-entry/follower-a/role/${A}/mirrorhub-follower/`,
      ),
    );

    const described = await client.send(
      new DescribeAccessEntryCommand({ clusterName: 'follower-a', principalArn: followerRole(A) }),
    );
    expect(described.accessEntry).toEqual(created.accessEntry);
    expect(
      (await client.send(new ListAccessEntriesCommand({ clusterName: 'follower-a' })))
        .accessEntries,
    ).toEqual([followerRole(A)]);

    const updated = await client.send(
      new UpdateAccessEntryCommand({
        clusterName: 'follower-a',
        principalArn: followerRole(A),
        kubernetesGroups: [],
      }),
    );
    expect(updated.accessEntry!.kubernetesGroups).toEqual([]);

    const cases = [
      { input: { principalArn: followerRole(A) }, name: 'ResourceInUseException', status: 409 },
      {
        input: { principalArn: `arn:aws:iam::${A}:role/nope` },
        name: 'InvalidParameterException',
        status: 400,
      },
      { input: { principalArn: 'not-an-arn' }, name: 'InvalidParameterException', status: 400 },
      {
        input: {
          principalArn: `arn:aws:iam::${A}:user/platform-admin`,
          kubernetesGroups: ['system:masters'],
        },
        name: 'InvalidParameterException',
        status: 400,
      },
      {
        input: { principalArn: `arn:aws:iam::${A}:user/platform-admin`, username: 'system:admin' },
        name: 'InvalidParameterException',
        status: 400,
      },
    ];
    for (const c of cases) {
      const e = await rejection(
        client.send(new CreateAccessEntryCommand({ clusterName: 'follower-a', ...c.input })),
      );
      expect({ ...e, input: c.input }).toMatchObject({ name: c.name, status: c.status });
    }
    // Another account cannot touch it.
    const e = await rejection(
      eks(admin[B]!).send(
        new DescribeAccessEntryCommand({
          clusterName: 'follower-a',
          principalArn: followerRole(A),
        }),
      ),
    );
    expect(e.name).toBe('ResourceNotFoundException');
  });

  it('access policies become RBAC bound to the entry group, and go away again', async () => {
    const client = eks(admin[A]!);
    const kube = kubes['follower-a']!;
    const entry = { clusterName: 'follower-a', principalArn: followerRole(A) };
    const group = `eks-access-entry:${A}:role/mirrorhub-follower`;
    const bindings = () =>
      [...kube.objects.entries()]
        .filter(([, o]) => o.kind.endsWith('Binding'))
        .map(([k, o]) => ({
          key: k,
          roleRef: (o.body.roleRef as { name: string }).name,
          subjects: o.body.subjects,
        }))
        .sort((a, b) => a.key.localeCompare(b.key));

    const assoc = await client.send(
      new AssociateAccessPolicyCommand({
        ...entry,
        policyArn: EDIT,
        accessScope: { type: 'namespace', namespaces: ['mirrorhub-system', 'team-a'] },
      }),
    );
    expect(assoc.associatedAccessPolicy).toMatchObject({
      policyArn: EDIT,
      accessScope: { type: 'namespace', namespaces: ['mirrorhub-system', 'team-a'] },
    });
    expect(kube.objects.has('ns/mirrorhub-system')).toBe(true);
    expect(kube.objects.has('ns/team-a')).toBe(true);
    // edit's rules are aggregated (edit + view) into a role of the policy's own.
    expect(kube.objects.get('cr/eks-access-policy:AmazonEKSEditPolicy')?.body.rules).toEqual([
      ...EDIT_RULES,
      ...VIEW_RULES,
    ]);
    const subjects = [{ kind: 'Group', name: group, apiGroup: 'rbac.authorization.k8s.io' }];
    expect(bindings()).toEqual([
      {
        key: expect.stringMatching(/^rb\/mirrorhub-system\/eks-access-[0-9a-f]{16}-edit$/),
        roleRef: 'eks-access-policy:AmazonEKSEditPolicy',
        subjects,
      },
      {
        key: expect.stringMatching(/^rb\/team-a\/eks-access-[0-9a-f]{16}-edit$/),
        roleRef: 'eks-access-policy:AmazonEKSEditPolicy',
        subjects,
      },
    ]);

    // Narrowing the scope removes the binding in the namespace that left it.
    await client.send(
      new AssociateAccessPolicyCommand({
        ...entry,
        policyArn: EDIT,
        accessScope: { type: 'namespace', namespaces: ['team-a'] },
      }),
    );
    expect(bindings().map((b) => b.key)).toEqual([expect.stringMatching(/^rb\/team-a\//)]);

    await client.send(
      new AssociateAccessPolicyCommand({
        ...entry,
        policyArn: VIEW,
        accessScope: { type: 'cluster' },
      }),
    );
    expect(bindings().map((b) => [b.key.split('/')[0], b.roleRef])).toEqual([
      ['crb', 'eks-access-policy:AmazonEKSViewPolicy'],
      ['rb', 'eks-access-policy:AmazonEKSEditPolicy'],
    ]);
    const listed = await client.send(new ListAssociatedAccessPoliciesCommand(entry));
    expect(listed.associatedAccessPolicies!.map((p) => p.policyArn).sort()).toEqual([EDIT, VIEW]);
    expect(
      (
        await client.send(
          new ListAccessEntriesCommand({ clusterName: 'follower-a', associatedPolicyArn: VIEW }),
        )
      ).accessEntries,
    ).toEqual([followerRole(A)]);

    for (const bad of [
      {
        policyArn: 'arn:aws:eks::aws:cluster-access-policy/AmazonEKSNope',
        accessScope: { type: 'cluster' as const },
      },
      { policyArn: VIEW, accessScope: { type: 'namespace' as const, namespaces: [] } },
      { policyArn: VIEW, accessScope: { type: 'namespace' as const, namespaces: ['dev-*'] } },
      { policyArn: VIEW, accessScope: { type: 'cluster' as const, namespaces: ['x'] } },
    ]) {
      expect(
        (await rejection(client.send(new AssociateAccessPolicyCommand({ ...entry, ...bad })))).name,
      ).toBe('InvalidParameterException');
    }

    await client.send(new DisassociateAccessPolicyCommand({ ...entry, policyArn: VIEW }));
    expect(bindings().map((b) => b.roleRef)).toEqual(['eks-access-policy:AmazonEKSEditPolicy']);
    expect(
      (
        await rejection(
          client.send(new DisassociateAccessPolicyCommand({ ...entry, policyArn: VIEW })),
        )
      ).name,
    ).toBe('ResourceNotFoundException');

    await client.send(new DeleteAccessEntryCommand(entry));
    expect(bindings()).toEqual([]);
    expect((await rejection(client.send(new DescribeAccessEntryCommand(entry)))).name).toBe(
      'ResourceNotFoundException',
    );
  });
});

describe('TokenReview webhook', () => {
  let session: AwsCredentials;
  beforeAll(async () => {
    await eks(admin[B]!).send(
      new CreateAccessEntryCommand({
        clusterName: 'follower-b',
        principalArn: followerRole(B),
        kubernetesGroups: ['mirrorhub-agents'],
      }),
    );
    session = await assumeRole(moto.endpoint, {
      credentials: hub,
      roleArn: followerRole(B),
      sessionName: 'mirrorhub@hub',
    });
  });
  const token = async (clusterName: string, creds: AwsCredentials = session, now?: Date) =>
    (
      await mintEksToken({
        clusterName,
        region: REGION,
        credentials: creds,
        ...(now ? { now: () => now } : {}),
      })
    ).token;

  it('authenticates the follower role with its entry username and groups', async () => {
    for (const apiVersion of ['authentication.k8s.io/v1', 'authentication.k8s.io/v1beta1']) {
      const r = await review('follower-b', await token('follower-b'), apiVersion);
      expect(r.apiVersion).toBe(apiVersion);
      expect(r.status).toMatchObject({
        authenticated: true,
        user: {
          username: `arn:aws:sts::${B}:assumed-role/mirrorhub-follower/mirrorhub-hub`,
          groups: ['mirrorhub-agents', `eks-access-entry:${B}:role/mirrorhub-follower`],
          uid: expect.stringMatching(new RegExp(`^aws-iam-authenticator:${B}:AROA`)),
        },
      });
    }
  });

  it.each([
    {
      name: 'a token for another cluster name',
      cluster: 'follower-b',
      mint: () => token('follower-a'),
      error: /signature does not match/,
    },
    {
      name: 'an unknown cluster',
      cluster: 'nope',
      mint: () => token('nope'),
      error: /unknown cluster "nope"/,
    },
    {
      name: 'an expired token',
      cluster: 'follower-b',
      mint: () => token('follower-b', session, new Date(Date.now() - 16 * 60_000)),
      error: /expired/,
    },
    {
      name: 'a tampered query string',
      cluster: 'follower-b',
      mint: async () => {
        const t = await token('follower-b');
        const url = Buffer.from(t.slice('k8s-aws-v1.'.length), 'base64url').toString();
        return `k8s-aws-v1.${Buffer.from(url.replace('X-Amz-Expires=60', 'X-Amz-Expires=61')).toString('base64url')}`;
      },
      error: /signature does not match/,
    },
    {
      name: 'a principal without an access entry here',
      cluster: 'follower-b',
      mint: async () =>
        token(
          'follower-b',
          await assumeRole(moto.endpoint, {
            credentials: hub,
            roleArn: followerRole(A),
            sessionName: 's',
          }),
        ),
      error: new RegExp(`no access entry for arn:aws:iam::${A}:role/mirrorhub-follower`),
    },
    {
      name: 'the hub user itself (no entry)',
      cluster: 'follower-b',
      mint: () => token('follower-b', hub),
      error: /no access entry/,
    },
    {
      name: 'a key moto never issued',
      cluster: 'follower-b',
      mint: () =>
        token('follower-b', {
          accessKeyId: 'ASIANOTISSUED0000001',
          secretAccessKey: 'x',
          sessionToken: 'y',
        }),
      error: /not known/,
    },
    { name: 'garbage', cluster: 'follower-b', mint: async () => 'Bearer-ish', error: /prefix/ },
  ])('denies $name', async (c) => {
    const r = await review(c.cluster, await c.mint());
    expect(r.status.authenticated).toBe(false);
    expect(r.status.error).toMatch(c.error);
    expect(r.status.user).toBeUndefined();
  });
});

describe('fault hooks', () => {
  let session: AwsCredentials;
  beforeAll(async () => {
    // The role's access entry in follower-b, unless the TokenReview suite made it already.
    await eks(admin[B]!)
      .send(
        new CreateAccessEntryCommand({ clusterName: 'follower-b', principalArn: followerRole(B) }),
      )
      .catch((err: Error) => {
        if (err.name !== 'ResourceInUseException') throw err;
      });
    session = await assumeRole(moto.endpoint, {
      credentials: hub,
      roleArn: followerRole(B),
      sessionName: 'faults',
    });
  });
  const token = async (emulatorNow: Date) =>
    (
      await mintEksToken({
        clusterName: 'follower-b',
        region: REGION,
        credentials: session,
        now: () => emulatorNow,
      })
    ).token;

  it('an EKS API outage answers 503 ServiceUnavailableException, but not the webhook', async () => {
    const before = emu.refused();
    emu.setAvailable(false);
    try {
      expect(emu.available()).toBe(false);
      const e = await rejection(
        eks(admin[B]!).send(new DescribeClusterCommand({ name: 'follower-b' })),
      );
      expect(e).toMatchObject({ name: 'ServiceUnavailableException', status: 503 });
      // Before any authentication, like a service that is down.
      const raw = await fetch(`${emu.endpoint}/clusters/follower-b/access-entries`);
      expect(raw.status).toBe(503);
      expect(raw.headers.get('x-amzn-errortype')).toBe('ServiceUnavailableException');
      expect(await raw.json()).toEqual({ message: 'Service is unavailable. Try again later.' });
      expect(emu.refused()).toBe(before + 2);
      // The clusters' authenticator keeps working.
      const r = await review('follower-b', await token(new Date()));
      expect(r.status.authenticated).toBe(true);
      expect(emu.refused()).toBe(before + 2);
    } finally {
      emu.setAvailable(true);
    }
    const { cluster } = await eks(admin[B]!).send(
      new DescribeClusterCommand({ name: 'follower-b' }),
    );
    expect(cluster?.name).toBe('follower-b');
    expect(emu.refused()).toBe(before + 2);
  });

  it('tokenLifetimeSeconds refuses tokens sooner than 15 minutes', async () => {
    const short = await startEksEmulator({ stsEndpoint: moto.endpoint, tokenLifetimeSeconds: 60 });
    try {
      short.addCluster({
        name: 'follower-b',
        region: REGION,
        accountId: B,
        endpoint: 'https://follower-b.example:6443',
        caPem: CA,
        version: '1.33',
        admin: kubes['follower-b']!.kubeConfig,
      });
      await new EKSClient({
        endpoint: short.endpoint,
        region: REGION,
        credentials: admin[B]!,
        maxAttempts: 1,
      }).send(
        new CreateAccessEntryCommand({ clusterName: 'follower-b', principalArn: followerRole(B) }),
      );
      const shortReview = async (t: string) => {
        const res = await fetch(short.webhookUrl('follower-b'), {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ kind: 'TokenReview', spec: { token: t } }),
        });
        return ((await res.json()) as { status: { authenticated: boolean; error?: string } })
          .status;
      };
      const ago = (s: number) => new Date(Date.now() - s * 1000);
      expect(await shortReview(await token(ago(30)))).toMatchObject({ authenticated: true });
      const old = await token(ago(90));
      expect(await shortReview(old)).toEqual({
        authenticated: false,
        error: expect.stringMatching(/X-Amz-Date parameter is expired \(1 minute expiration\)/),
      });
      // The default lifetime still takes it.
      expect((await review('follower-b', old)).status.authenticated).toBe(true);
    } finally {
      await short.stop();
    }
  });
});

describe('clusters sharing an API server', () => {
  let session: AwsCredentials;
  beforeAll(async () => {
    // follower-c is served by follower-b's API server (endpoint, CA, admin and webhook).
    emu.addCluster({
      name: 'follower-c',
      host: 'follower-b',
      region: REGION,
      accountId: C,
      endpoint: 'https://follower-b.example:6443',
      caPem: CA,
      version: '1.33',
      admin: kubes['follower-b']!.kubeConfig,
    });
    admin[C] = (
      await createUserWithAccessKey(moto.endpoint, { accountId: C, userName: 'platform-admin' })
    ).credentials;
    const hubArn = `arn:aws:iam::${HUB}:user/mirrorhub-hub`;
    await createRole(moto.endpoint, {
      accountId: C,
      roleName: 'mirrorhub-follower',
      trustPolicy: trustPolicy({ principals: [hubArn] }),
    });
    await eks(admin[C]!).send(
      new CreateAccessEntryCommand({ clusterName: 'follower-c', principalArn: followerRole(C) }),
    );
    session = await assumeRole(moto.endpoint, {
      credentials: hub,
      roleArn: followerRole(C),
      sessionName: 'shared',
    });
  });
  const token = async (clusterName: string) =>
    (await mintEksToken({ clusterName, region: REGION, credentials: session })).token;

  it("the host's webhook authenticates a hosted cluster's token with that cluster's entry", async () => {
    const r = await review('follower-b', await token('follower-c'));
    expect(r.status).toMatchObject({
      authenticated: true,
      user: {
        username: `arn:aws:sts::${C}:assumed-role/mirrorhub-follower/shared`,
        // A group of follower-c's own: the same principal may have an entry in follower-b too.
        groups: [`eks-access-entry:follower-c:${C}:role/mirrorhub-follower`],
      },
    });
  });

  it.each([
    {
      name: 'a token for a cluster on another API server',
      cluster: 'follower-b',
      mint: () => token('follower-a'),
      error:
        /^sts: signature does not match for x-k8s-aws-id=follower-b or follower-c, the clusters of this API server \(token minted for a cluster on another API server, or altered\)$/,
    },
    {
      name: 'a token for a hosted cluster at its own webhook URL',
      cluster: 'follower-c',
      mint: () => token('follower-c'),
      error: /^cluster "follower-c" has no API server of its own: it shares that of follower-b$/,
    },
    {
      name: "a hosted cluster's token at another API server",
      cluster: 'follower-a',
      mint: () => token('follower-c'),
      error: /^sts: signature does not match for x-k8s-aws-id=follower-a \(token minted/,
    },
  ])('denies $name', async (c) => {
    const r = await review(c.cluster, await c.mint());
    expect(r.status).toEqual({ authenticated: false, error: expect.stringMatching(c.error) });
  });

  it('refuses a host that is not added, or is hosted itself', () => {
    const cluster = (name: string, host: string) => ({
      name,
      host,
      region: REGION,
      accountId: C,
      endpoint: 'https://x.example:6443',
      caPem: CA,
      version: '1.33',
      admin: kubes['follower-b']!.kubeConfig,
    });
    expect(() => emu.addCluster(cluster('follower-d', 'nope'))).toThrow(
      'EKS emulator: cluster "follower-d" shares the API server of "nope", which is not added: add "nope" first',
    );
    expect(() => emu.addCluster(cluster('follower-d', 'follower-c'))).toThrow(
      'EKS emulator: cluster "follower-d" shares the API server of "follower-c", which shares that of "follower-b": name "follower-b" as its host',
    );
  });

  it('counts DescribeCluster by cluster name, answered or not', async () => {
    const count = (name: string) => emu.describeClusterCalls()[name] ?? 0;
    const before = { c: count('follower-c'), b: count('follower-b') };
    const { cluster } = await eks(admin[C]!).send(
      new DescribeClusterCommand({ name: 'follower-c' }),
    );
    expect(cluster?.endpoint).toBe('https://follower-b.example:6443');
    // Not this account's cluster: 404, counted all the same.
    expect(
      (await rejection(eks(admin[C]!).send(new DescribeClusterCommand({ name: 'follower-b' }))))
        .name,
    ).toBe('ResourceNotFoundException');
    await eks(admin[C]!).send(new ListClustersCommand({}));
    expect(count('follower-c')).toBe(before.c + 1);
    expect(count('follower-b')).toBe(before.b + 1);
  });
});
