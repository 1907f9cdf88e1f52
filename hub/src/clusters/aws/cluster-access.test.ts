// EksClusterAccess against real moto (STS/IAM) and the EKS emulator's DescribeCluster, with an
// injected clock. No Kubernetes here: the emulated clusters point at an address nobody listens
// on, and test/src/eks-access.test.ts drives the same class against real kube-apiservers.
//
// moto and the emulator live in infra/, which depends on shared; this test imports them by path
// (tests are not part of shared's build), like a suite would.
//
// Two small recording proxies sit in front of moto and the emulator. They count calls, record
// what the hub sent (RoleSessionName, DurationSeconds, ExternalId), can delay or fail a call,
// and let STS "run on" the test's clock: AssumeRole's Expiration is rewritten to fake-now +
// DurationSeconds, as STS would answer if its clock were the test's.
//
// ExternalId is *enforced* here, not just passed: moto 5.2.1 evaluates a role's trust policy,
// `sts:ExternalId` conditions included, once request authorisation is switched on
// (POST /moto-api/reset-auth), but only when the role is in the caller's own account (it looks
// the role up in the caller's account and skips the trust check when it is not there). So the
// enforcement cases use a role in the hub's account; cross-account trust is not checked by moto.
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startEksEmulator, type EksEmulator } from '../../../../infra/src/aws/eks-emulator.js';
import {
  createRole,
  createUserWithAccessKey,
  iamCall,
  putRolePolicy,
  startMoto,
  trustPolicy,
  type MotoServer,
  type Principal,
} from '../../../../infra/src/aws/moto.js';
import {
  EksAccessError,
  EksClusterAccess,
  ROLE_DURATION_MAX_S,
  StsClients,
  defaultRoleSessionName,
  endpointFailure,
  type EksClusterAccessOptions,
} from './cluster-access.js';
import { decodeEksToken, type AwsCredentials } from './eks-token.js';
import type { KubeAccess } from '@mirrorhub/shared/kit/k8s/access';

const REGION = 'eu-west-1';
const HUB = '111111111111';
const A = '222222222222';
const B = '333333333333';
const MIN = 60_000;
const CA = '-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n';
const SERVER_A = 'https://127.0.0.1:1';

// ---- a recording proxy -------------------------------------------------------------------------

interface Recorded {
  method: string;
  path: string;
  params: URLSearchParams;
}

interface Proxy {
  endpoint: string;
  calls: Recorded[];
  /** Delay answers by this much (ms). */
  delayMs: number;
  /** Answer this instead of forwarding, when set. */
  fail: { status: number; headers: Record<string, string>; body: string } | undefined;
  /** Rewrite a forwarded answer. */
  rewrite: ((body: string, req: Recorded) => string) | undefined;
  stop(): Promise<void>;
}

async function startProxy(target: string): Promise<Proxy> {
  const to = new URL(target);
  const proxy: Proxy = {
    endpoint: '',
    calls: [],
    delayMs: 0,
    fail: undefined,
    rewrite: undefined,
    stop: () => new Promise((r) => server.close(() => r())),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const url = new URL(req.url ?? '/', 'http://x');
      const rec: Recorded = {
        method: req.method ?? 'GET',
        path: url.pathname,
        params: new URLSearchParams(
          req.method === 'POST' && body.length ? body.toString('utf8') : url.search,
        ),
      };
      proxy.calls.push(rec);
      const fail = proxy.fail;
      const answer = () => {
        if (fail) {
          res.writeHead(fail.status, fail.headers);
          res.end(fail.body);
          return;
        }
        // The Host header is forwarded as signed, so moto's signature check still holds.
        const up = httpRequest(
          {
            host: to.hostname,
            port: to.port,
            method: req.method,
            path: req.url,
            headers: { ...req.headers, 'accept-encoding': 'identity' },
          },
          (upRes) => {
            const out: Buffer[] = [];
            upRes.on('data', (c: Buffer) => out.push(c));
            upRes.on('end', () => {
              let text = Buffer.concat(out).toString('utf8');
              if (proxy.rewrite) text = proxy.rewrite(text, rec);
              const headers = { ...upRes.headers };
              delete headers['content-length'];
              delete headers['transfer-encoding'];
              res.writeHead(upRes.statusCode ?? 502, {
                ...headers,
                'content-length': Buffer.byteLength(text),
              });
              res.end(text);
            });
          },
        );
        up.on('error', () => {
          res.writeHead(502);
          res.end();
        });
        up.end(body);
      };
      if (proxy.delayMs > 0) setTimeout(answer, proxy.delayMs);
      else answer();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  proxy.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}

const stsFailure = (code: string, message: string) => ({
  status: 403,
  headers: { 'content-type': 'text/xml' },
  body: `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>r-1</RequestId></ErrorResponse>`,
});

const eksNotFound = (name: string) => ({
  status: 404,
  headers: { 'content-type': 'application/json', 'x-amzn-errortype': 'ResourceNotFoundException' },
  body: JSON.stringify({ message: `No cluster found for name: ${name}.` }),
});

// ---- fixture -----------------------------------------------------------------------------------

let moto: MotoServer;
let emulator: EksEmulator;
let sts: Proxy;
let eks: Proxy;
let hub: Principal;
let roleA: string;
let roleB: string;
let roleOwn: string;
/** The test's clock; STS answers on it too (see the proxy's rewrite). */
let nowMs: number;
const now = () => new Date(nowMs);
const created: EksClusterAccess[] = [];

function access(over: Partial<EksClusterAccessOptions> = {}): EksClusterAccess {
  const a = new EksClusterAccess({
    cluster: { name: 'follower-a', region: REGION, roleArn: roleA, externalId: 'ext-a' },
    baseCredentials: hub.credentials,
    stsEndpoint: sts.endpoint,
    eksEndpoint: eks.endpoint,
    roleSessionName: 'mirrorhub-hub-test',
    backoff: { random: () => 0 },
    now,
    ...over,
  });
  created.push(a);
  return a;
}

const assumeCalls = () => sts.calls.filter((c) => c.params.get('Action') === 'AssumeRole');
const describeCalls = () => eks.calls.filter((c) => /^\/clusters\/[^/]+$/.test(c.path));

/** The bearer token the access would send with the next request. */
async function bearer(access: KubeAccess): Promise<string> {
  const opts: { headers?: Record<string, string> } = {};
  await access.applyToHTTPSOptions(opts);
  const auth = opts.headers?.Authorization;
  expect(auth).toMatch(/^Bearer k8s-aws-v1\./);
  return auth!.slice('Bearer '.length);
}
const tokenKeyId = (token: string) =>
  decodeEksToken(token).searchParams.get('X-Amz-Credential')!.split('/')[0];

interface MotoSession {
  access_key_id: string;
  role_arn: string;
  session_name: string;
  external_id: string | null;
}
/** An admin KubeConfig that points nowhere: the emulator only uses it for access policies. */
function dummyAdmin(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'x', server: 'https://127.0.0.1:1', skipTLSVerify: true }],
    users: [{ name: 'x' }],
    contexts: [{ name: 'x', cluster: 'x', user: 'x' }],
    currentContext: 'x',
  });
  return kc;
}

async function motoSessions(): Promise<MotoSession[]> {
  const data = (await (await fetch(`${moto.endpoint}/moto-api/data.json`)).json()) as {
    sts?: { AssumedRole?: MotoSession[] };
  };
  return data.sts?.AssumedRole ?? [];
}

beforeAll(async () => {
  moto = await startMoto();
  emulator = await startEksEmulator({
    stsEndpoint: moto.endpoint,
    allowedStsHosts: [new URL(moto.endpoint).host],
  });
  const cluster = (name: string, accountId: string) =>
    emulator.addCluster({
      name,
      region: REGION,
      accountId,
      endpoint: name === 'follower-a' ? SERVER_A : 'https://127.0.0.1:2',
      caPem: CA,
      version: '1.34',
      admin: dummyAdmin(), // DescribeCluster never touches the cluster
    });
  cluster('follower-a', A);
  cluster('hub-own', HUB);

  // The hub's base identity: a user allowed to assume exactly the follower roles (what the
  // terraform hub module grants), so a role it was not granted is AccessDenied.
  hub = await createUserWithAccessKey(moto.endpoint, { accountId: HUB, userName: 'mirrorhub-hub' });
  const trust = (externalId: string) => trustPolicy({ principals: [hub.arn], externalId });
  roleA = (
    await createRole(moto.endpoint, {
      accountId: A,
      roleName: 'mirrorhub-follower',
      trustPolicy: trust('ext-a'),
    })
  ).arn;
  roleB = (
    await createRole(moto.endpoint, {
      accountId: B,
      roleName: 'mirrorhub-follower',
      trustPolicy: trust('ext-b'),
    })
  ).arn;
  roleOwn = (
    await createRole(moto.endpoint, {
      accountId: HUB,
      roleName: 'mirrorhub-follower',
      trustPolicy: trust('ext-own'),
    })
  ).arn;
  await iamCall(moto.endpoint, HUB, 'PutUserPolicy', {
    UserName: 'mirrorhub-hub',
    PolicyName: 'assume-followers',
    PolicyDocument: JSON.stringify({
      Version: '2012-10-17',
      Statement: [{ Effect: 'Allow', Action: 'sts:AssumeRole', Resource: [roleA, roleB, roleOwn] }],
    }),
  });
  // Not needed by EKS (the emulator authorises by account), but what a real follower role has.
  await putRolePolicy(moto.endpoint, {
    accountId: A,
    roleName: 'mirrorhub-follower',
    policyName: 'describe',
    policy: {
      Version: '2012-10-17',
      Statement: [{ Effect: 'Allow', Action: 'eks:DescribeCluster', Resource: '*' }],
    },
  });
  // From here on moto authenticates every request and evaluates IAM policies.
  const auth = await fetch(`${moto.endpoint}/moto-api/reset-auth`, { method: 'POST', body: '0' });
  expect(auth.ok).toBe(true);

  sts = await startProxy(moto.endpoint);
  eks = await startProxy(emulator.endpoint);
  sts.rewrite = (body, req) => {
    if (req.params.get('Action') !== 'AssumeRole') return body;
    const duration = Number(req.params.get('DurationSeconds') ?? 3600);
    const exp = new Date(nowMs + duration * 1000).toISOString();
    return body.replace(/<Expiration>[^<]*<\/Expiration>/, `<Expiration>${exp}</Expiration>`);
  };
}, 120_000);

afterAll(async () => {
  for (const a of created) a.destroy();
  await Promise.all([sts?.stop(), eks?.stop()]);
  await emulator?.stop();
  await moto?.stop();
});

beforeEach(() => {
  nowMs = Date.now();
  sts.calls.length = 0;
  eks.calls.length = 0;
  sts.delayMs = eks.delayMs = 0;
  sts.fail = eks.fail = undefined;
});

// ---- caching and refresh -------------------------------------------------------------------------

describe('EksClusterAccess caching', () => {
  it('assumes the role once and describes the cluster once for many kubeAccess() calls', async () => {
    const a = access();
    const first = await a.kubeAccess();
    for (let i = 0; i < 20; i++) {
      expect(await a.kubeAccess()).toBe(first);
      await bearer(first);
    }
    expect(assumeCalls()).toHaveLength(1);
    expect(describeCalls()).toHaveLength(1);
    expect(first.getCurrentCluster()?.server).toBe(SERVER_A);
    const tls: { ca?: Buffer; rejectUnauthorized?: boolean } = {};
    await first.applyToHTTPSOptions(tls);
    expect(tls.ca?.toString()).toBe(CA);
    expect(tls.rejectUnauthorized).toBe(true);
    // Presigned for the cluster region's public STS, whatever endpoint AssumeRole used: the
    // apiserver's authenticator replays that URL and accepts only STS hostnames it knows.
    const url = decodeEksToken(await bearer(first));
    expect(url.origin).toBe(`https://sts.${REGION}.amazonaws.com`);
    expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('host;x-k8s-aws-id');

    const h = a.health();
    expect(h.identityArn).toBe(
      `arn:aws:sts::${A}:assumed-role/mirrorhub-follower/mirrorhub-hub-test`,
    );
    expect(h.credentialsExpireAt?.getTime()).toBe(nowMs + 3600_000);
    expect(h.tokenExpiresAt?.getTime()).toBe(Math.floor(nowMs / 1000) * 1000 + 15 * MIN);
    expect(h.server).toBe(SERVER_A);
    expect(h.kubernetesVersion).toBe('1.34');
    expect(h.lastError).toBeUndefined();
  });

  it("assumes every cluster's role through one STS client per region of the process's StsClients", async () => {
    const shared = new StsClients({ baseCredentials: hub.credentials, stsEndpoint: sts.endpoint });
    try {
      const through = (roleArn: string, externalId: string) =>
        access({
          cluster: { name: 'follower-a', region: REGION, roleArn, externalId },
          baseCredentials: undefined,
          stsEndpoint: undefined,
          stsClients: shared,
        });
      const a = through(roleA, 'ext-a');
      const b = through(roleB, 'ext-b');
      await a.credentials();
      await b.credentials();
      expect(assumeCalls().map((c) => c.params.get('RoleArn'))).toEqual([roleA, roleB]);
      expect(a.health().identityArn).toContain(`arn:aws:sts::${A}:`);
      expect(b.health().identityArn).toContain(`arn:aws:sts::${B}:`);
      expect(shared.size).toBe(1);
      // A cluster removed destroys its access, not the client the others use.
      a.destroy();
      b.invalidateCredentials();
      await b.credentials();
      expect(assumeCalls()).toHaveLength(3);
      expect(() => through(roleA, 'ext-a').destroy()).not.toThrow();
      expect(() => access({ stsClients: shared, stsEndpoint: undefined })).toThrow(
        /give baseCredentials and stsEndpoint to the StsClients/,
      );
    } finally {
      shared.destroy();
    }
  });

  it('sends ExternalId, the session name and the duration, and STS records them', async () => {
    const a = access();
    const creds = await a.credentials();
    const [call] = assumeCalls();
    expect(call!.params.get('RoleArn')).toBe(roleA);
    expect(call!.params.get('ExternalId')).toBe('ext-a');
    expect(call!.params.get('RoleSessionName')).toBe('mirrorhub-hub-test');
    expect(call!.params.get('DurationSeconds')).toBe('3600');
    const session = (await motoSessions()).find((s) => s.access_key_id === creds.accessKeyId);
    expect(session).toMatchObject({
      role_arn: roleA,
      session_name: 'mirrorhub-hub-test',
      external_id: 'ext-a',
    });
  });

  it('re-assumes 5 minutes before expiry, not sooner, and tokens follow the new session', async () => {
    const a = access();
    const ka = await a.kubeAccess();
    const key1 = (await a.credentials()).accessKeyId;
    expect(tokenKeyId(await bearer(ka))).toBe(key1);

    nowMs += 54 * MIN + 59_000; // 5 min 1 s left
    expect(tokenKeyId(await bearer(ka))).toBe(key1);
    expect(assumeCalls()).toHaveLength(1);

    nowMs += 1000; // exactly 5 min left: due
    const token = await bearer(ka);
    expect(assumeCalls()).toHaveLength(2);
    const key2 = (await a.credentials()).accessKeyId;
    expect(key2).not.toBe(key1);
    expect(tokenKeyId(token)).toBe(key2);
    expect(a.health().credentialsExpireAt?.getTime()).toBe(nowMs + 3600_000);
    expect(await a.kubeAccess()).toBe(ka); // same endpoint: same access, clients stay valid
    expect(describeCalls()).toHaveLength(1);
  });

  it('re-mints the token at 14 of its 15 minutes with the same session', async () => {
    const a = access();
    const ka = await a.kubeAccess();
    const t1 = await bearer(ka);
    nowMs += 13 * MIN;
    expect(await bearer(ka)).toBe(t1);
    nowMs += MIN;
    const t2 = await bearer(ka);
    expect(t2).not.toBe(t1);
    expect(tokenKeyId(t2)).toBe(tokenKeyId(t1));
    expect(a.health().tokenExpiresAt?.getTime()).toBe(Math.floor(nowMs / 1000) * 1000 + 15 * MIN);
    expect(assumeCalls()).toHaveLength(1);
  });

  it('invalidateCredentials() re-assumes on the next call and keeps the old session as fallback', async () => {
    const a = access();
    const ka = await a.kubeAccess();
    const key1 = tokenKeyId(await bearer(ka));
    a.invalidateCredentials();
    const key2 = tokenKeyId(await bearer(ka));
    expect(key2).not.toBe(key1);
    expect(assumeCalls()).toHaveLength(2);

    a.invalidateCredentials();
    sts.fail = stsFailure('AccessDenied', 'sessions revoked');
    expect(tokenKeyId(await bearer(ka))).toBe(key2);
    expect(a.health().lastError?.step).toBe('AssumeRole');
  });

  it('shares one AssumeRole among concurrent callers', async () => {
    const a = access();
    sts.delayMs = 300;
    const ka = a.kubeAccess();
    const all = await Promise.all([
      ...Array.from({ length: 20 }, () => a.credentials()),
      ...Array.from({ length: 5 }, () => a.kubeAccess()),
      ka,
    ]);
    expect(assumeCalls()).toHaveLength(1);
    expect(describeCalls()).toHaveLength(1);
    const keys = new Set(all.slice(0, 20).map((c) => (c as AwsCredentials).accessKeyId));
    expect(keys.size).toBe(1);

    // And again when the session is due: one call for 30 concurrent token requests.
    nowMs += 56 * MIN;
    const kube = await ka;
    const tokens = await Promise.all(Array.from({ length: 30 }, () => bearer(kube)));
    expect(assumeCalls()).toHaveLength(2);
    expect(new Set(tokens.map(tokenKeyId)).size).toBe(1);
  });

  it.each([
    { asked: 43_200, sent: String(ROLE_DURATION_MAX_S) },
    { asked: 60, sent: '900' },
    { asked: 1800, sent: '1800' },
  ])('clamps roleDurationSeconds $asked to $sent', async ({ asked, sent }) => {
    const a = access({ roleDurationSeconds: asked });
    await a.credentials();
    expect(assumeCalls()[0]!.params.get('DurationSeconds')).toBe(sent);
    expect(a.roleDurationSeconds).toBe(Number(sent));
  });

  it('with a 15 minute session re-assumes every 10 minutes', async () => {
    const a = access({ roleDurationSeconds: 900 });
    const ka = await a.kubeAccess();
    for (let i = 0; i < 6; i++) {
      nowMs += 10 * MIN;
      await bearer(ka);
    }
    expect(assumeCalls()).toHaveLength(7);
  });
  it('keeps a refresh margin shorter than the session as asked, even one past half of it', async () => {
    // 899 s before the end of a 900 s session: due one second in, not halfway (a cap that
    // halved every margin longer than half the session made rotation.test renew at 450 s).
    const a = access({ roleDurationSeconds: 900, refreshBeforeMs: 899_000 });
    const ka = await a.kubeAccess();
    await bearer(ka);
    expect(assumeCalls()).toHaveLength(1);
    nowMs += 1_000;
    await bearer(ka);
    expect(assumeCalls()).toHaveLength(2);
  });
  it('re-assumes halfway through a session STS answered shorter than the refresh margin', async () => {
    // STS may answer a shorter session than asked (an SCP, a role's own maximum, an emulator
    // with short lifetimes). Five minutes before expiry is then already past: without a cap
    // every request would re-assume.
    const asked = sts.rewrite;
    sts.rewrite = (body, req) =>
      req.params.get('Action') !== 'AssumeRole'
        ? body
        : body.replace(
            /<Expiration>[^<]*<\/Expiration>/,
            `<Expiration>${new Date(nowMs + 120_000).toISOString()}</Expiration>`,
          );
    try {
      const a = access({ roleDurationSeconds: 900 });
      const ka = await a.kubeAccess();
      for (let i = 0; i < 10; i++) await bearer(ka);
      nowMs += 59_000;
      await bearer(ka);
      expect(assumeCalls()).toHaveLength(1);
      nowMs += 1_000; // half of the 120 s session left: due
      await bearer(ka);
      for (let i = 0; i < 10; i++) await bearer(ka);
      expect(assumeCalls()).toHaveLength(2);
    } finally {
      sts.rewrite = asked;
    }
  });
});

describe('EksClusterAccess when AWS fails', () => {
  it('keeps the last good session until it expires, backs off, and recovers', async () => {
    const a = access({ backoff: { initialMs: 10_000, maxMs: 60_000, random: () => 0 } });
    const ka = await a.kubeAccess();
    const good = await a.credentials();

    nowMs += 56 * MIN; // refresh due, 4 min of the session left
    sts.fail = stsFailure('AccessDenied', 'User: x is not authorized to perform: sts:AssumeRole');
    expect((await a.credentials()).accessKeyId).toBe(good.accessKeyId);
    expect(tokenKeyId(await bearer(ka))).toBe(good.accessKeyId);
    expect(assumeCalls()).toHaveLength(2); // one failed call; the token request waited
    const err = a.health().lastError;
    expect(err).toMatchObject({ step: 'AssumeRole' });
    expect(err?.message).toBe(
      `AssumeRole ${roleA} failed: AccessDenied: User: x is not authorized to perform: sts:AssumeRole; ` +
        'check the role exists, its trust policy allows the hub role and the externalId matches, and the hub role may call sts:AssumeRole on it',
    );
    expect(err?.at.getTime()).toBe(nowMs);

    nowMs += 9_999;
    await a.credentials();
    expect(assumeCalls()).toHaveLength(2);
    nowMs += 1; // 10 s: retry, fails again; next backoff 20 s
    await a.credentials();
    expect(assumeCalls()).toHaveLength(3);
    nowMs += 19_999;
    await a.credentials();
    expect(assumeCalls()).toHaveLength(3);

    // The session runs out while STS still fails: now callers get the error.
    nowMs = good.expiration!.getTime();
    await expect(a.credentials()).rejects.toThrow(EksAccessError);
    const calls = assumeCalls().length;
    await expect(bearer(ka)).rejects.toMatchObject({
      step: 'AssumeRole',
      code: 'AccessDenied',
    });
    expect(assumeCalls()).toHaveLength(calls); // within the backoff: no new call

    sts.fail = undefined;
    nowMs += 60_000;
    const fresh = await a.credentials();
    expect(fresh.accessKeyId).not.toBe(good.accessKeyId);
    expect(tokenKeyId(await bearer(ka))).toBe(fresh.accessKeyId);
    expect(a.health().lastError).toBeUndefined();
    expect(a.health().credentialsExpireAt?.getTime()).toBe(nowMs + 3600_000);
  });

  it('does not cache a failure forever when nothing was ever assumed', async () => {
    const a = access({ backoff: { initialMs: 1000, maxMs: 1000, random: () => 0 } });
    sts.fail = stsFailure('RegionDisabledException', 'STS is not activated in this region');
    await expect(a.kubeAccess()).rejects.toThrow(
      `AssumeRole ${roleA} failed: RegionDisabledException: STS is not activated in this region; ` +
        `STS is not activated in ${REGION} for the hub's account; activate it or set another STS region`,
    );
    await expect(a.kubeAccess()).rejects.toThrow(EksAccessError);
    const during = assumeCalls().length;
    sts.fail = undefined;
    nowMs += 1000;
    await a.kubeAccess();
    expect(assumeCalls().length).toBe(during + 1);
    expect(a.health().lastError).toBeUndefined();
  });

  it('re-describes every 6 hours, keeps the old endpoint if that fails, re-describes after invalidateEndpoint()', async () => {
    const a = access({ backoff: { initialMs: 1000, maxMs: 1000, random: () => 0 } });
    const ka = await a.kubeAccess();
    nowMs += 6 * 60 * MIN;
    eks.fail = eksNotFound('follower-a');
    expect(await a.kubeAccess()).toBe(ka); // scheduled refresh failed: old answer kept
    expect(describeCalls()).toHaveLength(2);
    expect(a.health().lastError?.step).toBe('DescribeCluster');
    eks.fail = undefined;
    nowMs += 1000;
    expect(await a.kubeAccess()).toBe(ka);
    expect(describeCalls()).toHaveLength(3);
    expect(a.health().lastError).toBeUndefined();

    a.invalidateEndpoint(); // described just now: ignored
    await a.kubeAccess();
    expect(describeCalls()).toHaveLength(3);

    nowMs += 30_000;
    expect(
      a.reportRequestError(
        new Error('request failed', {
          cause: Object.assign(new Error('x'), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' }),
        }),
      ),
    ).toBe('endpoint');
    eks.fail = eksNotFound('follower-a');
    await expect(a.kubeAccess()).rejects.toMatchObject({
      step: 'DescribeCluster',
      code: 'ResourceNotFoundException',
    });
    eks.fail = undefined;
    nowMs += 1000;
    expect(await a.kubeAccess()).toBe(ka); // same endpoint and CA: same access
    expect(describeCalls()).toHaveLength(5);
  });

  /** Keep reporting `err` every 10 s for `ms`; how many DescribeCalls that made. */
  const failingFor = (a: EksClusterAccess, err: () => Error) => async (ms: number) => {
    const before = describeCalls().length;
    for (let t = 0; t < ms; t += 10_000) {
      nowMs += 10_000;
      a.reportRequestError(err());
      await a.kubeAccess();
    }
    return describeCalls().length - before;
  };

  it('re-describes a cluster whose certificate fails ever less often, up to hourly; a working endpoint starts over', async () => {
    const a = access();
    await a.kubeAccess();
    const failFor = failingFor(a, () =>
      Object.assign(new Error('tls'), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' }),
    );
    // Each answer is the endpoint it already had: 30 s, then 60, 120, 240, 480, 960, 1920 s,
    // then every hour.
    expect(await failFor(30_000)).toBe(1);
    expect(await failFor(60_000)).toBe(1);
    expect(await failFor(3 * 60 * MIN - 90_000)).toBe(6);
    expect(await failFor(60 * MIN)).toBe(1);
    expect(await failFor(60 * MIN)).toBe(1);

    // It answers again; its next failure is re-described after 30 s, not an hour.
    a.endpointWorked();
    expect(await failFor(30_000)).toBe(1);
  });

  it('re-describes a cluster that only refuses connections once an hour: down is not moved', async () => {
    const a = access();
    await a.kubeAccess();
    const refused = failingFor(a, () =>
      Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }),
    );
    expect(a.reportRequestError(Object.assign(new Error('x'), { code: 'ETIMEDOUT' }))).toBe(
      'unreachable',
    );
    expect(await refused(60 * MIN - 10_000)).toBe(0);
    expect(await refused(10_000)).toBe(1);
    expect(await refused(60 * MIN - 10_000)).toBe(0);
    expect(await refused(10_000)).toBe(1);
    // A name that no longer resolves may be a cluster made anew: 30 s after the last describe.
    const gone = failingFor(a, () => Object.assign(new Error('dns'), { code: 'ENOTFOUND' }));
    expect(await gone(30_000)).toBe(1);
  });
});

// ---- error messages ----------------------------------------------------------------------------

describe('EksClusterAccess error messages', () => {
  const cases: Array<{
    name: string;
    opts: () => Partial<EksClusterAccessOptions>;
    step: string;
    code: string;
    message: () => string;
  }> = [
    {
      name: 'a role that does not exist',
      opts: () => ({
        cluster: {
          name: 'follower-a',
          region: REGION,
          roleArn: `arn:aws:iam::${A}:role/no-such-role`,
          externalId: 'ext-a',
        },
      }),
      step: 'AssumeRole',
      code: 'AccessDenied',
      message: () =>
        `AssumeRole arn:aws:iam::${A}:role/no-such-role failed: AccessDenied: User: ${hub.arn} is not authorized to perform: sts:AssumeRole; ` +
        'check the role exists, its trust policy allows the hub role and the externalId matches, and the hub role may call sts:AssumeRole on it',
    },
    {
      name: 'the wrong externalId (enforced by moto for a same-account role)',
      opts: () => ({
        cluster: { name: 'hub-own', region: REGION, roleArn: roleOwn, externalId: 'wrong' },
      }),
      step: 'AssumeRole',
      code: 'AccessDenied',
      message: () =>
        `AssumeRole ${roleOwn} failed: AccessDenied: User: ${hub.arn} is not authorized to perform: sts:AssumeRole; ` +
        'check the role exists, its trust policy allows the hub role and the externalId matches, and the hub role may call sts:AssumeRole on it',
    },
    {
      name: 'base credentials STS does not know',
      opts: () => ({
        baseCredentials: {
          accessKeyId: 'AKIAUNKNOWN000000000',
          secretAccessKey: 'not-a-real-secret-key-0000000000',
        },
      }),
      step: 'AssumeRole',
      code: 'InvalidClientTokenId',
      message: () =>
        `AssumeRole ${roleA} failed: InvalidClientTokenId: The security token included in the request is invalid.; ` +
        "the hub's own AWS credentials are missing or invalid; check IRSA / EKS Pod Identity on the hub's service account (or AWS_* env / profile)",
    },
    {
      name: 'an unknown cluster name',
      opts: () => ({
        cluster: { name: 'follower-z', region: REGION, roleArn: roleA, externalId: 'ext-a' },
      }),
      step: 'DescribeCluster',
      code: 'ResourceNotFoundException',
      message: () =>
        `DescribeCluster follower-z in ${REGION} failed: ResourceNotFoundException: No cluster found for name: follower-z.; ` +
        `check eks.name and eks.region (the cluster must be in account ${A}, the account of eks.roleArn)`,
    },
    {
      name: 'the wrong region',
      opts: () => ({
        cluster: { name: 'follower-a', region: 'us-east-1', roleArn: roleA, externalId: 'ext-a' },
      }),
      step: 'DescribeCluster',
      code: 'ResourceNotFoundException',
      message: () =>
        `DescribeCluster follower-a in us-east-1 failed: ResourceNotFoundException: No cluster found for name: follower-a.; ` +
        `check eks.name and eks.region (the cluster must be in account ${A}, the account of eks.roleArn)`,
    },
    {
      name: "another follower's role (the cluster is not in that account)",
      opts: () => ({
        cluster: { name: 'follower-a', region: REGION, roleArn: roleB, externalId: 'ext-b' },
      }),
      step: 'DescribeCluster',
      code: 'ResourceNotFoundException',
      message: () =>
        `DescribeCluster follower-a in ${REGION} failed: ResourceNotFoundException: No cluster found for name: follower-a.; ` +
        `check eks.name and eks.region (the cluster must be in account ${B}, the account of eks.roleArn)`,
    },
    {
      name: 'an STS endpoint nobody answers on',
      opts: () => ({ stsEndpoint: 'http://127.0.0.1:1' }),
      step: 'AssumeRole',
      code: 'ECONNREFUSED',
      message: () =>
        `AssumeRole ${roleA} failed: ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:1; ` +
        'check that the hub can reach http://127.0.0.1:1 (network, proxy, VPC endpoint)',
    },
    {
      name: 'an egress proxy nobody answers on (its password in no message)',
      opts: () => ({ proxy: { httpProxy: 'http://ops:s3cret-pw-0c1@127.0.0.1:1' } }),
      step: 'AssumeRole',
      code: 'ECONNREFUSED',
      message: () =>
        `AssumeRole ${roleA} failed: ECONNREFUSED: proxy http://127.0.0.1:1: ECONNREFUSED ` +
        `(CONNECT ${new URL(sts.endpoint).host}); check that the hub can reach ${sts.endpoint} ` +
        'through the proxy http://127.0.0.1:1 (network, proxy, VPC endpoint)',
    },
  ];

  it.each(cases)('names the call and what to check for $name', async (c) => {
    const a = access(c.opts());
    const err = await a.kubeAccess().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(EksAccessError);
    const e = err as EksAccessError;
    expect({ step: e.step, code: e.code }).toEqual({ step: c.step, code: c.code });
    expect(e.message).toBe(c.message());
    expect(a.health().lastError).toEqual({ step: c.step, message: e.message, at: now() });

    // No secret of any identity involved in any message.
    const sessions = await motoSessions();
    const secrets = [hub.credentials.secretAccessKey, 'not-a-real-secret-key-0000000000'];
    const data = (await (await fetch(`${moto.endpoint}/moto-api/data.json`)).json()) as {
      sts?: { AssumedRole?: Array<{ secret_access_key: string; session_token: string }> };
    };
    for (const s of data.sts?.AssumedRole ?? []) secrets.push(s.secret_access_key, s.session_token);
    expect(sessions.length).toBeGreaterThan(0);
    for (const s of secrets) expect(e.message).not.toContain(s);
  });

  it('accepts the right externalId for the same-account role moto checks', async () => {
    const a = access({
      cluster: { name: 'hub-own', region: REGION, roleArn: roleOwn, externalId: 'ext-own' },
    });
    const ka = await a.kubeAccess();
    expect(ka.getCurrentCluster()?.server).toBe('https://127.0.0.1:2');
    expect(a.health().identityArn).toBe(
      `arn:aws:sts::${HUB}:assumed-role/mirrorhub-follower/mirrorhub-hub-test`,
    );
  });
});

// ---- pure parts ----------------------------------------------------------------------------------

describe('role session name', () => {
  it.each([
    ['mirrorhub-hub-7d9f8c6b5-abcde', 'mirrorhub-hub-mirrorhub-hub-7d9f8c6b5-abcde'],
    ['laptop.local', 'mirrorhub-hub-laptop.local'],
    ['host with spaces/and:colons', 'mirrorhub-hub-host-with-spaces-and-colons'],
    ['', 'mirrorhub-hub-unknown'],
  ])('defaultRoleSessionName(%j) = %j', (host, name) => {
    expect(defaultRoleSessionName(host)).toBe(name);
  });

  it('fits a long host name into 64 characters and keeps two of them apart', () => {
    const a = defaultRoleSessionName('x'.repeat(100) + 'a');
    const b = defaultRoleSessionName('x'.repeat(100) + 'b');
    expect(a).toHaveLength(64);
    expect(a).toMatch(/^mirrorhub-hub-x+-[0-9a-f]{8}$/);
    expect(a).not.toBe(b);
  });

  it('defaults to the host name', () => {
    const a = new EksClusterAccess({
      cluster: { name: 'c', region: REGION, roleArn: 'arn:aws:iam::222222222222:role/r' },
      baseCredentials: { accessKeyId: 'AKIAX', secretAccessKey: 'y' },
    });
    expect(a.roleSessionName).toBe(defaultRoleSessionName());
    expect(a.roleSessionName).toMatch(/^mirrorhub-hub-[\w+=,.@-]+$/);
    a.destroy();
  });

  it.each(['hub-7d9f', 'mirrorhub hub', 'mirrorhub-' + 'x'.repeat(60)])(
    'refuses %j',
    (roleSessionName) => {
      expect(
        () =>
          new EksClusterAccess({
            cluster: { name: 'c', region: REGION, roleArn: 'arn:aws:iam::222222222222:role/r' },
            baseCredentials: { accessKeyId: 'AKIAX', secretAccessKey: 'y' },
            roleSessionName,
          }),
      ).toThrow(/roleSessionName .* must be 2-64 characters .* contain "mirrorhub"/);
    },
  );
});

describe('endpointFailure', () => {
  it.each([
    [Object.assign(new Error('x'), { code: 'ECONNREFUSED' }), 'unreachable'],
    [
      new Error('fetch failed', { cause: Object.assign(new Error('x'), { code: 'ETIMEDOUT' }) }),
      'unreachable',
    ],
    [
      new Error('request failed', {
        cause: Object.assign(new Error('x'), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' }),
      }),
      'moved',
    ],
    [Object.assign(new Error('x'), { code: 'ERR_TLS_CERT_ALTNAME_INVALID' }), 'moved'],
    [Object.assign(new Error('x'), { code: 'ENOTFOUND' }), 'moved'],
    [Object.assign(new Error('Forbidden'), { code: 403 }), undefined],
    [new Error('plain'), undefined],
  ])('%s -> %s', (err, expected) => {
    expect(endpointFailure(err)).toBe(expected);
  });
});
