import type { V1Secret } from '@kubernetes/client-node';
import type { RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import { describe, expect, it } from 'vitest';
import { ensureHashKey } from './hashkey.js';

const apiError = (code: number, reason: string) =>
  Object.assign(new Error(`${code} ${reason}`), {
    code,
    body: JSON.stringify({ kind: 'Status', code, reason }),
  });

/** A RestClient with just the two calls ensureHashKey makes, over an in-memory Secret. */
function fakeCore(opts: { existing?: V1Secret; raceOnCreate?: V1Secret } = {}) {
  let stored = opts.existing;
  const calls: string[] = [];
  const core = {
    get: async () => {
      calls.push('read');
      if (!stored) throw apiError(404, 'NotFound');
      return stored;
    },
    post: async (_path: string, body: V1Secret) => {
      calls.push('create');
      if (opts.raceOnCreate) {
        stored = opts.raceOnCreate;
        throw apiError(409, 'AlreadyExists');
      }
      stored = body;
      return body;
    },
  } as unknown as RestClient;
  return { core, calls, stored: () => stored };
}

const secret = (bytes: number): V1Secret => ({
  data: { key: Buffer.alloc(bytes, 7).toString('base64') },
});

describe('ensureHashKey', () => {
  it('creates 32 random bytes when there is no key, and reads it afterwards', async () => {
    const f = fakeCore();
    const key = await ensureHashKey(f.core, 'mirrorhub-system');
    expect(key).toHaveLength(32);
    expect(f.calls).toEqual(['read', 'create']);
    expect(f.stored()?.metadata?.name).toBe('mirrorhub-hash-key');
    expect(await ensureHashKey(f.core, 'mirrorhub-system')).toEqual(key);
  });

  it('reads the key another hub created first', async () => {
    const f = fakeCore({ raceOnCreate: secret(32) });
    expect(await ensureHashKey(f.core, 'ns')).toEqual(Buffer.alloc(32, 7));
    expect(f.calls).toEqual(['read', 'create', 'read']);
  });

  it('refuses a key that is too short', async () => {
    await expect(ensureHashKey(fakeCore({ existing: secret(4) }).core, 'ns')).rejects.toThrow(
      /at least 16 bytes/,
    );
  });
});
