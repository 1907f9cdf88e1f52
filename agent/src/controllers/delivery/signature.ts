// The trust check: the agent acts only on a delivery, and a payload, that the hub signed for this
// cluster and namespace (see shared/src/mirror/signing.ts). The plan reads the verdict.

import type { V1Secret } from '@kubernetes/client-node';
import type { MirrorDelivery } from '@mirrorhub/shared/api/types.gen';
import {
  deliveryMessage,
  payloadMessage,
  type SignedPlace,
  type Verification,
  type Verifier,
} from '@mirrorhub/shared/mirror/signing';
import {
  ANNOTATION_BINARY_KEYS,
  ANNOTATION_CONTENT_HASH,
  ANNOTATION_SIGNATURE,
} from '@mirrorhub/shared/api/contract';
import type { PlanInput } from './plan.js';

/**
 * Verifications remembered per object the caches hold (the delivery's spec, the payload Secret): a
 * cache replaces an object when the watch shows a change and never changes one in place, so the
 * same object with the same signature is the same message. A reconcile then verifies only what
 * changed since the last one (a new namespace reconciles every delivery selecting it; the
 * signatures are as they were).
 */
export class SignatureCache {
  private readonly verdicts = new WeakMap<
    object,
    { signature: string; where: string; verdict: Verification }
  >();

  verdict(
    of: object,
    signature: string | undefined,
    where: string,
    verify: () => Verification,
  ): Verification {
    const hit = this.verdicts.get(of);
    if (hit && hit.signature === (signature ?? '') && hit.where === where) return hit.verdict;
    const verdict = verify();
    this.verdicts.set(of, { signature: signature ?? '', where, verdict });
    return verdict;
  }
}

/**
 * The delivery's signature, and its payload's (unless the delivery is being deleted: the
 * payload may be gone, and removing our own copies needs only the delivery's word).
 */
export function checkSignatures(
  verifier: Verifier,
  where: Omit<SignedPlace, 'name'>,
  delivery: MirrorDelivery,
  payload: V1Secret | undefined,
  cache?: SignatureCache,
): PlanInput['signature'] {
  const name = delivery.metadata.name ?? '';
  const place = `${where.cluster}/${where.namespace}/${name}`;
  const signature = delivery.metadata.annotations?.[ANNOTATION_SIGNATURE];
  const verifyDelivery = () =>
    verifier.verify(deliveryMessage({ ...where, name }, delivery.spec), signature);
  const d = cache
    ? cache.verdict(delivery.spec, signature, place, verifyDelivery)
    : verifyDelivery();
  if (!d.ok) return { ok: false, reason: `MirrorDelivery ${name}: ${d.reason}` };
  if (!payload || delivery.metadata.deletionTimestamp) return d;
  const pname = payload.metadata?.name ?? '';
  const annotations = payload.metadata?.annotations;
  const payloadSignature = annotations?.[ANNOTATION_SIGNATURE];
  const verifyPayload = () =>
    verifier.verify(
      payloadMessage(
        { ...where, name: pname },
        {
          contentHash: annotations?.[ANNOTATION_CONTENT_HASH],
          binaryKeys: annotations?.[ANNOTATION_BINARY_KEYS],
          data: payload.data,
        },
      ),
      payloadSignature,
    );
  const p = cache
    ? cache.verdict(
        payload,
        payloadSignature,
        `${where.cluster}/${where.namespace}/${pname}`,
        verifyPayload,
      )
    : verifyPayload();
  return p.ok ? p : { ok: false, reason: `payload Secret ${pname}: ${p.reason}` };
}
