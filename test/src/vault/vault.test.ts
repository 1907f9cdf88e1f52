// The hub's Vault client against a real OpenBao dev server over TLS (its own dev CA): KV v1 and
// v2, token and AppRole auth with short TTLs (renewal, re-login after revocation), namespaces,
// TLS verification, and that no secret ever reaches an error or a log line.
// Kubernetes auth against a real kube-apiserver: kubernetes.test.ts; leases: leases.test.ts.
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  appRoleAuth,
  OWNER_DATA_KEY,
  OWNER_METADATA_KEY,
  renewLease,
  revokeLease,
  tokenAuth,
  VaultClient,
  VaultError,
  VaultKv,
  type VaultAuth,
  type VaultClientOptions,
  type VaultClientRequest,
  type VaultEnvelope,
  type VaultResponse,
} from '@mirrorhub/hub/vault/index';
import { startOpenBao, type OpenBao } from '@mirrorhub/infra/components/index';
import { createLogger } from '@mirrorhub/shared/kit/runtime/log';

import { eventually } from '../support/eventually.js';

let bao: OpenBao;
let root: VaultClient;
let rootKv: VaultKv;
const clients: VaultClient[] = [];
/** Every log line every client wrote. */
const logLines: string[] = [];
const logger = createLogger({
  level: 'debug',
  base: { component: 'vault-test' },
  destination: { write: (l: string) => void logLines.push(l) },
});
/** Every secret the tests put in flight: none may appear in an error or a log line. */
const secrets = new Set<string>();
/** Every error the tests provoked, checked for secrets at the end. */
const provoked: unknown[] = [];

function client(auth: VaultAuth, extra: Partial<VaultClientOptions> = {}): VaultClient {
  const c = new VaultClient({ address: bao.address, caPem: bao.caPem, auth, logger, ...extra });
  clients.push(c);
  return c;
}

async function sys<T = VaultEnvelope>(
  method: VaultClientRequest['method'],
  path: string,
  body?: unknown,
  namespace?: string,
): Promise<T | undefined> {
  const res: VaultResponse<T> = await root.request<T>({
    method,
    path,
    body,
    ...(namespace !== undefined ? { namespace } : {}),
  });
  return res.body;
}

async function policy(name: string, hcl: string): Promise<void> {
  await sys('PUT', `sys/policies/acl/${name}`, { policy: hcl });
}

/** A child token of the root with these policies and TTL (seconds). */
async function childToken(policies: string[], ttl: number): Promise<string> {
  const res = await sys<VaultEnvelope>('POST', 'auth/token/create', {
    policies,
    ttl: `${ttl}s`,
    renewable: true,
  });
  const token = res?.auth?.client_token;
  if (!token) throw new Error('no token');
  secrets.add(token);
  return token;
}

async function failure(p: Promise<unknown>): Promise<VaultError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(VaultError);
  provoked.push(err);
  return err as VaultError;
}

/** A secret value the test writes, remembered for the redaction checks. */
function secret(label: string): string {
  const v = `${label}-${Math.random().toString(36).slice(2)}-value`;
  secrets.add(v);
  return v;
}

async function v2Metadata(path: string): Promise<{
  current_version: number;
  custom_metadata: Record<string, string> | null;
  versions: Record<string, unknown>;
}> {
  const res = await sys<VaultEnvelope<never>>('GET', `secret/metadata/${path}`);
  return res?.data as never;
}

beforeAll(async () => {
  bao = await startOpenBao({ tls: true });
  secrets.add(bao.rootToken);
  root = client(tokenAuth({ token: bao.rootToken }));
  rootKv = new VaultKv(root);
  await sys('POST', 'sys/mounts/kv1', { type: 'kv', options: { version: '1' } });
  await policy(
    'app',
    `
path "secret/data/app/*" { capabilities = ["create", "read", "update"] }
path "secret/metadata/app/*" { capabilities = ["create", "read", "update", "delete", "list"] }
path "kv1/app/*" { capabilities = ["create", "read", "update", "delete", "list"] }
`,
  );
  await policy(
    'reader',
    `
path "secret/data/ro/*" { capabilities = ["read"] }
path "secret/metadata/ro/*" { capabilities = ["read"] }
path "kv1/ro/*" { capabilities = ["read"] }
`,
  );
}, 120_000);

afterAll(async () => {
  for (const c of clients) await c.close();
  await bao?.stop();
});

describe('KV v2', () => {
  let kv: VaultKv;
  beforeAll(async () => {
    kv = new VaultKv(client(tokenAuth({ token: await childToken(['app'], 600) })));
  });

  it('finds the mount and its version through sys/internal/ui/mounts with a narrow policy', async () => {
    expect(await kv.locate('secret/app/db')).toEqual({
      mount: 'secret',
      version: 2,
      key: 'app/db',
    });
    expect(await kv.locate('kv1/app/db')).toEqual({ mount: 'kv1', version: 1, key: 'app/db' });
    const err = await failure(kv.locate('nomount/app/db'));
    expect(err.kind).toBe('permission-denied');
    expect(err.message).toContain(
      'cannot find the mount of nomount/app/db: Vault answered 403 to sys/internal/ui/mounts',
    );
    expect(err.message).toContain('check the path, or grant the policy access to it');
  });

  it('reads an absent secret as undefined', async () => {
    expect(await kv.read('secret/app/never-written')).toBeUndefined();
    expect(await kv.owner('secret/app/never-written')).toBeUndefined();
  });

  it('writes, reads back, and a second identical write makes no new version', async () => {
    const data = { username: 'app', password: secret('pw') };
    expect(await kv.write('secret/app/db', data)).toEqual({
      wrote: true,
      metadataWritten: false,
      version: 1,
    });
    const got = await kv.read('secret/app/db');
    expect(got).toMatchObject({ data, jsonKeys: [], kvVersion: 2, version: 1, customMetadata: {} });
    expect(got?.createdTime).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(await kv.writeIfChanged('secret/app/db', { ...data })).toBe(false);
    expect((await v2Metadata('app/db')).current_version).toBe(1);
    expect(await kv.writeIfChanged('secret/app/db', { ...data, password: secret('pw2') })).toBe(
      true,
    );
    expect((await v2Metadata('app/db')).current_version).toBe(2);
  });

  it('does not write at all when nothing changed: a read-only token can "write" the same data', async () => {
    const data = { k: secret('ro') };
    await rootKv.write('secret/ro/x', data);
    const reader = new VaultKv(client(tokenAuth({ token: await childToken(['reader'], 600) })));
    expect(await reader.writeIfChanged('secret/ro/x', data)).toBe(false);
    const err = await failure(reader.write('secret/ro/x', { k: secret('ro2') }));
    expect(err.kind).toBe('permission-denied');
    expect(err.message).toContain(
      'does not allow "create" or "update" on "secret/data/ro/x"; grant it in that policy',
    );
    expect(err.message).toContain('the Vault policy of the static Vault token does not allow');
  });

  it('refuses a stale check-and-set without writing, with a typed error', async () => {
    await kv.write('secret/app/cas', { v: secret('cas1') });
    await kv.write('secret/app/cas', { v: secret('cas2') }); // now version 2
    const err = await failure(kv.write('secret/app/cas', { v: secret('cas3') }, { cas: 1 }));
    expect(err.kind).toBe('cas-mismatch');
    expect(err.message).toBe(
      'check-and-set refused writing secret/app/cas: the caller expected version 1 but the current version is 2; read it again and decide',
    );
    expect((await v2Metadata('app/cas')).current_version).toBe(2);
    expect((await kv.write('secret/app/cas', { v: secret('cas4') }, { cas: 2 })).version).toBe(3);
    // cas 0: create only.
    const fresh = await failure(kv.write('secret/app/cas', { v: secret('cas5') }, { cas: 0 }));
    expect(fresh.kind).toBe('cas-mismatch');
  });

  it('never clobbers a writer that got in between its read and its write (Vault checks the cas)', async () => {
    await kv.write('secret/app/race', { v: secret('race1') });
    const theirs = { v: secret('theirs') };
    // A client whose data write is preceded, once, by someone else's write.
    class Racing extends VaultClient {
      raced = false;
      override async request<T>(req: VaultClientRequest): Promise<VaultResponse<T>> {
        if (!this.raced && req.method === 'POST' && req.path === 'secret/data/app/race') {
          this.raced = true;
          await rootKv.write('secret/app/race', theirs);
        }
        return super.request<T>(req);
      }
    }
    const racing = new Racing({
      address: bao.address,
      caPem: bao.caPem,
      auth: tokenAuth({ token: await childToken(['app'], 600) }),
      logger,
    });
    clients.push(racing);
    const err = await failure(new VaultKv(racing).write('secret/app/race', { v: secret('ours') }));
    expect(err.kind).toBe('cas-mismatch');
    expect(err.status).toBe(400);
    expect(err.message).toContain(
      'check-and-set refused writing secret/app/race: it changed after version 1 was read (another writer?); read it again and retry',
    );
    expect((await kv.read('secret/app/race'))?.data).toEqual(theirs);
  });

  it('round-trips custom metadata and the owner, writing each only when it changes', async () => {
    const data = { token: secret('meta') };
    const first = await kv.write('secret/app/meta', data, {
      customMetadata: { team: 'a', source: 'cert-manager/wildcard' },
      owner: 'SecretMirror team-a/wildcard',
    });
    expect(first).toEqual({ wrote: true, metadataWritten: true, version: 1 });
    expect(await kv.read('secret/app/meta')).toMatchObject({
      data,
      customMetadata: { team: 'a', source: 'cert-manager/wildcard' },
      owner: 'SecretMirror team-a/wildcard',
    });
    expect((await v2Metadata('app/meta')).custom_metadata).toEqual({
      team: 'a',
      source: 'cert-manager/wildcard',
      [OWNER_METADATA_KEY]: 'SecretMirror team-a/wildcard',
    });
    expect(
      await kv.write('secret/app/meta', data, {
        customMetadata: { source: 'cert-manager/wildcard', team: 'a' },
      }),
    ).toEqual({ wrote: false, metadataWritten: false, version: 1 });
    // Metadata alone changes: no new version.
    expect(await kv.write('secret/app/meta', data, { customMetadata: { team: 'b' } })).toEqual({
      wrote: false,
      metadataWritten: true,
      version: 1,
    });
    expect(await kv.read('secret/app/meta')).toMatchObject({
      customMetadata: { team: 'b' },
      owner: 'SecretMirror team-a/wildcard',
      version: 1,
    });
    await kv.write('secret/app/meta', data, { owner: null });
    expect(await kv.owner('secret/app/meta')).toBeUndefined();
  });

  it('reads values that are not strings as their JSON text, and normalises them on write', async () => {
    await sys('POST', 'secret/data/app/json', {
      data: { s: 'x', n: 1, b: true, z: null, o: { a: [1, 'two'] } },
    });
    const got = await kv.read('secret/app/json');
    expect(got?.data).toEqual({ s: 'x', n: '1', b: 'true', z: 'null', o: '{"a":[1,"two"]}' });
    expect(got?.jsonKeys.sort()).toEqual(['b', 'n', 'o', 'z']);
    // The same text as strings is a change (the stored types differ): written once, then stable.
    expect(await kv.writeIfChanged('secret/app/json', got!.data)).toBe(true);
    expect((await kv.read('secret/app/json'))?.jsonKeys).toEqual([]);
    expect(await kv.writeIfChanged('secret/app/json', got!.data)).toBe(false);
    const err = await failure(kv.write('secret/app/json', { n: 1 } as never));
    expect(err.kind).toBe('usage');
    expect(err.message).toContain('the value of "n" is a number, not a string');
  });

  it('reads a secret whose latest version is deleted or destroyed as absent; its owner remains', async () => {
    await kv.write('secret/app/deleted', { v: secret('del1') }, { owner: 'mirror-a' });
    await sys('DELETE', 'secret/data/app/deleted');
    expect(await kv.read('secret/app/deleted')).toBeUndefined();
    expect(await kv.owner('secret/app/deleted')).toBe('mirror-a');
    // Writing it again makes version 2 (the cas is the deleted version).
    const again = await kv.write('secret/app/deleted', { v: secret('del2') });
    expect(again).toMatchObject({ wrote: true, version: 2 });
    await sys('POST', 'secret/destroy/app/deleted', { versions: [2] });
    expect(await kv.read('secret/app/deleted')).toBeUndefined();
  });

  it('removes every version and the metadata; removing again is fine; lists what is left', async () => {
    await kv.write('secret/app/gone', { v: secret('g1') });
    await kv.write('secret/app/gone', { v: secret('g2') });
    await kv.write('secret/app/folder/inner', { v: secret('in') });
    expect(await kv.list('secret/app')).toEqual(expect.arrayContaining(['gone', 'folder/']));
    await kv.remove('secret/app/gone');
    await kv.remove('secret/app/gone');
    expect(await kv.read('secret/app/gone')).toBeUndefined();
    const meta = await root.request({
      method: 'GET',
      path: 'secret/metadata/app/gone',
      accept: [404],
    });
    expect(meta.status).toBe(404);
    expect(await kv.list('secret/app')).not.toContain('gone');
    expect(await kv.list('secret/app/nothing-here')).toEqual([]);
  });
});

describe('KV v1', () => {
  let kv: VaultKv;
  beforeAll(async () => {
    kv = new VaultKv(client(tokenAuth({ token: await childToken(['app'], 600) })));
  });

  it('writes only when changed, marks the owner in a reserved key, and removes the key', async () => {
    expect(await kv.read('kv1/app/db')).toBeUndefined();
    const data = { password: secret('v1') };
    expect(await kv.write('kv1/app/db', data, { owner: 'mirror-b' })).toEqual({
      wrote: true,
      metadataWritten: false,
    });
    expect(await kv.read('kv1/app/db')).toEqual({
      data,
      jsonKeys: [],
      kvVersion: 1,
      owner: 'mirror-b',
    });
    const raw = await sys<VaultEnvelope>('GET', 'kv1/app/db');
    expect(raw?.data).toEqual({ ...data, [OWNER_DATA_KEY]: 'mirror-b' });
    expect(await kv.writeIfChanged('kv1/app/db', { ...data })).toBe(false); // owner kept
    expect(await kv.owner('kv1/app/db')).toBe('mirror-b');
    expect(await kv.list('kv1/app')).toEqual(['db']);
    await kv.remove('kv1/app/db');
    expect(await kv.read('kv1/app/db')).toBeUndefined();
  });

  it('does not write at all when nothing changed: a read-only token can "write" the same data', async () => {
    const data = { k: secret('v1ro') };
    await rootKv.write('kv1/ro/x', data);
    const reader = new VaultKv(client(tokenAuth({ token: await childToken(['reader'], 600) })));
    expect(await reader.writeIfChanged('kv1/ro/x', data)).toBe(false);
    expect((await failure(reader.write('kv1/ro/x', { k: secret('v1ro2') }))).kind).toBe(
      'permission-denied',
    );
  });

  it('refuses what KV v1 cannot do: check-and-set, custom metadata, the reserved key', async () => {
    for (const [opts, data, message] of [
      [{ cas: 1 }, { a: 'b' }, 'which has no check-and-set'],
      [{ customMetadata: { a: 'b' } }, { a: 'b' }, 'which has no custom metadata'],
      [{}, { [OWNER_DATA_KEY]: 'x' }, `its owner in the reserved key "${OWNER_DATA_KEY}"`],
    ] as const) {
      const err = await failure(kv.write('kv1/app/refused', data, opts));
      expect(err.kind).toBe('usage');
      expect(err.message).toContain(message);
    }
    expect(await kv.read('kv1/app/refused')).toBeUndefined();
  });

  it('uses a stated version, but only in a mount Vault reports as KV', async () => {
    const stated = new VaultKv(root, { mounts: { kv1: 1, auth: 1, secret: 1 } });
    expect(await stated.locate('kv1/app/x')).toEqual({ mount: 'kv1', version: 1, key: 'app/x' });
    // The stated version wins over the mount's options...
    expect(await stated.locate('secret/app/x')).toEqual({
      mount: 'secret',
      version: 1,
      key: 'app/x',
    });
    // ...but never makes a KV secret of another engine's path (issue 36: the token's own).
    const err = await failure(stated.read('auth/token/lookup-self'));
    expect(err.kind).toBe('usage');
    expect(err.message).toContain('not a KV secrets engine (rule: a KV source or destination');
  });
});

describe('token auth', () => {
  it('renews a short-lived token before it expires, and keeps using it past its first TTL', async () => {
    // Renewing at half the TTL leaves 1.5 s of slack for a busy machine.
    const token = await childToken(['app'], 3);
    const c = client(tokenAuth({ token }), { renewFraction: 0.5 });
    const kv = new VaultKv(c);
    await kv.write('secret/app/renewed', { v: secret('renew') });
    // Three renewals, 1.5 s apart: the 3 s the token was created with are long gone.
    await eventually(() => expect(c.session.stats().renewals).toBeGreaterThanOrEqual(3), {
      timeoutMs: 15_000,
    });
    const looked = await sys<VaultEnvelope<{ issue_time: string; expire_time: string }>>(
      'POST',
      'auth/token/lookup',
      { token },
    );
    const { issue_time, expire_time } = looked!.data!;
    expect(Date.parse(expire_time) - Date.parse(issue_time)).toBeGreaterThan(4_000);
    expect(await kv.read('secret/app/renewed')).toBeDefined();
    expect(c.session.stats().logins).toBe(1);
  });

  it('says clearly that a revoked static token cannot be replaced', async () => {
    const token = await childToken(['app'], 600);
    const c = client(tokenAuth({ token }));
    const kv = new VaultKv(c, { mounts: { secret: 2 } });
    await kv.write('secret/app/revoked', { v: secret('rev') });
    await sys('POST', 'auth/token/revoke', { token });
    const err = await failure(kv.read('secret/app/revoked'));
    expect(err.kind).toBe('login-failed');
    expect(err.message).toBe(
      'Vault refused the static Vault token (lookup-self answered 403): it was revoked, has expired, or is not a token of this Vault; give mirrorhub a valid token',
    );
  });

  it('a policy denial is not mistaken for a dead token (no re-login)', async () => {
    const c = client(tokenAuth({ token: await childToken(['app'], 600) }));
    const err = await failure(new VaultKv(c, { mounts: { secret: 2 } }).read('secret/other/x'));
    expect(err.kind).toBe('permission-denied');
    expect(c.session.stats().logins).toBe(1);
  });
});

describe('AppRole auth', () => {
  let roleId: string;
  let secretId: string;
  beforeAll(async () => {
    // A mount path of our own, to prove it is configurable.
    await sys('POST', 'sys/auth/approle-hub', { type: 'approle' });
    await sys('POST', 'auth/approle-hub/role/hub', {
      token_policies: ['app'],
      token_ttl: '3s',
      token_max_ttl: '60s',
    });
    roleId = (await sys<VaultEnvelope<{ role_id: string }>>(
      'GET',
      'auth/approle-hub/role/hub/role-id',
    ))!.data!.role_id;
    secretId = (await sys<VaultEnvelope<{ secret_id: string }>>(
      'POST',
      'auth/approle-hub/role/hub/secret-id',
    ))!.data!.secret_id;
    secrets.add(roleId);
    secrets.add(secretId);
  });

  it('logs in, renews its token before it expires, and logs in again after the token is revoked', async () => {
    const c = client(appRoleAuth({ roleId, secretId, mount: 'approle-hub' }), {
      renewFraction: 0.5,
    });
    const kv = new VaultKv(c);
    await kv.write('secret/app/approle', { v: secret('ar') });
    expect(c.session.stats().logins).toBe(1);
    await eventually(() => expect(c.session.stats().renewals).toBeGreaterThanOrEqual(1), {
      timeoutMs: 10_000,
    });
    // Revoke every token this role's logins made, behind the client's back.
    await sys('PUT', 'sys/leases/revoke-prefix/auth/approle-hub/login');
    // Concurrent requests hit the 403 together and share one login.
    const reads = await Promise.all([1, 2, 3, 4, 5].map(() => kv.read('secret/app/approle')));
    expect(reads.every((r) => r !== undefined)).toBe(true);
    expect(c.session.stats().logins).toBe(2);
  });

  it('says what to check when the secret_id is wrong, without printing it', async () => {
    const wrong = '00000000-1111-2222-3333-444444444444';
    secrets.add(wrong);
    const c = client(appRoleAuth({ roleId, secretId: wrong, mount: 'approle-hub' }));
    const err = await failure(c.login());
    expect(err.kind).toBe('login-failed');
    expect(err.message).toMatch(
      /^AppRole login at auth\/approle-hub failed \(400\): Vault says: .+; check role_id and secret_id/,
    );
  });

  it('says when the auth mount does not exist', async () => {
    const c = client(appRoleAuth({ roleId, secretId, mount: 'nope' }));
    const err = await failure(c.login());
    expect(err.kind).toBe('login-failed');
    expect(err.message).toContain(
      'and that an auth method is mounted at auth/nope (Vault answers 403 when none is)',
    );
  });
});

describe('namespaces', () => {
  it('reads and writes KV inside a namespace through X-Vault-Namespace', async () => {
    await sys('POST', 'sys/namespaces/team-a', {});
    await sys('POST', 'sys/mounts/kv', { type: 'kv', options: { version: '2' } }, 'team-a');
    const inNs = client(tokenAuth({ token: bao.rootToken }), { namespace: 'team-a' });
    const kv = new VaultKv(inNs);
    const data = { v: secret('ns') };
    expect(await kv.locate('kv/app/x')).toEqual({ mount: 'kv', version: 2, key: 'app/x' });
    expect(await kv.writeIfChanged('kv/app/x', data)).toBe(true);
    expect((await kv.read('kv/app/x'))?.data).toEqual(data);
    // Outside the namespace there is no such mount: an error, not an absent secret (a stated
    // version too: the mount is asked of Vault either way).
    const outside = await failure(new VaultKv(root, { mounts: { kv: 2 } }).read('kv/app/x'));
    expect(outside.kind).toBe('permission-denied');
    expect(outside.message).toContain(
      'cannot find the mount of kv/app/x: Vault answered 403 to sys/internal/ui/mounts, which it does when no mount is there',
    );
    // Inside, errors name the namespace.
    const missing = await failure(new VaultKv(inNs, { mounts: { nope: 2 } }).read('nope/x'));
    expect(missing.message).toContain(
      'cannot find the mount of nope/x: Vault answered 403 to sys/internal/ui/mounts, which it does when no mount is there (namespace team-a)',
    );
  });
});

describe('TLS', () => {
  it('verifies the server against the CA it is given', async () => {
    expect(bao.address).toMatch(/^https:/);
    expect((await rootKv.read('secret/app/db'))?.data.username).toBe('app');
  });

  it('refuses a server whose CA it was not given, and says how to fix it', async () => {
    const c = client(tokenAuth({ token: bao.rootToken }), { caPem: undefined });
    const err = await failure(c.login());
    expect(err.kind).toBe('tls');
    expect(err.message).toMatch(
      new RegExp(
        `^GET auth/token/lookup-self: TLS verification of ${bao.address.replace(/\./g, '\\.')} failed \\([A-Z_]+\\): its certificate is not signed by a CA this client trusts: give the PEM of the CA that issued it as the Vault CA bundle`,
      ),
    );
  });
});

describe('redaction', () => {
  it('no data value, token, secret_id or lease id reaches an error or a log line', async () => {
    // A few more provocations with secrets in flight.
    const reader = new VaultKv(client(tokenAuth({ token: await childToken(['reader'], 600) })));
    await failure(reader.write('secret/ro/denied', { password: secret('denied') }));
    await failure(reader.write('kv1/ro/denied', { password: secret('denied-v1') }));
    const bogusLease = `pki/issue/leased/${secret('lease')}`;
    await failure(renewLease(root, bogusLease, 30));
    await failure(
      revokeLease(client(tokenAuth({ token: await childToken(['app'], 600) })), bogusLease),
    );

    expect(provoked.length).toBeGreaterThan(15);
    const texts = provoked.map((e) => {
      const err = e as VaultError;
      return [
        String(err),
        err.stack,
        JSON.stringify(err),
        inspect(err, { depth: 5 }),
        ...err.errors,
      ].join('\n');
    });
    const logs = logLines.join('');
    expect(logs).toContain('vault login succeeded');
    expect(logs).toContain('vault request');
    // Clients, sessions and KV handles print and serialise without credentials.
    const printed = inspect(clients, { depth: 10 }) + JSON.stringify(clients);
    expect(printed).toContain('AppRole login at auth/approle-hub');
    for (const s of secrets) {
      for (const t of texts) expect(t).not.toContain(s);
      expect(logs).not.toContain(s);
      expect(printed).not.toContain(s);
    }
    // Tokens nobody listed (those AppRole minted) have OpenBao's shape: none printed either.
    expect(logs + texts.join('\n')).not.toMatch(/\b[sbr]\.[A-Za-z0-9]{20,}/);
  });
});
