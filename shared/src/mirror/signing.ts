// Deliveries are signed by the hub and verified by the agent (Ed25519, node:crypto).
//
// Anyone who may write in an agent namespace (the hub's identity there, a namespace admin) could
// otherwise forge a MirrorDelivery or change a payload. The hub signs each MirrorDelivery (its
// spec, bound to the target cluster, namespace and name) and each payload Secret (its data,
// bound the same way and to the contentHash the delivery names) with a key only the hub holds;
// the agent acts only on objects whose signature verifies against a public key in its own
// configuration (the agent chart's hubPublicKeys). Several keys may be trusted at once, so the
// hub's key can be rotated without downtime (docs/security.md). The spec carries a sequence
// (spec.sequence, higher on every change), so what is signed also says which of two deliveries
// is newer: the agent refuses an older one written back later (agent/.../delivery/sequence.ts).
//
// Messages are canonical JSON (sorted keys, no undefined) after a domain tag, so a delivery
// signature can never pass for a payload signature or the other way round. Ed25519 signatures
// are deterministic: an unchanged object signs to the same annotation, so re-signing writes
// nothing.

import { crypto } from '../kit/runtime/builtins.js';
import type { KeyObject } from 'node:crypto';
import { deliveryPolicies } from '../api/helpers.js';
import type { MirrorDeliverySpec } from '../api/types.gen.js';
import { canonicalJson } from './hash.js';
import { ANNOTATION_SIGNATURE } from '../api/contract.js';

const { createHash, createPrivateKey, createPublicKey, sign: edSign, verify: edVerify } = crypto;

/** Where a signed object lives: the signature is valid there only. */
export interface SignedPlace {
  /** The target cluster's name (the MirrorCluster's name, the agent's clusterName). */
  cluster: string;
  namespace: string;
  name: string;
}

/**
 * The bytes signed for a MirrorDelivery. The spec is taken with the CRD's defaults applied
 * (deletePolicy, conflictPolicy, suspend), so a field the API server fills in on the way does not
 * break the signature, and a field it could fill in is covered like one that was sent.
 */
export function deliveryMessage(place: SignedPlace, spec: MirrorDeliverySpec): Buffer {
  const withDefaults = { ...spec, ...deliveryPolicies(spec) };
  return Buffer.from(
    `mirrorhub.io/delivery/v1\n${canonicalJson({ ...place, spec: withDefaults })}`,
  );
}

/** SHA-256 (hex) of a payload's data, as canonical JSON: what a payload signature covers of it. */
export function payloadDigest(data: Record<string, string> | undefined): string {
  return createHash('sha256')
    .update(canonicalJson(data ?? {}))
    .digest('hex');
}

/**
 * The bytes signed for a payload Secret: its data (or `dataSha256`, its payloadDigest, when the
 * caller signs the same data for several clusters) and the contentHash it carries.
 */
export function payloadMessage(
  place: SignedPlace,
  payload: {
    contentHash: string | undefined;
    binaryKeys: string | undefined;
  } & ({ data: Record<string, string> | undefined } | { dataSha256: string }),
): Buffer {
  const digest = 'dataSha256' in payload ? payload.dataSha256 : payloadDigest(payload.data);
  return Buffer.from(
    `mirrorhub.io/payload/v1\n${canonicalJson({
      ...place,
      contentHash: payload.contentHash ?? '',
      binaryKeys: payload.binaryKeys ?? '',
      dataSha256: digest,
    })}`,
  );
}

/** First 16 hex characters of the SHA-256 of the public key (SPKI DER): names a key. */
export function keyIdOf(publicKey: KeyObject): string {
  return createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex')
    .slice(0, 16);
}

export interface Signer {
  readonly keyId: string;
  /** The annotation value for `message`. */
  sign(message: Buffer): string;
  /** The public key in PEM, for the agent chart's hubPublicKeys. */
  readonly publicKeyPem: string;
}

/** A signer from a PKCS#8 PEM Ed25519 private key; throws a message saying what is wrong. */
export function createSigner(privateKeyPem: string, source = 'the signing key'): Signer {
  let key: KeyObject;
  try {
    key = createPrivateKey(privateKeyPem);
  } catch (err) {
    throw new Error(
      `${source} is not a PEM private key (${(err as Error).message}); create one with \`openssl genpkey -algorithm ed25519\``,
      { cause: err },
    );
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new Error(
      `${source} is a ${key.asymmetricKeyType ?? 'symmetric'} key; mirrorhub signs with Ed25519 (\`openssl genpkey -algorithm ed25519\`)`,
    );
  }
  const pub = createPublicKey(key);
  const keyId = keyIdOf(pub);
  return {
    keyId,
    publicKeyPem: pub.export({ type: 'spki', format: 'pem' }).toString(),
    sign: (message) => `${keyId}.${edSign(null, message, key).toString('base64url')}`,
  };
}

export type Verification = { ok: true; keyId: string } | { ok: false; reason: string };

export interface Verifier {
  readonly keyIds: readonly string[];
  verify(message: Buffer, annotation: string | undefined): Verification;
}

const PEM_BLOCK = /-----BEGIN PUBLIC KEY-----[\s\S]*?-----END PUBLIC KEY-----/g;

/**
 * A verifier trusting every Ed25519 public key in `pems` (PEM blocks, in one string or several).
 * Throws when there is none or one is not an Ed25519 public key.
 */
export function createVerifier(
  pems: string | readonly string[],
  source = 'hub public keys',
): Verifier {
  const text = typeof pems === 'string' ? pems : pems.join('\n');
  const blocks = text.match(PEM_BLOCK) ?? [];
  if (blocks.length === 0) {
    throw new Error(
      `${source}: no "-----BEGIN PUBLIC KEY-----" block found; give the hub's Ed25519 public key (\`openssl pkey -in hub-signing.pem -pubout\`)`,
    );
  }
  const keys = new Map<string, KeyObject>();
  blocks.forEach((pem, i) => {
    let key: KeyObject;
    try {
      key = createPublicKey(pem);
    } catch (err) {
      throw new Error(
        `${source}: key ${i + 1} is not a valid PEM public key (${(err as Error).message})`,
        {
          cause: err,
        },
      );
    }
    if (key.asymmetricKeyType !== 'ed25519') {
      throw new Error(
        `${source}: key ${i + 1} is ${key.asymmetricKeyType ?? 'not'} an Ed25519 key`,
      );
    }
    keys.set(keyIdOf(key), key);
  });
  const keyIds = [...keys.keys()];
  return {
    keyIds,
    verify(message, annotation) {
      if (!annotation)
        return { ok: false, reason: `not signed (no ${ANNOTATION_SIGNATURE} annotation)` };
      const dot = annotation.indexOf('.');
      const keyId = dot > 0 ? annotation.slice(0, dot) : '';
      const key = keys.get(keyId);
      if (!key) {
        return {
          ok: false,
          reason: `signed with key ${keyId || '(none)'}, which this agent does not trust (trusted: ${keyIds.join(', ')})`,
        };
      }
      const signature = Buffer.from(annotation.slice(dot + 1), 'base64url');
      let valid = false;
      try {
        valid = signature.length === 64 && edVerify(null, message, key, signature);
      } catch {
        valid = false;
      }
      return valid
        ? { ok: true, keyId }
        : {
            ok: false,
            reason: `the signature (key ${keyId}) does not match: the object was changed after the hub signed it, or was signed for another cluster, namespace or name`,
          };
    },
  };
}
