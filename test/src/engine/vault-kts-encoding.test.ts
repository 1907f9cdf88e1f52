// A fleet migrating from KTS mirrors cluster by cluster, on a real OpenBao: KTS writes a Secret to
// Vault as Go's encoding/json writes its map[string][]byte (each value the standard base64 of the
// bytes, pkg/backend/dest_vault.go) and decodes the values on read (pkg/backend/vault.go). A
// mirrorhub cluster declares that encoding (source.vault.encoding / destination.vault.encoding
// Base64) and then reads what the KTS clusters publish and publishes what they read, PEM text
// and binary values alike, byte for byte.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { tokenAuth, VaultClient, type VaultEnvelope } from '@mirrorhub/hub/vault/index';
import { startOpenBao, type OpenBao } from '@mirrorhub/infra/components/index';
import { mergePatchOptions } from '@mirrorhub/shared/testing/index';

import { clusterSecretMirror, Engine } from '../support/engine.js';
import { eventually } from '../support/eventually.js';
import { createObject } from '../support/vault.js';

const WAIT = { timeoutMs: 30_000, intervalMs: 200 };

let e: Engine;
let bao: OpenBao;
let root: VaultClient;
const secrets = new Set<string>();

const PEM =
  '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU-kts-s3cret\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN PRIVATE KEY-----\nMIIE-kts-key-s3cret\n-----END PRIVATE KEY-----\n';
// A PKCS#12-like blob: not UTF-8 (0xff, 0xfe, a lone continuation byte), with a NUL.
const BINARY = Buffer.from([0x30, 0x82, 0x01, 0xff, 0xfe, 0x00, 0x80, 0xc3, 0x28, 0x0a]);
/** What KTS puts in Vault for a value: Go's json.Marshal of a []byte. */
const kts = (bytes: Buffer | string) => Buffer.from(bytes).toString('base64');

async function vault(c: VaultClient, method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown) {
  const res = await c.request<VaultEnvelope>({ method, path, body, accept: [404] });
  return res.status === 404 ? undefined : res.body;
}

/** Sum of a hub counter's samples whose labels include `labels`. */
async function counter(name: string, labels: Record<string, string> = {}) {
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

/** A copy's values as bytes. */
async function copyBytes(ns: string, name: string): Promise<Record<string, Buffer> | undefined> {
  const s = await e.readSecret(ns, name);
  if (!s) return undefined;
  return Object.fromEntries(
    Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')]),
  );
}

const vaultRef = (path: string, extra: Record<string, unknown> = {}) => ({
  connectionRef: { kind: 'ClusterVaultConnection', name: 'vault' },
  path,
  ...extra,
});

beforeAll(async () => {
  [e, bao] = await Promise.all([Engine.start(), startOpenBao()]);
  secrets.add(bao.rootToken);
  root = new VaultClient({ address: bao.address, auth: tokenAuth({ token: bao.rootToken }) });
  await vault(root, 'POST', 'sys/mounts/kv1', { type: 'kv', options: { version: '1' } });
  await vault(root, 'PUT', 'sys/policies/acl/mirrorhub', {
    policy: `
      path "secret/*" { capabilities = ["create", "read", "update", "delete", "list"] }
      path "kv1/*" { capabilities = ["create", "read", "update", "delete", "list"] }`,
  });
  const token = (await vault(root, 'POST', 'auth/token/create', { policies: ['mirrorhub'] }))?.auth
    ?.client_token as string;
  secrets.add(token);
  for (const ns of ['apps', 'certs']) await e.ensureNamespace(ns);
  await e.putSecret('mirrorhub-system', 'vault-token', { token });
  await createObject(e.kc, 'clustervaultconnections', {
    kind: 'ClusterVaultConnection',
    metadata: { name: 'vault' },
    spec: {
      address: bao.address,
      auth: {
        token: { secretRef: { namespace: 'mirrorhub-system', name: 'vault-token', key: 'token' } },
      },
    },
  });
  for (const s of [PEM, KEY]) secrets.add(s.split('\n')[1]!);
}, 180_000);

afterAll(async () => {
  await e?.stop();
  await root?.close();
  await bao?.stop();
});

describe('KTS publishes, mirrorhub reads (source.vault.encoding Base64)', () => {
  it('a certificate and a binary value KTS wrote to KV v2 arrive as the original bytes', async () => {
    // The very request KTS's Vault destination makes: WriteData("secret/data/<path>", {"data": Secret.Data}).
    await vault(root, 'POST', 'secret/data/kts/tls', {
      data: { 'tls.crt': kts(PEM), 'tls.key': kts(KEY), 'keystore.p12': kts(BINARY) },
    });
    await e.applyMirror(
      clusterSecretMirror('kts-consume', {
        source: { kind: 'Vault', vault: vaultRef('secret/kts/tls', { encoding: 'Base64' }) },
        destination: { namespaces: ['apps'], name: 'kts-tls' },
        pollPeriodSeconds: 10,
      } as never),
    );
    // The same path read as mirrorhub reads by default, side by side: still encoded, the
    // breakage the encoding exists for (and proof the two readings do not share a poll).
    await e.applyMirror(
      clusterSecretMirror('kts-consume-plain', {
        source: { kind: 'Vault', vault: vaultRef('secret/kts/tls') },
        destination: { namespaces: ['apps'], name: 'kts-tls-plain' },
        pollPeriodSeconds: 10,
      } as never),
    );
    await eventually(async () => {
      expect(await copyBytes('apps', 'kts-tls')).toEqual({
        'tls.crt': Buffer.from(PEM),
        'tls.key': Buffer.from(KEY),
        'keystore.p12': BINARY,
      });
    }, WAIT);
    await e.mirrorStatus('ClusterSecretMirror', 'kts-consume', undefined, (m) =>
      expect(m.status?.phase).toBe('Active'),
    );
    await eventually(async () => {
      expect(await e.secretData('apps', 'kts-tls-plain')).toMatchObject({
        'tls.crt': kts(PEM),
      });
    }, WAIT);
  });

  it('KV v1: KTS nests the values under the key data, and they are read from there', async () => {
    // KTS writes {"data": {...}} to the path it is given; on KV v1 that is one key, data.
    await vault(root, 'POST', 'kv1/kts/ca', { data: { 'ca.crt': kts(PEM) } });
    await e.applyMirror(
      clusterSecretMirror('kts-consume-v1', {
        source: {
          kind: 'Vault',
          vault: vaultRef('kv1/kts/ca', { kvVersion: 1, encoding: 'Base64' }),
        },
        destination: { namespaces: ['apps'], name: 'kts-ca' },
        pollPeriodSeconds: 10,
      } as never),
    );
    await eventually(async () => {
      expect(await copyBytes('apps', 'kts-ca')).toEqual({ 'ca.crt': Buffer.from(PEM) });
    }, WAIT);
  });

  it('a value that is not base64: Error naming the key (never the value), and the copy is kept', async () => {
    const notBase64 = 'plain text, not base64 s3cret!';
    secrets.add(notBase64);
    await vault(root, 'POST', 'secret/data/kts/tls', {
      data: { 'tls.crt': kts(PEM), 'tls.key': notBase64, 'keystore.p12': kts(BINARY) },
    });
    const m = await e.mirrorStatus(
      'ClusterSecretMirror',
      'kts-consume',
      undefined,
      (x) => {
        expect(x.status?.phase).toBe('Error');
        expect(x.status?.message).toContain('"tls.key"');
        expect(x.status?.message).toContain('not base64');
        expect(x.status?.message).toContain('copies are kept');
      },
      30_000,
    );
    expect(JSON.stringify(m.status)).not.toContain(notBase64);
    expect(await copyBytes('apps', 'kts-tls')).toEqual({
      'tls.crt': Buffer.from(PEM),
      'tls.key': Buffer.from(KEY),
      'keystore.p12': BINARY,
    });
    // Fixed in Vault: Active again with the new bytes.
    const KEY2 = KEY.replace('key', 'key2');
    secrets.add(KEY2.split('\n')[1]!);
    await vault(root, 'POST', 'secret/data/kts/tls', {
      data: { 'tls.crt': kts(PEM), 'tls.key': kts(KEY2), 'keystore.p12': kts(BINARY) },
    });
    await eventually(async () => {
      expect((await copyBytes('apps', 'kts-tls'))?.['tls.key']).toEqual(Buffer.from(KEY2));
    }, WAIT);
    await e.mirrorStatus('ClusterSecretMirror', 'kts-consume', undefined, (x) =>
      expect(x.status?.phase).toBe('Active'),
    );
  });
});

describe('mirrorhub publishes, KTS reads (destination.vault.encoding Base64)', () => {
  beforeAll(async () => {
    await e.putSecret(
      'certs',
      'app-tls',
      { 'tls.crt': PEM, 'tls.key': KEY },
      { data: { 'keystore.p12': BINARY.toString('base64') } },
    );
  });

  it('writes exactly what KTS writes: each value the base64 of the source bytes', async () => {
    await e.applyMirror(
      clusterSecretMirror('kts-publish', {
        source: { kind: 'Secret', name: 'app-tls', namespace: 'certs' },
        destination: { vault: vaultRef('secret/kts-published/app-tls', { encoding: 'Base64' }) },
        pollPeriodSeconds: 3600,
      } as never),
    );
    await e.mirrorStatus('ClusterSecretMirror', 'kts-publish', undefined, (m) =>
      expect(m.status).toMatchObject({ phase: 'Active', vault: { version: 1 } }),
    );
    const raw = await vault(root, 'GET', 'secret/data/kts-published/app-tls');
    expect(raw?.data?.data).toEqual({
      'tls.crt': kts(PEM),
      'tls.key': kts(KEY),
      'keystore.p12': kts(BINARY),
    });
  });

  it('an unchanged source writes nothing: Vault is compared in the same encoding', async () => {
    const inspects = await counter('mirrorhub_vault_requests_total', { operation: 'inspect' });
    const writes = await counter('mirrorhub_vault_requests_total', { operation: 'write' });
    // A label on the source: the mirror reconciles and reads Vault, its data is the same.
    await e
      .core()
      .patchNamespacedSecret(
        { name: 'app-tls', namespace: 'certs', body: { metadata: { labels: { touched: 'yes' } } } },
        mergePatchOptions(),
      );
    await eventually(async () => {
      expect(
        await counter('mirrorhub_vault_requests_total', { operation: 'inspect' }),
      ).toBeGreaterThan(inspects);
    }, WAIT);
    expect(await counter('mirrorhub_vault_requests_total', { operation: 'write' })).toBe(writes);
    const meta = await vault(root, 'GET', 'secret/metadata/kts-published/app-tls');
    expect(meta?.data?.current_version).toBe(1);
  });

  it('KV v1: the values are base64, the owner mark _mirrorhub_owner stays plain text', async () => {
    await e.applyMirror(
      clusterSecretMirror('kts-publish-v1', {
        source: { kind: 'Secret', name: 'app-tls', namespace: 'certs' },
        destination: {
          vault: vaultRef('kv1/kts-published/app-tls', { kvVersion: 1, encoding: 'Base64' }),
        },
        template: { keys: [{ from: 'tls.crt' }, { from: 'keystore.p12' }] },
      } as never),
    );
    await eventually(async () => {
      expect((await vault(root, 'GET', 'kv1/kts-published/app-tls'))?.data).toEqual({
        'tls.crt': kts(PEM),
        'keystore.p12': kts(BINARY),
        _mirrorhub_owner: 'hub/ClusterSecretMirror//kts-publish-v1',
      });
    }, WAIT);
  });

  it('what mirrorhub publishes in Base64 comes back byte for byte through a Base64 source', async () => {
    await e.applyMirror(
      clusterSecretMirror('kts-roundtrip', {
        source: {
          kind: 'Vault',
          vault: vaultRef('secret/kts-published/app-tls', { encoding: 'Base64' }),
        },
        destination: { namespaces: ['apps'], name: 'app-tls-roundtrip' },
        pollPeriodSeconds: 10,
      } as never),
    );
    await eventually(async () => {
      expect(await copyBytes('apps', 'app-tls-roundtrip')).toEqual({
        'tls.crt': Buffer.from(PEM),
        'tls.key': Buffer.from(KEY),
        'keystore.p12': BINARY,
      });
    }, WAIT);
  });
});

describe('the field', () => {
  it('is refused on a dynamic source, which returns credentials as they are', async () => {
    const err = await e
      .applyMirror(
        clusterSecretMirror('kts-dynamic', {
          source: {
            kind: 'Vault',
            vault: vaultRef('database/creds/app', { dynamic: {}, encoding: 'Base64' }),
          },
          destination: { namespaces: ['apps'], name: 'db' },
        } as never),
      )
      .catch((x: unknown) => x);
    expect((err as { code?: number }).code).toBe(422);
    const status = JSON.parse(String((err as { body?: string }).body)) as { message: string };
    expect(status.message).toMatch(/encoding is for KV secrets/);
  });

  it('puts no secret value or token in logs, Events or status', async () => {
    const texts = [e.logs.text()];
    for (const name of [
      'kts-consume',
      'kts-consume-plain',
      'kts-consume-v1',
      'kts-publish',
      'kts-publish-v1',
      'kts-roundtrip',
    ]) {
      texts.push(JSON.stringify((await e.getMirror('ClusterSecretMirror', name)) ?? {}));
      texts.push(JSON.stringify(await e.events('default', name)));
    }
    const all = texts.join('\n');
    for (const s of secrets) {
      expect(all).not.toContain(s);
      expect(all).not.toContain(kts(s));
    }
  });
});
