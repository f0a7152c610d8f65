import net from 'node:net';

/**
 * A TCP forwarder to Postgres that a test can cut, so "the database went away" happens for
 * real without stopping the shared server. With `blackhole`, it accepts and never answers.
 */
export class TcpProxy {
  private readonly sockets = new Set<net.Socket>();
  private readonly server: net.Server;

  private constructor(target: { host: string; port: number }, blackhole: boolean) {
    this.server = net.createServer((client) => {
      this.track(client);
      if (blackhole) return;
      const upstream = net.connect(target);
      this.track(upstream);
      client.pipe(upstream).pipe(client);
    });
  }

  static async start(target: { host: string; port: number }, blackhole = false): Promise<TcpProxy> {
    const proxy = new TcpProxy(target, blackhole);
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get port(): number {
    return (this.server.address() as net.AddressInfo).port;
  }

  /** Stops listening and drops every open connection, both ways. */
  async cut(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }

  /** Drops every open connection but keeps listening: a server restart, as a client sees it. */
  dropConnections(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  private track(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => this.sockets.delete(socket));
  }
}
