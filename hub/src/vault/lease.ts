// Leased (dynamic) secrets: read one, renew its lease instead of minting new credentials each
// poll, revoke it when the mirror no longer needs it.
//
// A lease id is a credential (whoever holds it can revoke the secret, or keep it alive): it
// lives in a private field of `VaultLease`, which prints and serialises without it, and every
// request that carries one lists it among the secrets scrubbed from errors.

import { util } from '@mirrorhub/shared/kit/runtime/builtins';
import { decodeData, normalizePath } from './kv.js';
import { isVaultError, VaultError } from './errors.js';
import { apiPath, type VaultEnvelope, type VaultMethod } from './http.js';
import type { VaultClient } from './client.js';

const { inspect } = util;

export class VaultLease {
  readonly #id: string;
  /** Seconds from when it was granted or last renewed. */
  readonly leaseDuration: number;
  readonly renewable: boolean;

  constructor(leaseId: string, leaseDuration: number, renewable: boolean) {
    this.#id = leaseId;
    this.leaseDuration = leaseDuration;
    this.renewable = renewable;
  }

  /** The lease id: a credential; pass it to Vault, never to a log. */
  get leaseId(): string {
    return this.#id;
  }

  toJSON(): Record<string, unknown> {
    return { leaseDuration: this.leaseDuration, renewable: this.renewable };
  }

  [inspect.custom](): string {
    return `VaultLease { leaseDuration: ${this.leaseDuration}, renewable: ${this.renewable} }`;
  }
}

export interface LeasedSecret {
  /** Values as strings; non-strings as JSON text (as KV reads do, see kv.ts). */
  data: Record<string, string>;
  jsonKeys: string[];
  /** Undefined when Vault gave no lease (a static secret). */
  lease: VaultLease | undefined;
}

export interface ReadLeasedOptions {
  /** Most engines issue on GET (`database/creds/x`); some want POST/PUT with parameters. */
  method?: Extract<VaultMethod, 'GET' | 'POST' | 'PUT'>;
  body?: Record<string, unknown>;
}

/** Reads a dynamic secret (`database/creds/app`, `kubernetes/creds/role`...) and its lease. */
export async function readLeased(
  client: VaultClient,
  path: string,
  opts: ReadLeasedOptions = {},
): Promise<LeasedSecret> {
  const res = await client.request<VaultEnvelope<Record<string, unknown>>>({
    method: opts.method ?? 'GET',
    path: apiPath(normalizePath(path)),
    ...(opts.body !== undefined ? { body: opts.body } : {}),
  });
  const body = res.body;
  if (!body?.data) {
    throw new VaultError({
      kind: 'unexpected-response',
      message: `${path}: Vault answered without data: is it the path of a secrets engine that issues credentials?`,
      path,
    });
  }
  const { data, jsonKeys } = decodeData(body.data);
  const lease = body.lease_id
    ? new VaultLease(body.lease_id, body.lease_duration ?? 0, body.renewable === true)
    : undefined;
  return { data, jsonKeys, lease };
}

function idOf(lease: VaultLease | string): string {
  const id = typeof lease === 'string' ? lease : lease.leaseId;
  if (!id) throw new VaultError({ kind: 'usage', message: 'the lease id is empty' });
  return id;
}

/** Extends a lease by `incrementSeconds` (Vault may grant less: up to the lease's max TTL). */
export async function renewLease(
  client: VaultClient,
  lease: VaultLease | string,
  incrementSeconds: number,
): Promise<VaultLease> {
  const id = idOf(lease);
  try {
    const res = await client.request({
      method: 'PUT',
      path: 'sys/leases/renew',
      body: { lease_id: id, increment: incrementSeconds },
      secrets: [id],
    });
    return new VaultLease(
      res.body?.lease_id || id,
      res.body?.lease_duration ?? 0,
      res.body?.renewable === true,
    );
  } catch (err) {
    if (isVaultError(err) && (err.kind === 'invalid-request' || err.kind === 'not-found')) {
      const said = err.errors.length ? `: Vault says: ${err.errors.join('; ')}` : '';
      throw err.withMessage(
        `renewing a lease failed (${err.status})${said}: a lease that is not renewable, expired, revoked or at its max TTL cannot be renewed; read the secret again for a new one`,
      );
    }
    throw err;
  }
}

/** Revokes a lease (and the credentials behind it). Revoking an unknown lease succeeds. */
export async function revokeLease(client: VaultClient, lease: VaultLease | string): Promise<void> {
  const id = idOf(lease);
  await client.request({
    method: 'PUT',
    path: 'sys/leases/revoke',
    body: { lease_id: id },
    secrets: [id],
  });
}
