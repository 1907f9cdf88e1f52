// What a user meets when Vault fails, on a real OpenBao: a persistent (non-dev) server over TLS
// that the test seals, kills and starts again on the same port (it comes back sealed, its data
// and tokens kept), the kit's kube-apiserver, hub and agent in process and never restarted.
// Sealed and down: the mirror is Degraded with its copies untouched, an Event says why, and it
// is Active again once Vault is unsealed, with a later change in Vault reaching the copy (the
// hub's token works again). A CA bundle that did not sign Vault's certificate: the connection
// is Ready=False/TLSError, the mirror in Error, both say which certificate to fix. And no token,
// unseal key or value in logs, Events or status.
import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { tokenAuth, VaultClient, type VaultEnvelope } from '@mirrorhub/hub/vault/index';
import { startPersistentOpenBao, type PersistentOpenBao } from '@mirrorhub/infra/components/index';
import { GROUP, VERSION } from '@mirrorhub/shared/api/index';
import { mergePatchOptions } from '@mirrorhub/shared/testing/index';

import { Engine, secretMirror } from '../support/engine.js';
import { eventually } from '../support/eventually.js';
import { createObject as createObjectAs, getObject as getObjectAs } from '../support/vault.js';

const POLL = 10;
/** A poll period, the retry backoff and a reconcile, with room to spare on 2 busy cores. */
const WAIT = { timeoutMs: 45_000, intervalMs: 250 };
const TEAM = 'team-f';
const APP = 'app-f';

let e: Engine;
let bao: PersistentOpenBao;
const secrets = new Set<string>();

/** A request with the root token, on a fresh client (the server may have restarted since). */
async function sys(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown) {
  const root = new VaultClient({
    address: bao.address,
    caPem: bao.caPem,
    auth: tokenAuth({ token: bao.rootToken }),
  });
  try {
    return (await root.request<VaultEnvelope>({ method, path, body })).body;
  } finally {
    await root.close();
  }
}

const createObject = (plural: string, body: Record<string, unknown>, namespace?: string) =>
  createObjectAs(e.kc, plural, body, namespace);
const connection = (name: string) => getObjectAs(e.kc, 'vaultconnections', name, TEAM);

const vaultMirror = (name: string, connectionName: string) =>
  secretMirror(TEAM, name, {
    source: {
      kind: 'Vault',
      vault: {
        connectionRef: { kind: 'VaultConnection', name: connectionName },
        path: 'secret/team-f/db',
      },
    },
    destination: { namespaces: [APP], name },
    pollPeriodSeconds: POLL,
  } as never);

/** The copy in APP: its data and the resourceVersion that proves nobody wrote it. */
async function copy(name: string): Promise<{ data?: Record<string, string>; rv?: string }> {
  const s = await e.readSecret(APP, name);
  return {
    data: await e.secretData(APP, name),
    rv: s?.metadata?.resourceVersion,
  };
}

interface Seen {
  reason: string;
  message: string;
  /** The hub's clock when it recorded the Event (the same process as this test). */
  at: number;
}

/** Events about `name` in TEAM recorded at `since` or later, oldest first. */
async function eventsSince(name: string, since = 0): Promise<Seen[]> {
  return (await e.events(TEAM, name))
    .map((x) => ({
      reason: x.reason ?? '',
      message: x.message ?? '',
      at: new Date(x.eventTime ?? x.lastTimestamp ?? x.firstTimestamp ?? 0).getTime(),
    }))
    .filter((x) => x.at >= since)
    .sort((a, b) => a.at - b.at);
}

/**
 * Since `since`: exactly one SourceUnreadable Warning about mirror db (one per outage, not one
 * per poll) whose message says `why`, and, with `recovered`, a Synced Event after it.
 */
async function outageEvents(since: number, why: string, recovered: boolean): Promise<void> {
  await eventually(async () => {
    const seen = await eventsSince('db', since);
    const unreadable = seen.filter((x) => x.reason === 'SourceUnreadable');
    expect(unreadable).toHaveLength(1);
    expect(unreadable[0]!.message).toContain(why);
    expect(unreadable[0]!.message).toContain('secret/team-f/db');
    const synced = seen.filter((x) => x.reason === 'Synced' && x.at >= unreadable[0]!.at);
    expect(synced.length > 0).toBe(recovered);
  }, WAIT);
}

beforeAll(async () => {
  [e, bao] = await Promise.all([Engine.start(), startPersistentOpenBao({ tls: true })]);
  secrets.add(bao.rootToken).add(bao.unsealKey);
  await sys('PUT', 'sys/policies/acl/team-f', {
    policy: `
      path "secret/data/team-f/*" { capabilities = ["read"] }
      path "secret/metadata/team-f/*" { capabilities = ["read"] }`,
  });
  // Persistent storage: this token outlives a restart of the server, as in a real Vault.
  const token = (await sys('POST', 'auth/token/create', { policies: ['team-f'], ttl: '1h' }))?.auth
    ?.client_token as string;
  secrets.add(token);
  await sys('POST', 'secret/data/team-f/db', { data: { password: 'pw-f1-s3cret' } });
  secrets.add('pw-f1-s3cret');

  for (const ns of [TEAM, APP]) await e.ensureNamespace(ns);
  await e.putSecret(TEAM, 'vault-token', { token });
  await createObject(
    'vaultconnections',
    {
      kind: 'VaultConnection',
      metadata: { name: 'vault', namespace: TEAM },
      spec: {
        address: bao.address,
        caBundle: bao.caPem,
        auth: { token: { secretRef: { name: 'vault-token', key: 'token' } } },
      },
    },
    TEAM,
  );
  await e.applyMirror(vaultMirror('db', 'vault'));
}, 120_000);

afterAll(async () => {
  await e?.stop();
  await bao?.destroy();
});

describe('Vault failures, on a real OpenBao', () => {
  it('delivers the Vault secret while OpenBao serves', async () => {
    await eventually(
      async () => expect((await copy('db')).data).toEqual({ password: 'pw-f1-s3cret' }),
      WAIT,
    );
    await e.mirrorStatus('SecretMirror', 'db', TEAM, (m) => expect(m.status?.phase).toBe('Active'));
    expect((await connection('vault')).status).toMatchObject({ ready: true, authMethod: 'token' });
  });

  it('sealed: Degraded with the copy untouched and an Event; Active again on unseal, same hub', async () => {
    const hub = e.hub;
    const before = await copy('db');
    const since = Date.now();

    await bao.seal();
    // kubectl get smir: STATUS Degraded, SYNCED still 1/1; the message says why and what is kept.
    const m = await e.mirrorStatus(
      'SecretMirror',
      'db',
      TEAM,
      (m) => {
        expect(m.status?.phase).toBe('Degraded');
        expect(m.status?.message).toContain('Vault is sealed');
      },
      WAIT.timeoutMs,
    );
    expect(m.status?.synced).toBe('1/1');
    expect(m.status?.message).toContain(
      'cannot read source Vault secret/team-f/db (VaultConnection team-f/vault)',
    );
    expect(m.status?.message).toContain('copies are kept as they are');
    expect(m.status?.conditions?.find((c) => c.type === 'SourceFound')).toMatchObject({
      status: 'Unknown',
      reason: 'SourceUnreadable',
    });
    await outageEvents(since, 'Vault is sealed', false);
    expect(await copy('db')).toEqual(before);

    await bao.unseal();
    await e.mirrorStatus(
      'SecretMirror',
      'db',
      TEAM,
      (m) => expect(m.status?.phase).toBe('Active'),
      WAIT.timeoutMs,
    );
    await outageEvents(since, 'Vault is sealed', true);
    expect(await copy('db')).toEqual(before);
    expect(e.hub).toBe(hub);
  }, 120_000);

  it('killed and started again: Degraded while down and while sealed, Active after unseal; a later change arrives', async () => {
    const before = await copy('db');
    const since = Date.now();

    await bao.kill();
    await e.mirrorStatus(
      'SecretMirror',
      'db',
      TEAM,
      (m) => {
        expect(m.status?.phase).toBe('Degraded');
        expect(m.status?.message).toContain('cannot reach Vault');
        expect(m.status?.message).toContain('copies are kept as they are');
      },
      WAIT.timeoutMs,
    );
    await outageEvents(since, 'cannot reach Vault', false);
    expect(await copy('db')).toEqual(before);

    // Back on the same port, sealed: still Degraded, now saying so; still the one Event.
    await bao.start();
    await e.mirrorStatus(
      'SecretMirror',
      'db',
      TEAM,
      (m) => {
        expect(m.status?.phase).toBe('Degraded');
        expect(m.status?.message).toContain('Vault is sealed');
        expect(m.status?.message).toContain('copies are kept as they are');
      },
      WAIT.timeoutMs,
    );
    await outageEvents(since, 'cannot reach Vault', false);
    expect(await copy('db')).toEqual(before);

    await bao.unseal();
    await e.mirrorStatus(
      'SecretMirror',
      'db',
      TEAM,
      (m) => expect(m.status?.phase).toBe('Active'),
      WAIT.timeoutMs,
    );
    await outageEvents(since, 'cannot reach Vault', true);
    expect(await copy('db')).toEqual(before);

    // The hub reads with its token again: a change made after the restart reaches the copy.
    await sys('POST', 'secret/data/team-f/db', { data: { password: 'pw-f2-s3cret' } });
    secrets.add('pw-f2-s3cret');
    await eventually(
      async () => expect((await copy('db')).data).toEqual({ password: 'pw-f2-s3cret' }),
      WAIT,
    );
    await e.mirrorStatus('SecretMirror', 'db', TEAM, (m) => expect(m.status?.phase).toBe('Active'));
  }, 120_000);

  it("a CA bundle that did not sign Vault's certificate: connection TLSError, mirror Error, both say so; the right CA fixes it", async () => {
    // The kit cluster's CA: a real CA, just not OpenBao's.
    const wrongCa = e.kit.cluster('hub').caPem;
    expect(wrongCa).not.toBe(bao.caPem);
    await createObject(
      'vaultconnections',
      {
        kind: 'VaultConnection',
        metadata: { name: 'wrong-ca', namespace: TEAM },
        spec: {
          address: bao.address,
          caBundle: wrongCa,
          auth: { token: { secretRef: { name: 'vault-token', key: 'token' } } },
        },
      },
      TEAM,
    );
    await e.applyMirror(vaultMirror('db-wrong-ca', 'wrong-ca'));

    // kubectl get vconn: READY false; the condition and the message say what to fix.
    const conn = await eventually(async () => {
      const c = await connection('wrong-ca');
      expect(c.status?.ready).toBe(false);
      expect(c.status?.conditions?.find((x) => x.type === 'Ready')).toMatchObject({
        status: 'False',
        reason: 'TLSError',
      });
      return c;
    }, WAIT);
    expect(conn.status?.message).toContain(`TLS verification of ${bao.address} failed`);
    expect(conn.status?.message).toContain('certificate is not signed by a CA this client trusts');
    expect(conn.status?.message).toContain('CA bundle');
    await eventually(
      async () =>
        expect((await eventsSince('wrong-ca')).map((x) => x.reason)).toContain('TLSError'),
      WAIT,
    );

    // kubectl get smir: STATUS Error (nothing was ever delivered through it), and an Event.
    const m = await e.mirrorStatus(
      'SecretMirror',
      'db-wrong-ca',
      TEAM,
      (m) => expect(m.status?.phase).toBe('Error'),
      WAIT.timeoutMs,
    );
    expect(m.status?.message).toContain(
      'cannot read source Vault secret/team-f/db (VaultConnection team-f/wrong-ca)',
    );
    expect(m.status?.message).toContain('certificate is not signed by a CA this client trusts');
    expect(m.status?.conditions?.find((c) => c.type === 'SourceFound')).toMatchObject({
      status: 'Unknown',
      reason: 'SourceUnreadable',
    });
    await eventually(async () => {
      const reasons = (await eventsSince('db-wrong-ca')).map((x) => x.reason);
      expect(reasons).toContain('SourceUnreadable');
    }, WAIT);
    expect(await e.secretData(APP, 'db-wrong-ca')).toBeUndefined();

    // The right CA: the connection logs in, the mirror delivers.
    await e.kc.makeApiClient(CustomObjectsApi).patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        namespace: TEAM,
        plural: 'vaultconnections',
        name: 'wrong-ca',
        body: { spec: { caBundle: bao.caPem } },
      },
      mergePatchOptions(),
    );
    await eventually(
      async () => expect((await connection('wrong-ca')).status?.ready).toBe(true),
      WAIT,
    );
    await eventually(
      async () =>
        expect(await e.secretData(APP, 'db-wrong-ca')).toEqual({ password: 'pw-f2-s3cret' }),
      WAIT,
    );
    await e.mirrorStatus('SecretMirror', 'db-wrong-ca', TEAM, (m) =>
      expect(m.status?.phase).toBe('Active'),
    );
  }, 120_000);

  it('puts no token, unseal key or value in logs, Events or status', async () => {
    const texts = [e.logs.text()];
    for (const name of ['db', 'db-wrong-ca']) {
      texts.push(JSON.stringify((await e.getMirror('SecretMirror', name, TEAM)) ?? {}));
      texts.push(JSON.stringify(await e.events(TEAM, name)));
    }
    for (const name of ['vault', 'wrong-ca']) {
      texts.push(JSON.stringify(await connection(name)));
      texts.push(JSON.stringify(await e.events(TEAM, name)));
    }
    const all = texts.join('\n');
    expect(all).toContain('Vault is sealed'); // the scan reads what the failures wrote
    for (const s of secrets) expect(all).not.toContain(s);
  });
});
