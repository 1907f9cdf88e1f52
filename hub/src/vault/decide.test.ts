import { describe, expect, it } from 'vitest';
import { VaultError, type VaultErrorKind } from './index.js';
import type { SourceObservation } from '../mirrors/status.js';
import {
  ConnectionConfigError,
  jittered,
  needsNamespaceLabels,
  notReadyReason,
  outcomeOf,
  PathRefused,
  pollPeriod,
  referencedSecrets,
  retryDelay,
  tenancyRefusal,
  type AllowedNamespaces,
} from './decide.js';
import { failedObservation, fingerprint, secretOf } from '../mirrors/sources/vault/observation.js';

const vaultError = (kind: VaultErrorKind, message = `vault says ${kind}`) =>
  new VaultError({ kind, message });

describe('tenancyRefusal: a SecretMirror namespace against a ClusterVaultConnection', () => {
  const denied = (ns: string) =>
    `ClusterVaultConnection "shared" does not allow SecretMirrors in namespace "${ns}" (its spec.allowedNamespaces does not list or select it)`;
  const selector = { namespaceSelector: { matchLabels: { 'vault-access': 'true' } } };
  it.each<[string, AllowedNamespaces, string, Record<string, string> | Error, string | undefined]>([
    ['no allowedNamespaces admits nobody', undefined, 'team-a', {}, denied('team-a')],
    ['an empty allowedNamespaces admits nobody', {}, 'team-a', {}, denied('team-a')],
    ['a listed name', { names: ['team-a', 'team-b'] }, 'team-b', {}, undefined],
    ['a name not listed', { names: ['team-a'] }, 'team-ab', {}, denied('team-ab')],
    ['labels the selector matches', selector, 'team-c', { 'vault-access': 'true' }, undefined],
    ['labels it does not match', selector, 'team-c', { 'vault-access': 'no' }, denied('team-c')],
    ['no labels', selector, 'team-c', {}, denied('team-c')],
    [
      'a listed name, whatever the selector says',
      { names: ['team-a'], ...selector },
      'team-a',
      {},
      undefined,
    ],
    [
      'labels that could not be read: refused, saying why',
      selector,
      'team-c',
      new Error('403 Forbidden'),
      `${denied('team-c')}: reading namespace "team-c" failed: 403 Forbidden`,
    ],
    [
      'an invalid selector: refused, naming the field',
      { namespaceSelector: { matchLabels: { 'bad key!': 'x' } } },
      'team-c',
      {},
      expect.stringMatching(
        /^ClusterVaultConnection "shared": spec\.allowedNamespaces\.namespaceSelector/,
      ) as unknown as string,
    ],
  ])('%s', (_, allowed, ns, labels, want) => {
    expect(tenancyRefusal('shared', allowed, ns, labels)).toEqual(want);
  });

  it.each<[AllowedNamespaces, string, boolean]>([
    [undefined, 'team-a', false],
    [{ names: ['team-a'] }, 'team-b', false],
    [{ names: ['team-a'], ...selector }, 'team-a', false],
    [{ names: ['team-a'], ...selector }, 'team-b', true],
    [selector, 'team-a', true],
  ])('needsNamespaceLabels(%j, %s) = %s', (allowed, ns, want) => {
    expect(needsNamespaceLabels(allowed, ns)).toBe(want);
  });
});

describe('Vault errors: metrics outcome, connection Ready reason, mirror source', () => {
  const conn = { kind: 'ClusterVaultConnection' as const, name: 'shared' };
  it.each<[string, unknown, string, string, boolean]>([
    // what, error, outcome label, Ready reason, transient (mirror Degraded, retried)
    ['permission denied', vaultError('permission-denied'), 'denied', 'LoginFailed', false],
    ['revoked token', vaultError('invalid-token'), 'denied', 'LoginFailed', false],
    ['login failed', vaultError('login-failed'), 'login_failed', 'LoginFailed', false],
    ['sealed', vaultError('unavailable'), 'unavailable', 'Unavailable', true],
    ['unreachable', vaultError('unreachable'), 'unavailable', 'Unavailable', true],
    ['timeout', vaultError('timeout'), 'unavailable', 'Unavailable', true],
    ['429', vaultError('rate-limited'), 'unavailable', 'Unavailable', true],
    ['500', vaultError('server'), 'unavailable', 'Unavailable', true],
    ['TLS', vaultError('tls'), 'tls', 'TLSError', false],
    ['a bad request', vaultError('invalid-request'), 'error', 'LoginFailed', false],
    [
      'a missing Secret (config)',
      new ConnectionConfigError('Secret team-a/vault-token has no key "token"'),
      'error',
      'InvalidConfig',
      false,
    ],
    ['anything else', new Error('boom'), 'error', 'LoginFailed', false],
  ])('%s', (_, err, outcome, reason, transient) => {
    expect(outcomeOf(err)).toBe(outcome);
    expect(notReadyReason(err)).toBe(reason);
    const { observation, retry } = failedObservation(err, conn);
    expect(retry).toBe(transient);
    expect(observation).toMatchObject({ state: 'unreadable' });
    // denied: the plan puts the mirror in Error; otherwise Degraded while copies exist.
    expect(observation.state === 'unreadable' && observation.denied === true).toBe(!transient);
  });

  it('names the connection for a configuration error and Vault for a Vault error', () => {
    expect(failedObservation(new ConnectionConfigError('Secret x has no key "t"'), conn)).toEqual({
      observation: {
        state: 'unreadable',
        error: 'ClusterVaultConnection shared: Secret x has no key "t"',
        denied: true,
      },
      retry: false,
    });
    expect(
      failedObservation(vaultError('unavailable', 'Vault is sealed'), conn).observation,
    ).toEqual({ state: 'unreadable', error: 'Vault: Vault is sealed' });
  });

  it('a refused path is an Error with the rule as its message, not retried', () => {
    expect(failedObservation(new PathRefused('x is not KV (rule: ...)'), conn)).toEqual({
      observation: { state: 'unreadable', error: 'x is not KV (rule: ...)', denied: true },
      retry: false,
    });
  });
});

describe('timing', () => {
  it('polls at the smallest period of the mirrors sharing a source', () => {
    expect(pollPeriod([60_000])).toBe(60_000);
    expect(
      pollPeriod(
        new Map([
          ['a', 300_000],
          ['b', 10_000],
          ['c', 60_000],
        ]).values(),
      ),
    ).toBe(10_000);
  });

  it.each([0, 0.25, 0.5, 0.999999])(
    'jitter shortens by at most a tenth, never lengthens (random %s)',
    (r) => {
      const v = jittered(60_000, 0.1, r);
      expect(v).toBeGreaterThanOrEqual(54_000);
      expect(v).toBeLessThanOrEqual(60_000);
    },
  );

  it('jitter spans the whole band and none is none', () => {
    expect(jittered(60_000, 0.1, 0)).toBe(60_000);
    expect(jittered(60_000, 0.1, 0.5)).toBe(57_000);
    expect(jittered(60_000, 0.1, 1)).toBe(54_000);
    expect(jittered(60_000, 0, 0.9)).toBe(60_000);
  });

  it.each([
    [1, 1000],
    [2, 2000],
    [3, 4000],
    [6, 32_000],
    [7, 60_000],
    [50, 60_000],
  ])('after %i failures the retry waits %i ms (1 s doubling, at most the period)', (n, ms) => {
    expect(retryDelay(n, 1000, 60_000)).toBe(ms);
  });
});

describe('KV v1: a read is a change only when its content differs', () => {
  const found = (raw: Record<string, unknown>): SourceObservation => ({
    state: 'found',
    object: secretOf(raw),
  });

  it('the same keys and values, in any order, are no change', () => {
    expect(fingerprint(found({ a: '1', b: '2' }))).toBe(fingerprint(found({ b: '2', a: '1' })));
  });

  it.each<[string, Record<string, unknown>]>([
    ['another value', { a: '1', b: '3' }],
    ['a key more', { a: '1', b: '2', c: '' }],
    ['a key less', { a: '1' }],
    ['a renamed key', { a: '1', bb: '2' }],
    ['a value moved across the key boundary', { a: '1\u00002', b: '' }],
  ])('%s is a change', (_, raw) => {
    expect(fingerprint(found(raw))).not.toBe(fingerprint(found({ a: '1', b: '2' })));
  });

  it('missing and unreadable differ from found and from each other; the digest holds no value', () => {
    const f = fingerprint(found({ password: 'pw-s3cret' }));
    expect(
      new Set([
        f,
        fingerprint({ state: 'missing' }),
        fingerprint({ state: 'unreadable', error: 'x' }),
      ]).size,
    ).toBe(3);
    expect(f).not.toContain('pw-s3cret');
    expect(f).not.toContain(Buffer.from('pw-s3cret').toString('base64'));
  });

  it('non-string values are copied as their JSON text', () => {
    expect(secretOf({ n: 3, o: { x: true }, s: 'str' }).data).toEqual({
      n: Buffer.from('3').toString('base64'),
      o: Buffer.from('{"x":true}').toString('base64'),
      s: Buffer.from('str').toString('base64'),
    });
  });
});

describe('referencedSecrets: what a connection reads its credentials from', () => {
  const ref = (name: string, key: string, namespace?: string) => ({
    name,
    key,
    ...(namespace ? { namespace } : {}),
  });
  it.each<[string, Parameters<typeof referencedSecrets>[0], string | undefined, unknown]>([
    [
      "a VaultConnection's token: its own namespace, whatever the spec says",
      { token: { secretRef: ref('vault-token', 'token', 'elsewhere') } },
      'team-a',
      [{ role: 'token', namespace: 'team-a', name: 'vault-token', key: 'token' }],
    ],
    [
      "a ClusterVaultConnection's token: the namespace it names",
      { token: { secretRef: ref('vault-token', 'token', 'vault-system') } },
      undefined,
      [{ role: 'token', namespace: 'vault-system', name: 'vault-token', key: 'token' }],
    ],
    [
      'AppRole with role_id and secret_id in Secrets',
      {
        appRole: {
          roleIdSecretRef: ref('approle', 'roleId'),
          secretIdSecretRef: ref('approle', 'secretId'),
        },
      },
      'team-b',
      [
        { role: 'roleId', namespace: 'team-b', name: 'approle', key: 'roleId' },
        { role: 'secretId', namespace: 'team-b', name: 'approle', key: 'secretId' },
      ],
    ],
    [
      'AppRole with a literal role_id: only the secret_id',
      { appRole: { roleId: 'r', secretIdSecretRef: ref('approle', 'secretId') } },
      'team-b',
      [{ role: 'secretId', namespace: 'team-b', name: 'approle', key: 'secretId' }],
    ],
    ['Kubernetes auth: none', { kubernetes: { role: 'hub' } }, undefined, []],
  ])('%s', (_, auth, ns, want) => {
    expect(referencedSecrets(auth, ns)).toEqual(want);
  });
});
