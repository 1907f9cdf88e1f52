import http from 'node:http';
import net, { type AddressInfo } from 'node:net';

/**
 * An HTTP CONNECT proxy on loopback that records every tunnel's target (host:port) and the
 * Proxy-Authorization it was sent, and pipes bytes both ways: it never sees inside TLS.
 * Anything but CONNECT is answered 405, so a client that tried to send a request in the clear
 * through it would fail.
 */
export class ConnectProxy {
  /**
   * `resolve` maps a target host to the address the proxy connects to: names only the proxy
   * knows (as a corporate proxy resolves names the hub's own DNS does not), so a client that
   * went around the proxy would fail to resolve them.
   */
  constructor(private readonly resolve: (host: string) => string = (h) => h) {}

  readonly targets: string[] = [];
  readonly authorizations: (string | undefined)[] = [];
  private server: http.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  /** `http://[user:pass@]127.0.0.1:<port>` */
  url(userinfo = ''): string {
    return `http://${userinfo ? `${userinfo}@` : ''}127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const server = http.createServer((_req, res) => res.writeHead(405).end());
    server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
      const target = req.url ?? '';
      this.targets.push(target);
      this.authorizations.push(req.headers['proxy-authorization']);
      const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(target);
      if (!m) {
        client.end('HTTP/1.1 400 Bad Request\r\n\r\n');
        return;
      }
      const up = net.connect(Number(m[2]), this.resolve(m[1]!), () => {
        client.write('HTTP/1.1 200 Connection established\r\n\r\n');
        if (head.length) up.write(head);
        up.pipe(client);
        client.pipe(up);
      });
      this.sockets.add(client).add(up);
      const drop = () => {
        client.destroy();
        up.destroy();
      };
      up.on('error', drop).on('close', () => this.sockets.delete(up));
      client.on('error', drop).on('close', () => this.sockets.delete(client));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
  }

  /** Distinct targets tunnelled to so far. */
  distinct(): string[] {
    return [...new Set(this.targets)].sort();
  }

  reset(): void {
    this.targets.length = 0;
    this.authorizations.length = 0;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}
