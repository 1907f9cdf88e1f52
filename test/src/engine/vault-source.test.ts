// Vault as a mirror source, end to end: a real OpenBao (TLS, its dev CA) behind a TCP proxy the
// test can cut (Vault unreachable) and restore, the kit's kube-apiserver, hub and agent in
// process. KV v2 and v1, token and AppRole auth, change detection without waste (metrics),
// the failure phases, the connection tenancy refusals, and no secret in logs, Events or status.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { tokenAuth, VaultClient, type VaultEnvelope } from '@mirrorhub/hub/vault/index';
import { startOpenBao, type OpenBao } from '@mirrorhub/infra/components/index';

import { clusterSecretMirror, Engine, secretMirror } from '../support/engine.js';
import { eventually } from '../support/eventually.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { createObject as createObjectAs, getObject as getObjectAs } from '../support/vault.js';

const POLL = 10;
const WAIT = { timeoutMs: 30_000, intervalMs: 200 };

let e: Engine;
let bao: OpenBao;
let root: VaultClient;
let proxy: TcpProxy;
/** team-a's token, in Secret team-a/vault-token until the rotation test replaces it. */
let teamAToken: string;
const secrets = new Set<string>();

async function sys(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown) {
  return (await root.request<VaultEnvelope>({ method, path, body })).body;
}

const createObject = (plural: string, body: Record<string, unknown>, namespace?: string) =>
  createObjectAs(e.kc, plural, body, namespace);
const getObject = (plural: string, name: string, namespace?: string) =>
  getObjectAs(e.kc, plural, name, namespace);

/** Sum of a hub counter's samples whose labels include `labels`. */
async function counter(name: string, labels: Record<string, string> = {}): Promise<number> {
  const json = await e.hub!.metrics.registry.getMetricsAsJSON();
  const m = json.find((x) => x.name === name);
  let sum = 0;
  for (const v of (m?.values ?? []) as { value: number; labels: Record<string, string> }[]) {
    if (Object.entries(labels).every(([k, val]) => v.labels[k] === val)) sum += v.value;
  }
  return sum;
}

function address(): string {
  return `https://127.0.0.1:${proxy.port}`;
}

beforeAll(async () => {
  [e, bao] = await Promise.all([Engine.start(), startOpenBao({ tls: true })]);
  secrets.add(bao.rootToken);
  root = new VaultClient({
    address: bao.address,
    caPem: bao.caPem,
    auth: tokenAuth({ token: bao.rootToken }),
  });
  proxy = new TcpProxy(Number(new URL(bao.address).port));
  await proxy.open();
  await sys('POST', 'sys/mounts/kv1', { type: 'kv', options: { version: '1' } });
  await sys('PUT', 'sys/policies/acl/team-a', {
    policy: `
      path "secret/data/team-a/*" { capabilities = ["read"] }
      path "secret/metadata/team-a/*" { capabilities = ["read"] }
      path "kv1/team-a/*" { capabilities = ["read"] }`,
  });
  const tok = await sys('POST', 'auth/token/create', { policies: ['team-a'], ttl: '1h' });
  const token = tok?.auth?.client_token as string;
  teamAToken = token;
  secrets.add(token);
  await sys('POST', 'sys/auth/approle', { type: 'approle' });
  await sys('POST', 'auth/approle/role/team-b', { token_policies: ['team-a'], token_ttl: '1h' });
  const roleId = (await sys('GET', 'auth/approle/role/team-b/role-id'))?.data?.role_id as string;
  const secretId = (await sys('POST', 'auth/approle/role/team-b/secret-id'))?.data
    ?.secret_id as string;
  secrets.add(secretId);

  for (const ns of ['team-a', 'team-b', 'app-1', 'app-2']) await e.ensureNamespace(ns);
  await e.putSecret('team-a', 'vault-token', { token });
  await e.putSecret('team-b', 'approle', { secretId });
  await createObject(
    'vaultconnections',
    {
      kind: 'VaultConnection',
      metadata: { name: 'vault', namespace: 'team-a' },
      spec: {
        address: address(),
        caBundle: bao.caPem,
        auth: { token: { secretRef: { name: 'vault-token', key: 'token' } } },
      },
    },
    'team-a',
  );
  await createObject(
    'vaultconnections',
    {
      kind: 'VaultConnection',
      metadata: { name: 'vault', namespace: 'team-b' },
      spec: {
        address: address(),
        caBundle: bao.caPem,
        auth: { appRole: { roleId, secretIdSecretRef: { name: 'approle', key: 'secretId' } } },
      },
    },
    'team-b',
  );
  await createObject('clustervaultconnections', {
    kind: 'ClusterVaultConnection',
    metadata: { name: 'shared' },
    spec: {
      address: address(),
      caBundle: bao.caPem,
      auth: { token: { secretRef: { namespace: 'team-a', name: 'vault-token', key: 'token' } } },
      allowedNamespaces: { names: ['team-b'] },
      // Admitting a namespace grants no path by itself (docs/vault.md, "Shared connections").
      tenantPaths: { read: ['secret/team-a/*'] },
    },
  });
  await sys('POST', 'secret/data/team-a/db', {
    data: { username: 'app', password: 'pw-v1-s3cret' },
  });
  secrets.add('pw-v1-s3cret');
}, 120_000);

afterAll(async () => {
  await e?.stop();
  await proxy?.cut();
  await root?.close();
  await bao?.stop();
});

const vaultMirror = (ns: string, name: string, path: string, extra: Record<string, unknown> = {}) =>
  secretMirror(ns, name, {
    source: {
      kind: 'Vault',
      vault: { connectionRef: { kind: 'VaultConnection', name: 'vault' }, path },
    },
    destination: { namespaces: ['app-.*'], name },
    pollPeriodSeconds: POLL,
    ...extra,
  } as never);

describe('Vault source', () => {
  it('reports each connection Ready after a login (token, AppRole)', async () => {
    await eventually(async () => {
      const a = await getObject('vaultconnections', 'vault', 'team-a');
      const b = await getObject('vaultconnections', 'vault', 'team-b');
      expect(a.status).toMatchObject({ ready: true, authMethod: 'token' });
      expect(b.status).toMatchObject({ ready: true, authMethod: 'approle' });
    }, WAIT);
  });

  it('KV v2: copies land, an update arrives within a poll, and a no-change poll reads no data and writes nothing', async () => {
    await e.applyMirror(
      vaultMirror('team-a', 'db', 'secret/team-a/db', {
        template: { keys: [{ from: 'password' }] },
      }),
    );
    await eventually(async () => {
      expect(await e.secretData('app-1', 'db')).toEqual({ password: 'pw-v1-s3cret' });
      expect(await e.secretData('app-2', 'db')).toEqual({ password: 'pw-v1-s3cret' });
    }, WAIT);
    await e.mirrorStatus('SecretMirror', 'db', 'team-a', (m) => {
      expect(m.status?.phase).toBe('Active');
      expect(m.status?.source).toBe('secret/team-a/db');
    });
    // Steady: a whole poll period and more; metadata read, no data read, no write.
    const reads = await counter('mirrorhub_vault_requests_total', { operation: 'read' });
    const metas = await counter('mirrorhub_vault_requests_total', { operation: 'metadata' });
    const writes = await counter('mirrorhub_writes_total');
    await eventually(
      async () =>
        expect(
          await counter('mirrorhub_vault_requests_total', { operation: 'metadata' }),
        ).toBeGreaterThanOrEqual(metas + 2),
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    expect(await counter('mirrorhub_vault_requests_total', { operation: 'read' })).toBe(reads);
    expect(await counter('mirrorhub_writes_total')).toBe(writes);

    await sys('POST', 'secret/data/team-a/db', {
      data: { username: 'app', password: 'pw-v2-s3cret' },
    });
    secrets.add('pw-v2-s3cret');
    await eventually(async () => {
      expect(await e.secretData('app-1', 'db')).toEqual({ password: 'pw-v2-s3cret' });
    }, WAIT);
  }, 80_000);

  it('KV v1 through AppRole: copies land; a missing path is Pending/SourceNotFound, then Active', async () => {
    await e.applyMirror(
      secretMirror('team-b', 'legacy', {
        source: {
          kind: 'Vault',
          vault: {
            connectionRef: { kind: 'VaultConnection', name: 'vault' },
            path: 'kv1/team-a/legacy',
            kvVersion: 1,
          },
        },
        destination: { namespaces: ['app-1'], name: 'legacy' },
        pollPeriodSeconds: POLL,
      } as never),
    );
    await e.mirrorStatus('SecretMirror', 'legacy', 'team-b', (m) => {
      expect(m.status?.phase).toBe('Pending');
      expect(m.status?.conditions?.find((c) => c.type === 'SourceFound')?.reason).toBe(
        'SourceNotFound',
      );
    });
    await sys('POST', 'kv1/team-a/legacy', { api_key: 'k1-v1-s3cret' });
    secrets.add('k1-v1-s3cret');
    await eventually(
      async () =>
        expect(await e.secretData('app-1', 'legacy')).toEqual({ api_key: 'k1-v1-s3cret' }),
      WAIT,
    );
    await e.mirrorStatus('SecretMirror', 'legacy', 'team-b', (m) =>
      expect(m.status?.phase).toBe('Active'),
    );
  }, 60_000);

  it('permission denied is an Error naming the path', async () => {
    await sys('POST', 'secret/data/team-z/db', { data: { x: 'denied-s3cret' } });
    secrets.add('denied-s3cret');
    await e.applyMirror(vaultMirror('team-a', 'forbidden', 'secret/team-z/db'));
    await e.mirrorStatus('SecretMirror', 'forbidden', 'team-a', (m) => {
      expect(m.status?.phase).toBe('Error');
      expect(m.status?.message).toContain('team-z/db');
    });
    expect(await e.secretData('app-1', 'forbidden')).toBeUndefined();
  });

  it('refuses a ClusterVaultConnection that does not allow the namespace, and allows the listed one', async () => {
    const spec = (ns: string) =>
      secretMirror(ns, 'via-shared', {
        source: {
          kind: 'Vault',
          vault: {
            connectionRef: { kind: 'ClusterVaultConnection', name: 'shared' },
            path: 'secret/team-a/db',
          },
        },
        destination: { namespaces: ['app-2'], name: `shared-${ns}` },
        pollPeriodSeconds: POLL,
      } as never);
    await e.applyMirror(spec('team-a'));
    await e.applyMirror(spec('team-b'));
    await e.mirrorStatus('SecretMirror', 'via-shared', 'team-a', (m) => {
      expect(m.status?.phase).toBe('Error');
      expect(m.status?.message).toContain('does not allow SecretMirrors in namespace "team-a"');
    });
    await eventually(
      async () => expect(await e.secretData('app-2', 'shared-team-b')).toBeDefined(),
      WAIT,
    );
    expect(await e.secretData('app-2', 'shared-team-a')).toBeUndefined();
    // A VaultConnection is always the mirror's own namespace's: team-b's mirror naming
    // "vault" gets team-b's, never team-a's (the reference has no namespace to give).
    await e.applyMirror(
      clusterSecretMirror('cluster-ns-conn', {
        source: {
          kind: 'Vault',
          vault: {
            connectionRef: { kind: 'VaultConnection', name: 'vault' },
            path: 'secret/team-a/db',
          },
        },
        destination: { namespaces: ['app-2'], name: 'cluster-ns-conn' },
        pollPeriodSeconds: POLL,
      } as never),
    );
    await e.mirrorStatus('ClusterSecretMirror', 'cluster-ns-conn', undefined, (m) => {
      expect(m.status?.phase).toBe('Error');
      expect(m.status?.message).toContain('can only use a ClusterVaultConnection');
    });
  });

  it("a VaultConnection reads only its own namespace's Secrets: a namespace written into its reference is dropped", async () => {
    await createObject(
      'vaultconnections',
      {
        kind: 'VaultConnection',
        metadata: { name: 'stray', namespace: 'team-b' },
        spec: {
          address: address(),
          caBundle: bao.caPem,
          auth: {
            token: { secretRef: { namespace: 'team-a', name: 'vault-token', key: 'token' } },
          },
        },
      },
      'team-b',
    );
    await eventually(async () => {
      const c = await getObject('vaultconnections', 'stray', 'team-b');
      expect(JSON.stringify(c.spec)).not.toContain('team-a');
      expect(c.status?.ready).toBe(false);
      expect(c.status?.conditions?.find((x) => x.type === 'Ready')?.reason).toBe('InvalidConfig');
      expect(c.status?.message).toContain('reading Secret team-b/vault-token failed');
    }, WAIT);
  });

  it('a rotated token Secret is used at once: with the old token revoked, copies keep syncing', async () => {
    const fresh = (await sys('POST', 'auth/token/create', { policies: ['team-a'], ttl: '1h' }))
      ?.auth?.client_token as string;
    secrets.add(fresh);
    const logins = await counter('mirrorhub_vault_requests_total', {
      operation: 'login',
      outcome: 'ok',
    });
    await e.putSecret('team-a', 'vault-token', { token: fresh });
    // The hub sees the Secret change and logs in with the new token, before the old one fails.
    await eventually(async () => {
      expect(e.logs.text()).toContain('a Secret the Vault connection uses changed');
      expect(
        await counter('mirrorhub_vault_requests_total', { operation: 'login', outcome: 'ok' }),
      ).toBeGreaterThan(logins);
    }, WAIT);
    await sys('POST', 'auth/token/revoke', { token: teamAToken });
    teamAToken = fresh;
    await sys('POST', 'secret/data/team-a/db', {
      data: { username: 'app', password: 'pw-v3-s3cret' },
    });
    secrets.add('pw-v3-s3cret');
    await eventually(
      async () => expect(await e.secretData('app-1', 'db')).toEqual({ password: 'pw-v3-s3cret' }),
      WAIT,
    );
    // Never unreadable on the way: the revoked token was not used again.
    expect((await e.events('team-a', 'db')).map((x) => x.reason)).not.toContain('SourceUnreadable');
    await e.mirrorStatus('SecretMirror', 'db', 'team-a', (m) =>
      expect(m.status?.phase).toBe('Active'),
    );
    expect((await getObject('vaultconnections', 'vault', 'team-a')).status?.ready).toBe(true);
  }, 60_000);

  it('Vault unreachable: Degraded with copies intact, Active again when it is back', async () => {
    await proxy.cut();
    await e.mirrorStatus('SecretMirror', 'db', 'team-a', (m) => {
      expect(m.status?.phase).toBe('Degraded');
      expect(m.status?.message).toContain('copies are kept');
    });
    expect(await e.secretData('app-1', 'db')).toEqual({ password: 'pw-v3-s3cret' });
    await proxy.open();
    await e.mirrorStatus('SecretMirror', 'db', 'team-a', (m) =>
      expect(m.status?.phase).toBe('Active'),
    );
  }, 60_000);

  it('puts no secret value or token in logs, Events or status', async () => {
    const texts = [e.logs.text()];
    for (const [ns, name] of [
      ['team-a', 'db'],
      ['team-b', 'legacy'],
      ['team-a', 'forbidden'],
    ] as const) {
      texts.push(JSON.stringify((await e.getMirror('SecretMirror', name, ns)) ?? {}));
      texts.push(JSON.stringify(await e.events(ns, name)));
    }
    texts.push(JSON.stringify(await getObject('vaultconnections', 'vault', 'team-a')));
    texts.push(JSON.stringify(await getObject('vaultconnections', 'vault', 'team-b')));
    const all = texts.join('\n');
    for (const s of secrets) expect(all).not.toContain(s);
  });
});
