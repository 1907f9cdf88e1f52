import { generateKeyPairSync } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { MirrorDelivery } from '@mirrorhub/shared/api/types.gen';
import {
  createSigner,
  createVerifier,
  deliveryMessage,
  payloadMessage,
} from '@mirrorhub/shared/mirror/signing';
import { ANNOTATION_CONTENT_HASH, ANNOTATION_SIGNATURE } from '@mirrorhub/shared/api/contract';
import { checkSignatures, SignatureCache } from './signature.js';

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const signer = createSigner(privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
const verifier = createVerifier(publicKey.export({ type: 'spki', format: 'pem' }).toString());
const where = { cluster: 'follower-a', namespace: 'mirrorhub-system' };

function signedDelivery(cluster = where.cluster): MirrorDelivery {
  const d: MirrorDelivery = {
    apiVersion: 'mirrorhub.io/v1alpha1',
    kind: 'MirrorDelivery',
    metadata: { name: 'd-1', namespace: where.namespace, annotations: {} },
    spec: {
      mirror: { kind: 'SecretMirror', namespace: 'apps', name: 'tls', uid: 'u1' },
      originCluster: 'hub',
      payloadSecretName: 'd-1',
      target: { kind: 'Secret', name: 'tls' },
      namespaces: ['team-.+'],
      contentHash: 'h1',
    },
  };
  const message = deliveryMessage({ ...where, cluster, name: 'd-1' }, d.spec);
  d.metadata.annotations = { [ANNOTATION_SIGNATURE]: signer.sign(message) };
  return d;
}

function signedPayload(data = { k: 'dg==' }): V1Secret {
  const annotations = { [ANNOTATION_CONTENT_HASH]: 'h1' };
  const message = payloadMessage(
    { ...where, name: 'd-1' },
    { contentHash: 'h1', binaryKeys: undefined, data },
  );
  return {
    metadata: {
      name: 'd-1',
      annotations: { ...annotations, [ANNOTATION_SIGNATURE]: signer.sign(message) },
    },
    data,
  };
}

describe('checkSignatures', () => {
  it('accepts a delivery and payload the hub signed for this cluster', () => {
    expect(checkSignatures(verifier, where, signedDelivery(), signedPayload()).ok).toBe(true);
    expect(checkSignatures(verifier, where, signedDelivery(), undefined).ok).toBe(true);
  });

  it('names what failed: a delivery signed for another cluster, a payload changed since', () => {
    const other = checkSignatures(verifier, where, signedDelivery('follower-b'), signedPayload());
    expect(other).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^MirrorDelivery d-1: /),
    });
    const tampered = { ...signedPayload(), data: { k: 'eA==' } };
    expect(checkSignatures(verifier, where, signedDelivery(), tampered)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^payload Secret d-1: /),
    });
  });

  it('with a cache, verifies each cached object once; a new object or signature is verified again', () => {
    let verified = 0;
    const counting = {
      ...verifier,
      verify: (m: Buffer, a: string | undefined) => (verified++, verifier.verify(m, a)),
    };
    const cache = new SignatureCache();
    const d = signedDelivery();
    const p = signedPayload();
    expect(checkSignatures(counting, where, d, p, cache).ok).toBe(true);
    expect(checkSignatures(counting, where, d, p, cache).ok).toBe(true);
    expect(verified).toBe(2); // one delivery, one payload
    // The watch replaced the payload (a change): verified again, and refused.
    const tampered = { ...p, data: { k: 'eA==' } };
    expect(checkSignatures(counting, where, d, tampered, cache).ok).toBe(false);
    expect(verified).toBe(3);
    // The same spec object under another signature annotation: verified again.
    const resigned = {
      ...d,
      metadata: { ...d.metadata, annotations: { [ANNOTATION_SIGNATURE]: 'x' } },
    };
    expect(checkSignatures(counting, where, resigned, p, cache).ok).toBe(false);
    // Checked for another place (cluster or namespace): verified again.
    expect(checkSignatures(counting, { ...where, cluster: 'follower-b' }, d, p, cache).ok).toBe(
      false,
    );
  });

  it('a delivery being deleted needs only its own signature', () => {
    const d = signedDelivery();
    d.metadata.deletionTimestamp = new Date();
    const tampered = { ...signedPayload(), data: { k: 'eA==' } };
    expect(checkSignatures(verifier, where, d, tampered).ok).toBe(true);
  });
});
