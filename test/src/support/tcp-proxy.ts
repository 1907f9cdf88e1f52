import net from 'node:net';

/**
 * A TCP proxy to a loopback port that a test can cut (every connection dropped, new ones refused)
 * and open again on the same port: a server that is unreachable for a while, without stopping it.
 */
export class TcpProxy {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  port = 0;
  constructor(private readonly target: number) {}
  async open(): Promise<void> {
    this.server = net.createServer((c) => {
      const up = net.connect(this.target, '127.0.0.1');
      this.sockets.add(c).add(up);
      c.pipe(up).pipe(c);
      const done = () => {
        c.destroy();
        up.destroy();
        this.sockets.delete(c);
        this.sockets.delete(up);
      };
      c.on('error', done).on('close', done);
      up.on('error', done).on('close', done);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }
  async cut(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
    this.server = undefined;
  }
}
