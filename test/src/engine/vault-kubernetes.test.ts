// Kubernetes auth of a ClusterVaultConnection, end to end: OpenBao's kubernetes auth method
// reviews tokens against the kit's kube-apiserver (a reviewer ServiceAccount bound to
// system:auth-delegator), its role binds the hub's ServiceAccount name and namespace with an
// audience. The hub runs in process as the chart runs it, knowing its own ServiceAccount
// (MIRRORHUB_SERVICE_ACCOUNT): it requests a TokenRequest token of that ServiceAccount for the
// connection's audience with its own API access, logs in, and a ClusterSecretMirror delivers a
// KV v2 secret. A wrong audience is a connection that is not Ready, saying why.
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { tokenAuth, VaultClient, type VaultEnvelope } from '@mirrorhub/hub/vault/index';
import { startOpenBao, type OpenBao } from '@mirrorhub/infra/components/index';

import { clusterSecretMirror, Engine, SYSTEM_NS } from '../support/engine.js';
import { eventually } from '../support/eventually.js';
import { createObject, enableKubernetesAuth, getObject } from '../support/vault.js';

const HUB_SA = { namespace: SYSTEM_NS, name: 'mirrorhub-hub' };
const REVIEWER = { namespace: 'vault-system', name: 'vault-reviewer' };
const WAIT = { timeoutMs: 30_000, intervalMs: 200 };

let e: Engine;
let bao: OpenBao;
let root: VaultClient;
const secrets = new Set<string>();

async function sys(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown) {
  return (await root.request<VaultEnvelope>({ method, path, body })).body;
}

async function serviceAccount(sa: { namespace: string; name: string }): Promise<void> {
  await e.ensureNamespace(sa.namespace);
  await e.kc.makeApiClient(CoreV1Api).createNamespacedServiceAccount({
    namespace: sa.namespace,
    body: { metadata: { name: sa.name } },
  });
}

const connection = (name: string, audience: string) => ({
  kind: 'ClusterVaultConnection',
  metadata: { name },
  spec: {
    address: bao.address,
    caBundle: bao.caPem,
    // No serviceAccountRef: the hub's own ServiceAccount.
    auth: { kubernetes: { role: 'hub', audience } },
  },
});

const tenantConnection = () => ({
  kind: 'VaultConnection',
  metadata: { name: 'app', namespace: 'team-k' },
  spec: {
    address: bao.address,
    caBundle: bao.caPem,
    auth: { kubernetes: { role: 'team-k', audience: 'vault', serviceAccountRef: { name: 'app' } } },
  },
});

beforeAll(async () => {
  [e, bao] = await Promise.all([
    Engine.start({ hub: { serviceAccount: HUB_SA } }),
    startOpenBao({ tls: true }),
  ]);
  secrets.add(bao.rootToken);
  root = new VaultClient({
    address: bao.address,
    caPem: bao.caPem,
    auth: tokenAuth({ token: bao.rootToken }),
  });
  const cluster = e.kit.cluster('hub');

  secrets.add(await enableKubernetesAuth(root, e.kc, cluster, REVIEWER));
  await serviceAccount(HUB_SA);

  await sys('PUT', 'sys/policies/acl/hub', {
    policy: `
      path "secret/data/platform/*" { capabilities = ["read"] }
      path "secret/metadata/platform/*" { capabilities = ["read"] }`,
  });
  await sys('POST', 'auth/kubernetes/role/hub', {
    bound_service_account_names: [HUB_SA.name],
    bound_service_account_namespaces: [HUB_SA.namespace],
    audience: 'vault',
    token_policies: ['hub'],
    token_ttl: '1h',
  });
  await sys('POST', 'secret/data/platform/registry', {
    data: { token: 'reg-v1-s3cret' },
  });
  secrets.add('reg-v1-s3cret');
  for (const ns of ['app-1', 'app-2']) await e.ensureNamespace(ns);
  // A tenant's ServiceAccount and the Vault role that binds it.
  await serviceAccount({ namespace: 'team-k', name: 'app' });
  await sys('POST', 'auth/kubernetes/role/team-k', {
    bound_service_account_names: ['app'],
    bound_service_account_namespaces: ['team-k'],
    audience: 'vault',
    token_policies: ['default'],
    token_ttl: '1h',
  });
}, 180_000);

afterAll(async () => {
  await e?.stop();
  await root?.close();
  await bao?.stop();
});

describe("Kubernetes auth with the hub's own ServiceAccount", () => {
  it('logs in (Ready, authMethod kubernetes) and a ClusterSecretMirror delivers the KV v2 secret', async () => {
    await createObject(e.kc, 'clustervaultconnections', connection('platform', 'vault'));
    await eventually(async () => {
      const c = await getObject(e.kc, 'clustervaultconnections', 'platform');
      expect(c.status).toMatchObject({ ready: true, authMethod: 'kubernetes' });
      expect(c.status?.conditions?.find((x) => x.type === 'Ready')?.reason).toBe('Authenticated');
    }, WAIT);
    await e.applyMirror(
      clusterSecretMirror('registry', {
        source: {
          kind: 'Vault',
          vault: {
            connectionRef: { kind: 'ClusterVaultConnection', name: 'platform' },
            path: 'secret/platform/registry',
          },
        },
        destination: { namespaces: ['app-.*'], name: 'registry' },
        pollPeriodSeconds: 10,
      } as never),
    );
    await eventually(async () => {
      expect(await e.secretData('app-1', 'registry')).toEqual({ token: 'reg-v1-s3cret' });
      expect(await e.secretData('app-2', 'registry')).toEqual({ token: 'reg-v1-s3cret' });
    }, WAIT);
    await e.mirrorStatus('ClusterSecretMirror', 'registry', undefined, (m) =>
      expect(m.status?.phase).toBe('Active'),
    );

    await sys('POST', 'secret/data/platform/registry', { data: { token: 'reg-v2-s3cret' } });
    secrets.add('reg-v2-s3cret');
    await eventually(
      async () =>
        expect(await e.secretData('app-1', 'registry')).toEqual({ token: 'reg-v2-s3cret' }),
      WAIT,
    );
  }, 90_000);

  it('a token for another audience: Ready=False/LoginFailed, saying to check the audience', async () => {
    await createObject(e.kc, 'clustervaultconnections', connection('wrong-audience', 'not-vault'));
    await eventually(async () => {
      const c = await getObject(e.kc, 'clustervaultconnections', 'wrong-audience');
      expect(c.status?.ready).toBe(false);
      const ready = c.status?.conditions?.find((x) => x.type === 'Ready');
      expect(ready).toMatchObject({ status: 'False', reason: 'LoginFailed' });
      expect(c.status?.message).toMatch(
        /^Kubernetes login at auth\/kubernetes as role "hub" failed \(\d+\): Vault says: .+audience/,
      );
    }, WAIT);
    await e.eventWith('default', 'wrong-audience', 'LoginFailed');
  });

  it("a VaultConnection (a tenant's) cannot use the hub's own ServiceAccount: the API server refuses it without serviceAccountRef", async () => {
    const err = await createObject(
      e.kc,
      'vaultconnections',
      {
        kind: 'VaultConnection',
        metadata: { name: 'as-hub', namespace: 'team-k' },
        spec: {
          address: bao.address,
          caBundle: bao.caPem,
          auth: { kubernetes: { role: 'hub', audience: 'vault' } },
        },
      },
      'team-k',
    ).then(
      () => undefined,
      (x: unknown) => x as { code?: number; body?: unknown },
    );
    expect(err?.code).toBe(422);
    expect(String(err?.body)).toContain('serviceAccountRef');
  });

  it('a VaultConnection naming a ServiceAccount of its namespace: InvalidConfig while vault.serviceAccountTokens is off (the default)', async () => {
    await createObject(e.kc, 'vaultconnections', tenantConnection(), 'team-k');
    await eventually(async () => {
      const c = await getObject(e.kc, 'vaultconnections', 'app', 'team-k');
      expect(c.status?.conditions?.find((x) => x.type === 'Ready')).toMatchObject({
        status: 'False',
        reason: 'InvalidConfig',
      });
      expect(c.status?.message).toContain(
        'this hub does not request tokens of other ServiceAccounts (chart value vault.serviceAccountTokens is off)',
      );
    }, WAIT);
  });

  it('with vault.serviceAccountTokens on, the hub logs in as that ServiceAccount (what its author could do with create serviceaccounts/token)', async () => {
    await e.stopHub();
    await e.startHub({ vaultServiceAccountTokens: true });
    await eventually(async () => {
      const c = await getObject(e.kc, 'vaultconnections', 'app', 'team-k');
      expect(c.status).toMatchObject({ ready: true, authMethod: 'kubernetes' });
    }, WAIT);
  }, 60_000);

  it("with vault.serviceAccountTokens on, a VaultConnection in mirrorhub's own namespace gets no token of the hub's ServiceAccount", async () => {
    // The hub's token reads every Secret: whoever may create a VaultConnection beside it must
    // not be able to send it to an address of their choice.
    const own = tenantConnection();
    own.metadata.namespace = SYSTEM_NS;
    own.spec.auth.kubernetes.serviceAccountRef.name = HUB_SA.name;
    await createObject(e.kc, 'vaultconnections', own, SYSTEM_NS);
    await eventually(async () => {
      const c = await getObject(e.kc, 'vaultconnections', 'app', SYSTEM_NS);
      expect(c.status?.conditions?.find((x) => x.type === 'Ready')).toMatchObject({
        status: 'False',
        reason: 'InvalidConfig',
      });
      expect(c.status?.message).toContain(
        `the hub requests no token of a ServiceAccount in ${SYSTEM_NS}, the namespace of mirrorhub's own ServiceAccounts`,
      );
    }, WAIT);
    // The same connection in a tenant's namespace, for its own ServiceAccount, still logs in.
    const c = await getObject(e.kc, 'vaultconnections', 'app', 'team-k');
    expect(c.status).toMatchObject({ ready: true, authMethod: 'kubernetes' });
  });

  it('puts no token or value in logs, Events or status', async () => {
    const texts = [
      e.logs.text(),
      JSON.stringify(await getObject(e.kc, 'clustervaultconnections', 'platform')),
      JSON.stringify(await getObject(e.kc, 'clustervaultconnections', 'wrong-audience')),
      JSON.stringify((await e.getMirror('ClusterSecretMirror', 'registry')) ?? {}),
    ].join('\n');
    for (const s of secrets) expect(texts).not.toContain(s);
    expect(texts).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\./);
  });
});
