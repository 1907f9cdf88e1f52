import { describe, expect, it } from 'vitest';
import { decodeBase64, EncodingError, fingerprint, secretOf } from './observation.js';

// KTS mirrors writes a Secret's data to Vault as Go's encoding/json writes a []byte: standard
// base64 with padding. These are the values a KTS cluster leaves in Vault.
const kts = (bytes: Buffer | string) => Buffer.from(bytes).toString('base64');
const PEM = '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n';
const BINARY = Buffer.from([0x30, 0x82, 0xff, 0xfe, 0x00, 0x80, 0xc3]);

describe('secretOf, source.vault.encoding Base64', () => {
  it('decodes each value into the bytes KTS encoded, PEM text and non-UTF-8 bytes alike', () => {
    const object = secretOf(
      { 'tls.crt': kts(PEM), 'keystore.p12': kts(BINARY), empty: '' },
      'Base64',
    );
    expect(Buffer.from(object.data?.['tls.crt'] ?? '', 'base64').toString('utf8')).toBe(PEM);
    expect(Buffer.from(object.data?.['keystore.p12'] ?? '', 'base64')).toEqual(BINARY);
    expect(object.data?.['empty']).toBe('');
  });

  it('Plain (the default) keeps the text as it is: a KTS value stays encoded', () => {
    const object = secretOf({ 'tls.crt': kts(PEM) });
    expect(Buffer.from(object.data?.['tls.crt'] ?? '', 'base64').toString('utf8')).toBe(kts(PEM));
  });

  it('refuses a value that is not base64, naming the key and never the value', () => {
    const secretValue = 'hunter2 not base64!';
    let err: unknown;
    try {
      secretOf({ good: kts('x'), password: secretValue, count: 3 }, 'Base64');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(EncodingError);
    const message = (err as Error).message;
    expect(message).toContain('"password", "count"');
    expect(message).toContain('encoding Base64');
    expect(message).not.toContain(secretValue);
    expect(message).not.toContain('"good"');
  });

  it('reads KTS’s KV v1 layout: the values under the one key data', () => {
    const object = secretOf({ data: { 'tls.crt': kts(PEM) } }, 'Base64');
    expect(Object.keys(object.data ?? {})).toEqual(['tls.crt']);
    expect(Buffer.from(object.data?.['tls.crt'] ?? '', 'base64').toString('utf8')).toBe(PEM);
  });

  it('the same bytes give the same fingerprint whatever line breaks the encoding had', () => {
    const wrapped = kts(PEM).replace(/(.{20})/g, '$1\n');
    const a = secretOf({ k: kts(PEM) }, 'Base64');
    const b = secretOf({ k: wrapped }, 'Base64');
    expect(fingerprint({ state: 'found', object: a })).toBe(
      fingerprint({ state: 'found', object: b }),
    );
  });
});

describe('decodeBase64', () => {
  it.each([
    ['', Buffer.alloc(0)],
    ['QQ==', Buffer.from('A')],
    ['QUI=', Buffer.from('AB')],
    ['QUJD', Buffer.from('ABC')],
    ['QUJD\r\nREVG', Buffer.from('ABCDEF')],
    ['+/8=', Buffer.from([0xfb, 0xff])],
  ])('%j decodes', (text, bytes) => {
    expect(decodeBase64(text)).toEqual(bytes);
  });

  it.each([
    ['plain text with spaces'],
    ['QQ'], // no padding: Go's StdEncoding refuses it
    ['QQ=='.concat('QQ==')], // padding in the middle
    ['-_8='], // base64url alphabet
    ['QUJD!'],
    ['é'],
  ])('%j is not base64', (text) => {
    expect(decodeBase64(text)).toBeUndefined();
  });
});
