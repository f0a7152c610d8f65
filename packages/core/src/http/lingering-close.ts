import type { Socket } from 'node:net';

/**
 * docs/decisions.md §1.5: how much more of a body it left unread a server reads and drops after
 * its answer, at most. Above the bodies hosts take, so a client that sends its whole body before
 * it reads still hears why it was refused; a client that sends more is cut off.
 */
export const LINGER_MAX_BYTES = 16 * 1024 * 1024;

/** The longest a connection lingers after its answer, unless the host says less. */
export const LINGER_MAX_MS = 30_000;

/** How long a connection lingers at most: whichever bound comes first ends it. */
export interface LingerOptions {
  /** Bytes read and dropped at most (default `LINGER_MAX_BYTES`). */
  maxBytes?: number;
  /** Milliseconds at most (default `LINGER_MAX_MS`). */
  maxMs?: number;
}

/**
 * Ends the connection once what was written on it is sent: a FIN, then whatever the client still
 * sends is dropped until it ends its side too. It is closed earlier after `maxBytes`, after
 * `maxMs`, or when nothing arrives for the socket's idle timeout. Closing at once, with bytes
 * unread, makes the kernel reset the connection, and a client still writing loses the answer.
 */
export function lingeringClose(socket: Socket, options: LingerOptions = {}): void {
  if (socket.destroyed) return;
  const { maxBytes = LINGER_MAX_BYTES, maxMs = LINGER_MAX_MS } = options;
  // Nothing more on this connection is a request: Node's HTTP parser hears none of it.
  socket.removeAllListeners('data');
  let dropped = 0;
  socket.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > maxBytes) socket.destroy();
  });
  const deadline = setTimeout(() => socket.destroy(), maxMs).unref();
  socket.once('close', () => clearTimeout(deadline));
  socket.once('end', () => socket.destroy());
  socket.once('timeout', () => socket.destroy());
  socket.end();
  socket.resume();
  // While a body went unread, Node's parser stopped the socket's reads, and restarts them from a
  // `resume` listener, gone with its `data` listener above (the stream's own state still says
  // "reading"): start them as that listener would.
  const handle = (socket as Socket & { _handle?: { reading: boolean; readStart(): number } | null })._handle;
  if (handle && !handle.reading) {
    handle.reading = true;
    handle.readStart();
  }
}

/**
 * Makes the connection of an answer given with a body unread (and `Connection: close`) linger
 * (lingeringClose) once the answer is written. Node ends such a connection with
 * `socket.destroySoon()`, which closes it at once: this socket's lingers instead.
 */
export function lingerAfterAnswer(socket: Socket, options: LingerOptions = {}): void {
  socket.destroySoon = () => lingeringClose(socket, options);
}
