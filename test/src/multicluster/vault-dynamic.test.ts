// Dynamic secrets from Vault on real parts: OpenBao's database secrets engine minting users in a
// real PostgreSQL, a hub and two EKS followers (real kube-apiservers, the agents in process).
// One ClusterSecretMirror delivers the credentials to both followers; the tests log in with them
// (psql), watch the lease being renewed instead of re-minted across polls, a hub restart and a
// leader failover, rotate them ahead of the max TTL and see the old user leave pg_roles after
// the grace, survive OpenBao being unreachable, and revoke on deletion.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createHub, type Hub } from '@mirrorhub/hub/hub';
import { tokenAuth, VaultClient, type VaultEnvelope } from '@mirrorhub/hub/vault/index';
import {
  startOpenBao,
  startPostgres,
  type OpenBao,
  type Postgres,
} from '@mirrorhub/infra/components/index';

import { eventually } from '../support/eventually.js';
import {
  clusterSecretMirror,
  FOLLOWERS,
  HUB,
  MultiCluster,
  SYSTEM_NS,
} from '../support/multicluster.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { createObject, enableDatabaseEngine, pgRoleExists } from '../support/vault.js';

const run = promisify(execFile);
const FOLLOWER_NAMES = ['follower-a', 'follower-b'];
const WAIT = { timeoutMs: 40_000, intervalMs: 250 };
const POLL = 10;
const GRACE = 5;

let m: MultiCluster;
let bao: OpenBao;
let pg: Postgres;
let root: VaultClient;
let proxy: TcpProxy;
const secrets = new Set<string>();

async function vault(method: 'GET' | 'POST' | 'PUT' | 'LIST', path: string, body?: unknown) {
  const res = await root.request<VaultEnvelope>({
    method: method === 'LIST' ? 'GET' : method,
    path,
    body,
    ...(method === 'LIST' ? { query: { list: 'true' } } : {}),
    accept: [404],
  });
  return res.status === 404 ? undefined : res.body;
}

/** Logs in to PostgreSQL as the delivered user (a real client connection). */
async function logIn(creds: Record<string, string>): Promise<string> {
  const { stdout } = await run(
    pg.bins.psql!,
    [
      '-h',
      pg.host,
      '-p',
      String(pg.port),
      '-U',
      creds.username!,
      '-d',
      pg.database,
      '-tAc',
      'SELECT current_user',
    ],
    { env: { ...process.env, PGPASSWORD: creds.password!, PGSSLMODE: 'disable' } },
  );
  return stdout.trim();
}

/** The credentials in every follower, once they are the same everywhere. */
async function delivered(): Promise<Record<string, string>> {
  let creds: Record<string, string> | undefined;
  await eventually(async () => {
    const all = await Promise.all(FOLLOWER_NAMES.map((c) => m.secretData(c, 'app', 'db-creds')));
    expect(all[0]?.username).toBeDefined();
    for (const x of all) expect(x).toEqual(all[0]);
    creds = all[0];
  }, WAIT);
  for (const v of Object.values(creds!)) if (v.length > 8) secrets.add(v);
  return creds!;
}

async function leaseStatus() {
  const mirror = (await m.getMirror('ClusterSecretMirror', 'db')) as {
    status?: { phase?: string; lease?: Record<string, string | number | boolean> };
  };
  return mirror.status;
}

/** Every lease Vault holds under db/creds/app (ids: secrets). */
async function leases(): Promise<string[]> {
  const keys = ((await vault('LIST', 'sys/leases/lookup/db/creds/app'))?.data?.keys ??
    []) as string[];
  for (const k of keys) secrets.add(k);
  return keys;
}

beforeAll(async () => {
  [m, bao, pg] = await Promise.all([
    MultiCluster.start({ followers: FOLLOWERS.filter((f) => FOLLOWER_NAMES.includes(f.name)) }),
    startOpenBao(),
    startPostgres(),
  ]);
  secrets.add(bao.rootToken).add(pg.password);
  root = new VaultClient({ address: bao.address, auth: tokenAuth({ token: bao.rootToken }) });
  proxy = new TcpProxy(Number(new URL(bao.address).port));
  await proxy.open();
  // Rotation window: grace 5 s + two 10 s polls = 25 s. Issued for 40 s, renewable up to 120 s
  // from issue: renewed at every poll until less than 25 s can be granted (~95 s), then rotated.
  await enableDatabaseEngine(root, pg, { defaultTtl: '40s', maxTtl: '120s' });
  await vault('PUT', 'sys/policies/acl/db-creds', {
    policy: `
      path "db/creds/app" { capabilities = ["read"] }
      path "sys/leases/renew" { capabilities = ["update"] }
      path "sys/leases/revoke" { capabilities = ["update"] }`,
  });
  const token = (await vault('POST', 'auth/token/create', { policies: ['db-creds'], ttl: '1h' }))
    ?.auth?.client_token as string;
  secrets.add(token);

  await m.on(HUB).putSecret(SYSTEM_NS, 'vault-token', { token });
  await createObject(m.on(HUB).kc, 'clustervaultconnections', {
    kind: 'ClusterVaultConnection',
    metadata: { name: 'vault' },
    spec: {
      address: `http://127.0.0.1:${proxy.port}`,
      auth: { token: { secretRef: { namespace: SYSTEM_NS, name: 'vault-token', key: 'token' } } },
    },
  });
  for (const c of FOLLOWER_NAMES) await m.ensureNamespace(c, 'app');
}, 300_000);

afterAll(async () => {
  await m?.stop();
  await proxy?.cut();
  await root?.close();
  await bao?.stop();
  await pg?.stop();
});

let first: Record<string, string>;

describe('dynamic database credentials', () => {
  it('delivers working credentials to both followers', async () => {
    await m.applyMirror(
      clusterSecretMirror('db', {
        source: {
          kind: 'Vault',
          vault: {
            connectionRef: { kind: 'ClusterVaultConnection', name: 'vault' },
            path: 'db/creds/app',
            dynamic: { revokeGraceSeconds: GRACE },
          },
        },
        destination: {
          clusters: { selector: { matchLabels: { env: 'prod' } } },
          namespaces: ['app'],
          name: 'db-creds',
        },
        pollPeriodSeconds: POLL,
      } as never),
    );
    first = await delivered();
    expect(first.username).toMatch(/^v-/);
    expect(await logIn(first)).toBe(first.username);
    await m.mirrorStatus('ClusterSecretMirror', 'db', undefined, (x) => {
      expect(x.status?.phase).toBe('Active');
      expect(x.status?.synced).toBe('2/2');
      expect((x.status as { lease?: unknown }).lease).toMatchObject({
        renewable: true,
        retiring: 0,
      });
    });
    expect(await leases()).toHaveLength(1);
  });

  it('renews at each poll: the same user, a later expiry, nothing minted and no copy rewritten', async () => {
    const copy = await m.on('follower-a').readSecret('app', 'db-creds');
    // Two renewals, a poll apart; the first takes the lease beyond its 40 s default TTL.
    let firstRenewal = '';
    await eventually(async () => {
      const lease = (await leaseStatus())?.lease;
      expect(lease?.lastRenewed).toBeDefined();
      firstRenewal = String(lease?.lastRenewed);
      expect(
        Date.parse(String(lease?.expiresAt)) - Date.parse(String(lease?.issuedAt)),
      ).toBeGreaterThan(40_000);
    }, WAIT);
    await eventually(async () => {
      expect(String((await leaseStatus())?.lease?.lastRenewed)).not.toBe(firstRenewal);
    }, WAIT);
    expect(
      await m.hubMetric('mirrorhub_vault_requests_total', { operation: 'renew', outcome: 'ok' }),
    ).toBeGreaterThan(0);
    expect(await m.hubMetric('mirrorhub_vault_requests_total', { operation: 'issue' })).toBe(1);
    expect(await delivered()).toEqual(first);
    expect(
      (await m.on('follower-a').readSecret('app', 'db-creds'))?.metadata?.resourceVersion,
    ).toBe(copy?.metadata?.resourceVersion);
    // The lease id is in the hub's own Secret, not in the mirror.
    const mirror = JSON.stringify(await m.getMirror('ClusterSecretMirror', 'db'));
    for (const id of await leases()) expect(mirror).not.toContain(id);
    const kept = await m.on(HUB).readSecret(SYSTEM_NS, 'mirrorhub-leases');
    expect(Object.keys(kept?.data ?? {})).toEqual(['ClusterSecretMirror..db']);
  });

  it('a hub restart and a leader failover renew the same lease: nothing new is minted', async () => {
    await m.stopHub();
    const elect = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 };
    const a = createHub(m.hubConfig({ identity: 'hub-a', leaderElection: elect }));
    await a.start();
    let b: Hub | undefined;
    try {
      expect(a.isLeader()).toBe(true);
      b = createHub(m.hubConfig({ identity: 'hub-b', leaderElection: elect }));
      await b.start(); // standing by
      expect(b.isLeader()).toBe(false);
      const renewed = async (h: Hub) => {
        const text = await h.metrics.render();
        return /mirrorhub_vault_requests_total\{[^}]*operation="renew"[^}]*outcome="ok"[^}]*\} [1-9]/.test(
          text,
        );
      };
      await eventually(async () => expect(await renewed(a)).toBe(true), WAIT);
      await a.stop(); // releases the Lease: hub-b takes over
      await eventually(async () => expect(b!.isLeader()).toBe(true), WAIT);
      await eventually(async () => expect(await renewed(b!)).toBe(true), WAIT);
      for (const h of [a, b]) {
        expect(await h.metrics.render()).not.toMatch(/operation="issue"[^}]*\} [1-9]/);
      }
      expect(await delivered()).toEqual(first);
      expect(await leases()).toHaveLength(1);
    } finally {
      await b?.stop();
      await a.stop();
      await m.startHub();
    }
  });

  it('rotates ahead of the max TTL: new credentials everywhere, the old user gone after the grace', async () => {
    let next: Record<string, string> | undefined;
    await eventually(
      async () => {
        next = await delivered();
        expect(next.username).not.toBe(first.username);
      },
      { timeoutMs: 110_000, intervalMs: 500 },
    );
    expect(await logIn(next!)).toBe(next!.username);
    await m.eventWith('default', 'db', 'LeaseRotated', WAIT);
    await eventually(async () => expect(await pgRoleExists(pg, first.username!)).toBe(false), WAIT);
    expect(await pgRoleExists(pg, next!.username!)).toBe(true);
    await eventually(async () => expect((await leaseStatus())?.lease?.retiring).toBe(0), WAIT);
    first = next!;
  }, 150_000);

  it('OpenBao unreachable during renewal: Degraded with the copies kept, Active again when it is back', async () => {
    await proxy.cut();
    await m.mirrorStatus(
      'ClusterSecretMirror',
      'db',
      undefined,
      (x) => {
        expect(x.status?.phase).toBe('Degraded');
        expect(x.status?.message).toContain('copies are kept');
      },
      30_000,
    );
    expect(await delivered()).toEqual(first);
    await proxy.open();
    await m.mirrorStatus(
      'ClusterSecretMirror',
      'db',
      undefined,
      (x) => expect(x.status?.phase).toBe('Active'),
      30_000,
    );
  }, 90_000);

  it('a lease that ended while Vault was unreachable: new credentials once it is back, with a Warning', async () => {
    const before = await delivered();
    await proxy.cut();
    await m.mirrorStatus(
      'ClusterSecretMirror',
      'db',
      undefined,
      (x) => expect(x.status?.phase).toBe('Degraded'),
      30_000,
    );
    // Vault forgets the lease meanwhile (as when it expires): revoked behind the hub's back.
    for (const id of await leases()) {
      await vault('PUT', 'sys/leases/revoke', { lease_id: `db/creds/app/${id}` });
    }
    expect(await pgRoleExists(pg, before.username!)).toBe(false);
    await proxy.open();
    let after: Record<string, string> | undefined;
    await eventually(async () => {
      after = await delivered();
      expect(after.username).not.toBe(before.username);
    }, WAIT);
    expect(await logIn(after!)).toBe(after!.username);
    await m.eventWith('default', 'db', 'LeaseExpired', WAIT);
    await m.mirrorStatus('ClusterSecretMirror', 'db', undefined, (x) =>
      expect(x.status?.phase).toBe('Active'),
    );
  }, 90_000);

  it('deleting the mirror revokes its lease: the user is gone from PostgreSQL', async () => {
    const current = await delivered();
    await m.deleteMirror('ClusterSecretMirror', 'db');
    await eventually(async () => {
      expect(await m.getMirror('ClusterSecretMirror', 'db')).toBeUndefined();
      expect(await pgRoleExists(pg, current.username!)).toBe(false);
    }, WAIT);
    expect(await leases()).toHaveLength(0);
    const kept = await m.on(HUB).readSecret(SYSTEM_NS, 'mirrorhub-leases');
    expect(kept?.data ?? {}).toEqual({});
  });

  it('puts no lease id, password or token in logs, Events, status or metrics', async () => {
    const texts = [m.logs.text(), await m.hub!.metrics.render()];
    for (const ns of ['default', SYSTEM_NS])
      texts.push(JSON.stringify(await m.on(HUB).events(ns, 'db')));
    const all = texts.join('\n');
    expect(all).toContain('db/creds/app');
    for (const s of secrets) expect(all).not.toContain(s);
  });
});
