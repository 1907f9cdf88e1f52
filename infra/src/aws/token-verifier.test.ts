import { EKS_TOKEN_PREFIX, mintEksToken } from '@mirrorhub/hub/clusters/aws/eks-token';
import { describe, expect, it } from 'vitest';
import {
  canonicalPrincipalArn,
  canonicalizeIdentity,
  expandUsername,
  parseEksToken,
  presignedSignatureMatches,
  stsHostRegion,
} from './token-verifier.js';

const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
const creds = {
  accessKeyId: 'ASIAEXAMPLE0000001',
  secretAccessKey: SECRET,
  sessionToken: 'tok+/=',
};
const T0 = new Date('2024-01-02T03:04:05Z');
const MIN = 60_000;

async function mint(opts: { cluster?: string; region?: string; endpoint?: string } = {}) {
  const { token } = await mintEksToken({
    clusterName: opts.cluster ?? 'follower-a',
    region: opts.region ?? 'eu-west-1',
    credentials: creds,
    ...(opts.endpoint ? { stsEndpoint: opts.endpoint } : {}),
    now: () => T0,
  });
  return token;
}
const urlOf = (token: string) =>
  Buffer.from(token.slice(EKS_TOKEN_PREFIX.length), 'base64url').toString('utf8');
const wrap = (url: string) => EKS_TOKEN_PREFIX + Buffer.from(url).toString('base64url');
/** Rewrites the URL inside a token, as an attacker or a buggy client would. */
const edit = (token: string, f: (url: string) => string) => wrap(f(urlOf(token)));

describe('parseEksToken', () => {
  it.each<{
    name: string;
    token: (good: string) => Promise<string> | string;
    now?: Date;
    hosts?: string[];
    reason?: RegExp;
  }>([
    { name: 'a freshly minted token', token: (g) => g },
    {
      name: 'a token at 14:59 of its life',
      token: (g) => g,
      now: new Date(T0.getTime() + 15 * MIN - 1000),
    },
    { name: 'a clock a little behind', token: (g) => g, now: new Date(T0.getTime() - 4 * MIN) },
    {
      name: 'an allowed emulator host',
      token: () => mint({ endpoint: 'https://127.0.0.1:4566' }),
      hosts: ['127.0.0.1:4566'],
    },
    {
      name: 'the global STS endpoint',
      token: () => mint({ region: 'us-east-1', endpoint: 'https://sts.amazonaws.com' }),
    },
    {
      name: 'wrong prefix',
      token: (g) => g.replace('k8s-aws-v1.', 'k8s-aws-v2.'),
      reason: /prefix/,
    },
    { name: 'no prefix at all', token: (g) => g.slice(EKS_TOKEN_PREFIX.length), reason: /prefix/ },
    { name: 'bad base64', token: () => `${EKS_TOKEN_PREFIX}aHR0c!!!`, reason: /base64url/ },
    { name: 'padded base64', token: (g) => `${g}==`, reason: /base64url/ },
    {
      name: 'standard base64 alphabet',
      token: (g) => `${g.slice(0, 40)}+/${g.slice(42)}`,
      reason: /base64url/,
    },
    { name: 'too large', token: (g) => g + 'A'.repeat(4096), reason: /too large/ },
    {
      name: 'http scheme',
      token: (g) => edit(g, (u) => u.replace('https://', 'http://')),
      reason: /scheme "http"/,
    },
    {
      name: 'a host that is not STS',
      token: () => mint({ endpoint: 'https://sts.eu-west-1.amazonaws.com.evil.example' }),
      reason: /unexpected hostname/,
    },
    {
      name: 'an emulator host not on the allow list',
      token: () => mint({ endpoint: 'https://127.0.0.1:4566' }),
      reason: /unexpected hostname "127.0.0.1:4566"/,
    },
    {
      name: 'another path',
      token: (g) => edit(g, (u) => u.replace('.com/?', '.com/x?')),
      reason: /unexpected path/,
    },
    {
      name: 'an extra query key',
      token: (g) => edit(g, (u) => `${u}&Foo=bar`),
      reason: /non-whitelisted query parameter "Foo"/,
    },
    {
      name: 'a repeated query key',
      token: (g) => edit(g, (u) => `${u}&Action=GetCallerIdentity`),
      reason: /multiple values/,
    },
    {
      name: 'another action',
      token: (g) => edit(g, (u) => u.replace('Action=GetCallerIdentity', 'Action=AssumeRole')),
      reason: /unexpected action/,
    },
    {
      name: 'x-k8s-aws-id not signed',
      token: (g) => edit(g, (u) => u.replace('host%3Bx-k8s-aws-id', 'host')),
      reason: /did not sign the x-k8s-aws-id header/,
    },
    {
      name: 'a signed header the verifier cannot replay',
      token: (g) =>
        edit(g, (u) => u.replace('host%3Bx-k8s-aws-id', 'host%3Buser-agent%3Bx-k8s-aws-id')),
      reason: /signed header "user-agent"/,
    },
    {
      name: 'X-Amz-Expires above 900',
      token: (g) => edit(g, (u) => u.replace('X-Amz-Expires=60', 'X-Amz-Expires=901')),
      reason: /invalid X-Amz-Expires parameter in pre-signed URL: 901/,
    },
    {
      name: 'X-Amz-Expires not a number',
      token: (g) => edit(g, (u) => u.replace('X-Amz-Expires=60', 'X-Amz-Expires=-1')),
      reason: /invalid X-Amz-Expires/,
    },
    {
      name: 'too old (15 min + 1 s)',
      token: (g) => g,
      now: new Date(T0.getTime() + 15 * MIN + 1000),
      reason: /expired/,
    },
    {
      name: 'dated in the future',
      token: (g) => g,
      now: new Date(T0.getTime() - 6 * MIN),
      reason: /in the future/,
    },
    {
      name: 'a malformed date',
      token: (g) =>
        edit(g, (u) => u.replace('X-Amz-Date=20240102T030405Z', 'X-Amz-Date=20240231T030405Z')),
      reason: /not yyyymmddThhmmssZ/,
    },
    {
      name: 'a credential scope for another region than the host',
      token: () => mint({ region: 'us-west-2', endpoint: 'https://sts.eu-west-1.amazonaws.com' }),
      reason: /scoped to region "eu-west-1"/,
    },
    {
      name: 'a credential scope for another service',
      token: (g) => edit(g, (u) => u.replace('%2Fsts%2F', '%2Fiam%2F')),
      reason: /sts service/,
    },
  ])('$name', async (c) => {
    const good = await mint();
    const r = parseEksToken(await c.token(good), {
      now: c.now ?? T0,
      ...(c.hosts ? { allowedStsHosts: c.hosts } : {}),
    });
    if (!c.reason) {
      expect(r).toMatchObject({ ok: true });
    } else {
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.reason).toMatch(c.reason);
    }
  });

  it('holds a token to a shorter lifetime when asked', async () => {
    const token = await mint();
    const at = (ms: number) =>
      parseEksToken(token, { now: new Date(T0.getTime() + ms), lifetimeMs: 90_000 });
    expect(at(89_000)).toMatchObject({ ok: true });
    expect(at(90_000)).toMatchObject({ ok: true });
    expect(at(91_000)).toEqual({
      ok: false,
      reason: `X-Amz-Date parameter is expired (90 second expiration) ${T0.toISOString()}`,
    });
    // Whole minutes read as minutes; the default stays 15.
    expect(
      parseEksToken(token, { now: new Date(T0.getTime() + 3 * MIN), lifetimeMs: 2 * MIN }),
    ).toMatchObject({
      reason: expect.stringContaining('(2 minute expiration)'),
    });
    expect(parseEksToken(token, { now: new Date(T0.getTime() + 16 * MIN) })).toMatchObject({
      reason: expect.stringContaining('(15 minute expiration)'),
    });
  });

  it('extracts what the webhook needs', async () => {
    const r = parseEksToken(await mint(), { now: T0 });
    if (!r.ok) throw new Error(r.reason);
    expect(r.token).toMatchObject({
      accessKeyId: 'ASIAEXAMPLE0000001',
      scope: { date: '20240102', region: 'eu-west-1', service: 'sts' },
      signedHeaders: ['host', 'x-k8s-aws-id'],
      securityToken: 'tok+/=',
      expiresSeconds: 60,
    });
    expect(r.token.signedAt).toEqual(T0);
  });
});

describe('presignedSignatureMatches', () => {
  it.each([
    {
      name: 'the cluster it was minted for',
      cluster: 'follower-a',
      secret: SECRET,
      edit: undefined,
      ok: true,
    },
    {
      name: 'another cluster name',
      cluster: 'follower-b',
      secret: SECRET,
      edit: undefined,
      ok: false,
    },
    {
      name: 'the wrong secret',
      cluster: 'follower-a',
      secret: `${SECRET}x`,
      edit: undefined,
      ok: false,
    },
    {
      name: 'a tampered session token',
      cluster: 'follower-a',
      secret: SECRET,
      edit: (u: string) => u.replace('X-Amz-Security-Token=tok', 'X-Amz-Security-Token=tak'),
      ok: false,
    },
    {
      name: 'a tampered date',
      cluster: 'follower-a',
      secret: SECRET,
      edit: (u: string) => u.replace('T030405Z', 'T025405Z'),
      ok: false,
    },
  ])('$name -> $ok', async (c) => {
    const token = c.edit ? edit(await mint(), c.edit) : await mint();
    const r = parseEksToken(token, { now: T0 });
    if (!r.ok) throw new Error(r.reason);
    expect(presignedSignatureMatches(r.token, c.cluster, c.secret)).toBe(c.ok);
  });
});

describe('stsHostRegion', () => {
  it.each([
    { host: 'sts.amazonaws.com', region: 'us-east-1' },
    { host: 'sts.eu-west-1.amazonaws.com', region: 'eu-west-1' },
    { host: 'sts.us-gov-west-1.amazonaws.com', region: 'us-gov-west-1' },
    { host: 'sts.eu-west-1.amazonaws.com:443', region: undefined },
    { host: 'sts.evil.amazonaws.com', region: undefined },
    { host: 'sts.eu-west-1.amazonaws.com.evil.example', region: undefined },
    { host: '127.0.0.1:4566', region: null, extra: ['127.0.0.1:4566'] },
  ])('$host', ({ host, region, extra }) => {
    expect(stsHostRegion(host, extra)).toBe(region);
  });
});

describe('canonicalizeIdentity', () => {
  it.each([
    {
      arn: 'arn:aws:sts::222222222222:assumed-role/follower/mirrorhub@hub',
      userId: 'AROAXYZ:mirrorhub@hub',
      canonical: 'arn:aws:iam::222222222222:role/follower',
      session: 'mirrorhub@hub',
    },
    {
      arn: 'arn:aws:iam::111111111111:user/ci/deployer',
      userId: 'AIDAXYZ',
      canonical: 'arn:aws:iam::111111111111:user/deployer',
      session: '',
    },
    {
      arn: 'arn:aws:sts::111111111111:federated-user/bob',
      userId: 'x',
      error: /unsupported STS principal/,
    },
    { arn: 'not-an-arn', userId: 'x', error: /unrecognised ARN/ },
  ])('$arn', (c) => {
    const r = canonicalizeIdentity({
      arn: c.arn,
      account: c.arn.split(':')[4] ?? '',
      userId: c.userId,
    });
    if (c.error) {
      expect(r).toMatchObject({ error: expect.stringMatching(c.error) });
    } else {
      expect(r).toMatchObject({ canonicalArn: c.canonical, sessionName: c.session });
    }
  });

  it.each([
    {
      arn: 'arn:aws:iam::222222222222:role/follower',
      canonical: 'arn:aws:iam::222222222222:role/follower',
    },
    {
      arn: 'arn:aws:iam::222222222222:role/teams/a/follower',
      canonical: 'arn:aws:iam::222222222222:role/follower',
    },
    { arn: 'arn:aws:sts::222222222222:assumed-role/follower/s', canonical: undefined },
  ])('access entry principal $arn', ({ arn, canonical }) => {
    expect(canonicalPrincipalArn(arn)).toBe(canonical);
  });
});

describe('expandUsername', () => {
  const id = {
    arn: 'arn:aws:sts::222222222222:assumed-role/follower/alice@corp',
    account: '222222222222',
    userId: 'AROAXYZ:alice@corp',
    canonicalArn: 'arn:aws:iam::222222222222:role/follower',
    sessionName: 'alice@corp',
    principalId: 'AROAXYZ',
    accessKeyId: 'ASIAKEY',
  };
  it.each([
    {
      t: 'arn:aws:sts::{{AccountID}}:assumed-role/follower/{{SessionName}}',
      want: 'arn:aws:sts::222222222222:assumed-role/follower/alice-corp',
    },
    { t: 'raw:{{SessionNameRaw}}', want: 'raw:alice@corp' },
    { t: 'key:{{AccessKeyID}}', want: 'key:ASIAKEY' },
    { t: 'plain', want: 'plain' },
  ])('$t', ({ t, want }) => expect(expandUsername(t, id)).toBe(want));
});
