// Leased (dynamic) secrets with the hub's Vault client on a real OpenBao: database credentials
// from a real PostgreSQL (renewable leases: renewed, capped at the max TTL, revoked, and the
// database role is really gone), and PKI certificates (a lease that is not renewable).
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  readLeased,
  renewLease,
  revokeLease,
  tokenAuth,
  VaultClient,
  VaultError,
  type VaultEnvelope,
} from '@mirrorhub/hub/vault/index';
import {
  startOpenBao,
  startPostgres,
  type OpenBao,
  type Postgres,
} from '@mirrorhub/infra/components/index';
import { createLogger } from '@mirrorhub/shared/kit/runtime/log';

import { enableDatabaseEngine, pgRoleExists } from '../support/vault.js';

let bao: OpenBao;
let pg: Postgres;
let root: VaultClient;
const logLines: string[] = [];
const logger = createLogger({
  level: 'debug',
  destination: { write: (l: string) => void logLines.push(l) },
});
const secrets = new Set<string>();
const provoked: VaultError[] = [];

async function sys(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown) {
  return (await root.request<VaultEnvelope>({ method, path, body })).body;
}

async function failure(p: Promise<unknown>): Promise<VaultError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(VaultError);
  provoked.push(err as VaultError);
  return err as VaultError;
}

/** Does PostgreSQL have a role of that name? (asked as its superuser, with psql) */
beforeAll(async () => {
  [bao, pg] = await Promise.all([startOpenBao({ tls: true }), startPostgres()]);
  secrets.add(bao.rootToken);
  secrets.add(pg.password);
  root = new VaultClient({
    address: bao.address,
    caPem: bao.caPem,
    auth: tokenAuth({ token: bao.rootToken }),
    logger,
  });
  await enableDatabaseEngine(root, pg, { defaultTtl: '60s', maxTtl: '300s' });
  await sys('POST', 'sys/mounts/pki', { type: 'pki' });
  await sys('POST', 'pki/root/generate/internal', { common_name: 'mirrorhub test CA' });
  await sys('POST', 'pki/roles/leased', {
    allow_any_name: true,
    generate_lease: true,
    ttl: '120s',
  });
}, 120_000);

afterAll(async () => {
  await root?.close();
  await bao?.stop();
  await pg?.stop();
});

describe('database credentials (renewable leases)', () => {
  it('reads credentials with a lease, renews it, is capped at the max TTL, and revokes it', async () => {
    const creds = await readLeased(root, 'db/creds/app');
    const { username, password } = creds.data;
    secrets.add(password!);
    expect(username).toMatch(/^v-/);
    expect(await pgRoleExists(pg, username!)).toBe(true);
    const lease = creds.lease!;
    secrets.add(lease.leaseId);
    expect(lease.leaseId).toMatch(/^db\/creds\/app\//);
    expect(lease).toMatchObject({ renewable: true, leaseDuration: 60 });
    // The lease id never prints.
    expect(JSON.stringify(creds)).not.toContain(lease.leaseId);
    expect(inspect(creds, { depth: 5 })).not.toContain(lease.leaseId);

    const renewed = await renewLease(root, lease, 120);
    expect(renewed).toMatchObject({ leaseId: lease.leaseId, renewable: true, leaseDuration: 120 });
    // Vault grants at most what is left of the max TTL (300 s from issue).
    const capped = await renewLease(root, lease, 3600);
    expect(capped.leaseDuration).toBeGreaterThan(200);
    expect(capped.leaseDuration).toBeLessThanOrEqual(300);

    await revokeLease(root, lease);
    expect(await pgRoleExists(pg, username!)).toBe(false);
    const err = await failure(renewLease(root, lease, 60));
    expect(err.kind).toBe('invalid-request');
    expect(err.message).toContain('renewing a lease failed (400): Vault says:');
    expect(err.message).toContain('read the secret again for a new one');
  });
});

describe('PKI certificates (a lease that is not renewable)', () => {
  it('reads a certificate with its lease, refuses to renew it, and revokes it', async () => {
    const issued = await readLeased(root, 'pki/issue/leased', {
      method: 'POST',
      body: { common_name: 'x.example.com' },
    });
    expect(issued.data.certificate).toMatch(/BEGIN CERTIFICATE/);
    secrets.add(issued.data.private_key!);
    const lease = issued.lease!;
    secrets.add(lease.leaseId);
    expect(lease).toMatchObject({ renewable: false });
    const err = await failure(renewLease(root, lease, 60));
    expect(err.message).toBe(
      'renewing a lease failed (400): Vault says: lease is not renewable: a lease that is not renewable, expired, revoked or at its max TTL cannot be renewed; read the secret again for a new one',
    );
    await revokeLease(root, lease);
    const lookup = await root.request({
      method: 'PUT',
      path: 'sys/leases/lookup',
      body: { lease_id: lease.leaseId },
      secrets: [lease.leaseId],
      accept: [400],
    });
    expect(lookup.status).toBe(400);
  });

  it('says what is wrong when the path issues nothing', async () => {
    const err = await failure(readLeased(root, 'pki/issue/no-such-role', { method: 'POST' }));
    expect(err.kind).toBe('invalid-request');
  });
});

describe('redaction', () => {
  it('no lease id, password, private key or token reaches an error or a log line', async () => {
    await failure(renewLease(root, `db/creds/app/${'x'.repeat(24)}`, 30));
    const logs = logLines.join('');
    expect(logs).toContain('vault request');
    const texts = provoked.map((e) =>
      [String(e), e.stack, JSON.stringify(e), inspect(e), ...e.errors].join('\n'),
    );
    for (const s of secrets) {
      expect(logs).not.toContain(s);
      for (const t of texts) expect(t).not.toContain(s);
    }
  });
});
