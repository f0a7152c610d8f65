import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * data-plane.md §3.3: a request is handled only once the answers before it on its connection are
 * written out. Node parses every request one read brings, pipelined ones included, and would
 * have each one's answer built at once and held in memory until the client reads the ones
 * before it (30 pipelined pages of 1 MiB on 20 connections that read nothing: the server's RSS
 * from 183 MB to 367 MB and climbing). Waiting here holds the parked request, not its answer:
 * per connection, one answer at most is in memory beyond the kernel's socket buffers. A
 * connection closed while a request waits has it dropped unanswered.
 */
export function registerAnswerOrder(app: FastifyInstance): void {
  app.addHook('preHandler', async (request, reply) => {
    const answer = reply.raw;
    const socket = request.raw.socket;
    while (!socket.destroyed && (answer.socket === null || socket.writableNeedDrain)) {
      // Queued behind an earlier answer, Node hands this one the socket once that one is written out.
      await nextOf(
        answer.socket === null ? answer : socket,
        answer.socket === null ? 'socket' : 'drain',
        socket,
      );
    }
    if (socket.destroyed) reply.hijack();
  });
}

/** Per connection, what waits for it to close: one listener each, however many requests are parked. */
const onClose = new WeakMap<Socket, Set<() => void>>();

/** Resolves at `event` on `emitter`, or when the connection closes. */
function nextOf(emitter: NodeJS.EventEmitter, event: string, socket: Socket): Promise<void> {
  let waiting = onClose.get(socket);
  if (!waiting) {
    const callbacks = new Set<() => void>();
    socket.once('close', () => {
      for (const callback of callbacks) callback();
    });
    onClose.set(socket, callbacks);
    waiting = callbacks;
  }
  const parked = waiting;
  return new Promise((resolve) => {
    const done = () => {
      emitter.off(event, done);
      parked.delete(done);
      resolve();
    };
    emitter.on(event, done);
    parked.add(done);
  });
}
