import net from 'node:net';
import { POSTGRES_TEST_URL } from './postgres.js';

/** What the proxy does with the connections through it. */
export type FaultMode = 'pass' | 'blackhole' | 'refuse';

interface Link {
  client: net.Socket;
  upstream: net.Socket | null;
  /** Bytes held while black-holed, per direction, sent on in order when the path comes back. */
  held: { up: Buffer[]; down: Buffer[] };
  /** When the last chunk each way is due out, so a change of latency never reorders bytes. */
  dueAt: { up: number; down: number };
  /** The answer to a matched message is being dropped: the connection is reset once it is whole. */
  losing: (() => void) | null;
  /** This connection sent a message the armed `loseAnswerTo`'s `after` matches. */
  primed: boolean;
}

/**
 * A TCP proxy between keyhook and PostgreSQL that a test turns into the faults of a real network:
 * resets, latency, a black hole (bytes held, as TCP holds them through a partition, and sent on
 * when it heals), refused connections, and an answer lost after the server committed. The shared
 * server is never touched: only the connections through the proxy suffer.
 */
export class FaultProxy {
  private readonly links = new Set<Link>();
  private server: net.Server | null = null;
  private mode: FaultMode = 'pass';
  private delayMs = 0;
  private listeningPort = 0;
  private storm: NodeJS.Timeout | undefined;
  /** Connections accepted, and connections reset by a fault. */
  readonly counts = { connections: 0, resets: 0, answersLost: 0 };

  private constructor(private readonly target: { host: string; port: number }) {}

  /** A proxy in front of `target` (default: the Postgres the suites use), listening on 127.0.0.1. */
  static async start(target: { host: string; port: number } = postgresTarget()): Promise<FaultProxy> {
    const proxy = new FaultProxy(target);
    await proxy.listen(0);
    return proxy;
  }

  get port(): number {
    return this.listeningPort;
  }

  /** `url` (default: the suites' database) with its host and port replaced by the proxy's. */
  url(url: string = POSTGRES_TEST_URL): string {
    const through = new URL(url);
    through.hostname = '127.0.0.1';
    through.port = String(this.port);
    return through.toString();
  }

  /** Open connections through the proxy now. */
  get open(): number {
    return this.links.size;
  }

  /** Everything passes again: held bytes go on, and a refusing proxy listens again. */
  async pass(): Promise<void> {
    const was = this.mode;
    this.mode = 'pass';
    if (was === 'refuse') await this.listen(this.listeningPort);
    for (const link of this.links) {
      for (const chunk of link.held.up.splice(0)) this.forward(link, 'up', chunk);
      for (const chunk of link.held.down.splice(0)) this.forward(link, 'down', chunk);
    }
  }

  /** Every byte, both ways and on new connections too, is held until `pass()` (or dropped by `reset()`). */
  blackhole(): void {
    this.mode = 'blackhole';
  }

  /** New connections are refused (the port stops listening); open ones carry on. */
  async refuse(): Promise<void> {
    if (this.mode === 'refuse') return;
    this.mode = 'refuse';
    // Not listening from here on; close's callback would wait for the open connections to end.
    this.server?.close();
    this.server = null;
  }

  /** The server went away: new connections are refused and open ones reset. */
  async cut(): Promise<void> {
    await this.refuse();
    this.reset();
  }

  /** Each chunk, each way, arrives `ms` later than it was sent. */
  latency(ms: number): void {
    this.delayMs = ms;
  }

  /** Resets every open connection, both sides (RST), as a failed network or server would. */
  reset(): void {
    for (const link of [...this.links]) this.resetLink(link);
  }

  /** Resets every open connection at a random moment every `minMs`–`maxMs`, until `calm()`. */
  resetEvery(minMs: number, maxMs: number): void {
    this.calm();
    const next = () => {
      this.storm = setTimeout(
        () => {
          this.reset();
          next();
        },
        minMs + Math.random() * (maxMs - minMs),
      );
    };
    next();
  }

  /** Stops `resetEvery`. */
  calm(): void {
    clearTimeout(this.storm);
    this.storm = undefined;
  }

  /**
   * The next message a client sends that `matches` (its raw protocol bytes: a statement's text,
   * or a prepared statement's name) reaches the server; the server's answer, up to and including
   * its ReadyForQuery (so a statement outside a transaction, or a COMMIT, has committed), is
   * dropped, and that connection is reset. With `after`, only on a connection that sent a message
   * `after` matches first (the COMMIT of a transaction that wrote something). Resolves when done.
   */
  loseAnswerTo(
    matches: (message: Buffer) => boolean,
    options: { after?: (message: Buffer) => boolean } = {},
  ): Promise<void> {
    for (const link of this.links) link.primed = false;
    return new Promise((resolve) => {
      this.matcher = { matches, after: options.after, done: resolve };
    });
  }

  private matcher: {
    matches: (message: Buffer) => boolean;
    after: ((message: Buffer) => boolean) | undefined;
    done: () => void;
  } | null = null;

  async close(): Promise<void> {
    this.calm();
    for (const link of [...this.links]) this.destroyLink(link);
    const server = this.server;
    this.server = null;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** A new server each time: one that was closed to refuse may still hold connections open. */
  private async listen(port: number): Promise<void> {
    const server = net.createServer((client) => this.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    this.listeningPort = (server.address() as net.AddressInfo).port;
  }

  private accept(client: net.Socket): void {
    this.counts.connections++;
    const link: Link = {
      client,
      upstream: null,
      held: { up: [], down: [] },
      dueAt: { up: 0, down: 0 },
      losing: null,
      primed: false,
    };
    this.links.add(link);
    client.setNoDelay(true);
    client.on('error', () => this.destroyLink(link));
    client.on('close', () => this.destroyLink(link));
    client.on('data', (chunk: Buffer) => this.fromClient(link, chunk));
    const upstream = net.connect(this.target);
    link.upstream = upstream;
    upstream.setNoDelay(true);
    upstream.on('error', () => this.destroyLink(link));
    upstream.on('close', () => this.destroyLink(link));
    upstream.on('data', (chunk: Buffer) => this.fromServer(link, chunk));
  }

  private fromClient(link: Link, chunk: Buffer): void {
    const matcher = this.matcher;
    const primed = link.primed || matcher?.after === undefined;
    if (matcher && !link.primed && matcher.after?.(chunk)) link.primed = true;
    if (matcher && primed && link.losing === null && matcher.matches(chunk)) {
      this.matcher = null;
      link.losing = () => {
        this.counts.answersLost++;
        this.resetLink(link);
        matcher.done();
      };
    }
    this.send(link, 'up', chunk);
  }

  private fromServer(link: Link, chunk: Buffer): void {
    if (link.losing) {
      // ReadyForQuery ('Z', length 5, a status byte) ends the answer: the statement is done.
      if (
        chunk.length >= 6 &&
        chunk[chunk.length - 6] === 0x5a &&
        chunk.readInt32BE(chunk.length - 5) === 5
      ) {
        link.losing();
      }
      return;
    }
    this.send(link, 'down', chunk);
  }

  private send(link: Link, way: 'up' | 'down', chunk: Buffer): void {
    if (this.mode === 'blackhole') {
      link.held[way].push(chunk);
      return;
    }
    this.forward(link, way, chunk);
  }

  private forward(link: Link, way: 'up' | 'down', chunk: Buffer): void {
    const to = way === 'up' ? link.upstream : link.client;
    if (!to) return;
    if (this.delayMs <= 0 && link.dueAt[way] <= Date.now()) {
      to.write(chunk);
      return;
    }
    const due = Math.max(Date.now() + this.delayMs, link.dueAt[way]);
    link.dueAt[way] = due;
    setTimeout(() => {
      if (!to.destroyed) to.write(chunk);
    }, due - Date.now());
  }

  private resetLink(link: Link): void {
    if (!this.links.has(link)) return;
    this.counts.resets++;
    link.client.resetAndDestroy();
    link.upstream?.resetAndDestroy();
    this.links.delete(link);
  }

  private destroyLink(link: Link): void {
    if (!this.links.delete(link)) return;
    link.client.destroy();
    link.upstream?.destroy();
  }
}

function postgresTarget(): { host: string; port: number } {
  const url = new URL(POSTGRES_TEST_URL);
  return { host: url.hostname, port: Number(url.port || 5432) };
}
