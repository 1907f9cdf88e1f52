import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { MirrorDeliverySpec } from '../api/types.gen.js';
import { createSigner, createVerifier, deliveryMessage, payloadMessage } from './signing.js';

const pem = (type: 'ed25519' | 'ec' = 'ed25519') => {
  const { privateKey, publicKey } =
    type === 'ed25519'
      ? generateKeyPairSync('ed25519')
      : generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return {
    private: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    public: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
};

const hub = pem();
const signer = createSigner(hub.private);
const place = {
  cluster: 'follower-a',
  namespace: 'mirrorhub-system',
  name: 'csm-tls-0123456789abcdef',
};
const spec = {
  target: { kind: 'Secret', name: 'tls' },
  namespaces: ['team-.+'],
  contentHash: 'abc',
} as MirrorDeliverySpec;

describe('delivery signatures', () => {
  const verifier = createVerifier(hub.public);
  const signed = signer.sign(deliveryMessage(place, spec));

  it('verify for the place and spec they were made for', () => {
    expect(verifier.verify(deliveryMessage(place, spec), signed)).toEqual({
      ok: true,
      keyId: signer.keyId,
    });
    // Canonical: key order does not matter.
    const reordered = {
      contentHash: 'abc',
      namespaces: ['team-.+'],
      target: { name: 'tls', kind: 'Secret' },
    };
    expect(verifier.verify(deliveryMessage(place, reordered), signed).ok).toBe(true);
  });

  it.each<[string, Buffer, string | undefined, RegExp]>([
    [
      'unsigned',
      deliveryMessage(place, spec),
      undefined,
      /^not signed \(no mirrorhub.io\/signature annotation\)$/,
    ],
    [
      'a changed spec',
      deliveryMessage(place, { ...spec, namespaces: ['kube-system'] }),
      signed,
      /does not match: the object was changed after the hub signed it/,
    ],
    [
      'another cluster',
      deliveryMessage({ ...place, cluster: 'follower-b' }, spec),
      signed,
      /does not match/,
    ],
    ['another name', deliveryMessage({ ...place, name: 'other' }, spec), signed, /does not match/],
    [
      'a payload signature replayed on a delivery',
      deliveryMessage(place, spec),
      signer.sign(payloadMessage(place, { contentHash: 'abc', binaryKeys: undefined, data: {} })),
      /does not match/,
    ],
    ['garbage', deliveryMessage(place, spec), `${signer.keyId}.not-base64!`, /does not match/],
    [
      'a key this agent does not trust',
      deliveryMessage(place, spec),
      createSigner(pem().private).sign(deliveryMessage(place, spec)),
      /^signed with key [0-9a-f]{16}, which this agent does not trust \(trusted: [0-9a-f]{16}\)$/,
    ],
  ])('refuse %s', (_, message, annotation, reason) => {
    const r = verifier.verify(message, annotation);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(reason);
  });
});

describe('payload signatures', () => {
  const verifier = createVerifier(hub.public);
  const payload = { contentHash: 'abc', binaryKeys: undefined, data: { password: 'czNjcjN0' } };
  const signed = signer.sign(payloadMessage(place, payload));
  it('cover the data and the content hash', () => {
    expect(verifier.verify(payloadMessage(place, payload), signed).ok).toBe(true);
    expect(
      verifier.verify(payloadMessage(place, { ...payload, data: { password: 'b3RoZXI=' } }), signed)
        .ok,
    ).toBe(false);
    expect(
      verifier.verify(payloadMessage(place, { ...payload, contentHash: 'def' }), signed).ok,
    ).toBe(false);
    expect(
      verifier.verify(payloadMessage(place, { ...payload, binaryKeys: 'password' }), signed).ok,
    ).toBe(false);
  });
});

describe('keys', () => {
  it('trusts two keys at once, for a rotation', () => {
    const next = pem();
    const both = createVerifier([hub.public, next.public]);
    expect(both.keyIds).toHaveLength(2);
    const m = deliveryMessage(place, spec);
    expect(both.verify(m, signer.sign(m)).ok).toBe(true);
    expect(both.verify(m, createSigner(next.private).sign(m)).ok).toBe(true);
    // One string with both PEM blocks, as MIRRORHUB_HUB_PUBLIC_KEYS carries them.
    expect(createVerifier(`${hub.public}\n${next.public}`).keyIds).toEqual(both.keyIds);
  });

  it('signs deterministically, so an unchanged object is not rewritten', () => {
    const m = deliveryMessage(place, spec);
    expect(signer.sign(m)).toBe(createSigner(hub.private).sign(m));
  });

  it.each<[string, () => unknown, RegExp]>([
    ['no key at all', () => createVerifier(''), /no "-----BEGIN PUBLIC KEY-----" block found/],
    ['an EC public key', () => createVerifier(pem('ec').public), /key 1 is ec/],
    [
      'a private key where a public one belongs',
      () => createVerifier(hub.private),
      /no "-----BEGIN PUBLIC KEY-----" block/,
    ],
    [
      'an EC private key for signing',
      () => createSigner(pem('ec').private),
      /is a ec key; mirrorhub signs with Ed25519/,
    ],
    ['not a key', () => createSigner('hello'), /is not a PEM private key/],
  ])('refuses %s with a message', (_, make, message) => {
    expect(make).toThrow(message);
  });
});
