import type { Socket } from 'node:net';

/**
 * data-plane.md §7.4: how much more of a body it did not read the server reads and drops after
 * its answer. Above the largest body it takes (10 MiB), so a client that sends its whole body
 * before it reads still hears why it was refused; a client that sends more is cut off.
 */
export const LINGER_MAX_BYTES = 16 * 1024 * 1024;

/**
 * Ends the connection once what was written on it is sent: a FIN, then whatever the client still
 * sends is dropped until it ends its side too. It is closed earlier after `LINGER_MAX_BYTES`, after
 * `maxMs`, or when nothing arrives for the socket's idle timeout. Closing at once, with bytes
 * unread, makes the kernel reset the connection, and a client still writing loses the answer.
 */
export function lingeringClose(socket: Socket, maxMs: number): void {
  if (socket.destroyed) return;
  // Nothing more on this connection is a request: Node's HTTP parser hears none of it.
  socket.removeAllListeners('data');
  let dropped = 0;
  socket.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > LINGER_MAX_BYTES) socket.destroy();
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
 * Node ends the connection of a `Connection: close` answer with `socket.destroySoon()`, which
 * closes it as soon as the answer is written: this socket lingers instead (lingeringClose).
 */
export function lingerAfterAnswer(socket: Socket, maxMs: number): void {
  socket.destroySoon = () => lingeringClose(socket, maxMs);
}
