import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the receiver got it: the raw body, byte for byte, and when. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  receivedAt: number;
}

/** How the receiver answers the n-th request (0-based) to a path. */
export type Responder = (request: ReceivedRequest, index: number, res: ServerResponse) => void;

export const answer =
  (status: number, body = '', headers: Record<string, string> = {}): Responder =>
  (_request, _index, res) => {
    res.writeHead(status, headers).end(body);
  };

/**
 * A real webhook receiver on 127.0.0.1: it records every request and answers as the test
 * says, per path. Deliveries are checked here, never through mocks of the sender.
 */
export class TestReceiver {
  readonly requests: ReceivedRequest[] = [];
  private readonly responders = new Map<string, Responder>();
  private readonly waiters = new Set<() => void>();
  private readonly server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: Date.now(),
      };
      this.requests.push(request);
      const index = this.requests.filter((r) => r.path === request.path).length - 1;
      (this.responders.get(request.path) ?? answer(200, 'ok'))(request, index, res);
      for (const waiter of this.waiters) waiter();
    });
  });
  private port = 0;

  static async start(): Promise<TestReceiver> {
    const receiver = new TestReceiver();
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    receiver.port = (receiver.server.address() as AddressInfo).port;
    return receiver;
  }

  /** The URL of `path` on this receiver. */
  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  on(path: string, responder: Responder): void {
    this.responders.set(path, responder);
  }

  to(path: string): ReceivedRequest[] {
    return this.requests.filter((r) => r.path === path);
  }

  /** Resolves when `predicate` holds over the requests so far; rejects after `timeoutMs`. */
  async waitFor(predicate: (requests: ReceivedRequest[]) => boolean, timeoutMs = 10_000): Promise<void> {
    if (predicate(this.requests)) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(
          new Error(
            `the receiver did not see what was expected within ${timeoutMs} ms (${this.requests.length} requests)`,
          ),
        );
      }, timeoutMs);
      const check = () => {
        if (!predicate(this.requests)) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      this.waiters.add(check);
    });
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
