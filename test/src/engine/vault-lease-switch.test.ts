// A dynamic source whose connection is switched to another Vault: the old lease is revoked in the
// Vault that issued it (issue 36, 6a). Two real OpenBao servers, each with its database secrets
// engine on the same real PostgreSQL, the kit's kube-apiserver, hub and agent in process. Sent
// to the wrong Vault, the old lease id means nothing there (revoking an unknown lease succeeds),
// and the old PostgreSQL role would live on until its TTL: so the proof is that role leaving
// pg_roles, long before its TTL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { tokenAuth, VaultClient, type VaultEnvelope } from '@mirrorhub/hub/vault/index';
import {
  startOpenBao,
  startPostgres,
  type OpenBao,
  type Postgres,
} from '@mirrorhub/infra/components/index';

import { clusterSecretMirror, Engine } from '../support/engine.js';
import { eventually } from '../support/eventually.js';
import { SYSTEM_NS } from '../support/objects.js';
import { createObject, enableDatabaseEngine, pgRoleExists } from '../support/vault.js';

const POLL = 10;
const WAIT = { timeoutMs: 30_000, intervalMs: 200 };

let e: Engine;
let baos: OpenBao[];
let roots: VaultClient[];
let pg: Postgres;
const secrets = new Set<string>();

beforeAll(async () => {
  let a: OpenBao;
  let b: OpenBao;
  [e, a, b, pg] = await Promise.all([
    Engine.start(),
    startOpenBao(),
    startOpenBao(),
    startPostgres(),
  ]);
  baos = [a, b];
  secrets.add(pg.password);
  roots = [];
  for (const [i, bao] of baos.entries()) {
    const name = i === 0 ? 'vault-a' : 'vault-b';
    secrets.add(bao.rootToken);
    const root = new VaultClient({
      address: bao.address,
      auth: tokenAuth({ token: bao.rootToken }),
    });
    roots.push(root);
    // Long leases: only a revocation, not an expiry, removes a role within this test.
    await enableDatabaseEngine(root, pg, { defaultTtl: '1h', maxTtl: '2h' });
    await root.request({
      method: 'PUT',
      path: 'sys/policies/acl/db-creds',
      body: {
        policy: `
          path "db/creds/app" { capabilities = ["read"] }
          path "sys/leases/renew" { capabilities = ["update"] }
          path "sys/leases/revoke" { capabilities = ["update"] }`,
      },
    });
    const token = (
      await root.request<VaultEnvelope>({
        method: 'POST',
        path: 'auth/token/create',
        body: { policies: ['db-creds'], ttl: '1h' },
      })
    ).body?.auth?.client_token as string;
    secrets.add(token);
    await e.putSecret(SYSTEM_NS, name, { token });
    await createObject(e.kc, 'clustervaultconnections', {
      kind: 'ClusterVaultConnection',
      metadata: { name },
      spec: {
        address: bao.address,
        auth: { token: { secretRef: { namespace: SYSTEM_NS, name, key: 'token' } } },
      },
    });
  }
  await e.ensureNamespace('app');
}, 180_000);

afterAll(async () => {
  await e?.stop();
  for (const r of roots ?? []) await r.close();
  for (const b of baos ?? []) await b.stop();
  await pg?.stop();
});

const mirror = (connection: string) =>
  clusterSecretMirror('db', {
    source: {
      kind: 'Vault',
      vault: {
        connectionRef: { kind: 'ClusterVaultConnection', name: connection },
        path: 'db/creds/app',
        dynamic: { revokeGraceSeconds: 600 },
      },
    },
    destination: { namespaces: ['app'], name: 'db-creds' },
    pollPeriodSeconds: POLL,
  } as never);

describe('switching the connection of a dynamic source', () => {
  it('revokes the old lease through the connection that issued it: its role leaves PostgreSQL', async () => {
    await e.applyMirror(mirror('vault-a'));
    let first: Record<string, string> | undefined;
    await eventually(async () => {
      first = await e.secretData('app', 'db-creds');
      expect(first?.username).toMatch(/^v-/);
    }, WAIT);
    secrets.add(first!.password!);
    expect(await pgRoleExists(pg, first!.username!)).toBe(true);

    await e.applyMirror(mirror('vault-b'));
    let second: Record<string, string> | undefined;
    await eventually(async () => {
      second = await e.secretData('app', 'db-creds');
      expect(second?.username).toMatch(/^v-/);
      expect(second?.username).not.toBe(first!.username);
    }, WAIT);
    secrets.add(second!.password!);
    // Revoked at once (the lease moved), in vault-a, which drops the role; hours before its TTL.
    await eventually(
      async () => expect(await pgRoleExists(pg, first!.username!)).toBe(false),
      WAIT,
    );
    expect(await pgRoleExists(pg, second!.username!)).toBe(true);
    await e.mirrorStatus('ClusterSecretMirror', 'db', undefined, (m) => {
      expect(m.status?.phase).toBe('Active');
      expect((m.status as { lease?: { retiring?: number } }).lease?.retiring).toBe(0);
    });
    const all = [e.logs.text(), JSON.stringify(await e.getMirror('ClusterSecretMirror', 'db'))];
    for (const s of secrets) expect(all.join('\n')).not.toContain(s);
  }, 90_000);
});
