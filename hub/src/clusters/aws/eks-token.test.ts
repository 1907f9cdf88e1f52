import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  EKS_TOKEN_PREFIX,
  EksTokenSource,
  decodeEksToken,
  kubeAccessForCluster,
  mintEksToken,
  type AwsCredentials,
} from './eks-token.js';

const creds: AwsCredentials = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  sessionToken: 'FQoGZXIvYXdzEXAMPLE+/=',
};
const T0 = new Date('2024-01-02T03:04:05.678Z');
const T0S = new Date('2024-01-02T03:04:05.000Z'); // signing truncates to the second
const at = (ms: number) => () => new Date(T0S.getTime() + ms);
const MIN = 60_000;

// The exact URL and token for (creds, T0, prod-eu-1, eu-west-1). The URL is byte-for-byte what
// botocore 1.43 (`aws eks get-token`) presigns for the same inputs, and the signature agrees with
// the independent SigV4 computation below.
const PINNED_URL =
  'https://sts.eu-west-1.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15' +
  '&X-Amz-Algorithm=AWS4-HMAC-SHA256' +
  '&X-Amz-Credential=AKIDEXAMPLE%2F20240102%2Feu-west-1%2Fsts%2Faws4_request' +
  '&X-Amz-Date=20240102T030405Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host%3Bx-k8s-aws-id' +
  '&X-Amz-Security-Token=FQoGZXIvYXdzEXAMPLE%2B%2F%3D' +
  '&X-Amz-Signature=b31b274aa9f0718fc87a571f148a459e5c1a8daace40aee2d96e24cf5e6acf39';
const PINNED =
  'k8s-aws-v1.aHR0cHM6Ly9zdHMuZXUtd2VzdC0xLmFtYXpvbmF3cy5jb20vP0FjdGlvbj1HZXRDYWxsZXJJZGVudGl0eSZWZXJzaW9uPTIwMTEtMDYtMTUmWC1BbXotQWxnb3JpdGhtPUFXUzQtSE1BQy1TSEEyNTYmWC1BbXotQ3JlZGVudGlhbD1BS0lERVhBTVBMRSUyRjIwMjQwMTAyJTJGZXUtd2VzdC0xJTJGc3RzJTJGYXdzNF9yZXF1ZXN0JlgtQW16LURhdGU9MjAyNDAxMDJUMDMwNDA1WiZYLUFtei1FeHBpcmVzPTYwJlgtQW16LVNpZ25lZEhlYWRlcnM9aG9zdCUzQngtazhzLWF3cy1pZCZYLUFtei1TZWN1cml0eS1Ub2tlbj1GUW9HWlhJdllYZHpFWEFNUExFJTJCJTJGJTNEJlgtQW16LVNpZ25hdHVyZT1iMzFiMjc0YWE5ZjA3MThmYzg3YTU3MWYxNDhhNDU5ZTVjMWE4ZGFhY2U0MGFlZTJkOTZlMjRjZjVlNmFjZjM5';

/** SigV4 query-string signature spelled out, independent of @smithy/signature-v4. */
function referenceSignature(url: URL, clusterName: string, secret: string): string {
  const hex = (s: string) => createHash('sha256').update(s).digest('hex');
  const hmac = (k: string | Buffer, s: string) => createHmac('sha256', k).update(s).digest();
  const enc = (s: string) =>
    encodeURIComponent(s).replace(
      /[!'()*]/g,
      (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
    );
  const q = [...url.searchParams].filter(([k]) => k !== 'X-Amz-Signature');
  const canonicalQuery = q
    .map(([k, v]) => `${enc(k)}=${enc(v)}`)
    .sort()
    .join('&');
  const amzDate = url.searchParams.get('X-Amz-Date')!;
  const [, day, region, service] = url.searchParams.get('X-Amz-Credential')!.split('/');
  const canonicalRequest = [
    'GET',
    '/',
    canonicalQuery,
    `host:${url.host}`,
    `x-k8s-aws-id:${clusterName}`,
    '',
    'host;x-k8s-aws-id',
    hex(''),
  ].join('\n');
  const scope = `${day}/${region}/${service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, hex(canonicalRequest)].join('\n');
  let key: Buffer = hmac(`AWS4${secret}`, day!);
  for (const part of [region!, service!, 'aws4_request']) key = hmac(key, part);
  return createHmac('sha256', key).update(stringToSign).digest('hex');
}

describe('mintEksToken', () => {
  it('is byte-stable for a fixed clock and fixed credentials', async () => {
    const t = await mintEksToken({
      clusterName: 'prod-eu-1',
      region: 'eu-west-1',
      credentials: creds,
      now: () => T0,
    });
    expect(decodeEksToken(t.token).href).toBe(PINNED_URL);
    expect(t.token).toBe(PINNED);
    expect(t.signedAt.toISOString()).toBe('2024-01-02T03:04:05.000Z');
    expect(t.expiresAt.toISOString()).toBe('2024-01-02T03:19:05.000Z');
  });

  it.each([
    {
      name: 'session credentials, regional endpoint',
      credentials: creds,
      stsEndpoint: undefined,
      host: 'sts.eu-west-1.amazonaws.com',
      query: [
        'Action',
        'Version',
        'X-Amz-Algorithm',
        'X-Amz-Credential',
        'X-Amz-Date',
        'X-Amz-Expires',
        'X-Amz-SignedHeaders',
        'X-Amz-Security-Token',
        'X-Amz-Signature',
      ],
    },
    {
      name: 'long-term keys, emulator endpoint with a port',
      credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret+/=' } as AwsCredentials,
      stsEndpoint: 'https://127.0.0.1:4566',
      host: '127.0.0.1:4566',
      query: [
        'Action',
        'Version',
        'X-Amz-Algorithm',
        'X-Amz-Credential',
        'X-Amz-Date',
        'X-Amz-Expires',
        'X-Amz-SignedHeaders',
        'X-Amz-Signature',
      ],
    },
  ])('decodes to a presigned GetCallerIdentity URL ($name)', async (c) => {
    const { token } = await mintEksToken({
      clusterName: 'prod-eu-1',
      region: 'eu-west-1',
      credentials: c.credentials,
      ...(c.stsEndpoint ? { stsEndpoint: c.stsEndpoint } : {}),
      now: () => T0,
    });
    expect(token.startsWith(EKS_TOKEN_PREFIX)).toBe(true);
    const body = token.slice(EKS_TOKEN_PREFIX.length);
    expect(body).toMatch(/^[A-Za-z0-9_-]+$/); // base64url, no padding
    const url = decodeEksToken(token);
    expect(url.protocol).toBe('https:');
    expect(url.host).toBe(c.host);
    expect(url.pathname).toBe('/');
    expect([...url.searchParams.keys()]).toEqual(c.query);
    const p = Object.fromEntries(url.searchParams);
    expect(p).toMatchObject({
      Action: 'GetCallerIdentity',
      Version: '2011-06-15',
      'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
      'X-Amz-Credential': 'AKIDEXAMPLE/20240102/eu-west-1/sts/aws4_request',
      'X-Amz-Date': '20240102T030405Z',
      'X-Amz-Expires': '60',
      'X-Amz-SignedHeaders': 'host;x-k8s-aws-id',
    });
    if (c.credentials.sessionToken) {
      expect(p['X-Amz-Security-Token']).toBe(c.credentials.sessionToken);
    }
    expect(p['X-Amz-Signature']).toBe(
      referenceSignature(url, 'prod-eu-1', c.credentials.secretAccessKey),
    );
    // The signature binds the cluster name: another name gives another signature.
    expect(p['X-Amz-Signature']).not.toBe(
      referenceSignature(url, 'prod-eu-2', c.credentials.secretAccessKey),
    );
  });

  it('never emits padding, whatever the URL length', async () => {
    for (const clusterName of ['a', 'ab', 'abc', 'abcd']) {
      const { token } = await mintEksToken({
        clusterName,
        region: 'us-east-1',
        credentials: creds,
        now: () => T0,
      });
      expect(token).not.toContain('=');
    }
  });

  it('ends the token when the credentials end, if that is sooner', async () => {
    const t = await mintEksToken({
      clusterName: 'c',
      region: 'eu-west-1',
      credentials: { ...creds, expiration: new Date(T0.getTime() + 5 * MIN) },
      now: () => T0,
    });
    expect(t.expiresAt.getTime()).toBe(T0.getTime() + 5 * MIN);
  });

  it('accepts a credentials provider', async () => {
    const t = await mintEksToken({
      clusterName: 'prod-eu-1',
      region: 'eu-west-1',
      credentials: async () => creds,
      now: () => T0,
    });
    expect(t.token).toBe(PINNED);
  });
});

describe('EksTokenSource', () => {
  function source(opts: { refreshBeforeMs?: number } = {}) {
    let clock = 0;
    let current: AwsCredentials = creds;
    let resolved = 0;
    const s = new EksTokenSource({
      clusterName: 'prod-eu-1',
      region: 'eu-west-1',
      credentials: async () => {
        resolved++;
        return current;
      },
      now: () => at(clock)(),
      ...opts,
    });
    return {
      s,
      tick: (ms: number) => (clock = ms),
      rotate: (c: AwsCredentials) => (current = c),
      resolved: () => resolved,
    };
  }

  it.each([
    { at: 0, fresh: false },
    { at: 13 * MIN, fresh: false },
    { at: 13 * MIN + 59_999, fresh: false },
    { at: 14 * MIN, fresh: true },
    { at: 16 * MIN, fresh: true },
  ])('after $at ms, re-minted: $fresh', async (c) => {
    const { s, tick } = source();
    const first = await s.getToken();
    tick(c.at);
    const second = await s.getToken();
    expect(second !== first).toBe(c.fresh);
    if (c.fresh) expect(second.signedAt.getTime()).toBeGreaterThan(first.signedAt.getTime());
  });

  it('honours a custom refreshBeforeMs', async () => {
    const { s, tick } = source({ refreshBeforeMs: 5 * MIN });
    const first = await s.getToken();
    tick(9 * MIN);
    expect(await s.getToken()).toBe(first);
    tick(10 * MIN);
    expect(await s.getToken()).not.toBe(first);
  });

  it('re-mints at once when the provider returns other credentials', async () => {
    const { s, tick, rotate } = source();
    const first = await s.getToken();
    tick(1000);
    expect(await s.getToken()).toBe(first);
    rotate({ ...creds, accessKeyId: 'ASIAROTATED', sessionToken: 'new' });
    const second = await s.getToken();
    expect(second).not.toBe(first);
    expect(decodeEksToken(second.token).searchParams.get('X-Amz-Credential')).toMatch(
      /^ASIAROTATED\//,
    );
  });

  it('shares one mint between concurrent callers; invalidate() forces a new one', async () => {
    const { s, tick } = source();
    const [a, b, c] = await Promise.all([s.getToken(), s.getToken(), s.getToken()]);
    expect(a).toBe(b);
    expect(b).toBe(c);
    tick(2000);
    s.invalidate();
    expect(await s.getToken()).not.toBe(a);
  });
});

describe('kubeAccessForCluster', () => {
  it('sets the CA and a fresh bearer token on every request, without client-node', async () => {
    let n = 0;
    const caPem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
    const access = kubeAccessForCluster({
      name: 'prod-eu-1',
      server: 'https://127.0.0.1:6443',
      caPem,
      token: async () => `tok-${++n}`,
    });
    const a: { headers?: Record<string, string>; ca?: Buffer } = {};
    const b: { headers?: Record<string, string> } = {};
    await access.applyToHTTPSOptions(a as never);
    await access.applyToHTTPSOptions(b as never);
    expect(a.headers?.Authorization).toBe('Bearer tok-1');
    expect(b.headers?.Authorization).toBe('Bearer tok-2');
    expect(a.ca?.toString()).toBe(caPem);
    expect(access.getCurrentCluster()?.server).toBe('https://127.0.0.1:6443');
  });

  it('takes tokens from an EksTokenSource', async () => {
    const s = new EksTokenSource({
      clusterName: 'prod-eu-1',
      region: 'eu-west-1',
      credentials: creds,
      now: () => T0,
    });
    const access = kubeAccessForCluster({
      name: 'prod-eu-1',
      server: 'https://h',
      caPem: 'x',
      token: s,
    });
    const o: { headers?: Record<string, string> } = {};
    await access.applyToHTTPSOptions(o as never);
    expect(o.headers?.Authorization).toBe(`Bearer ${PINNED}`);
  });
});
