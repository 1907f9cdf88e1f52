// The STS gate against real moto: AssumeRole and AssumeRoleWithWebIdentity held to the role's
// trust policy like AWS does (moto 5.2.1 itself lets every one of the denied cases below
// through), everything else forwarded to moto untouched.
import { createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';

import { Sha256 } from '@aws-crypto/sha256-js';
import type { AwsCredentials } from '@mirrorhub/hub/clusters/aws/eks-token';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  assumeRole,
  createRole,
  createUserWithAccessKey,
  getCallerIdentity,
  iamCall,
  lookupAccessKey,
  startMoto,
  trustPolicy,
  type MotoServer,
  type Principal,
} from './moto.js';
import {
  evaluateTrustPolicy,
  evaluateWebIdentityTrust,
  startStsGate,
  type StsGate,
} from './sts-gate.js';

const HUB = '111111111111';
const A = '222222222222';
const B = '333333333333';
const role = (account: string, name: string) => `arn:aws:iam::${account}:role/${name}`;
const denied = (caller: string, roleArn: string) =>
  `User: ${caller} is not authorized to perform: sts:AssumeRole on resource: ${roleArn}`;

let moto: MotoServer;
let gate: StsGate;
let hub: Principal;
let colleague: Principal;
let stranger: Principal;
/** A session of role/trusts-hub in A: the caller of role-chaining cases. */
let hubSession: AwsCredentials & { arn: string };

async function rawRole(account: string, name: string, policy: object, max?: number) {
  await iamCall(gate.endpoint, account, 'CreateRole', {
    RoleName: name,
    AssumeRolePolicyDocument: JSON.stringify(policy),
    ...(max ? { MaxSessionDuration: String(max) } : {}),
  });
}

beforeAll(async () => {
  moto = await startMoto();
  gate = await startStsGate({ motoEndpoint: moto.endpoint });
  // Administration goes through the gate too: IAM is forwarded as is.
  const ep = gate.endpoint;
  hub = await createUserWithAccessKey(ep, { accountId: HUB, userName: 'mirrorhub-hub' });
  colleague = await createUserWithAccessKey(ep, { accountId: HUB, userName: 'colleague' });
  stranger = await createUserWithAccessKey(ep, { accountId: B, userName: 'stranger' });
  const trust = (principals: string[], externalId?: string) => ({
    trustPolicy: trustPolicy({ principals, ...(externalId ? { externalId } : {}) }),
  });
  await createRole(ep, { accountId: A, roleName: 'trusts-hub', ...trust([hub.arn]) });
  await createRole(ep, {
    accountId: A,
    roleName: 'with-external-id',
    ...trust([hub.arn], 'ext-1'),
  });
  await createRole(ep, {
    accountId: A,
    roleName: 'trusts-account-root',
    ...trust([`arn:aws:iam::${HUB}:root`]),
  });
  await createRole(ep, { accountId: A, roleName: 'trusts-account-id', ...trust([HUB]) });
  await rawRole(A, 'deny-wins', {
    Version: '2012-10-17',
    Statement: [
      { Effect: 'Allow', Principal: { AWS: `arn:aws:iam::${HUB}:root` }, Action: 'sts:AssumeRole' },
      { Effect: 'Deny', Principal: { AWS: hub.arn }, Action: 'sts:*' },
    ],
  });
  await rawRole(A, 'external-id-like', {
    Version: '2012-10-17',
    Statement: [
      {
        Effect: 'Allow',
        Principal: { AWS: [hub.arn] },
        Action: ['sts:AssumeRole', 'sts:TagSession'],
        Condition: { StringLike: { 'sts:ExternalId': 'mirrorhub-*' } },
      },
    ],
  });
  await rawRole(A, 'service-only', {
    Version: '2012-10-17',
    Statement: [
      { Effect: 'Allow', Principal: { Service: 'eks.amazonaws.com' }, Action: 'sts:AssumeRole' },
    ],
  });
  await rawRole(A, 'two-hours', trustPolicy({ principals: [hub.arn] }), 7200);
  // Trusts the role trusts-hub: a session of it matches (role chaining).
  await rawRole(B, 'chain-target', trustPolicy({ principals: [role(A, 'trusts-hub')] }), 43_200);

  const s = await assumeRole(moto.endpoint, {
    credentials: hub.credentials,
    roleArn: role(A, 'trusts-hub'),
    sessionName: 'mirrorhub',
  });
  hubSession = { ...s, arn: `arn:aws:sts::${A}:assumed-role/trusts-hub/mirrorhub` };
}, 90_000);

afterAll(async () => {
  await gate?.stop();
  await moto?.stop();
});

interface Case {
  name: string;
  who: () => AwsCredentials;
  /** The caller's ARN in the AccessDenied message. */
  callerArn: () => string;
  roleArn: string;
  externalId?: string;
  duration?: number;
  want: 'allowed' | { status: number; code: string; message?: string };
}

const asHub = { who: () => hub.credentials, callerArn: () => hub.arn };
const deny = (roleArn: string, callerArn: () => string) => ({
  roleArn,
  want: { status: 403, code: 'AccessDenied', message: undefined as string | undefined },
  callerArn,
});

const cases: Case[] = [
  { name: 'a trusted user', ...asHub, roleArn: role(A, 'trusts-hub'), want: 'allowed' },
  {
    name: 'a trusted user sending an ExternalId the policy does not ask for',
    ...asHub,
    roleArn: role(A, 'trusts-hub'),
    externalId: 'whatever',
    want: 'allowed',
  },
  {
    name: 'a user of another account the role does not trust',
    who: () => stranger.credentials,
    ...deny(role(A, 'trusts-hub'), () => stranger.arn),
  },
  {
    name: 'another user of the trusted account (only the hub user is named)',
    who: () => colleague.credentials,
    ...deny(role(A, 'trusts-hub'), () => colleague.arn),
  },
  {
    name: 'the required ExternalId',
    ...asHub,
    roleArn: role(A, 'with-external-id'),
    externalId: 'ext-1',
    want: 'allowed',
  },
  {
    name: 'a wrong ExternalId',
    ...asHub,
    externalId: 'ext-2',
    ...deny(role(A, 'with-external-id'), () => hub.arn),
  },
  {
    name: 'a missing ExternalId (moto lets this through even with auth on)',
    ...asHub,
    ...deny(role(A, 'with-external-id'), () => hub.arn),
  },
  {
    name: 'an ExternalId matching StringLike',
    ...asHub,
    roleArn: role(A, 'external-id-like'),
    externalId: 'mirrorhub-prod',
    want: 'allowed',
  },
  {
    name: 'an ExternalId not matching StringLike',
    ...asHub,
    externalId: 'other-prod',
    ...deny(role(A, 'external-id-like'), () => hub.arn),
  },
  {
    name: 'a missing ExternalId under StringLike',
    ...asHub,
    ...deny(role(A, 'external-id-like'), () => hub.arn),
  },
  {
    name: 'the account root principal: the hub user',
    ...asHub,
    roleArn: role(A, 'trusts-account-root'),
    want: 'allowed',
  },
  {
    name: 'the account root principal: any other user of that account',
    who: () => colleague.credentials,
    callerArn: () => colleague.arn,
    roleArn: role(A, 'trusts-account-root'),
    want: 'allowed',
  },
  {
    name: 'the account root principal: a user of another account',
    who: () => stranger.credentials,
    ...deny(role(A, 'trusts-account-root'), () => stranger.arn),
  },
  {
    name: 'a bare account id principal',
    who: () => colleague.credentials,
    callerArn: () => colleague.arn,
    roleArn: role(A, 'trusts-account-id'),
    want: 'allowed',
  },
  {
    name: 'a Deny statement over an Allow of the whole account',
    ...asHub,
    ...deny(role(A, 'deny-wins'), () => hub.arn),
  },
  {
    name: 'an account the Deny does not name',
    who: () => colleague.credentials,
    callerArn: () => colleague.arn,
    roleArn: role(A, 'deny-wins'),
    want: 'allowed',
  },
  {
    name: 'a role only a service principal may assume',
    ...asHub,
    ...deny(role(A, 'service-only'), () => hub.arn),
  },
  {
    name: 'a role that does not exist',
    ...asHub,
    ...deny(role(A, 'no-such-role'), () => hub.arn),
  },
  {
    name: 'a role ARN in an account the role is not in',
    ...asHub,
    ...deny(role(B, 'trusts-hub'), () => hub.arn),
  },
  {
    name: 'an assumed-role caller whose role is the trusted principal',
    who: () => hubSession,
    callerArn: () => hubSession.arn,
    roleArn: role(B, 'chain-target'),
    want: 'allowed',
  },
  {
    name: 'an assumed-role caller whose role is not trusted',
    who: () => hubSession,
    ...deny(role(A, 'trusts-hub'), () => hubSession.arn),
  },
  {
    name: 'the wrong secret key',
    who: () => ({ ...hub.credentials, secretAccessKey: 'wrong-secret' }),
    callerArn: () => hub.arn,
    roleArn: role(A, 'trusts-hub'),
    want: {
      status: 403,
      code: 'SignatureDoesNotMatch',
      message:
        'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.',
    },
  },
  {
    name: 'a key STS does not know',
    who: () => ({ accessKeyId: 'AKIAUNKNOWN000000001', secretAccessKey: 'x' }),
    callerArn: () => '',
    roleArn: role(A, 'trusts-hub'),
    want: {
      status: 403,
      code: 'InvalidClientTokenId',
      message: 'The security token included in the request is invalid.',
    },
  },
  {
    name: 'a session key without its session token',
    who: () => ({
      accessKeyId: hubSession.accessKeyId,
      secretAccessKey: hubSession.secretAccessKey,
    }),
    callerArn: () => '',
    roleArn: role(B, 'chain-target'),
    want: { status: 403, code: 'InvalidClientTokenId' },
  },
  {
    name: 'a duration over the default MaxSessionDuration (3600)',
    ...asHub,
    roleArn: role(A, 'trusts-hub'),
    duration: 3601,
    want: {
      status: 400,
      code: 'ValidationError',
      message: 'The requested DurationSeconds exceeds the MaxSessionDuration set for this role.',
    },
  },
  {
    name: 'a duration within a raised MaxSessionDuration',
    ...asHub,
    roleArn: role(A, 'two-hours'),
    duration: 7200,
    want: 'allowed',
  },
  {
    name: 'a duration over a raised MaxSessionDuration',
    ...asHub,
    roleArn: role(A, 'two-hours'),
    duration: 7201,
    want: {
      status: 400,
      code: 'ValidationError',
      message: 'The requested DurationSeconds exceeds the MaxSessionDuration set for this role.',
    },
  },
  {
    name: 'role chaining for one hour',
    who: () => hubSession,
    callerArn: () => hubSession.arn,
    roleArn: role(B, 'chain-target'),
    duration: 3600,
    want: 'allowed',
  },
  {
    name: 'role chaining for more than one hour (the role allows 12)',
    who: () => hubSession,
    callerArn: () => hubSession.arn,
    roleArn: role(B, 'chain-target'),
    duration: 3601,
    want: {
      status: 400,
      code: 'ValidationError',
      message:
        'The requested DurationSeconds exceeds the 1 hour session limit for roles assumed by role chaining.',
    },
  },
  {
    name: 'a duration under 900 seconds',
    ...asHub,
    roleArn: role(A, 'trusts-hub'),
    duration: 899,
    want: {
      status: 400,
      code: 'ValidationError',
      message:
        "1 validation error detected: Value '899' at 'durationSeconds' failed to satisfy constraint: Member must have value greater than or equal to 900",
    },
  },
];

describe('AssumeRole through the STS gate', () => {
  it.each(cases)('$name', async (c) => {
    const credentials = c.who();
    const result = await assumeRole(gate.endpoint, {
      credentials,
      roleArn: c.roleArn,
      sessionName: 'mirrorhub-test',
      ...(c.externalId ? { externalId: c.externalId } : {}),
      ...(c.duration ? { durationSeconds: c.duration } : {}),
    }).then(
      (s) => ({ ok: true as const, s }),
      (e: unknown) => ({
        ok: false as const,
        e: e as Error & { $metadata?: { httpStatusCode?: number } },
      }),
    );
    if (c.want === 'allowed') {
      if (!result.ok) throw result.e;
      const [, account, name] = /^arn:aws:iam::(\d{12}):role\/(?:.*\/)?(.+)$/.exec(c.roleArn)!;
      expect((await getCallerIdentity(gate.endpoint, result.s)).arn).toBe(
        `arn:aws:sts::${account}:assumed-role/${name}/mirrorhub-test`,
      );
      return;
    }
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const message =
      c.want.message ??
      (c.want.code === 'AccessDenied' ? denied(c.callerArn(), c.roleArn) : undefined);
    expect({
      status: result.e.$metadata?.httpStatusCode,
      code: result.e.name,
      ...(message !== undefined ? { message: result.e.message } : {}),
    }).toEqual({
      status: c.want.status,
      code: c.want.code,
      ...(message !== undefined ? { message } : {}),
    });
  });
});

// ---- the wire: raw requests, as any SDK or curl would send them -----------------------------------

async function signed(opts: {
  method: 'GET' | 'POST';
  params: Record<string, string>;
  credentials: AwsCredentials;
  presign?: boolean;
}): Promise<{ status: number; body: string; type: string | null }> {
  const url = new URL(gate.endpoint);
  const form = new URLSearchParams({ Version: '2011-06-15', ...opts.params }).toString();
  const signer = new SignatureV4({
    service: 'sts',
    region: 'us-east-1',
    credentials: opts.credentials,
    sha256: Sha256,
  });
  const req = new HttpRequest({
    method: opts.method,
    protocol: url.protocol,
    hostname: url.hostname,
    port: Number(url.port),
    path: '/',
    headers: {
      host: url.host,
      ...(opts.method === 'POST'
        ? { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' }
        : {}),
    },
    ...(opts.method === 'POST'
      ? { body: form }
      : { query: Object.fromEntries(new URLSearchParams(form)) }),
  });
  const s = opts.presign ? await signer.presign(req, { expiresIn: 300 }) : await signer.sign(req);
  const qs = Object.entries(s.query ?? {})
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
    .join('&');
  const res = await fetch(`${gate.endpoint}/${qs ? `?${qs}` : ''}`, {
    method: opts.method,
    headers: s.headers,
    ...(opts.method === 'POST' ? { body: form } : {}),
  });
  return { status: res.status, body: await res.text(), type: res.headers.get('content-type') };
}

describe('the STS wire protocol', () => {
  it('denies with the exact STS error document', async () => {
    const roleArn = role(A, 'trusts-hub');
    const res = await signed({
      method: 'POST',
      params: { Action: 'AssumeRole', RoleArn: roleArn, RoleSessionName: 'x' },
      credentials: stranger.credentials,
    });
    expect(res.status).toBe(403);
    expect(res.type).toBe('text/xml');
    expect(res.body).toMatch(
      new RegExp(
        '^<ErrorResponse xmlns="https://sts\\.amazonaws\\.com/doc/2011-06-15/">' +
          '<Error><Type>Sender</Type><Code>AccessDenied</Code>' +
          `<Message>User: arn:aws:iam::${B}:user/stranger is not authorized to perform: sts:AssumeRole on resource: arn:aws:iam::${A}:role/trusts-hub</Message>` +
          '</Error><RequestId>[0-9a-f-]{36}</RequestId></ErrorResponse>$',
      ),
    );
  });

  it.each([
    { how: 'a header-signed GET', method: 'GET' as const, presign: false },
    { how: 'a presigned GET', method: 'GET' as const, presign: true },
    { how: 'a form POST', method: 'POST' as const, presign: false },
  ])('checks AssumeRole sent as $how', async ({ method, presign }) => {
    const params = (roleName: string, externalId?: string) => ({
      Action: 'AssumeRole',
      RoleArn: role(A, roleName),
      RoleSessionName: 'wire',
      ...(externalId ? { ExternalId: externalId } : {}),
    });
    const ok = await signed({
      method,
      presign,
      params: params('with-external-id', 'ext-1'),
      credentials: hub.credentials,
    });
    expect(ok.status).toBe(200);
    expect(ok.body).toContain(`<Arn>arn:aws:sts::${A}:assumed-role/with-external-id/wire</Arn>`);
    const no = await signed({
      method,
      presign,
      params: params('with-external-id'),
      credentials: hub.credentials,
    });
    expect(no.status).toBe(403);
    expect(no.body).toContain('<Code>AccessDenied</Code>');
    const bad = await signed({
      method,
      presign,
      params: params('with-external-id', 'ext-1'),
      credentials: { ...hub.credentials, secretAccessKey: 'wrong' },
    });
    expect(bad.status).toBe(403);
    expect(bad.body).toContain('<Code>SignatureDoesNotMatch</Code>');
  });

  it('asks for a signature on AssumeRole, like STS', async () => {
    const res = await fetch(gate.endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `Action=AssumeRole&Version=2011-06-15&RoleArn=${encodeURIComponent(role(A, 'trusts-hub'))}&RoleSessionName=x`,
    });
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('<Code>MissingAuthenticationToken</Code>');
  });

  it('forwards everything else to moto unchanged', async () => {
    expect(await getCallerIdentity(gate.endpoint, stranger.credentials)).toMatchObject({
      arn: stranger.arn,
      account: B,
    });
    expect(await lookupAccessKey(gate.endpoint, hub.credentials.accessKeyId)).toMatchObject({
      secretAccessKey: hub.credentials.secretAccessKey,
    });
    const xml = await iamCall(gate.endpoint, A, 'GetRole', { RoleName: 'trusts-hub' });
    expect(xml).toContain(`<Arn>${role(A, 'trusts-hub')}</Arn>`);
  });
});

// ---- fault hooks: outages and short sessions ------------------------------------------------------

describe('an STS outage', () => {
  it('answers every request 503 ServiceUnavailable, counts them, and ends', async () => {
    const roleArn = role(A, 'trusts-hub');
    const before = gate.refused();
    gate.setAvailable(false);
    try {
      expect(gate.available()).toBe(false);
      const res = await signed({
        method: 'POST',
        params: { Action: 'AssumeRole', RoleArn: roleArn, RoleSessionName: 'x' },
        credentials: hub.credentials,
      });
      expect(res.status).toBe(503);
      expect(res.type).toBe('text/xml');
      expect(res.body).toMatch(
        new RegExp(
          '^<ErrorResponse xmlns="https://sts\\.amazonaws\\.com/doc/2011-06-15/">' +
            '<Error><Type>Receiver</Type><Code>ServiceUnavailable</Code>' +
            '<Message>The service is unavailable\\. Please try again later\\.</Message>' +
            '</Error><RequestId>[0-9a-f-]{36}</RequestId></ErrorResponse>$',
        ),
      );
      // The SDK sees the error by name (and retries it: it is a transient one).
      const err = (await assumeRole(gate.endpoint, {
        credentials: hub.credentials,
        roleArn,
        sessionName: 'x',
      }).catch((e: unknown) => e)) as Error & { $metadata?: { httpStatusCode?: number } };
      expect({ name: err.name, status: err.$metadata?.httpStatusCode }).toEqual({
        name: 'ServiceUnavailable',
        status: 503,
      });
      // Not only AssumeRole: whatever the gate would forward to moto.
      await expect(getCallerIdentity(gate.endpoint, hub.credentials)).rejects.toMatchObject({
        name: 'ServiceUnavailable',
      });
      expect(gate.refused()).toBeGreaterThanOrEqual(before + 3);
    } finally {
      gate.setAvailable(true);
    }
    const refused = gate.refused();
    await assumeRole(gate.endpoint, { credentials: hub.credentials, roleArn, sessionName: 'x' });
    expect(gate.refused()).toBe(refused);
  });
});

describe('assumeRoleCalls', () => {
  it('counts every AssumeRole by RoleArn: allowed, denied and refused by an outage', async () => {
    const roleArn = role(A, 'with-external-id');
    const count = () => gate.assumeRoleCalls()[roleArn] ?? 0;
    const before = count();
    const call = (externalId?: string) =>
      assumeRole(gate.endpoint, {
        credentials: hub.credentials,
        roleArn,
        sessionName: 'x',
        ...(externalId ? { externalId } : {}),
      });
    await call('ext-1');
    await expect(call()).rejects.toMatchObject({ name: 'AccessDenied' });
    gate.setAvailable(false);
    try {
      const res = await signed({
        method: 'POST',
        params: { Action: 'AssumeRole', RoleArn: roleArn, RoleSessionName: 'x' },
        credentials: hub.credentials,
      });
      expect(res.status).toBe(503);
    } finally {
      gate.setAvailable(true);
    }
    // Without a RoleArn there is no role to count it for.
    const res = await signed({
      method: 'POST',
      params: { Action: 'AssumeRole', RoleSessionName: 'x' },
      credentials: hub.credentials,
    });
    expect(res.status).toBe(400);
    expect(count()).toBe(before + 3);
  });
});

describe('sessionLifetimeSeconds', () => {
  let short: StsGate;
  beforeAll(async () => {
    short = await startStsGate({ motoEndpoint: moto.endpoint, sessionLifetimeSeconds: 120 });
  });
  afterAll(async () => {
    await short?.stop();
  });

  it('caps the Expiration of AssumeRole sessions at now + the lifetime', async () => {
    for (const durationSeconds of [undefined, 900, 3600]) {
      const t0 = Date.now();
      const s = await assumeRole(short.endpoint, {
        credentials: hub.credentials,
        roleArn: role(A, 'trusts-hub'),
        sessionName: 'short',
        ...(durationSeconds ? { durationSeconds } : {}),
      });
      const t1 = Date.now();
      // Second precision at most: the SDK parses what the gate wrote.
      expect(s.expiration.getTime()).toBeGreaterThanOrEqual(Math.floor(t0 / 1000) * 1000 + 120_000);
      expect(s.expiration.getTime()).toBeLessThanOrEqual(t1 + 120_000);
      // The session itself is moto's, and works.
      expect((await getCallerIdentity(short.endpoint, s)).arn).toBe(
        `arn:aws:sts::${A}:assumed-role/trusts-hub/short`,
      );
    }
  });

  it('leaves sessions alone without it, and refusals alone with it', async () => {
    const t0 = Date.now();
    const s = await assumeRole(gate.endpoint, {
      credentials: hub.credentials,
      roleArn: role(A, 'trusts-hub'),
      sessionName: 'long',
    });
    expect(s.expiration.getTime()).toBeGreaterThan(t0 + 3500_000);
    await expect(
      assumeRole(short.endpoint, {
        credentials: stranger.credentials,
        roleArn: role(A, 'trusts-hub'),
        sessionName: 'x',
      }),
    ).rejects.toMatchObject({
      name: 'AccessDenied',
      message: denied(stranger.arn, role(A, 'trusts-hub')),
    });
  });
});

// ---- the policy evaluation alone -------------------------------------------------------------------

describe('evaluateTrustPolicy', () => {
  const user = { arn: `arn:aws:iam::${HUB}:user/ops/mirrorhub-hub`, account: HUB, userId: 'AIDA1' };
  const session = {
    arn: `arn:aws:sts::${HUB}:assumed-role/hub-role/s1`,
    account: HUB,
    userId: 'AROA1:s1',
  };
  const stmt = (s: Record<string, unknown>) => ({
    Version: '2012-10-17',
    Statement: [{ Effect: 'Allow', Action: 'sts:AssumeRole', ...s }],
  });
  it.each<{
    name: string;
    policy: unknown;
    caller?: typeof user;
    externalId?: string;
    allowed: boolean;
  }>([
    {
      name: 'a user ARN with its path',
      policy: stmt({ Principal: { AWS: user.arn } }),
      allowed: true,
    },
    {
      name: 'a role ARN with a path, for a session of it',
      policy: stmt({ Principal: { AWS: `arn:aws:iam::${HUB}:role/team/hub-role` } }),
      caller: session,
      allowed: true,
    },
    {
      name: 'the exact session ARN',
      policy: stmt({ Principal: { AWS: session.arn } }),
      caller: session,
      allowed: true,
    },
    {
      name: 'another session of the same role',
      policy: stmt({ Principal: { AWS: `arn:aws:sts::${HUB}:assumed-role/hub-role/s2` } }),
      caller: session,
      allowed: false,
    },
    { name: 'Principal "*"', policy: stmt({ Principal: '*' }), allowed: true },
    {
      name: 'a statement as an object',
      policy: { Statement: { Effect: 'Allow', Action: 'sts:*', Principal: { AWS: HUB } } },
      allowed: true,
    },
    {
      name: 'an Action that is not sts:AssumeRole',
      policy: stmt({ Action: 'sts:AssumeRoleWithWebIdentity', Principal: { AWS: HUB } }),
      allowed: false,
    },
    {
      name: 'StringNotEquals with no ExternalId',
      policy: stmt({
        Principal: { AWS: HUB },
        Condition: { StringNotEquals: { 'sts:ExternalId': 'x' } },
      }),
      allowed: true,
    },
    {
      name: 'StringEqualsIfExists with no ExternalId',
      policy: stmt({
        Principal: { AWS: HUB },
        Condition: { StringEqualsIfExists: { 'sts:ExternalId': 'x' } },
      }),
      allowed: true,
    },
    {
      name: 'condition keys are case-insensitive, values are not',
      policy: stmt({
        Principal: { AWS: HUB },
        Condition: { StringEquals: { 'STS:EXTERNALID': 'Ab' } },
      }),
      externalId: 'ab',
      allowed: false,
    },
    {
      name: 'one of several ExternalIds',
      policy: stmt({
        Principal: { AWS: HUB },
        Condition: { StringEquals: { 'sts:ExternalId': ['a', 'b'] } },
      }),
      externalId: 'b',
      allowed: true,
    },
    {
      name: 'an unsupported condition on an Allow (fails closed)',
      policy: stmt({
        Principal: { AWS: HUB },
        Condition: { Bool: { 'aws:MultiFactorAuthPresent': 'true' } },
      }),
      allowed: false,
    },
    {
      name: 'an unsupported condition on a Deny (applies)',
      policy: {
        Statement: [
          { Effect: 'Allow', Action: 'sts:AssumeRole', Principal: { AWS: HUB } },
          {
            Effect: 'Deny',
            Action: 'sts:AssumeRole',
            Principal: '*',
            Condition: { IpAddress: { 'aws:SourceIp': '10.0.0.0/8' } },
          },
        ],
      },
      allowed: false,
    },
    {
      name: 'a Deny by NotPrincipal for everyone but the caller',
      policy: {
        Statement: [
          { Effect: 'Allow', Action: 'sts:AssumeRole', Principal: { AWS: HUB } },
          { Effect: 'Deny', Action: 'sts:AssumeRole', NotPrincipal: { AWS: user.arn } },
        ],
      },
      allowed: true,
    },
    { name: 'no policy', policy: undefined, allowed: false },
  ])('$name: allowed=$allowed', (c) => {
    const d = evaluateTrustPolicy(c.policy, { caller: c.caller ?? user, externalId: c.externalId });
    expect(d.allowed).toBe(c.allowed);
  });
});

// ---- AssumeRoleWithWebIdentity (IRSA) ---------------------------------------------------------

describe('AssumeRoleWithWebIdentity through the STS gate', () => {
  const ISSUER = 'https://mgmt.example.test';
  const PROVIDER = `arn:aws:iam::${HUB}:oidc-provider/mgmt.example.test`;
  const SA = 'system:serviceaccount:mirrorhub-system:mirrorhub-hub';
  const irsaRole = role(HUB, 'irsa-hub');
  let issuerKey: KeyObject;
  let otherKey: KeyObject;

  /** A ServiceAccount token as a kube-apiserver signs it (ES256). */
  const token = (
    claims: Partial<{ iss: string; sub: string; aud: string[]; exp: number }> = {},
    key = issuerKey,
  ) => {
    const now = Math.floor(Date.now() / 1000);
    const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const input = `${part({ alg: 'ES256', kid: 'k1' })}.${part({
      iss: ISSUER,
      sub: SA,
      aud: ['sts.amazonaws.com'],
      iat: now,
      exp: now + 3600,
      ...claims,
    })}`;
    const sig = sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' });
    return `${input}.${sig.toString('base64url')}`;
  };

  /** The unsigned form POST the SDK's web-identity provider sends. */
  const assume = async (webIdentityToken: string, roleArn = irsaRole, endpoint = gate.endpoint) => {
    const res = await fetch(`${endpoint}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
      body: new URLSearchParams({
        Action: 'AssumeRoleWithWebIdentity',
        Version: '2011-06-15',
        RoleArn: roleArn,
        RoleSessionName: 'irsa-test',
        WebIdentityToken: webIdentityToken,
      }).toString(),
    });
    const body = await res.text();
    return {
      status: res.status,
      code: /<Code>([^<]*)<\/Code>/.exec(body)?.[1],
      message: /<Message>([^<]*)<\/Message>/.exec(body)?.[1],
      arn: /<Arn>([^<]*)<\/Arn>/.exec(body)?.[1],
      expiration: /<Expiration>([^<]*)<\/Expiration>/.exec(body)?.[1],
    };
  };

  beforeAll(async () => {
    const pair = () => generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const mine = pair();
    issuerKey = mine.privateKey;
    otherKey = pair().privateKey;
    gate.trustIssuer(ISSUER, mine.publicKey.export({ type: 'spki', format: 'pem' }).toString());
    await iamCall(gate.endpoint, HUB, 'CreateOpenIDConnectProvider', {
      Url: ISSUER,
      'ClientIDList.member.1': 'sts.amazonaws.com',
      'ThumbprintList.member.1': '9e99a48a9960b14926bb7f3b02e22da2b0ab7280',
    });
    // The hub module's IRSA statement.
    await rawRole(HUB, 'irsa-hub', {
      Version: '2012-10-17',
      Statement: [
        {
          Effect: 'Allow',
          Principal: { Federated: PROVIDER },
          Action: 'sts:AssumeRoleWithWebIdentity',
          Condition: {
            StringEquals: {
              'mgmt.example.test:sub': SA,
              'mgmt.example.test:aud': 'sts.amazonaws.com',
            },
          },
        },
      ],
    });
    await rawRole(A, 'irsa-elsewhere', {
      Version: '2012-10-17',
      Statement: [
        {
          Effect: 'Allow',
          Principal: { Federated: `arn:aws:iam::${A}:oidc-provider/mgmt.example.test` },
          Action: 'sts:AssumeRoleWithWebIdentity',
        },
      ],
    });
  });

  it("gives the hub's ServiceAccount a session of the role", async () => {
    expect(await assume(token())).toMatchObject({
      status: 200,
      arn: `arn:aws:sts::${HUB}:assumed-role/irsa-hub/irsa-test`,
    });
  });

  it('caps the session at sessionLifetimeSeconds', async () => {
    const short = await startStsGate({ motoEndpoint: moto.endpoint, sessionLifetimeSeconds: 300 });
    try {
      short.trustIssuer(
        ISSUER,
        createPublicKey(issuerKey).export({ type: 'spki', format: 'pem' }).toString(),
      );
      const t0 = Date.now();
      const r = await assume(token(), irsaRole, short.endpoint);
      expect(r).toMatchObject({
        status: 200,
        arn: `arn:aws:sts::${HUB}:assumed-role/irsa-hub/irsa-test`,
      });
      const expiration = Date.parse(r.expiration!);
      expect(expiration).toBeGreaterThanOrEqual(t0 + 300_000);
      expect(expiration).toBeLessThanOrEqual(Date.now() + 300_000);
      // Uncapped, moto's default hour.
      const long = Date.parse((await assume(token())).expiration!);
      expect(long).toBeGreaterThan(t0 + 3500_000);
    } finally {
      await short.stop();
    }
  });

  it.each([
    {
      name: "another ServiceAccount's token",
      token: () => token({ sub: 'system:serviceaccount:default:default' }),
      want: {
        status: 403,
        code: 'AccessDenied',
        message: 'Not authorized to perform sts:AssumeRoleWithWebIdentity',
      },
    },
    {
      name: 'a token for another audience',
      token: () => token({ aud: ['vault'] }),
      want: { status: 400, code: 'InvalidIdentityToken', message: 'Incorrect token audience' },
    },
    {
      name: 'a token signed by another key',
      token: () => token({}, otherKey),
      want: { status: 400, code: 'InvalidIdentityToken' },
    },
    {
      name: 'a token from an issuer the gate was never told about',
      token: () => token({ iss: 'https://other.example.test' }),
      want: {
        status: 400,
        code: 'InvalidIdentityToken',
        message: 'No OpenIDConnect provider found in your account for https://other.example.test',
      },
    },
    {
      name: 'an expired token',
      token: () => token({ exp: Math.floor(Date.now() / 1000) - 60 }),
      want: { status: 400, code: 'ExpiredTokenException' },
    },
    {
      name: 'not a JWT',
      token: () => 'not-a-token',
      want: { status: 400, code: 'InvalidIdentityToken' },
    },
  ])('refuses $name', async ({ token: t, want }) => {
    expect(await assume(t())).toMatchObject(want);
  });

  it("refuses a role whose account has no OIDC provider for the token's issuer", async () => {
    expect(await assume(token(), role(A, 'irsa-elsewhere'))).toMatchObject({
      status: 400,
      code: 'InvalidIdentityToken',
      message: `No OpenIDConnect provider found in your account for ${ISSUER}`,
    });
  });
});

describe('evaluateWebIdentityTrust', () => {
  const provider =
    'arn:aws:iam::111111111111:oidc-provider/oidc.eks.eu-west-1.amazonaws.com/id/ABC';
  const host = 'oidc.eks.eu-west-1.amazonaws.com/id/ABC';
  const policy = (condition: object) => ({
    Statement: [
      {
        Effect: 'Allow',
        Principal: { Federated: provider },
        Action: 'sts:AssumeRoleWithWebIdentity',
        Condition: condition,
      },
    ],
  });
  const req = {
    providerArn: provider,
    sub: 'system:serviceaccount:ns:sa',
    aud: 'sts.amazonaws.com',
  };

  it.each([
    [
      'sub and aud equal',
      { StringEquals: { [`${host}:sub`]: req.sub, [`${host}:aud`]: req.aud } },
      true,
    ],
    ['sub like ns:*', { StringLike: { [`${host}:sub`]: 'system:serviceaccount:ns:*' } }, true],
    ['another sub', { StringEquals: { [`${host}:sub`]: 'system:serviceaccount:ns:other' } }, false],
    ["another provider's key", { StringEquals: { 'other.example:sub': req.sub } }, false],
  ])('%s -> %s', (_name, condition, allowed) => {
    expect(evaluateWebIdentityTrust(policy(condition), req).allowed).toBe(allowed);
  });

  it('does not let an AWS principal statement allow a web identity', () => {
    const p = {
      Statement: [
        { Effect: 'Allow', Principal: { AWS: '*' }, Action: 'sts:AssumeRoleWithWebIdentity' },
      ],
    };
    expect(evaluateWebIdentityTrust(p, req).allowed).toBe(false);
  });

  it('does not let a Federated statement for sts:AssumeRole allow it', () => {
    const p = {
      Statement: [
        { Effect: 'Allow', Principal: { Federated: provider }, Action: 'sts:AssumeRole' },
      ],
    };
    expect(evaluateWebIdentityTrust(p, req).allowed).toBe(false);
  });
});
