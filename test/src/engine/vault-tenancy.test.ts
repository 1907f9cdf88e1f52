// A tenant against a shared Vault connection, as a tenant would try it: a real OpenBao whose
// token for the ClusterVaultConnection has only the `default` policy plus reads under
// secret/shared/ (and, as an admin's slip, transit/ paths), the kit's kube-apiserver, the hub and
// agent in process, and every SecretMirror created with a TokenRequest token of a tenant
// ServiceAccount that may only write SecretMirrors and read Secrets in its namespace.
//
// Each attack is replayed and shown to get nothing: no copy, no token value anywhere, the shared
// token still alive, nothing written in Vault, and the refusal named in the mirror's status and
// an Event. A granted path still syncs; a token revoked out of band leaves the connection not
// Ready within one poll. (docs/security.md, threat model; docs/vault.md, "Shared connections".)
import { CoreV1Api, RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { tokenAuth, VaultClient, type VaultEnvelope } from '@mirrorhub/hub/vault/index';
import { startOpenBao, type OpenBao } from '@mirrorhub/infra/components/index';
import type { SecretMirror } from '@mirrorhub/shared/api/index';

import { Engine, secretMirror } from '../support/engine.js';
import { eventually } from '../support/eventually.js';
import { ClusterObjects, SYSTEM_NS } from '../support/objects.js';
import { serviceAccountKubeConfig } from '../support/serviceaccount.js';
import { createObject, getObject } from '../support/vault.js';

const POLL = 10;
const WAIT = { timeoutMs: 30_000, intervalMs: 200 };
const NS = 'team-x';

let e: Engine;
let bao: OpenBao;
let root: VaultClient;
/** The shared connection's token: `default` policy plus the `shared` policy. */
let sharedToken: string;
let tenant: KubeConfig;
let asTenant: ClusterObjects;
const secrets = new Set<string>();

async function vault(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown) {
  return (await root.request<VaultEnvelope>({ method, path, body, accept: [404] })).body;
}

/** lookup-self with the shared token, as its owner would check it. */
async function sharedTokenWorks(): Promise<boolean> {
  const c = new VaultClient({
    address: bao.address,
    caPem: bao.caPem,
    auth: tokenAuth({ token: sharedToken }),
  });
  try {
    const r = await c.request<VaultEnvelope>({ method: 'GET', path: 'auth/token/lookup-self' });
    return (r.body?.data?.policies as string[] | undefined)?.includes('shared') ?? false;
  } catch {
    return false;
  } finally {
    await c.close();
  }
}

/** A SecretMirror in team-x through the shared connection, created by the tenant. */
async function tenantMirror(name: string, vaultSource: Record<string, unknown>): Promise<void> {
  const m: SecretMirror = secretMirror(NS, name, {
    source: {
      kind: 'Vault',
      vault: { connectionRef: { kind: 'ClusterVaultConnection', name: 'shared' }, ...vaultSource },
    },
    destination: { namespaces: [NS], name },
    pollPeriodSeconds: POLL,
  } as never);
  await createObject(tenant, 'secretmirrors', m as never, NS);
}

/** The mirror is in Error naming `rule`, in its status, its Ready condition and a Warning Event. */
async function refused(name: string, rule: string): Promise<void> {
  await e.mirrorStatus('SecretMirror', name, NS, (m) => {
    expect(m.status?.phase).toBe('Error');
    expect(m.status?.message).toContain(rule);
    expect(m.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('False');
  });
  await eventually(async () => {
    const events = await e.events(NS, name);
    expect(events.some((x) => x.type === 'Warning' && x.message?.includes(rule))).toBe(true);
  }, WAIT);
}

beforeAll(async () => {
  [e, bao] = await Promise.all([Engine.start(), startOpenBao({ tls: true })]);
  secrets.add(bao.rootToken);
  root = new VaultClient({
    address: bao.address,
    caPem: bao.caPem,
    auth: tokenAuth({ token: bao.rootToken }),
  });
  // A non-KV engine the admin carelessly granted: transit, with an exportable key the token may
  // export and rotate.
  await vault('POST', 'sys/mounts/transit', { type: 'transit' });
  await vault('POST', 'transit/keys/app', { exportable: true });
  await vault('PUT', 'sys/policies/acl/shared', {
    policy: `
      path "secret/data/shared/*" { capabilities = ["read"] }
      path "secret/metadata/shared/*" { capabilities = ["read"] }
      path "transit/export/*" { capabilities = ["read"] }
      path "transit/keys/+/rotate" { capabilities = ["update"] }`,
  });
  const tok = await vault('POST', 'auth/token/create', { policies: ['shared'], ttl: '1h' });
  sharedToken = tok?.auth?.client_token as string;
  secrets.add(sharedToken);
  await vault('POST', 'secret/data/shared/team-x/db', { data: { password: 'team-x-s3cret' } });
  await vault('POST', 'secret/data/shared/team-y/db', { data: { password: 'team-y-s3cret' } });
  secrets.add('team-y-s3cret');

  for (const ns of [NS, 'team-y']) await e.ensureNamespace(ns);
  await e.putSecret(SYSTEM_NS, 'shared-vault-token', { token: sharedToken });
  await createObject(e.kc, 'clustervaultconnections', {
    kind: 'ClusterVaultConnection',
    metadata: { name: 'shared' },
    spec: {
      address: bao.address,
      caBundle: bao.caPem,
      auth: {
        token: { secretRef: { namespace: SYSTEM_NS, name: 'shared-vault-token', key: 'token' } },
      },
      allowedNamespaces: { names: [NS] },
      tenantPaths: {
        read: ['secret/shared/{namespace}/*', 'transit/export/*'],
        dynamic: ['transit/*'],
      },
    },
  });

  // The tenant: writes SecretMirrors and reads Secrets in team-x, nothing else.
  const core = e.kc.makeApiClient(CoreV1Api);
  const rbac = e.kc.makeApiClient(RbacAuthorizationV1Api);
  await core.createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name: 'dev' } } });
  await rbac.createNamespacedRole({
    namespace: NS,
    body: {
      metadata: { name: 'dev' },
      rules: [
        {
          apiGroups: ['mirrorhub.io'],
          resources: ['secretmirrors'],
          verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
        },
        { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch'] },
      ],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: NS,
    body: {
      metadata: { name: 'dev' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'dev' },
      subjects: [{ kind: 'ServiceAccount', name: 'dev', namespace: NS }],
    },
  });
  tenant = await serviceAccountKubeConfig(e.kc, { namespace: NS, name: 'dev' });
  asTenant = new ClusterObjects(tenant);
  await eventually(async () => {
    expect((await getObject(e.kc, 'clustervaultconnections', 'shared')).status?.ready).toBe(true);
  }, WAIT);
}, 120_000);

afterAll(async () => {
  await e?.stop();
  await root?.close();
  await bao?.stop();
});

describe('a tenant through a shared Vault connection', () => {
  it('attack 1: auth/token/lookup-self with kvVersion is refused; the token is copied nowhere', async () => {
    await tenantMirror('leak', { path: 'auth/token/lookup-self', kvVersion: 1 });
    await refused(
      'leak',
      "rule: no mirror reads or writes Vault's sys/, auth/, identity/ or cubbyhole/",
    );
    expect(await asTenant.secretData(NS, 'leak')).toBeUndefined();
    expect(await sharedTokenWorks()).toBe(true);
  });

  it('attack 2: a POST to auth/token/revoke-self is refused; the shared token still works', async () => {
    await tenantMirror('revoke', {
      path: 'auth/token/revoke-self',
      dynamic: { method: 'POST' },
    });
    await refused('revoke', "rule: no mirror reads or writes Vault's sys/, auth/, identity/");
    expect(await sharedTokenWorks()).toBe(true);
    expect((await getObject(e.kc, 'clustervaultconnections', 'shared')).status?.ready).toBe(true);
  });

  it('a POST to a granted path of an engine that issues no credentials is refused: nothing is written', async () => {
    await tenantMirror('rotate', { path: 'transit/keys/app/rotate', dynamic: { method: 'POST' } });
    await refused(
      'rotate',
      "rule: a SecretMirror's dynamic source through a shared connection is a credential endpoint",
    );
    // The key was never rotated: the POST never reached Vault.
    expect((await vault('GET', 'transit/keys/app'))?.data?.latest_version).toBe(1);
    expect(await asTenant.secretData(NS, 'rotate')).toBeUndefined();
  });

  it("a path outside the namespace's grant is refused, though the token could read it", async () => {
    await tenantMirror('other-team', { path: 'secret/shared/team-y/db' });
    await refused(
      'other-team',
      "rule: a shared connection's paths are authorised in its spec.tenantPaths.read",
    );
    expect(await asTenant.secretData(NS, 'other-team')).toBeUndefined();
  });

  it('a granted path in a non-KV mount is refused whatever kvVersion says: no key material is copied', async () => {
    await tenantMirror('export', { path: 'transit/export/encryption-key/app', kvVersion: 1 });
    await refused('export', 'rule: a KV source or destination must be in a KV mount');
    expect(await asTenant.secretData(NS, 'export')).toBeUndefined();
  });

  it("a granted path of the tenant's own still syncs", async () => {
    await tenantMirror('db', { path: 'secret/shared/team-x/db' });
    await eventually(
      async () =>
        expect(await asTenant.secretData(NS, 'db')).toEqual({ password: 'team-x-s3cret' }),
      WAIT,
    );
    await e.mirrorStatus('SecretMirror', 'db', NS, (m) => expect(m.status?.phase).toBe('Active'));
  });

  it('the API server refuses a grant of a reserved engine, a * before the end, or another placeholder', async () => {
    for (const [grant, message] of [
      ['auth/token/*', 'sys/, auth/, identity/ and cubbyhole/ paths are never granted'],
      ['secret/*/db', '* may only end a path grant'],
      ['secret/{team}/*', '{namespace} is the only placeholder'],
      ['secret/../auth/*', 'a path grant has no . or .. segment'],
    ]) {
      const err = await createObject(e.kc, 'clustervaultconnections', {
        kind: 'ClusterVaultConnection',
        metadata: { name: 'bad-grant' },
        spec: {
          address: bao.address,
          auth: { token: { secretRef: { namespace: SYSTEM_NS, name: 'x', key: 'token' } } },
          tenantPaths: { read: [grant] },
        },
      }).then(
        () => undefined,
        (x: unknown) => x as { code?: number; body?: unknown },
      );
      expect(err?.code, grant).toBe(422);
      expect(String(err?.body), grant).toContain(message);
    }
  });

  it('nothing the shared token or another team owns is in any Secret, status, Event or log', async () => {
    // Each place is checked on its own and a failure names only the places, never the text:
    // the values looked for are secrets, which must not reach the test's output either.
    const places: Array<[string, string]> = [['hub and agent logs', e.logs.text()]];
    for (const s of (await e.kc.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace: NS }))
      .items) {
      for (const [k, v] of Object.entries(s.data ?? {})) {
        places.push([
          `Secret ${NS}/${s.metadata?.name}.${k}`,
          Buffer.from(v, 'base64').toString('utf8'),
        ]);
      }
    }
    for (const name of ['leak', 'revoke', 'rotate', 'other-team', 'export', 'db']) {
      places.push([
        `SecretMirror ${NS}/${name}`,
        JSON.stringify((await e.getMirror('SecretMirror', name, NS)) ?? {}),
      ]);
      places.push([`Events of ${NS}/${name}`, JSON.stringify(await e.events(NS, name))]);
    }
    places.push([
      'ClusterVaultConnection shared',
      JSON.stringify(await getObject(e.kc, 'clustervaultconnections', 'shared')),
    ]);
    const hits = places.filter(([, text]) => [...secrets].some((s) => text.includes(s)));
    expect(hits.map(([where]) => where)).toEqual([]);
  });

  it('a token revoked out of band makes the connection not Ready within one poll', async () => {
    await vault('POST', 'auth/token/revoke', { token: sharedToken });
    expect(await sharedTokenWorks()).toBe(false);
    // The connection's own periodic check is minutes away: the poll of mirror "db" sees it.
    await eventually(
      async () => {
        const c = await getObject(e.kc, 'clustervaultconnections', 'shared');
        expect(c.status?.ready).toBe(false);
        expect(c.status?.conditions?.find((x) => x.type === 'Ready')?.reason).toBe('LoginFailed');
        expect(c.status?.message).toContain('Vault refused the static Vault token');
      },
      { timeoutMs: (POLL + 10) * 1000, intervalMs: 200 },
    );
  }, 40_000);
});
