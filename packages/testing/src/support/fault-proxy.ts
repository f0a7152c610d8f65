import net from 'node:net';
import { POSTGRES_TEST_URL } from './postgres.js';

/** What the proxy does with the connections through it. */
export type FaultMode = 'pass' | 'blackhole' | 'refuse';

interface Matcher {
  matches: (sql: string) => boolean;
  after: ((sql: string) => boolean) | undefined;
  answer: ((answer: Buffer) => boolean) | undefined;
  done: () => void;
}

interface Delayed {
  chunks: { due: number; chunk: Buffer }[];
  timer: NodeJS.Timeout | undefined;
}

interface Link {
  client: net.Socket;
  upstream: net.Socket | null;
  /** Bytes held while black-holed, per direction, sent on in order when the path comes back. */
  held: { up: Buffer[]; down: Buffer[] };
  /** Chunks delayed by latency, per direction, in the order they came; one timer sends each way's out in that order. */
  delayed: { up: Delayed; down: Delayed };
  /** The answer to a matched statement, held until it is whole; then lost (and the connection reset) or passed on. */
  losing: { matcher: Matcher; answer: Buffer[] } | null;
  /** This connection sent a statement the armed `loseAnswerTo`'s `after` matches. */
  primed: boolean;
  /** What the client sent and the proxy has not read as whole messages yet. */
  unread: Buffer;
  /** The startup message (untyped) is still to come. */
  startup: boolean;
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
  /** Connections accepted; connections reset by a fault; rounds of `resetEvery`; answers lost. */
  readonly counts = { connections: 0, resets: 0, stormRounds: 0, answersLost: 0 };

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
          this.counts.stormRounds++;
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
   * The next statement a client sends whose SQL text `matches` (a simple query, or the extended
   * protocol's Parse, or a Bind of a statement prepared earlier on any connection) reaches the
   * server; the server's answer, up to and including its ReadyForQuery (so a statement outside a
   * transaction, or a COMMIT, has committed), is dropped, and that connection is reset. With
   * `after`, only on a connection that sent a statement `after` matches first (the COMMIT of a
   * transaction that wrote something). Resolves when done.
   */
  loseAnswerTo(
    matches: (sql: string) => boolean,
    options: {
      after?: (sql: string) => boolean;
      /** Lose only an answer whose bytes this holds for (a claim that leased something); others pass and the proxy waits for the next. */
      answer?: (answer: Buffer) => boolean;
    } = {},
  ): Promise<void> {
    for (const link of this.links) link.primed = false;
    return new Promise((resolve) => {
      this.matcher = { matches, after: options.after, answer: options.answer, done: resolve };
    });
  }

  private matcher: Matcher | null = null;
  /** Named statements' SQL, by name, as the clients prepared them (names are global: keyhook's are derived from the text). */
  private readonly prepared = new Map<string, string>();

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
      delayed: { up: { chunks: [], timer: undefined }, down: { chunks: [], timer: undefined } },
      losing: null,
      primed: false,
      unread: Buffer.alloc(0),
      startup: true,
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
    for (const sql of this.statementsIn(link, chunk)) {
      const matcher = this.matcher;
      if (!matcher || link.losing !== null) break;
      const primed = link.primed || matcher.after === undefined;
      if (!link.primed && matcher.after?.(sql)) link.primed = true;
      if (!primed || !matcher.matches(sql)) continue;
      this.matcher = null;
      link.losing = { matcher, answer: [] };
    }
    this.send(link, 'up', chunk);
  }

  /** The SQL of each whole statement message in what the client sent (Query, Parse, Bind). */
  private statementsIn(link: Link, chunk: Buffer): string[] {
    link.unread = link.unread.length === 0 ? chunk : Buffer.concat([link.unread, chunk]);
    const statements: string[] = [];
    for (;;) {
      const buffer = link.unread;
      // The startup message has no type byte: its length comes first.
      const typed = link.startup ? 0 : 1;
      if (buffer.length < typed + 4) break;
      const end = typed + buffer.readInt32BE(typed);
      if (buffer.length < end) break;
      const body = buffer.subarray(typed + 4, end);
      link.unread = buffer.subarray(end);
      if (link.startup) {
        link.startup = false;
        continue;
      }
      const type = String.fromCharCode(buffer[0]!);
      if (type === 'Q') statements.push(cString(body, 0).text);
      else if (type === 'P') {
        const name = cString(body, 0);
        const sql = cString(body, name.next).text;
        if (name.text !== '') this.prepared.set(name.text, sql);
        statements.push(sql);
      } else if (type === 'B') {
        const portal = cString(body, 0);
        const name = cString(body, portal.next).text;
        // A Bind of an unnamed statement runs the Parse just before it, already matched.
        if (name !== '') statements.push(this.prepared.get(name) ?? '');
      }
    }
    return statements;
  }

  private fromServer(link: Link, chunk: Buffer): void {
    const losing = link.losing;
    if (losing === null) {
      this.send(link, 'down', chunk);
      return;
    }
    losing.answer.push(chunk);
    // ReadyForQuery ('Z', length 5, a status byte) ends the answer: the statement is done.
    const whole =
      chunk.length >= 6 && chunk[chunk.length - 6] === 0x5a && chunk.readInt32BE(chunk.length - 5) === 5;
    if (!whole) return;
    link.losing = null;
    const answer = Buffer.concat(losing.answer);
    if (losing.matcher.answer && !losing.matcher.answer(answer)) {
      // Not the one: it goes through, and the proxy waits for the next match.
      this.matcher ??= losing.matcher;
      this.send(link, 'down', answer);
      return;
    }
    this.counts.answersLost++;
    this.resetLink(link);
    losing.matcher.done();
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
    const delayed = link.delayed[way];
    if (this.delayMs <= 0 && delayed.chunks.length === 0) {
      to.write(chunk);
      return;
    }
    // Behind whatever is still delayed: a change of latency never reorders bytes.
    delayed.chunks.push({ due: Date.now() + this.delayMs, chunk });
    const sendDue = () => {
      delayed.timer = undefined;
      while (delayed.chunks.length > 0 && delayed.chunks[0]!.due <= Date.now()) {
        const { chunk: next } = delayed.chunks.shift()!;
        if (!to.destroyed) to.write(next);
      }
      if (delayed.chunks.length > 0) delayed.timer = setTimeout(sendDue, delayed.chunks[0]!.due - Date.now());
    };
    delayed.timer ??= setTimeout(sendDue, this.delayMs);
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

/** A NUL-terminated string at `at`, and where the next field starts. */
function cString(buffer: Buffer, at: number): { text: string; next: number } {
  const end = buffer.indexOf(0, at);
  return { text: buffer.toString('utf8', at, end), next: end + 1 };
}
