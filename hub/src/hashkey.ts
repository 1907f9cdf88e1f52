// The hub's content-hash key: random bytes in a Secret only the hub reads. Content hashes are
// HMACs keyed with it (per mirror, see shared/src/mirror/hash.ts), so a hash visible on copies and
// deliveries cannot be brute-forced back to a short secret value.
//
// Several hub replicas hash with the same key, so a follower's owner and the leader agree on
// which content a report describes. Any replica may create it: the create is atomic, and the
// others read the winner's.
import { crypto } from '@mirrorhub/shared/kit/runtime/builtins';
import type { V1Secret } from '@kubernetes/client-node';
import { wrapError } from '@mirrorhub/shared/kit/runtime/index';
import {
  corePath,
  isAlreadyExists,
  isNotFound,
  type RestClient,
} from '@mirrorhub/shared/kit/k8s/rest';
import { HASH_KEY_FIELD, HASH_KEY_SECRET } from './names.js';

const { randomBytes } = crypto;

/** Reads the key, creating the Secret with 32 random bytes when there is none. */
export async function ensureHashKey(rest: RestClient, namespace: string): Promise<Buffer> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return keyOf(await rest.get<V1Secret>(corePath('secrets', namespace, HASH_KEY_SECRET)));
    } catch (err) {
      if (!isNotFound(err)) throw wrapError(`reading Secret ${namespace}/${HASH_KEY_SECRET}`, err);
    }
    try {
      const created = await rest.post<V1Secret>(corePath('secrets', namespace), {
        metadata: {
          name: HASH_KEY_SECRET,
          namespace,
          labels: {
            'app.kubernetes.io/part-of': 'mirrorhub',
            'app.kubernetes.io/component': 'hub',
          },
          annotations: {
            'mirrorhub.io/description':
              'Key of the content hashes on mirrorhub copies. Deleting it makes the hub rewrite every delivery once.',
          },
        },
        type: 'Opaque',
        data: { [HASH_KEY_FIELD]: randomBytes(32).toString('base64') },
      });
      return keyOf(created);
    } catch (err) {
      if (!isAlreadyExists(err))
        throw wrapError(`creating Secret ${namespace}/${HASH_KEY_SECRET}`, err);
      // Another hub created it first: read theirs.
    }
  }
  throw new Error(`Secret ${namespace}/${HASH_KEY_SECRET}: could not read or create it`);
}

function keyOf(secret: { data?: Record<string, string> }): Buffer {
  const b64 = secret.data?.[HASH_KEY_FIELD];
  const key = b64 ? Buffer.from(b64, 'base64') : Buffer.alloc(0);
  if (key.length < 16) {
    throw new Error(
      `Secret ${HASH_KEY_SECRET} has no usable "${HASH_KEY_FIELD}" (need at least 16 bytes)`,
    );
  }
  return key;
}
