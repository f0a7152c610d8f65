import net from 'node:net';

/** One response read off a raw socket, and what became of the connection after it. */
export interface RawReply {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Milliseconds from the first byte written to the whole response read. */
  ms: number;
  /** The server ended the connection within `closeWithinMs` of its answer. */
  closed: boolean;
}

const WRITE_FIRST_PIECE = 256 * 1024;

/**
 * Writes `head` and `body` as they are (no client that would fix them up), reads one response,
 * then waits up to `closeWithinMs` for the server to end the connection. A test can go on
 * writing with `more`, called once the response is in: what the server refuses to read fails.
 * With `writeFirst` the body is streamed, and nothing is read before all of it is written: a
 * client that sends its whole request before it looks at the answer.
 */
export function rawRequest(
  port: number,
  head: string,
  body: Buffer | string = '',
  options: { closeWithinMs?: number; more?: (socket: net.Socket) => void; writeFirst?: boolean } = {},
): Promise<RawReply> {
  const { closeWithinMs = 1500 } = options;
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {}); // a reset after the answer is what some tests want
    let received = Buffer.alloc(0);
    let reply: Omit<RawReply, 'closed'> | undefined;
    let timer: NodeJS.Timeout | undefined;
    const settle = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      if (reply) resolve({ ...reply, closed });
      else reject(new Error(`no complete response; got ${JSON.stringify(received.toString('latin1'))}`));
    };
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (reply) return;
      const end = received.indexOf('\r\n\r\n');
      if (end === -1) return;
      const lines = received.subarray(0, end).toString('latin1').split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const rest = received.subarray(end + 4);
      let body: string;
      if (headers['transfer-encoding'] === 'chunked') {
        if (rest.indexOf('0\r\n\r\n') === -1) return;
        body = dechunk(rest);
      } else {
        const length = Number(headers['content-length'] ?? 0);
        if (rest.length < length) return;
        body = rest.subarray(0, length).toString('utf8');
      }
      reply = { status: Number(lines[0]!.split(' ')[1]), headers, body, ms: performance.now() - started };
      timer = setTimeout(() => settle(false), closeWithinMs);
      options.more?.(socket);
    });
    socket.on('close', () => settle(true));
    socket.write(head);
    if (!options.writeFirst) {
      if (body.length > 0) socket.write(body);
      return;
    }
    // The body streams out a piece at a time, each once the one before is written (the server
    // runs in between); reading starts after the last. A failed write ends the connection.
    socket.pause();
    const bytes = Buffer.from(body);
    const from = (at: number): void => {
      if (at >= bytes.length) {
        socket.resume();
        return;
      }
      socket.write(bytes.subarray(at, at + WRITE_FIRST_PIECE), (error) => {
        if (!error) from(at + WRITE_FIRST_PIECE);
      });
    };
    from(0);
  });
}

function dechunk(data: Buffer): string {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at);
    const size = Number.parseInt(data.subarray(at, lineEnd).toString('latin1'), 16);
    if (!(size > 0)) return Buffer.concat(parts).toString('utf8');
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}

/** Writes `chunk` until the socket refuses more or `total` bytes went out; returns how many did. */
export function keepWriting(socket: net.Socket, chunk: Buffer, total: number): () => number {
  let written = 0;
  const pump = () => {
    while (written < total && !socket.destroyed && socket.writable) {
      written += chunk.length;
      if (!socket.write(chunk)) {
        socket.once('drain', pump);
        return;
      }
    }
  };
  pump();
  return () => written;
}
