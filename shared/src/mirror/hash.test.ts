import { describe, expect, it } from 'vitest';
import { canonicalJson, contentHash, deriveHashKey, type HashInput } from './hash.js';

const base: HashInput = {
  targetKind: 'Secret',
  data: { 'tls.crt': 'Y3J0', 'tls.key': 'a2V5' },
  type: 'kubernetes.io/tls',
  labels: { team: 'a' },
  annotations: { 'cert-manager.io/issuer-name': 'le' },
};
const cm: HashInput = { ...base, targetKind: 'ConfigMap' };
const key = deriveHashKey('hub-secret', 'uid-1');
const h = (input: HashInput, k: Buffer | string = key) => contentHash(k, input);

describe('contentHash', () => {
  it('is 32 hex characters (16 bytes)', () => {
    expect(h(base)).toMatch(/^[0-9a-f]{32}$/);
  });

  it.each<[string, HashInput, HashInput]>([
    ['data key order', base, { ...base, data: { 'tls.key': 'a2V5', 'tls.crt': 'Y3J0' } }],
    [
      'label order',
      { ...base, labels: { a: '1', b: '2' } },
      { ...base, labels: { b: '2', a: '1' } },
    ],
    ['Opaque spelled out or defaulted', { ...base, type: 'Opaque' }, { ...base, type: undefined }],
    ['binary key order', { ...cm, binaryKeys: ['a', 'b'] }, { ...cm, binaryKeys: ['b', 'a'] }],
    [
      'the Secret type of a ConfigMap',
      { ...cm, type: 'kubernetes.io/tls' },
      { ...cm, type: undefined },
    ],
  ])('stable under %s', (_, a, b) => {
    expect(h(a)).toBe(h(b));
  });

  it.each<[string, HashInput, HashInput]>([
    ['a data value', base, { ...base, data: { ...base.data, 'tls.key': 'b3RoZXI=' } }],
    ['a data key', base, { ...base, data: { 'tls.crt': 'Y3J0', key: 'a2V5' } }],
    ['an added key', base, { ...base, data: { ...base.data, 'ca.crt': 'Y2E=' } }],
    ['the type', base, { ...base, type: 'Opaque' }],
    ['a label', base, { ...base, labels: { team: 'b' } }],
    ['an annotation', base, { ...base, annotations: {} }],
    ['the target kind', base, cm],
    ['binary keys', cm, { ...cm, binaryKeys: ['tls.crt'] }],
  ])('changes with %s', (_, a, b) => {
    expect(h(a)).not.toBe(h(b));
  });

  it.each([
    ['another hub secret', deriveHashKey('other-secret', 'uid-1')],
    ['another mirror', deriveHashKey('hub-secret', 'uid-2')],
  ])('depends on the key: %s', (_, other) => {
    expect(h(base, other)).not.toBe(h(base));
  });

  it('does not embed the data', () => {
    const secret = { ...base, data: { password: Buffer.from('hunter2').toString('base64') } };
    expect(h(secret)).not.toContain(Buffer.from('hunter2').toString('hex'));
  });
});

describe('canonicalJson', () => {
  it.each<[unknown, string]>([
    [
      { b: 1, a: { d: [3, { z: 1, y: 2 }], c: 'x' } },
      '{"a":{"c":"x","d":[3,{"y":2,"z":1}]},"b":1}',
    ],
    [{ a: undefined, b: null }, '{"b":null}'],
    [[undefined, 'é'], '[null,"é"]'],
    ['quote"s', '"quote\\"s"'],
  ])('%j -> %s', (value, expected) => {
    expect(canonicalJson(value)).toBe(expected);
  });

  it('refuses non-finite numbers', () => {
    expect(() => canonicalJson({ n: Number.NaN })).toThrow(/non-finite/);
  });
});
