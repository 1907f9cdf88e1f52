import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { KubeAccess } from './access.js';
import { RestClient } from './rest.js';
import { shareSecureContext, sharedSecureContexts, type TlsRequestOptions } from './tls.js';

/** A self-signed certificate for 127.0.0.1 and its key (openssl, as the kit makes its PKI). */
function selfSigned(dir: string, name: string): { cert: string; key: string } {
  execFileSync(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
      ...['-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-days', '1'],
      ...['-keyout', join(dir, `${name}.key`), '-out', join(dir, `${name}.crt`)],
    ],
    { stdio: 'ignore' },
  );
  return {
    cert: readFileSync(join(dir, `${name}.crt`), 'utf8'),
    key: readFileSync(join(dir, `${name}.key`), 'utf8'),
  };
}

describe('shared TLS contexts', () => {
  let dir: string;
  let server: https.Server;
  let url: string;
  let serving: { cert: string; key: string };
  let other: { cert: string; key: string };
  let connections = 0;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mirrorhub-tls-'));
    serving = selfSigned(dir, 'serving');
    other = selfSigned(dir, 'other');
    server = https.createServer({ cert: serving.cert, key: serving.key }, (_req, res) => {
      // A new connection for every request, so every request builds (or shares) a context.
      res.writeHead(200, { 'Content-Type': 'application/json', Connection: 'close' });
      res.end('{"ok":true}');
    });
    server.on('secureConnection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise<void>((r) => server.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  });

  /** An access that hands out a fresh Buffer of `caPem` on every request, as a reload would. */
  const access = (caPem: string): KubeAccess => ({
    getCurrentCluster: () => ({ server: url }),
    applyToHTTPSOptions(opts) {
      opts.ca = Buffer.from(caPem);
      return Promise.resolve();
    },
  });

  it('builds one context for many connections with the same CA, and still verifies with it', async () => {
    const rest = new RestClient(access(serving.cert));
    const before = sharedSecureContexts();
    const seen = connections;
    for (let i = 0; i < 5; i++) expect(await rest.get('/x')).toEqual({ ok: true });
    // One more handshake: the first request asks for HTTP/2 (k8s/h2.ts), which this server does
    // not offer, so it and the rest go over HTTP/1.1; that one uses the shared context too.
    expect(connections - seen).toBe(6);
    expect(sharedSecureContexts() - before).toBe(1);
    rest.close();
  });

  it('never lets a connection with another CA use that context: it fails verification', async () => {
    const rest = new RestClient(access(other.cert));
    await expect(rest.get('/x')).rejects.toThrow(/self[- ]signed|unable to verify|certificate/i);
    rest.close();
  });

  it('leaves options that set anything else that goes into a context to node', () => {
    const withPfx: TlsRequestOptions = { ca: serving.cert, pfx: Buffer.from('x') };
    shareSecureContext(withPfx);
    expect(withPfx.secureContext).toBeUndefined();
    const keyObjects: TlsRequestOptions = {
      key: [{ pem: serving.key, passphrase: 'p' }] as unknown as string,
    };
    shareSecureContext(keyObjects);
    expect(keyObjects.secureContext).toBeUndefined();
    const none: TlsRequestOptions = { headers: {} };
    shareSecureContext(none);
    expect(none.secureContext).toBeUndefined();
    const same: TlsRequestOptions[] = [{ ca: serving.cert }, { ca: Buffer.from(serving.cert) }];
    for (const o of same) shareSecureContext(o);
    expect(same[0]!.secureContext).toBeDefined();
    expect(same[0]!.secureContext).toBe(same[1]!.secureContext);
  });
});
