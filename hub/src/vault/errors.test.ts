import { describe, expect, it } from 'vitest';
import { REDACTED, redact, stringsIn, VaultError } from './errors.js';

describe('redact', () => {
  it.each([
    {
      name: 'a listed secret, every occurrence',
      text: 'bad value hunter22 near hunter22',
      secrets: ['hunter22'],
      want: `bad value ${REDACTED} near ${REDACTED}`,
    },
    {
      name: 'the longer of two overlapping secrets whole',
      text: 'x=abcdefgh',
      secrets: ['abcd', 'abcdefgh'],
      want: `x=${REDACTED}`,
    },
    {
      name: 'nothing for values too short to give anything away',
      text: 'version 1 of 2',
      secrets: ['1', '2'],
      want: 'version 1 of 2',
    },
    {
      name: 'an OpenBao service token nobody listed',
      text: 'token s.RJqoH8xs9jvSu0mCtjP80gb0 is bad',
      secrets: [],
      want: `token ${REDACTED} is bad`,
    },
    {
      name: 'a Vault hvs. token',
      text: 'hvs.CAESIJ4yVb0y2bqJ5n7UE7wQ7hq3Qh1wHHvAcDs8bpXq9d9LGh4KHGh2cy5abc',
      secrets: [],
      want: REDACTED,
    },
    {
      name: 'a JWT',
      text: 'jwt eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl rejected',
      secrets: [],
      want: `jwt ${REDACTED} rejected`,
    },
    {
      name: 'a bearer credential',
      text: 'Authorization: Bearer abc.def',
      secrets: [],
      want: `Authorization: ${REDACTED}`,
    },
  ])('removes $name', ({ text, secrets, want }) => {
    expect(redact(text, secrets)).toBe(want);
  });

  it('leaves ordinary messages alone', () => {
    const m = 'check-and-set parameter did not match the current version';
    expect(redact(m, ['password'])).toBe(m);
  });
});

describe('stringsIn', () => {
  it('collects every string value, however deep, and no keys', () => {
    expect(stringsIn({ a: 'x', b: { c: ['y', { d: 'z' }] }, n: 1, t: true, z: null })).toEqual([
      'x',
      'y',
      'z',
    ]);
  });
});

describe('VaultError', () => {
  it('withMessage keeps what it knows and changes the message (and kind, if asked)', () => {
    const e = new VaultError({
      kind: 'permission-denied',
      message: 'm',
      method: 'GET',
      path: 'p',
      status: 403,
      errors: ['permission denied'],
    });
    const w = e.withMessage('better', 'login-failed');
    expect(w).toBeInstanceOf(VaultError);
    expect([w.message, w.kind, w.status, w.path, w.errors]).toEqual([
      'better',
      'login-failed',
      403,
      'p',
      ['permission denied'],
    ]);
  });
});
