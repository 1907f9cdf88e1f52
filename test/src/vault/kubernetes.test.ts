// Kubernetes auth of the hub's Vault client, verified by OpenBao against a real kube-apiserver's
// TokenReview: OpenBao reviews the hub ServiceAccount's TokenRequest token (with the audience
// its role demands) using a reviewer ServiceAccount bound to system:auth-delegator.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  kubernetesAuth,
  tokenAuth,
  VaultClient,
  VaultError,
  VaultKv,
  type VaultAuth,
  type VaultEnvelope,
} from '@mirrorhub/hub/vault/index';
import { startOpenBao, type OpenBao } from '@mirrorhub/infra/components/index';
import { startKit, type Kit, type KitCluster } from '@mirrorhub/infra/kit/index';
import { createLogger } from '@mirrorhub/shared/kit/runtime/log';

import { eventually } from '../support/eventually.js';
import { enableKubernetesAuth, ensureServiceAccount } from '../support/vault.js';

const HUB = { namespace: 'mirrorhub-system', name: 'mirrorhub-hub' };
const REVIEWER = { namespace: 'vault-system', name: 'vault-reviewer' };
const AUDIENCE = 'vault';

let kit: Kit;
let cluster: KitCluster;
let admin: KubeConfig;
let bao: OpenBao;
let root: VaultClient;
const clients: VaultClient[] = [];
const logLines: string[] = [];
const logger = createLogger({
  level: 'debug',
  destination: { write: (l: string) => void logLines.push(l) },
});
/** JWTs and tokens in flight: none may appear in an error or a log line. */
const secrets = new Set<string>();
const provoked: VaultError[] = [];

function client(auth: VaultAuth): VaultClient {
  // Renewing at half of the 3 s token TTL leaves slack for a busy machine.
  const c = new VaultClient({
    address: bao.address,
    caPem: bao.caPem,
    auth,
    logger,
    renewFraction: 0.5,
  });
  clients.push(c);
  return c;
}

async function sys(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown) {
  return (await root.request<VaultEnvelope>({ method, path, body })).body;
}

/** A TokenRequest token of `sa` for `audience` (the JWT the hub hands to Vault). */
async function saToken(sa: { namespace: string; name: string }, audience: string): Promise<string> {
  const tr = await admin.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    namespace: sa.namespace,
    name: sa.name,
    body: { spec: { audiences: [audience], expirationSeconds: 600 } },
  });
  const token = tr.status?.token;
  if (!token) throw new Error('TokenRequest returned no token');
  secrets.add(token);
  return token;
}

async function failure(p: Promise<unknown>): Promise<VaultError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(VaultError);
  provoked.push(err as VaultError);
  return err as VaultError;
}

beforeAll(async () => {
  [kit, bao] = await Promise.all([
    startKit({ clusters: ['hub'], aws: false }),
    startOpenBao({ tls: true }),
  ]);
  cluster = kit.cluster('hub');
  admin = cluster.kubeConfig();
  secrets.add(bao.rootToken);
  root = client(tokenAuth({ token: bao.rootToken }));

  // The reviewer: OpenBao calls TokenReview with its token.
  secrets.add(await enableKubernetesAuth(root, admin, cluster, REVIEWER));
  await ensureServiceAccount(admin, HUB);
  await ensureServiceAccount(admin, { namespace: HUB.namespace, name: 'intruder' });

  await sys('PUT', 'sys/policies/acl/hub', {
    policy: 'path "secret/data/hub/*" { capabilities = ["create", "read", "update"] }',
  });
  await sys('POST', 'auth/kubernetes/role/hub', {
    bound_service_account_names: [HUB.name],
    bound_service_account_namespaces: [HUB.namespace],
    audience: AUDIENCE,
    token_policies: ['hub'],
    token_ttl: '3s',
    token_max_ttl: '60s',
  });
}, 300_000);

afterAll(async () => {
  for (const c of clients) await c.close();
  await bao?.stop();
  await kit?.stop();
});

describe('Kubernetes auth', () => {
  it('logs in with a TokenRequest token for the role audience, renews, and logs in again with a fresh token after revocation', async () => {
    let jwts = 0;
    const c = client(
      kubernetesAuth({
        role: 'hub',
        getJwt: () => {
          jwts++;
          return saToken(HUB, AUDIENCE);
        },
      }),
    );
    const kv = new VaultKv(c, { mounts: { secret: 2 } });
    const data = { password: `k8s-${Math.random().toString(36).slice(2)}` };
    secrets.add(data.password);
    expect(await kv.writeIfChanged('secret/hub/db', data)).toBe(true);
    expect((await kv.read('secret/hub/db'))?.data).toEqual(data);
    expect([c.session.stats().logins, jwts]).toEqual([1, 1]);

    await eventually(() => expect(c.session.stats().renewals).toBeGreaterThanOrEqual(1), {
      timeoutMs: 10_000,
    });
    await sys('PUT', 'sys/leases/revoke-prefix/auth/kubernetes/login');
    expect((await kv.read('secret/hub/db'))?.data).toEqual(data);
    expect([c.session.stats().logins, jwts]).toEqual([2, 2]);
  });

  it('is refused, clearly, with a token for another audience', async () => {
    const c = client(kubernetesAuth({ role: 'hub', getJwt: () => saToken(HUB, 'not-vault') }));
    const err = await failure(c.login());
    expect(err.kind).toBe('login-failed');
    expect(err.message).toMatch(
      /^Kubernetes login at auth\/kubernetes as role "hub" failed \(\d+\): Vault says: .+; check that the role binds this ServiceAccount's name and namespace, that the token's audience is the role's audience/,
    );
  });

  it('is refused for a ServiceAccount the role does not bind, and for a role that does not exist', async () => {
    const intruder = client(
      kubernetesAuth({
        role: 'hub',
        getJwt: () => saToken({ namespace: HUB.namespace, name: 'intruder' }, AUDIENCE),
      }),
    );
    expect((await failure(intruder.login())).kind).toBe('login-failed');
    const noRole = client(kubernetesAuth({ role: 'nope', getJwt: () => saToken(HUB, AUDIENCE) }));
    const err = await failure(noRole.login());
    expect(err.kind).toBe('login-failed');
    expect(err.message).toContain('as role "nope" failed');
  });

  it('says so when the hub cannot get a ServiceAccount token', async () => {
    const c = client(
      kubernetesAuth({
        role: 'hub',
        getJwt: () => Promise.reject(new Error('TokenRequest forbidden')),
      }),
    );
    const err = await failure(c.login());
    expect(err.message).toBe(
      'Kubernetes login at auth/kubernetes as role "hub": could not get a ServiceAccount token to log in with: TokenRequest forbidden',
    );
  });
});

describe('redaction', () => {
  it('no JWT or token reaches an error or a log line', () => {
    expect(provoked.length).toBeGreaterThanOrEqual(4);
    const logs = logLines.join('');
    expect(logs).toContain('vault login succeeded');
    const texts = provoked.map((e) =>
      [String(e), e.stack, JSON.stringify(e), ...e.errors].join('\n'),
    );
    for (const s of secrets) {
      expect(logs).not.toContain(s);
      for (const t of texts) expect(t).not.toContain(s);
    }
    expect(logs + texts.join('\n')).not.toMatch(/eyJ[A-Za-z0-9_-]{10,}\./);
  });
});
