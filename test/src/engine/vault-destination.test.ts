// Vault as a mirror DESTINATION, end to end on real parts: two real OpenBao servers (one TLS),
// two real clusters each with its own hub (a publisher and a consumer, as with the KTS mirrors:
// one cluster publishes a cert-manager TLS Secret to Vault, the others consume it). Kubernetes ->
// Vault (KV v2 and v1, pushed on change, ownership marks, conflicts and Adopt, deletePolicy),
// Vault -> Vault across the two servers, tenancy refusals, and no value in logs, Events or status.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { tokenAuth, VaultClient, type VaultEnvelope } from '@mirrorhub/hub/vault/index';
import { startOpenBao, type OpenBao } from '@mirrorhub/infra/components/index';

import { clusterSecretMirror, Engine, secretMirror } from '../support/engine.js';
import { eventually } from '../support/eventually.js';
import { createObject } from '../support/vault.js';

const WAIT = { timeoutMs: 30_000, intervalMs: 200 };

let pub: Engine; // the publishing cluster and its hub
let sub: Engine; // another cluster, with its own hub, consuming from Vault
let bao: OpenBao;
let bao2: OpenBao;
let root: VaultClient;
let root2: VaultClient;
const secrets = new Set<string>();

const CERT_V1 = '-----BEGIN CERTIFICATE-----\nMIIB-cert-v1-s3cret\n-----END CERTIFICATE-----\n';
const KEY_V1 = '-----BEGIN PRIVATE KEY-----\nMIIE-key-v1-s3cret\n-----END PRIVATE KEY-----\n';
const CERT_V2 = '-----BEGIN CERTIFICATE-----\nMIIB-cert-v2-s3cret\n-----END CERTIFICATE-----\n';
const KEY_V2 = '-----BEGIN PRIVATE KEY-----\nMIIE-key-v2-s3cret\n-----END PRIVATE KEY-----\n';

async function vault(
  c: VaultClient,
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  path: string,
  body?: unknown,
) {
  const res = await c.request<VaultEnvelope>({ method, path, body, accept: [404] });
  return res.status === 404 ? undefined : res.body;
}

async function token(c: VaultClient, policy: string, hcl: string): Promise<string> {
  await vault(c, 'PUT', `sys/policies/acl/${policy}`, { policy: hcl });
  const t = (await vault(c, 'POST', 'auth/token/create', { policies: [policy], ttl: '1h' }))?.auth
    ?.client_token as string;
  secrets.add(t);
  return t;
}

/** Sum of a hub counter's samples whose labels include `labels`. */
async function counter(e: Engine, name: string, labels: Record<string, string> = {}) {
  const json = await e.hub!.metrics.registry.getMetricsAsJSON();
  let sum = 0;
  for (const v of (json.find((x) => x.name === name)?.values ?? []) as {
    value: number;
    labels: Record<string, string>;
  }[]) {
    if (Object.entries(labels).every(([k, val]) => v.labels[k] === val)) sum += v.value;
  }
  return sum;
}

const connection = (name: string, b: OpenBao, secretRef: Record<string, string>, extra = {}) => ({
  kind: 'ClusterVaultConnection',
  metadata: { name },
  spec: {
    address: b.address,
    ...(b.caPem ? { caBundle: b.caPem } : {}),
    auth: { token: { secretRef } },
    ...extra,
  },
});

const toVault = (name: string, path: string, connectionName = 'vault', extra = {}) => ({
  vault: {
    connectionRef: { kind: 'ClusterVaultConnection', name: connectionName },
    path,
    ...extra,
  },
});

beforeAll(async () => {
  [pub, sub, bao, bao2] = await Promise.all([
    Engine.start(),
    Engine.start(),
    startOpenBao({ tls: true }),
    startOpenBao(),
  ]);
  secrets.add(bao.rootToken).add(bao2.rootToken);
  root = new VaultClient({
    address: bao.address,
    caPem: bao.caPem,
    auth: tokenAuth({ token: bao.rootToken }),
  });
  root2 = new VaultClient({ address: bao2.address, auth: tokenAuth({ token: bao2.rootToken }) });
  await vault(root, 'POST', 'sys/mounts/kv1', { type: 'kv', options: { version: '1' } });
  const writer = await token(
    root,
    'mirrorhub-writer',
    `
    path "secret/*" { capabilities = ["create", "read", "update", "delete", "list"] }
    path "kv1/*" { capabilities = ["create", "read", "update", "delete", "list"] }
    path "secret/data/locked/*" { capabilities = ["deny"] }
    path "secret/metadata/locked/*" { capabilities = ["deny"] }`,
  );
  const teamA = await token(
    root,
    'team-a',
    `
    path "secret/data/team-a/*" { capabilities = ["create", "read", "update", "delete"] }
    path "secret/metadata/team-a/*" { capabilities = ["create", "read", "update", "delete"] }`,
  );
  const reader = await token(
    root,
    'reader',
    `
    path "secret/data/published/*" { capabilities = ["read"] }
    path "secret/metadata/published/*" { capabilities = ["read"] }
    path "kv1/published/*" { capabilities = ["read"] }`,
  );
  const second = await token(
    root2,
    'copier',
    `path "secret/*" { capabilities = ["create", "read", "update", "delete", "list"] }`,
  );

  for (const ns of ['certs', 'team-a', 'apps']) await pub.ensureNamespace(ns);
  await pub.putSecret('mirrorhub-system', 'vault-writer', { token: writer });
  await pub.putSecret('mirrorhub-system', 'vault-second', { token: second });
  await pub.putSecret('team-a', 'vault-token', { token: teamA });
  await createObject(
    pub.kc,
    'clustervaultconnections',
    connection(
      'vault',
      bao,
      { namespace: 'mirrorhub-system', name: 'vault-writer', key: 'token' },
      // Admits team-a for reading: writing through it is still refused to a SecretMirror.
      { allowedNamespaces: { names: ['team-a'] } },
    ),
  );
  await createObject(
    pub.kc,
    'clustervaultconnections',
    connection('second', bao2, {
      namespace: 'mirrorhub-system',
      name: 'vault-second',
      key: 'token',
    }),
  );
  await createObject(
    pub.kc,
    'vaultconnections',
    {
      kind: 'VaultConnection',
      metadata: { name: 'own', namespace: 'team-a' },
      spec: {
        address: bao.address,
        caBundle: bao.caPem,
        auth: { token: { secretRef: { name: 'vault-token', key: 'token' } } },
      },
    },
    'team-a',
  );

  // The consuming cluster reads with a read-only token.
  await sub.ensureNamespace('apps');
  await sub.putSecret('mirrorhub-system', 'vault-reader', { token: reader });
  await createObject(
    sub.kc,
    'clustervaultconnections',
    connection('vault', bao, { namespace: 'mirrorhub-system', name: 'vault-reader', key: 'token' }),
  );

  // cert-manager's Secret in the publishing cluster.
  await pub.putSecret(
    'certs',
    'wildcard-tls',
    { 'tls.crt': CERT_V1, 'tls.key': KEY_V1, 'ca.crt': 'ca-s3cret' },
    {
      type: 'kubernetes.io/tls',
      metadata: { annotations: { 'cert-manager.io/issuer-name': 'le' } },
    },
  );
  for (const s of [CERT_V1, KEY_V1, 'ca-s3cret']) secrets.add(s.split('\n')[1]!);
}, 180_000);

afterAll(async () => {
  await Promise.all([pub?.stop(), sub?.stop()]);
  await Promise.all([root?.close(), root2?.close()]);
  await Promise.all([bao?.stop(), bao2?.stop()]);
});

describe('Kubernetes -> Vault', () => {
  it('publishes a cert-manager TLS Secret to KV v2 under the mirror’s owner mark', async () => {
    await pub.applyMirror(
      clusterSecretMirror('publish-tls', {
        source: { kind: 'Secret', name: 'wildcard-tls', namespace: 'certs' },
        destination: toVault('publish-tls', 'secret/published/wildcard-tls'),
        template: { keys: [{ from: 'tls.crt' }, { from: 'tls.key' }] },
        // Long: every change below must be pushed by the watch, not found by a poll.
        pollPeriodSeconds: 3600,
      } as never),
    );
    await pub.mirrorStatus('ClusterSecretMirror', 'publish-tls', undefined, (m) => {
      expect(m.status).toMatchObject({
        phase: 'Active',
        destination: 'Vault secret/published/wildcard-tls',
        source: 'wildcard-tls',
        synced: '1/1',
        vault: { path: 'secret/published/wildcard-tls', version: 1 },
      });
    });
    const read = await vault(root, 'GET', 'secret/data/published/wildcard-tls');
    expect(read?.data?.data).toEqual({ 'tls.crt': CERT_V1, 'tls.key': KEY_V1 });
    expect(read?.data?.metadata?.custom_metadata).toEqual({
      'mirrorhub.io/owner': 'hub/ClusterSecretMirror//publish-tls',
    });
    await pub.eventWith('default', 'publish-tls', 'VaultWritten');
  });

  it('is consumed in another cluster through a Vault-sourced mirror, as a kubernetes.io/tls Secret', async () => {
    await sub.applyMirror(
      clusterSecretMirror('consume-tls', {
        source: { kind: 'Vault', ...toVault('x', 'secret/published/wildcard-tls') },
        destination: { namespaces: ['apps'], name: 'wildcard-tls' },
        template: { type: 'kubernetes.io/tls' },
        pollPeriodSeconds: 10,
      } as never),
    );
    await eventually(async () => {
      const s = await sub.readSecret('apps', 'wildcard-tls');
      expect(s?.type).toBe('kubernetes.io/tls');
      expect(await sub.secretData('apps', 'wildcard-tls')).toEqual({
        'tls.crt': CERT_V1,
        'tls.key': KEY_V1,
      });
    }, WAIT);
  });

  it('a renewed certificate is pushed to Vault at once and reaches the other cluster; a metadata-only change writes nothing', async () => {
    await pub.putSecret(
      'certs',
      'wildcard-tls',
      { 'tls.crt': CERT_V2, 'tls.key': KEY_V2, 'ca.crt': 'ca-s3cret' },
      { type: 'kubernetes.io/tls' },
    );
    for (const s of [CERT_V2, KEY_V2]) secrets.add(s.split('\n')[1]!);
    await eventually(async () => {
      const read = await vault(root, 'GET', 'secret/data/published/wildcard-tls');
      expect(read?.data?.data).toEqual({ 'tls.crt': CERT_V2, 'tls.key': KEY_V2 });
      expect(read?.data?.metadata?.version).toBe(2);
    }, WAIT);
    await eventually(
      async () =>
        expect(await sub.secretData('apps', 'wildcard-tls')).toEqual({
          'tls.crt': CERT_V2,
          'tls.key': KEY_V2,
        }),
      WAIT,
    );
    // A label on the source: the mirror is reconciled (Vault is read), nothing is written.
    const inspects = await counter(pub, 'mirrorhub_vault_requests_total', { operation: 'inspect' });
    const writes = await counter(pub, 'mirrorhub_vault_requests_total', { operation: 'write' });
    const reconciles = await counter(pub, 'mirrorhub_reconcile_total', { controller: 'mirror' });
    await pub.putSecret(
      'certs',
      'wildcard-tls',
      { 'tls.crt': CERT_V2, 'tls.key': KEY_V2, 'ca.crt': 'ca-s3cret' },
      { type: 'kubernetes.io/tls', metadata: { labels: { touched: 'yes' } } },
    );
    // Counted once the reconcile is done, write included (publish-tls is the only mirror here).
    await eventually(async () => {
      expect(
        await counter(pub, 'mirrorhub_vault_requests_total', { operation: 'inspect' }),
      ).toBeGreaterThan(inspects);
      expect(
        await counter(pub, 'mirrorhub_reconcile_total', { controller: 'mirror' }),
      ).toBeGreaterThan(reconciles);
    }, WAIT);
    expect(await counter(pub, 'mirrorhub_vault_requests_total', { operation: 'write' })).toBe(
      writes,
    );
    const meta = await vault(root, 'GET', 'secret/metadata/published/wildcard-tls');
    expect(meta?.data?.current_version).toBe(2);
  });

  it('KV v1: the owner is the data key _mirrorhub_owner, which a Vault-sourced mirror does not copy', async () => {
    await pub.applyMirror(
      clusterSecretMirror('publish-v1', {
        source: { kind: 'Secret', name: 'wildcard-tls', namespace: 'certs' },
        destination: toVault('publish-v1', 'kv1/published/ca', 'vault', { kvVersion: 1 }),
        template: { keys: [{ from: 'ca.crt' }] },
      } as never),
    );
    await eventually(async () => {
      expect((await vault(root, 'GET', 'kv1/published/ca'))?.data).toEqual({
        'ca.crt': 'ca-s3cret',
        _mirrorhub_owner: 'hub/ClusterSecretMirror//publish-v1',
      });
    }, WAIT);
    await sub.applyMirror(
      clusterSecretMirror('consume-v1', {
        source: { kind: 'Vault', ...toVault('x', 'kv1/published/ca', 'vault', { kvVersion: 1 }) },
        destination: { namespaces: ['apps'], name: 'ca' },
        pollPeriodSeconds: 10,
      } as never),
    );
    await eventually(
      async () => expect(await sub.secretData('apps', 'ca')).toEqual({ 'ca.crt': 'ca-s3cret' }),
      WAIT,
    );
  });

  it('never overwrites an unmarked secret (Conflict); Adopt takes it over and marks it', async () => {
    await vault(root, 'POST', 'secret/data/foreign/db', { data: { password: 'theirs-s3cret' } });
    secrets.add('theirs-s3cret');
    const spec = (conflictPolicy: string) =>
      clusterSecretMirror('publish-foreign', {
        source: { kind: 'Secret', name: 'wildcard-tls', namespace: 'certs' },
        destination: toVault('publish-foreign', 'secret/foreign/db'),
        template: { keys: [{ from: 'ca.crt' }] },
        conflictPolicy,
      } as never);
    await pub.applyMirror(spec('Skip'));
    await pub.mirrorStatus('ClusterSecretMirror', 'publish-foreign', undefined, (m) => {
      expect(m.status?.phase).toBe('Error');
      expect(m.status?.message).toContain('exists and is not mirrorhub');
      expect(m.status?.conditions?.find((c) => c.type === 'Ready')?.reason).toBe('Conflict');
    });
    await pub.eventWith('default', 'publish-foreign', 'Conflict');
    const before = await vault(root, 'GET', 'secret/data/foreign/db');
    expect(before?.data?.data).toEqual({ password: 'theirs-s3cret' });
    expect(before?.data?.metadata?.version).toBe(1);

    await pub.applyMirror(spec('Adopt'));
    await eventually(async () => {
      const after = await vault(root, 'GET', 'secret/data/foreign/db');
      expect(after?.data?.data).toEqual({ 'ca.crt': 'ca-s3cret' });
      expect(after?.data?.metadata?.custom_metadata).toEqual({
        'mirrorhub.io/owner': 'hub/ClusterSecretMirror//publish-foreign',
      });
    }, WAIT);
    // A second mirror aiming at the adopted secret: it is another mirror's, even with Adopt.
    await pub.applyMirror(
      clusterSecretMirror('publish-foreign-2', {
        source: { kind: 'Secret', name: 'wildcard-tls', namespace: 'certs' },
        destination: toVault('publish-foreign-2', 'secret/foreign/db'),
        conflictPolicy: 'Adopt',
      } as never),
    );
    await pub.mirrorStatus('ClusterSecretMirror', 'publish-foreign-2', undefined, (m) =>
      expect(m.status?.message).toContain(
        'belongs to another mirror (hub/ClusterSecretMirror//publish-foreign)',
      ),
    );
    await pub.deleteMirror('ClusterSecretMirror', 'publish-foreign-2');
  });

  it('permission denied on write: Error naming the path, nothing written', async () => {
    await pub.applyMirror(
      clusterSecretMirror('publish-locked', {
        source: { kind: 'Secret', name: 'wildcard-tls', namespace: 'certs' },
        destination: toVault('publish-locked', 'secret/locked/tls'),
      } as never),
    );
    await pub.mirrorStatus('ClusterSecretMirror', 'publish-locked', undefined, (m) => {
      expect(m.status?.phase).toBe('Error');
      expect(m.status?.message).toContain('secret/locked/tls');
      expect(m.status?.message).toMatch(/permission denied/i);
    });
    expect(await vault(root, 'GET', 'secret/metadata/locked/tls')).toBeUndefined();
  });
});

describe('tenancy', () => {
  it('a SecretMirror cannot write through a ClusterVaultConnection, even one that admits its namespace for reading', async () => {
    await pub.putSecret('team-a', 'app', { token: 'team-a-app-s3cret' });
    secrets.add('team-a-app-s3cret');
    await pub.applyMirror(
      secretMirror('team-a', 'via-shared', {
        source: { kind: 'Secret', name: 'app' },
        destination: toVault('via-shared', 'secret/published/stolen'),
      } as never),
    );
    await pub.mirrorStatus('SecretMirror', 'via-shared', 'team-a', (m) => {
      expect(m.status?.phase).toBe('Error');
      expect(m.status?.message).toContain(
        'a SecretMirror writes to Vault only through a VaultConnection of its own namespace',
      );
    });
    expect(await vault(root, 'GET', 'secret/metadata/published/stolen')).toBeUndefined();
  });

  it('a SecretMirror writes through its own VaultConnection, with its own Vault identity', async () => {
    await pub.applyMirror(
      secretMirror('team-a', 'own', {
        source: { kind: 'Secret', name: 'app' },
        destination: {
          vault: {
            connectionRef: { kind: 'VaultConnection', name: 'own' },
            path: 'secret/team-a/app',
          },
        },
      } as never),
    );
    await eventually(async () => {
      const read = await vault(root, 'GET', 'secret/data/team-a/app');
      expect(read?.data?.data).toEqual({ token: 'team-a-app-s3cret' });
      expect(read?.data?.metadata?.custom_metadata).toEqual({
        'mirrorhub.io/owner': 'hub/SecretMirror/team-a/own',
      });
    }, WAIT);
    // Its token's policy bounds it: another team's path is refused by Vault itself.
    await pub.applyMirror(
      secretMirror('team-a', 'elsewhere', {
        source: { kind: 'Secret', name: 'app' },
        destination: {
          vault: {
            connectionRef: { kind: 'VaultConnection', name: 'own' },
            path: 'secret/team-b/app',
          },
        },
      } as never),
    );
    await pub.mirrorStatus('SecretMirror', 'elsewhere', 'team-a', (m) =>
      expect(m.status?.phase).toBe('Error'),
    );
    expect(await vault(root, 'GET', 'secret/metadata/team-b/app')).toBeUndefined();
  });
});

describe('Vault -> Vault', () => {
  it('copies a secret from one OpenBao to another, and its changes within a poll', async () => {
    await pub.applyMirror(
      clusterSecretMirror('vault-to-vault', {
        source: { kind: 'Vault', ...toVault('x', 'secret/published/wildcard-tls') },
        destination: toVault('vault-to-vault', 'secret/copied/wildcard-tls', 'second'),
        pollPeriodSeconds: 10,
      } as never),
    );
    await eventually(async () => {
      const read = await vault(root2, 'GET', 'secret/data/copied/wildcard-tls');
      expect(read?.data?.data).toEqual({ 'tls.crt': CERT_V2, 'tls.key': KEY_V2 });
      expect(read?.data?.metadata?.custom_metadata).toEqual({
        'mirrorhub.io/owner': 'hub/ClusterSecretMirror//vault-to-vault',
      });
    }, WAIT);
    await vault(root, 'POST', 'secret/data/published/wildcard-tls', {
      data: { 'tls.crt': CERT_V1, 'tls.key': KEY_V1 },
    });
    await eventually(async () => {
      const read = await vault(root2, 'GET', 'secret/data/copied/wildcard-tls');
      expect(read?.data?.data).toEqual({ 'tls.crt': CERT_V1, 'tls.key': KEY_V1 });
      expect(read?.data?.metadata?.version).toBe(2);
    }, WAIT);
    // No copy passes through Kubernetes: no payload or delivery for this mirror.
    expect((await pub.deliveries()).map((d) => d.spec.mirror.name)).not.toContain('vault-to-vault');
  });
});

describe('deletePolicy', () => {
  it('moving destination.vault removes the old secret; deleting the mirror removes every version and the metadata', async () => {
    await pub.applyMirror(
      clusterSecretMirror('publish-tls', {
        source: { kind: 'Secret', name: 'wildcard-tls', namespace: 'certs' },
        destination: toVault('publish-tls', 'secret/published/moved-tls'),
        template: { keys: [{ from: 'tls.crt' }, { from: 'tls.key' }] },
        pollPeriodSeconds: 3600,
      } as never),
    );
    await eventually(async () => {
      expect(await vault(root, 'GET', 'secret/data/published/moved-tls')).toBeDefined();
      expect(await vault(root, 'GET', 'secret/metadata/published/wildcard-tls')).toBeUndefined();
    }, WAIT);
    await pub.deleteMirror('ClusterSecretMirror', 'publish-tls');
    await eventually(async () => {
      expect(await pub.getMirror('ClusterSecretMirror', 'publish-tls')).toBeUndefined();
      expect(await vault(root, 'GET', 'secret/metadata/published/moved-tls')).toBeUndefined();
    }, WAIT);
  });

  it('Retain leaves the secret in Vault', async () => {
    await pub.applyMirror(
      clusterSecretMirror('publish-retain', {
        source: { kind: 'Secret', name: 'wildcard-tls', namespace: 'certs' },
        destination: toVault('publish-retain', 'secret/published/retained'),
        template: { keys: [{ from: 'ca.crt' }] },
        deletePolicy: 'Retain',
      } as never),
    );
    await eventually(
      async () => expect(await vault(root, 'GET', 'secret/data/published/retained')).toBeDefined(),
      WAIT,
    );
    await pub.deleteMirror('ClusterSecretMirror', 'publish-retain');
    await eventually(
      async () =>
        expect(await pub.getMirror('ClusterSecretMirror', 'publish-retain')).toBeUndefined(),
      WAIT,
    );
    expect((await vault(root, 'GET', 'secret/data/published/retained'))?.data?.data).toEqual({
      'ca.crt': 'ca-s3cret',
    });
  });
});

it('puts no secret value or token in logs, Events or status', async () => {
  const texts = [pub.logs.text(), sub.logs.text()];
  for (const e of [pub, sub]) {
    for (const kind of ['ClusterSecretMirror', 'SecretMirror']) {
      const plural = kind === 'ClusterSecretMirror' ? 'clustersecretmirrors' : 'secretmirrors';
      texts.push(
        JSON.stringify(
          await e.custom().listClusterCustomObject({
            group: 'mirrorhub.io',
            version: 'v1alpha1',
            plural,
          }),
        ),
      );
    }
    for (const ns of ['default', 'team-a', 'apps', 'certs']) {
      texts.push(
        JSON.stringify(
          await e
            .core()
            .listNamespacedEvent({ namespace: ns })
            .catch(() => ({})),
        ),
      );
    }
    texts.push(await e.hub!.metrics.registry.metrics());
  }
  const all = texts.join('\n');
  expect(all).toContain('publish-tls'); // the scan saw the mirrors
  for (const s of secrets) expect(all).not.toContain(s);
});
