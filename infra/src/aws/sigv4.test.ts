import { Sha256 } from '@aws-crypto/sha256-js';
import { HttpRequest } from '@smithy/protocol-http';
import { SignatureV4 } from '@smithy/signature-v4';
import { describe, expect, it } from 'vitest';
import {
  canonicalUri,
  parseAmzDate,
  parseAuthorizationHeader,
  parseRawQuery,
  sha256Hex,
  signatureV4,
} from './sigv4.js';

const credentials = { accessKeyId: 'AKIAEXAMPLE000000001', secretAccessKey: 'c2VjcmV0+/=' };

// The SDK signs, our verifier recomputes: two implementations must agree on the EKS shapes we
// serve (labels with ':' and '/', query strings, JSON bodies).
describe('signatureV4 agrees with @smithy/signature-v4', () => {
  it.each([
    {
      name: 'GET with an ARN label',
      method: 'GET',
      path: `/clusters/follower-a/access-entries/${encodeURIComponent('arn:aws:iam::222222222222:role/follower')}`,
      query: {},
      body: undefined,
    },
    {
      name: 'GET with a query',
      method: 'GET',
      path: '/clusters',
      query: { maxResults: '10', nextToken: 'a+b/c=' },
      body: undefined,
    },
    {
      name: 'POST with a JSON body',
      method: 'POST',
      path: '/clusters/follower-a/access-entries',
      query: {},
      body: JSON.stringify({
        principalArn: 'arn:aws:iam::222222222222:role/follower',
        kubernetesGroups: ['a b'],
      }),
    },
  ] as Array<{
    name: string;
    method: string;
    path: string;
    query: Record<string, string>;
    body: string | undefined;
  }>)('$name', async (c) => {
    const signer = new SignatureV4({
      service: 'eks',
      region: 'eu-west-1',
      credentials,
      sha256: Sha256,
    });
    const req = new HttpRequest({
      method: c.method,
      protocol: 'http:',
      hostname: '127.0.0.1',
      port: 4000,
      path: c.path,
      query: c.query,
      headers: {
        host: '127.0.0.1:4000',
        'content-type': 'application/json',
        'x-amz-user-agent': 'test',
      },
      ...(c.body ? { body: c.body } : {}),
    });
    const signed = await signer.sign(req, { signingDate: new Date('2024-01-02T03:04:05Z') });
    const auth = parseAuthorizationHeader(signed.headers.authorization);
    expect(auth).toBeDefined();
    const headers = Object.fromEntries(
      Object.entries(signed.headers).map(([k, v]) => [k.toLowerCase(), v]),
    );
    const rawQuery = new URLSearchParams(c.query).toString().replaceAll('+', '%2B');
    const mine = signatureV4({
      method: c.method,
      canonicalUri: canonicalUri(c.path),
      query: parseRawQuery(rawQuery)!,
      headers,
      signedHeaders: auth!.signedHeaders,
      payloadHash: sha256Hex(c.body ?? ''),
      amzDate: headers['x-amz-date']!,
      scope: auth!.scope,
      secretAccessKey: credentials.secretAccessKey,
    });
    expect(mine).toBe(auth!.signature);
    expect(auth!.accessKeyId).toBe(credentials.accessKeyId);
  });
});

describe('helpers', () => {
  it.each([
    { raw: '/clusters/a', want: '/clusters/a' },
    {
      raw: '/clusters/arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fx',
      want: '/clusters/arn%253Aaws%253Aiam%253A%253A1%253Arole%252Fx',
    },
    { raw: '/a/./b/../c/', want: '/a/c/' },
    { raw: '/', want: '/' },
  ])('canonicalUri($raw)', ({ raw, want }) => expect(canonicalUri(raw)).toBe(want));

  it.each([
    { s: '20240102T030405Z', ok: true },
    { s: '20240231T030405Z', ok: false },
    { s: '2024-01-02T03:04:05Z', ok: false },
    { s: '20240102T250405Z', ok: false },
  ])('parseAmzDate($s)', ({ s, ok }) => expect(parseAmzDate(s) !== undefined).toBe(ok));

  it.each([
    { h: undefined, ok: false },
    { h: 'Bearer x', ok: false },
    {
      h: `AWS4-HMAC-SHA256 Credential=AKIA0000000000000001/20240102/eu-west-1/eks/aws4_request, SignedHeaders=host;x-amz-date, Signature=${'a'.repeat(64)}`,
      ok: true,
    },
    {
      h: `AWS4-HMAC-SHA256 Credential=AKIA0000000000000001/20240102/eu-west-1/eks, SignedHeaders=host, Signature=${'a'.repeat(64)}`,
      ok: false,
    },
  ])('parseAuthorizationHeader #%#', ({ h, ok }) =>
    expect(parseAuthorizationHeader(h) !== undefined).toBe(ok),
  );

  it('keeps a literal + in a raw query', () => {
    expect(parseRawQuery('a=1+2&b=%2B&c')).toEqual([
      ['a', '1+2'],
      ['b', '+'],
      ['c', ''],
    ]);
  });
});
