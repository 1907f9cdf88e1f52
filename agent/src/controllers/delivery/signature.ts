// The trust check: the agent acts only on a delivery, and a payload, that the hub signed for this
// cluster and namespace (see shared/src/mirror/signing.ts). The plan reads the verdict.

import type { V1Secret } from '@kubernetes/client-node';
import type { MirrorDelivery } from '@mirrorhub/shared/api/types.gen';
import {
  deliveryMessage,
  payloadMessage,
  type SignedPlace,
  type Verifier,
} from '@mirrorhub/shared/mirror/signing';
import {
  ANNOTATION_BINARY_KEYS,
  ANNOTATION_CONTENT_HASH,
  ANNOTATION_SIGNATURE,
} from '@mirrorhub/shared/contract';
import type { PlanInput } from './plan.js';

/**
 * The delivery's signature, and its payload's (unless the delivery is being deleted: the
 * payload may be gone, and removing our own copies needs only the delivery's word).
 */
export function checkSignatures(
  verifier: Verifier,
  where: Omit<SignedPlace, 'name'>,
  delivery: MirrorDelivery,
  payload: V1Secret | undefined,
): PlanInput['signature'] {
  const name = delivery.metadata.name ?? '';
  const d = verifier.verify(
    deliveryMessage({ ...where, name }, delivery.spec),
    delivery.metadata.annotations?.[ANNOTATION_SIGNATURE],
  );
  if (!d.ok) return { ok: false, reason: `MirrorDelivery ${name}: ${d.reason}` };
  if (!payload || delivery.metadata.deletionTimestamp) return d;
  const pname = payload.metadata?.name ?? '';
  const annotations = payload.metadata?.annotations;
  const p = verifier.verify(
    payloadMessage(
      { ...where, name: pname },
      {
        contentHash: annotations?.[ANNOTATION_CONTENT_HASH],
        binaryKeys: annotations?.[ANNOTATION_BINARY_KEYS],
        data: payload.data,
      },
    ),
    annotations?.[ANNOTATION_SIGNATURE],
  );
  return p.ok ? p : { ok: false, reason: `payload Secret ${pname}: ${p.reason}` };
}
