// A hub replica that does not lead reads a dynamic Vault source from the leases Secret the leader
// writes, and never asks Vault for, renews or revokes a lease.
import { afterEach, describe, expect, it } from 'vitest';
import type { ClusterSecretMirror, VaultSourceRef } from '@mirrorhub/shared/api/index';
import { RestClient } from '@mirrorhub/shared/kit/k8s/rest';
import { createMetrics, silentLogger } from '@mirrorhub/shared/kit/runtime/index';
import {
  startHttpStub,
  type HttpStub,
  type StubRequest,
} from '@mirrorhub/shared/testing/http-stub';
import type { Role } from '../../../shards/ownership.js';
import { vaultRequests, type VaultConnections } from '../../../vault/connections.js';
import { VaultDynamicSources } from './index.js';
import { encodeRecord, leaseSource, recordKey, type LeaseRecord } from './rules.js';

const FOLLOWING: Role = { leading: () => false, onChange: () => () => undefined };
const KEY = 'ClusterSecretMirror//db';
const REF: VaultSourceRef = {
  kind: 'Vault',
  connection: { kind: 'ClusterVaultConnection', name: 'vault' },
  path: 'db/creds/app',
  dynamic: { method: 'GET', renewIncrementSeconds: 3600, revokeGraceSeconds: 300 },
};
const MIRROR = {
  apiVersion: 'mirrorhub.io/v1alpha1',
  kind: 'ClusterSecretMirror',
  metadata: { name: 'db', uid: 'uid-db', generation: 1, finalizers: ['mirrorhub.io/hub'] },
  spec: { source: { kind: 'Vault', vault: {} }, destination: { namespaces: ['app'] } },
} as unknown as ClusterSecretMirror;

const record = (password: string): LeaseRecord => ({
  source: leaseSource(REF),
  leaseId: 'lease-never-read-here',
  data: { username: 'app', password },
  renewable: true,
  issuedAt: 1,
  expiresAt: 4_000_000_000_000,
  retiring: [],
});

let stub: HttpStub | undefined;
let kind: VaultDynamicSources | undefined;
afterEach(async () => {
  await kind?.stop();
  await stub?.close();
});

describe('VaultDynamicSources on a replica that does not lead', () => {
  it('delivers the credentials the leader recorded, and never calls Vault', async () => {
    stub = await startHttpStub();
    const secret = {
      metadata: {
        name: 'mirrorhub-leases',
        namespace: 'mirrorhub-system',
        uid: 'u',
        resourceVersion: '4',
      },
      data: { [recordKey(KEY)]: encodeRecord(record('pw-1')) },
    };
    stub.reply = (r: StubRequest) =>
      r.url.includes('watch=true')
        ? { status: 200 }
        : { status: 200, body: { metadata: { resourceVersion: '4' }, items: [secret] } };
    const vaultCalls: string[] = [];
    const connections = new Proxy(
      {},
      {
        get: (_t, prop) =>
          prop === 'refusal'
            ? () => Promise.resolve(undefined)
            : () => {
                vaultCalls.push(String(prop));
                throw new Error('a replica that does not lead never calls Vault for a lease');
              },
      },
    ) as unknown as VaultConnections;
    const enqueued: string[] = [];
    const metrics = createMetrics({ component: 'hub', defaultMetrics: false });
    kind = new VaultDynamicSources({
      connections,
      rest: new RestClient(stub.access),
      leaseNamespace: 'mirrorhub-system',
      requests: vaultRequests(metrics),
      logger: silentLogger(),
      clock: { now: () => Date.now(), setTimer: () => ({ cancel: () => undefined }) },
      enqueue: (k) => enqueued.push(k),
      role: FOLLOWING,
      kubeConfig: stub.access,
    });
    const ctx = {
      key: KEY,
      id: { kind: 'ClusterSecretMirror' as const, name: 'db' },
      mirror: MIRROR,
      now: new Date(),
    };

    // Until the Secret is listed: unknown; the list enqueues the mirror.
    expect(await kind.observe(ctx, REF)).toEqual({ state: 'unknown' });
    for (let i = 0; i < 200 && enqueued.length === 0; i++)
      await new Promise((r) => setTimeout(r, 10));
    expect(enqueued).toEqual([KEY]);

    const reading = await kind.observe(ctx, REF);
    expect(reading).toMatchObject({ state: 'observed', observation: { state: 'found' } });
    const found = reading.state === 'observed' ? reading.observation : undefined;
    expect(found?.state === 'found' ? found.object.data : undefined).toEqual({
      username: Buffer.from('app').toString('base64'),
      password: Buffer.from('pw-1').toString('base64'),
    });

    // Deleting the mirror revokes nothing here: the lease is the leader's.
    expect(
      await kind.release({
        key: KEY,
        id: ctx.id,
        mirror: MIRROR,
        held: true,
        deletingSince: new Date(),
        graceMs: 1000,
        now: new Date(),
      }),
    ).toEqual({});
    expect(vaultCalls).toEqual([]);
    expect(stub.requests.every((r) => r.method === 'GET')).toBe(true);
  });
});
