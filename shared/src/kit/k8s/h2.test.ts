import https from 'node:https';
import { describe, expect, it } from 'vitest';
import { configureHttp2, http2FromEnv, http2Get, http2Stats } from './h2.js';

describe('http2FromEnv', () => {
  it.each([
    [{}, true],
    [{ MIRRORHUB_HTTP2: 'true' }, true],
    [{ MIRRORHUB_HTTP2: ' FALSE ' }, false],
  ])('%j -> %s', (env, want) => expect(http2FromEnv(env)).toBe(want));

  it('refuses anything else, naming the variable', () => {
    expect(() => http2FromEnv({ MIRRORHUB_HTTP2: 'off' })).toThrow(
      'MIRRORHUB_HTTP2 must be true or false; got "off"',
    );
  });
});

describe('http2Get: what stays on HTTP/1.1 (undefined, and no connection made)', () => {
  // Each of these would need a connection to learn more; none is made.
  class ProxyAgent extends https.Agent {}
  it.each([
    ['a plain http:// server', 'http://127.0.0.1:1/api', {}],
    ['a proxy agent', 'https://127.0.0.1:1/api', { agent: new ProxyAgent() }],
    ['TLS material node would make its own context of', 'https://127.0.0.1:1/api', { ca: 'x' }],
    ['a pfx', 'https://127.0.0.1:1/api', { pfx: Buffer.from('x') }],
  ])('%s', async (_, url, opts) => {
    expect(await http2Get(new URL(url), opts, {})).toBeUndefined();
    expect(http2Stats()).toEqual({ sessions: 0, streams: 0 });
  });

  it('everything, when turned off', async () => {
    configureHttp2({ enabled: false });
    try {
      expect(await http2Get(new URL('https://127.0.0.1:1/api'), {}, {})).toBeUndefined();
    } finally {
      configureHttp2({ enabled: true });
    }
  });
});
