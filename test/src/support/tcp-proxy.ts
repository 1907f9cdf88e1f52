import net from 'node:net';

/**
 * A TCP proxy to a loopback port that a test can cut (every connection dropped, new ones refused)
 * and open again on the same port: a server that is unreachable for a while, without stopping it.
 * It can also stall connections silently, as a proxy or load balancer that keeps a watch open
 * but stops passing its events does.
 */
export class TcpProxy {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  private readonly pairs = new Set<{ client: net.Socket; up: net.Socket }>();
  port = 0;
  constructor(private readonly target: number) {}
  async open(): Promise<void> {
    this.server = net.createServer((c) => {
      const up = net.connect(this.target, '127.0.0.1');
      const pair = { client: c, up };
      this.sockets.add(c).add(up);
      this.pairs.add(pair);
      c.pipe(up).pipe(c);
      const done = () => {
        c.destroy();
        up.destroy();
        this.sockets.delete(c);
        this.sockets.delete(up);
        this.pairs.delete(pair);
      };
      c.on('error', done).on('close', done);
      up.on('error', done).on('close', done);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }
  /**
   * Stall every open connection: the server's answers stop reaching the client, with no close
   * and no error, until the client sends something more on it. A watch sends nothing after its
   * request, so it stays stalled; a keep-alive connection reused for a new request passes again.
   * Returns how many connections were stalled.
   */
  stall(): number {
    for (const { client, up } of this.pairs) {
      up.unpipe(client);
      up.pause();
      client.once('data', () => {
        up.pipe(client);
        up.resume();
      });
    }
    return this.pairs.size;
  }
  async cut(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
    this.server = undefined;
  }
}
