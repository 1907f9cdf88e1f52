import { describe, expect, it } from 'vitest';
import type { AnyMirror, VaultSourceRef } from '@mirrorhub/shared/api/index';
import type { SourceObservation } from '../../status.js';
import {
  ownerMark,
  planVaultDestination,
  staleWrite,
  vaultData,
  type VaultDestinationInput,
  type VaultTarget,
} from './plan.js';

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const now = new Date('2026-11-24T10:00:00Z');
const dest: VaultSourceRef = {
  kind: 'Vault',
  connection: { kind: 'ClusterVaultConnection', name: 'vault' },
  path: 'secret/published/tls',
};
const OWNER = ownerMark('hub', { kind: 'ClusterSecretMirror', name: 'publish' });

function mirror(spec: Partial<AnyMirror['spec']> = {}, status?: AnyMirror['status']): AnyMirror {
  return {
    apiVersion: 'mirrorhub.io/v1alpha1',
    kind: 'ClusterSecretMirror',
    metadata: { name: 'publish', uid: 'u1', generation: 3 },
    spec: {
      source: { kind: 'Secret', name: 'tls', namespace: 'certs' },
      destination: {
        vault: {
          connectionRef: { kind: 'ClusterVaultConnection', name: 'vault' },
          path: dest.path,
        },
      },
      ...spec,
    },
    ...(status ? { status } : {}),
  } as AnyMirror;
}

const found: SourceObservation = {
  state: 'found',
  object: { type: 'kubernetes.io/tls', data: { 'tls.crt': b64('CERT'), 'tls.key': b64('KEY') } },
};
const data = { 'tls.crt': 'CERT', 'tls.key': 'KEY' };

function input(over: Partial<VaultDestinationInput> = {}): VaultDestinationInput {
  return {
    mirror: mirror(),
    source: { kind: 'Secret', name: 'tls', namespace: 'certs' },
    destination: dest,
    errors: [],
    observation: found,
    owner: OWNER,
    now,
    ...over,
  };
}

const target = (t: Partial<Extract<VaultTarget, { state: 'found' }>> = {}): VaultTarget => ({
  state: 'found',
  data,
  jsonKeys: [],
  owner: OWNER,
  version: 4,
  kvVersion: 2,
  ...t,
});

describe('planVaultDestination', () => {
  it('asks to read Vault first when the source is there', () => {
    const p = planVaultDestination(input());
    expect(p.needsTarget).toBe(true);
    expect(p.write).toBeUndefined();
    expect(p.data).toEqual(data);
  });

  it('creates a secret that does not exist (KV v2: check-and-set 0), then reports it Active with the version', () => {
    const absent: VaultTarget = { state: 'absent', version: 0, kvVersion: 2 };
    const first = planVaultDestination(input({ target: absent }));
    expect(first.write).toEqual({ data, cas: 0 });
    const done = planVaultDestination(
      input({ target: absent, outcome: { ok: true, wrote: true, version: 1 } }),
    );
    expect(done.status).toMatchObject({
      phase: 'Active',
      synced: '1/1',
      destination: 'Vault secret/published/tls',
      source: 'tls',
      vault: {
        connectionRef: { kind: 'ClusterVaultConnection', name: 'vault' },
        path: dest.path,
        version: 1,
      },
    });
    expect(done.events.map((e) => e.reason)).toEqual(['Synced', 'VaultWritten']);
    expect(JSON.stringify([done.status, done.events])).not.toMatch(/CERT|KEY"/);
  });

  it('writes nothing when Vault already holds the data under the mirror’s mark', () => {
    const p = planVaultDestination(input({ target: target() }));
    expect(p.write).toBeUndefined();
    expect(p.status.phase).toBe('Active');
    expect(p.status.message).toBe('Vault secret/published/tls is up to date (version 4)');
  });

  it('writes a new version (check-and-set on the read version) when the content differs', () => {
    const p = planVaultDestination(input({ target: target({ data: { 'tls.crt': 'OLD' } }) }));
    expect(p.write).toEqual({ data, cas: 4 });
  });

  it('KV v1: no check-and-set', () => {
    const p = planVaultDestination(
      input({ target: { state: 'absent', version: 0, kvVersion: 1 } }),
    );
    expect(p.write).toEqual({ data });
  });

  it('rewrites values Vault holds as non-strings even when their text is equal', () => {
    const p = planVaultDestination(input({ target: target({ jsonKeys: ['tls.crt'] }) }));
    expect(p.write).toBeDefined();
  });

  it.each<[string, VaultTarget, string]>([
    ['an unmarked secret', target({ owner: undefined }), 'has no owner mark'],
    [
      "another mirror's secret",
      target({ owner: 'hub/SecretMirror/team-a/x' }),
      'belongs to another mirror (hub/SecretMirror/team-a/x)',
    ],
    [
      'an unmarked KV v2 secret whose versions are all deleted (its metadata remains)',
      { state: 'absent', version: 2, kvVersion: 2 },
      'has no owner mark',
    ],
  ])('never overwrites %s (Skip): Error/Conflict with one Warning', (_, t, text) => {
    const p = planVaultDestination(input({ target: t }));
    expect(p.write).toBeUndefined();
    expect(p.status.phase).toBe('Error');
    expect(p.status.message).toContain(text);
    expect(p.status.conditions?.find((c) => c.type === 'Ready')?.reason).toBe('Conflict');
    expect(p.events.map((e) => e.reason)).toEqual(['Conflict']);
    // Still in conflict on the next reconcile: no second Event.
    const again = planVaultDestination(input({ mirror: mirror({}, p.status), target: t }));
    expect(again.events).toEqual([]);
  });

  it('Adopt takes over an unmarked secret, never another mirror’s', () => {
    const adopt = mirror({ conflictPolicy: 'Adopt' });
    expect(
      planVaultDestination(input({ mirror: adopt, target: target({ owner: undefined }) })).write,
    ).toEqual({ data, cas: 4 });
    expect(
      planVaultDestination(
        input({ mirror: adopt, target: target({ owner: 'hub/ClusterSecretMirror/other' }) }),
      ).write,
    ).toBeUndefined();
  });

  it('a SecretMirror may not Adopt', () => {
    const m = { ...mirror({ conflictPolicy: 'Adopt' }), kind: 'SecretMirror' } as AnyMirror;
    const p = planVaultDestination(input({ mirror: m }));
    expect(p.invalid).toContain('conflictPolicy Adopt is for ClusterSecretMirrors only');
    expect(p.needsTarget).toBe(false);
  });

  it('invalid spec: Error, nothing read or written, one InvalidSpec Warning', () => {
    const p = planVaultDestination(input({ errors: ['ClusterVaultConnection "x" not found'] }));
    expect(p).toMatchObject({ needsTarget: false, status: { phase: 'Error' } });
    expect(p.events.map((e) => e.reason)).toEqual(['InvalidSpec']);
  });

  it('source missing: Pending before anything was written, Degraded (Vault kept) after', () => {
    const missing = planVaultDestination(input({ observation: { state: 'missing' } }));
    expect(missing).toMatchObject({ needsTarget: false, status: { phase: 'Pending' } });
    const written = mirror({}, { vault: { connectionRef: dest.connection, path: dest.path } });
    const after = planVaultDestination(
      input({ mirror: written, observation: { state: 'missing' } }),
    );
    expect(after.status.phase).toBe('Degraded');
    expect(after.status.message).toContain('is kept as it is');
  });

  it('Vault unreachable: Degraded (retry) once written, Pending before; denied: Error', () => {
    const written = mirror({}, { vault: { connectionRef: dest.connection, path: dest.path } });
    const down: VaultTarget = {
      state: 'error',
      error: 'Vault: connection refused',
      transient: true,
    };
    expect(planVaultDestination(input({ mirror: written, target: down }))).toMatchObject({
      retry: true,
      status: { phase: 'Degraded' },
    });
    expect(planVaultDestination(input({ target: down })).status.phase).toBe('Pending');
    const denied = planVaultDestination(
      input({ target: { state: 'error', error: 'Vault: permission denied', transient: false } }),
    );
    expect(denied).toMatchObject({ retry: false, status: { phase: 'Error' } });
    expect(denied.status.message).toContain('cannot write Vault secret/published/tls');
  });

  it('a failed write is reported as such', () => {
    const written = mirror({}, { vault: { connectionRef: dest.connection, path: dest.path } });
    const p = planVaultDestination(
      input({
        mirror: written,
        target: target({ data: {} }),
        outcome: { ok: false, error: 'Vault: check-and-set refused', transient: true },
      }),
    );
    expect(p.status.phase).toBe('Degraded');
    expect(p.retry).toBe(true);
  });

  it('suspended: nothing read or written', () => {
    const p = planVaultDestination(input({ mirror: mirror({ suspend: true }) }));
    expect(p.needsTarget).toBe(false);
    expect(p.events.map((e) => e.reason)).toEqual(['Suspended']);
  });

  it('drops the namespace counts of an earlier spec', () => {
    const m = mirror(
      {},
      { counts: { clusters: 1, namespaces: 3, synced: 3, failed: 0, conflicts: 0 } },
    );
    const p = planVaultDestination(input({ mirror: m, target: target(), outcome: undefined }));
    expect(p.status.counts).toBeUndefined();
  });
});

describe('vaultData', () => {
  it('turns the shaped source into text, keys selected and renamed by the template', () => {
    const m = mirror({ template: { keys: [{ from: 'tls.crt', to: 'certificate' }] } });
    expect(vaultData(m, { kind: 'Secret', name: 'tls', namespace: 'certs' }, found.object)).toEqual(
      {
        data: { certificate: 'CERT' },
        warnings: [],
      },
    );
  });

  it('refuses bytes that are not UTF-8, naming the key and never the value', () => {
    const r = vaultData(
      mirror(),
      { kind: 'Secret', name: 'ks', namespace: 'certs' },
      {
        data: { 'keystore.p12': Buffer.from([0xff, 0xfe, 0x00]).toString('base64'), ok: b64('x') },
      },
    );
    expect(r).toEqual({
      error: expect.stringContaining('"keystore.p12" of the source is not UTF-8'),
    });
  });

  it('a ConfigMap’s data is text already', () => {
    expect(
      vaultData(
        mirror(),
        { kind: 'ConfigMap', name: 'cm', namespace: 'certs' },
        {
          data: { 'app.conf': 'a=1' },
        },
      ),
    ).toEqual({ data: { 'app.conf': 'a=1' }, warnings: [] });
  });
});

describe('destination.vault.encoding Base64 (KTS mirrors’ encoding)', () => {
  const kts = (): AnyMirror =>
    mirror({
      destination: {
        vault: {
          connectionRef: { kind: 'ClusterVaultConnection', name: 'vault' },
          path: dest.path,
          encoding: 'Base64',
        },
      },
    });
  const binary = Buffer.from([0xff, 0xfe, 0x00, 0x80, 0x0a]);
  const source: SourceObservation = {
    state: 'found',
    object: {
      type: 'Opaque',
      data: { 'keystore.p12': binary.toString('base64'), 'tls.crt': b64('CERT\n') },
    },
  };
  const encoded = { 'keystore.p12': binary.toString('base64'), 'tls.crt': b64('CERT\n') };

  it('writes every value as the base64 of its bytes, binary values included', () => {
    expect(
      vaultData(
        kts(),
        { kind: 'Secret', name: 'tls', namespace: 'certs' },
        (source as Extract<SourceObservation, { state: 'found' }>).object,
      ),
    ).toEqual({ data: encoded, warnings: [] });
    const p = planVaultDestination(
      input({
        mirror: kts(),
        observation: source,
        target: { state: 'absent', version: 0, kvVersion: 2 },
      }),
    );
    expect(p.invalid).toBeUndefined();
    expect(p.write).toEqual({ data: encoded, cas: 0 });
  });

  it('a ConfigMap’s text is written as the base64 of its UTF-8 bytes', () => {
    expect(
      vaultData(kts(), { kind: 'ConfigMap', name: 'cm', namespace: 'certs' }, { data: { a: 'é' } }),
    ).toEqual({ data: { a: b64('é') }, warnings: [] });
  });

  it('compares with Vault in the same encoding: unchanged, it writes nothing', () => {
    const p = planVaultDestination(
      input({ mirror: kts(), observation: source, target: target({ data: encoded }) }),
    );
    expect(p.write).toBeUndefined();
    expect(p.status.phase).toBe('Active');
    // What Plain would write (the text) is not what a KTS reader expects: rewritten.
    const plain = planVaultDestination(
      input({
        mirror: kts(),
        observation: source,
        target: target({ data: { 'tls.crt': 'CERT\n' } }),
      }),
    );
    expect(plain.write?.data).toEqual(encoded);
  });
});

describe('staleWrite', () => {
  const record = { connectionRef: dest.connection, path: 'secret/old/tls' };
  it('names the secret an earlier destination wrote, under deletePolicy Delete only', () => {
    expect(staleWrite(mirror({}, { vault: record }), dest)).toEqual(record);
    expect(staleWrite(mirror({ deletePolicy: 'Retain' }, { vault: record }), dest)).toBeUndefined();
    expect(
      staleWrite(mirror({}, { vault: { connectionRef: dest.connection, path: dest.path } }), dest),
    ).toBeUndefined();
    expect(staleWrite(mirror({}, { vault: record }), undefined)).toEqual(record);
  });
});
