// The hub's content-hash key: random bytes in a Secret only the hub reads. Content hashes are
// HMACs keyed with it (per mirror, see shared/src/mirror/hash.ts), so a hash visible on copies and
// deliveries cannot be brute-forced back to a short secret value.
//
// Several hub replicas: every replica hashes with the same key (so a follower's owner and the
// leader agree on which content a report describes); only the leader creates it, the others
// read it, waiting until the leader has.
import { crypto } from '@mirrorhub/shared/kit/runtime/builtins';
import type { V1Secret } from '@kubernetes/client-node';
import { realClock, sleep, wrapError, type Clock } from '@mirrorhub/shared/kit/runtime/index';
import {
  corePath,
  isAlreadyExists,
  isNotFound,
  type RestClient,
} from '@mirrorhub/shared/kit/k8s/rest';
import { HASH_KEY_FIELD, HASH_KEY_SECRET } from './names.js';
import { ALWAYS_LEADING, type Role } from './shards/ownership.js';

const { randomBytes } = crypto;

export interface HashKeyOptions {
  /** Whether this replica leads (default: always): only the leader creates the key. */
  role?: Role | undefined;
  /** A replica that does not lead looks again this often while there is no key (default 2 s). */
  retryMs?: number | undefined;
  /** Stops the wait of a replica that does not lead (it then rejects). */
  signal?: AbortSignal | undefined;
  clock?: Clock | undefined;
}

/**
 * Reads the key, creating the Secret with 32 random bytes when there is none (the leader), or
 * waiting until the leader has (every other replica).
 */
export async function ensureHashKey(
  rest: RestClient,
  namespace: string,
  opts: HashKeyOptions = {},
): Promise<Buffer> {
  const role = opts.role ?? ALWAYS_LEADING;
  const clock = opts.clock ?? realClock;
  for (;;) {
    if (role.leading()) return readOrCreate(rest, namespace);
    try {
      return keyOf(await rest.get<V1Secret>(corePath('secrets', namespace, HASH_KEY_SECRET)));
    } catch (err) {
      if (!isNotFound(err)) throw wrapError(`reading Secret ${namespace}/${HASH_KEY_SECRET}`, err);
    }
    await sleep(clock, opts.retryMs ?? 2000, opts.signal);
    if (opts.signal?.aborted) {
      throw new Error(
        `Secret ${namespace}/${HASH_KEY_SECRET}: stopped waiting for the leader to create it`,
      );
    }
  }
}

async function readOrCreate(rest: RestClient, namespace: string): Promise<Buffer> {
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
