import net from 'node:net';

interface Pair {
  client: net.Socket;
  up: net.Socket;
}

/**
 * A TCP proxy to a loopback port that a test can cut (every connection dropped, new ones refused)
 * and open again on the same port: a server that is unreachable for a while, without stopping it.
 * It can also stall connections silently, as a proxy or load balancer that keeps a watch open
 * but stops passing its events does.
 */
export class TcpProxy {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  private readonly pairs = new Set<Pair>();
  /** Stalled pairs, each with what lets it pass again. */
  private readonly stalled = new Map<Pair, () => void>();
  port = 0;
  /** `onRequestBytes` sees every byte clients send through (what reached the target). */
  constructor(
    private readonly target: number,
    private readonly onRequestBytes?: (chunk: Buffer) => void,
  ) {}
  async open(): Promise<void> {
    this.server = net.createServer((c) => {
      const up = net.connect(this.target, '127.0.0.1');
      const pair = { client: c, up };
      this.sockets.add(c).add(up);
      this.pairs.add(pair);
      if (this.onRequestBytes) c.on('data', this.onRequestBytes);
      c.pipe(up).pipe(c);
      const done = () => {
        c.destroy();
        up.destroy();
        this.sockets.delete(c);
        this.sockets.delete(up);
        this.pairs.delete(pair);
        this.stalled.delete(pair);
      };
      c.on('error', done).on('close', done);
      up.on('error', done).on('close', done);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
  }
  /**
   * Stall every open connection: the server's answers stop reaching the client, with no close
   * and no error. By default until the client sends something more on it: a watch over HTTP/1.1
   * sends nothing after its request, so it stays stalled, and a keep-alive connection reused for
   * a new request passes again. With `untilResume`, until resume() whatever the client sends, as a
   * middlebox that lost the way back does: what multiplexes many streams on one connection
   * (HTTP/2: a Lease renewal next to the watches) would lift the other kind of stall at once.
   * New connections pass either way. Returns how many connections were stalled.
   */
  stall(opts: { untilResume?: boolean } = {}): number {
    for (const pair of this.pairs) {
      const { client, up } = pair;
      if (this.stalled.has(pair)) continue;
      up.unpipe(client);
      up.pause();
      const pass = () => {
        client.off('data', pass);
        if (!this.stalled.delete(pair)) return;
        up.pipe(client);
        up.resume();
      };
      this.stalled.set(pair, pass);
      if (!opts.untilResume) client.once('data', pass);
    }
    return this.stalled.size;
  }
  /**
   * Ends a stall: every connection still stalled passes again, what the server sent meanwhile
   * first (a stall shorter than a watch's progress deadline, which it must simply sit out).
   */
  resume(): number {
    const n = this.stalled.size;
    for (const pass of [...this.stalled.values()]) pass();
    return n;
  }
  async cut(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
    this.server = undefined;
  }
}
