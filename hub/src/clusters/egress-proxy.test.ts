import http from 'node:http';
import https from 'node:https';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  describeProxy,
  NoProxy,
  parseProxyUrl,
  proxyEnvFrom,
  proxyFor,
  ProxyHttpAgent,
  ProxyHttpsAgent,
} from './egress-proxy.js';

describe('NO_PROXY', () => {
  // [NO_PROXY, host, port, direct?] — the cases curl and Go's httpproxy agree on.
  it.each<[string, string, number, boolean]>([
    ['', 'eks.eu-west-1.amazonaws.com', 443, false],
    ['*', 'anything.example', 443, true],
    ['example.com', 'example.com', 443, true],
    ['example.com', 'api.example.com', 443, true],
    ['example.com', 'notexample.com', 443, false],
    ['.example.com', 'example.com', 443, true],
    ['.example.com', 'a.b.example.com', 443, true],
    ['*.example.com', 'a.example.com', 443, true],
    ['EXAMPLE.com', 'Api.Example.COM.', 443, true],
    ['example.com.', 'api.example.com', 443, true],
    ['example.com:6443', 'api.example.com', 6443, true],
    ['example.com:6443', 'api.example.com', 443, false],
    ['10.1.2.3', '10.1.2.3', 443, true],
    ['10.1.2.3', '10.1.2.4', 443, false],
    ['10.1.2.3:443', '10.1.2.3', 6443, false],
    ['10.0.0.0/8', '10.200.3.4', 443, true],
    ['10.0.0.0/8', '11.0.0.1', 443, false],
    ['10.0.0.0/8', 'ten.example', 443, false],
    ['fd00::/8', '[fd12::1]', 443, true],
    ['[::1]', '[::1]', 443, true],
    ['::1', '::1', 443, true],
    ['[::1]:8443', '[::1]', 443, false],
    ['169.254.169.254, .svc ,cluster.local', 'kubernetes.default.svc', 443, true],
    ['a.example b.example', 'x.b.example', 443, true],
    // localhost and loopback are not exempt by themselves (as in curl, unlike Go).
    ['', '127.0.0.1', 443, false],
    ['localhost', 'localhost', 8080, true],
    ['127.0.0.0/8', '127.0.0.1', 8080, true],
    // an IP rule matches only a URL naming that IP, never a name resolving to it
    ['10.1.2.3', 'ip-10-1-2-3.example', 443, false],
    ['not/a/cidr', 'not', 443, false],
  ])('NO_PROXY=%j, %s:%d direct=%s', (spec, host, port, direct) => {
    expect(new NoProxy(spec).matches(host, port)).toBe(direct);
  });
});

describe('proxy environment', () => {
  it('reads the upper-case name first, then the lower-case one, as Go does', () => {
    expect(
      proxyEnvFrom({
        HTTPS_PROXY: 'http://upper:3128',
        https_proxy: 'http://lower:3128',
        http_proxy: 'http://plain:3128',
        no_proxy: '.internal',
      }),
    ).toEqual({
      httpsProxy: 'http://upper:3128',
      httpProxy: 'http://plain:3128',
      noProxy: '.internal',
    });
    expect(proxyEnvFrom({ HTTPS_PROXY: ' ', https_proxy: 'proxy:3128' })).toEqual({
      httpsProxy: 'proxy:3128',
    });
  });

  it('refuses a SOCKS proxy and names the variable, never the credentials', () => {
    let message = '';
    try {
      proxyEnvFrom({ HTTPS_PROXY: 'socks5://user:s3cret-pw@proxy:1080' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('HTTPS_PROXY');
    expect(message).not.toContain('s3cret-pw');
  });

  it('describes a proxy without its user and password', () => {
    expect(describeProxy('http://user:s3cret-pw@proxy.corp:3128')).toBe('http://proxy.corp:3128');
    expect(parseProxyUrl('proxy.corp:3128').href).toBe('http://proxy.corp:3128/');
  });

  it.each<[string, string | undefined]>([
    ['https://sts.eu-west-1.amazonaws.com/', 'http://proxy:3128/'],
    ['https://vpce-1.sts.eu-west-1.vpce.amazonaws.com/', undefined],
    ['http://127.0.0.1:5000/', 'http://plain:8080/'],
    ['https://10.0.3.4:443/', undefined],
  ])('%s goes through %s', (target, proxy) => {
    const env = {
      httpsProxy: 'http://proxy:3128',
      httpProxy: 'http://plain:8080',
      noProxy: '.vpce.amazonaws.com,10.0.0.0/16',
    };
    expect(proxyFor(env, target)?.href).toBe(proxy);
  });
});

/** An https server on 127.0.0.1 with a self-signed certificate (openssl, as the kit makes its PKI). */
async function selfSignedServer(
  handler: http.RequestListener,
): Promise<{ url: string; ca: string; close(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'mirrorhub-proxy-'));
  execFileSync(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
      ...['-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-days', '1'],
      ...['-keyout', join(dir, 'tls.key'), '-out', join(dir, 'tls.crt')],
    ],
    { stdio: 'ignore' },
  );
  const cert = readFileSync(join(dir, 'tls.crt'), 'utf8');
  const key = readFileSync(join(dir, 'tls.key'), 'utf8');
  rmSync(dir, { recursive: true, force: true });
  const server = https.createServer({ cert, key }, handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    ca: cert,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

describe('the tunnel', () => {
  /** A CONNECT proxy recording each target and each Proxy-Authorization it was sent. */
  const targets: string[] = [];
  const auths: (string | undefined)[] = [];
  let proxy: http.Server;
  let proxyUrl: string;
  let tlsServer: { url: string; ca: string; close(): Promise<void> };
  let plain: http.Server;
  let plainUrl: string;

  beforeAll(async () => {
    proxy = http.createServer((_req, res) => res.writeHead(405).end());
    proxy.on('connect', (req: http.IncomingMessage, client: import('node:net').Socket) => {
      targets.push(req.url ?? '');
      auths.push(req.headers['proxy-authorization']);
      const [host, port] = [req.url!.replace(/:\d+$/, ''), Number(/:(\d+)$/.exec(req.url!)![1])];
      const upstream = connect(port, host.replace(/^\[(.*)\]$/, '$1'), () => {
        client.write('HTTP/1.1 200 Connection established\r\n\r\n');
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    proxyUrl = `http://ops:p%40ss-9f2@127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    tlsServer = await selfSignedServer((_req, res) => res.end('tls-ok'));
    plain = http.createServer((_req, res) => res.end('plain-ok'));
    await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
    plainUrl = `http://127.0.0.1:${(plain.address() as AddressInfo).port}/`;
  });
  afterAll(async () => {
    proxy.close();
    plain.close();
    await tlsServer.close();
  });

  function get(url: string, agent: http.Agent, ca?: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const mod = url.startsWith('https:') ? https : http;
      mod
        .get(url, { agent, ...(ca ? { ca } : {}) }, (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (d: string) => (body += d));
          res.on('end', () => resolve(body));
        })
        .on('error', reject);
    });
  }

  it('reaches an https target through CONNECT, TLS verified end to end', async () => {
    targets.length = 0;
    const agent = new ProxyHttpsAgent({ httpsProxy: proxyUrl });
    expect(await get(tlsServer.url, agent, tlsServer.ca)).toBe('tls-ok');
    expect(targets).toEqual([new URL(tlsServer.url).host]);
    expect(auths.at(-1)).toBe(`Basic ${Buffer.from('ops:p@ss-9f2').toString('base64')}`);
    // the target's certificate is checked through the tunnel: a wrong CA fails
    await expect(get(tlsServer.url, agent)).rejects.toThrow();
    agent.destroy();
  });

  it('reaches an http target through HTTP_PROXY with CONNECT as well', async () => {
    targets.length = 0;
    const agent = new ProxyHttpAgent({ httpProxy: proxyUrl });
    expect(await get(plainUrl, agent)).toBe('plain-ok');
    expect(targets).toEqual([new URL(plainUrl).host]);
    agent.destroy();
  });

  it('goes direct for NO_PROXY targets', async () => {
    targets.length = 0;
    const agent = new ProxyHttpsAgent({ httpsProxy: proxyUrl, noProxy: '127.0.0.1' });
    expect(await get(tlsServer.url, agent, tlsServer.ca)).toBe('tls-ok');
    const plainAgent = new ProxyHttpAgent({ httpProxy: proxyUrl, noProxy: '127.0.0.0/8' });
    expect(await get(plainUrl, plainAgent)).toBe('plain-ok');
    expect(targets).toEqual([]);
    agent.destroy();
    plainAgent.destroy();
  });

  it('says which proxy refused, without its credentials', async () => {
    const agent = new ProxyHttpsAgent({ httpsProxy: 'http://ops:s3cret-pw@127.0.0.1:1' });
    const err = (await get(tlsServer.url, agent, tlsServer.ca).catch((e: unknown) => e)) as Error;
    expect(err.message).toContain('proxy http://127.0.0.1:1');
    expect(err.message).not.toContain('s3cret-pw');
    agent.destroy();
  });
});
