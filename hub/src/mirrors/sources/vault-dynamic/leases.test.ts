// DynamicSources against two recording stand-ins for Vault (test/src/multicluster/vault-dynamic
// and test/src/engine/vault-tenancy run it against a real OpenBao): which Vault a lease is
// revoked through after a switch of connection, and what a tenant's dynamic source may ask.
import { describe, expect, it, vi } from 'vitest';
import type { VaultSourceRef } from '@mirrorhub/shared/api/index';
import { silentLogger } from '@mirrorhub/shared/kit/runtime/log';
import type { VaultClient } from '../../../vault/index.js';
import { DynamicSources } from './leases.js';
import { leaseSource, type LeaseRecord } from './rules.js';

interface Call {
  method: string;
  path: string;
  body?: { lease_id?: string };
}

/** A Vault that issues database credentials at db/creds/<role> and records every request. */
function fakeVault(name: string, mounts: Record<string, string> = { db: 'database' }) {
  const calls: Call[] = [];
  let n = 0;
  const client = {
    session: { auth: { mintsTokens: false, description: name } },
    async request(req: Call) {
      calls.push(req);
      if (req.path === 'sys/leases/revoke') return { status: 204, body: undefined };
      if (req.path === 'sys/leases/renew') {
        return {
          status: 200,
          body: { lease_id: req.body?.lease_id, lease_duration: 3600, renewable: true },
        };
      }
      if (req.path.startsWith('sys/internal/ui/mounts/')) {
        const path = req.path.slice('sys/internal/ui/mounts/'.length);
        const mount = Object.keys(mounts).find((m) => path.startsWith(`${m}/`));
        return { status: 200, body: { data: { path: `${mount}/`, type: mounts[mount ?? ''] } } };
      }
      if (req.path.startsWith('db/creds/')) {
        n++;
        return {
          status: 200,
          body: {
            lease_id: `${name}/lease-${n}`,
            lease_duration: 3600,
            renewable: true,
            data: { username: `u-${name}-${n}`, password: 'pw' },
          },
        };
      }
      throw new Error(`unexpected request ${req.method} ${req.path}`);
    },
  };
  return { client: client as unknown as VaultClient, calls };
}

const dynamic = { method: 'GET' as const, renewIncrementSeconds: 3600, revokeGraceSeconds: 300 };
const via = (name: string, path = 'db/creds/app'): VaultSourceRef => ({
  kind: 'Vault',
  connection: { kind: 'ClusterVaultConnection', name },
  path,
  dynamic,
});

function sources(vaults: Record<string, ReturnType<typeof fakeVault>>) {
  const stored = new Map<string, LeaseRecord | undefined>();
  const changed: string[] = [];
  const d = new DynamicSources({
    connections: {
      client: async (ref) => vaults[ref.name]!.client,
      loginFailed: () => undefined,
      observed: () => undefined,
    },
    store: {
      get: async (k) => stored.get(k),
      put: async (k, r) => void stored.set(k, r),
    },
    onChange: (k) => changed.push(k),
    requests: { inc: () => undefined } as never,
    logger: silentLogger(),
    jitter: 0,
  });
  return { d, stored, changed };
}

describe('a retiring lease after a switch of connection', () => {
  it('is revoked through the connection that issued it, not the current one', async () => {
    const a = fakeVault('a');
    const b = fakeVault('b');
    const { d, stored } = sources({ a, b });
    // What the hub stored while the mirror read through connection "a".
    stored.set('SecretMirror/team-x/db', {
      source: leaseSource(via('a')),
      leaseId: 'a/lease-0',
      data: { username: 'u-a-0', password: 'pw' },
      renewable: true,
      issuedAt: Date.now(),
      expiresAt: Date.now() + 3600_000,
      retiring: [],
    });
    d.set('SecretMirror/team-x/db', via('b'), 60_000);
    await vi.waitFor(
      () => {
        expect(stored.get('SecretMirror/team-x/db')).toMatchObject({
          leaseId: 'b/lease-1',
          retiring: [],
        });
      },
      { timeout: 5000 },
    );
    await d.stop();
    const revokes = (c: Call[]) =>
      c.filter((x) => x.path === 'sys/leases/revoke').map((x) => x.body?.lease_id);
    expect(revokes(a.calls)).toEqual(['a/lease-0']);
    expect(revokes(b.calls)).toEqual([]);
    expect(stored.get('SecretMirror/team-x/db')?.leaseId).toBe('b/lease-1');
  });

  it('release revokes each lease through its own issuing connection', async () => {
    const a = fakeVault('a');
    const b = fakeVault('b');
    const { d, stored } = sources({ a, b });
    stored.set('SecretMirror/team-x/db', {
      source: leaseSource(via('b')),
      leaseId: 'b/lease-1',
      data: {},
      renewable: true,
      issuedAt: 0,
      expiresAt: Date.now() + 3600_000,
      retiring: [
        {
          leaseId: 'a/lease-0',
          source: leaseSource(via('a')),
          revokeAt: Date.now() + 1000_000,
          expiresAt: Date.now() + 3600_000,
        },
      ],
    });
    expect(await d.release('SecretMirror/team-x/db', true)).toBeUndefined();
    expect(a.calls.map((c) => c.body?.lease_id)).toEqual(['a/lease-0']);
    expect(b.calls.map((c) => c.body?.lease_id)).toEqual(['b/lease-1']);
  });
});

describe("a tenant's dynamic source through a shared connection (engineCheck)", () => {
  it.each<[string, string, 'GET' | 'POST', Record<string, string>]>([
    ['a token endpoint', 'auth/token/revoke-self', 'POST', { 'auth/token': 'token' }],
    ['a KV mount', 'secret/shared/db', 'GET', { secret: 'kv' }],
    ['a non-credential endpoint', 'db/rotate-root/pg', 'POST', { db: 'database' }],
  ])('%s is refused before anything is asked of it', async (_, path, method, mounts) => {
    const v = fakeVault('shared', mounts);
    const { d, changed } = sources({ shared: v });
    d.set(
      'SecretMirror/team-x/m',
      { ...via('shared', path), dynamic: { ...dynamic, method } },
      60_000,
      true,
    );
    await vi.waitFor(() => expect(changed).toContain('SecretMirror/team-x/m'), { timeout: 5000 });
    const seen = d.get('SecretMirror/team-x/m');
    await d.stop();
    expect(seen).toMatchObject({ state: 'unreadable', denied: true });
    expect(seen.state === 'unreadable' && seen.error).toContain('rule: ');
    // Only the mount lookup: no read, no POST of the path.
    expect(v.calls.map((c) => c.path)).toEqual([`sys/internal/ui/mounts/${path}`]);
  });

  it('a credential endpoint is read', async () => {
    const v = fakeVault('shared');
    const { d, changed } = sources({ shared: v });
    d.set('SecretMirror/team-x/m', via('shared'), 60_000, true);
    await vi.waitFor(() => expect(changed).toContain('SecretMirror/team-x/m'), { timeout: 5000 });
    const seen = d.get('SecretMirror/team-x/m');
    await d.stop();
    expect(seen.state).toBe('found');
  });
});
