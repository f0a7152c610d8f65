import net from 'node:net';
import { waitUntil } from '@keyhook/testing/support';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { registerAnswerOrder } from '../src/answer-order.js';
import { listen } from './client.js';

// Larger than what the kernel's socket buffers on both sides can take while the client reads nothing.
const BIG = 'x'.repeat(32 * 1024 * 1024);

describe('pipelined requests wait for the answers before them (data-plane.md §3.3)', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
  });

  async function start() {
    const app = Fastify();
    registerAnswerOrder(app);
    const seen: string[] = [];
    app.get('/big/:n', async (request, reply) => {
      const { n } = request.params as { n: string };
      seen.push(`built ${n}`);
      reply.raw.once('finish', () => seen.push(`written ${n}`));
      return reply.type('text/plain').send(BIG);
    });
    const url = new URL(await listen(app));
    close = () => app.close();
    return { app, seen, url };
  }

  const pipelined = (count: number) =>
    Array.from({ length: count }, (_, i) => `GET /big/${i + 1} HTTP/1.1\r\nhost: test\r\n\r\n`).join('');

  it('a client that reads nothing has one answer built; the next is built once that one is written out', async () => {
    const { seen, url } = await start();
    const socket = net.connect(Number(url.port), url.hostname);
    socket.pause();
    socket.write(pipelined(3));
    await waitUntil(
      () => seen.includes('built 1'),
      5000,
      () => seen.join(', '),
    );
    // Reading now lets every answer out, in order: each built only after the one before it was written.
    let received = 0;
    socket.on('data', (chunk: Buffer) => {
      received += chunk.length;
    });
    socket.resume();
    // `written` is the server's: the kernel has the bytes. The client has them a little later.
    await waitUntil(
      () => seen.includes('written 3') && received > 3 * BIG.length,
      20_000,
      () => `${seen.join(', ')}; ${received} bytes received`,
    );
    expect(seen).toEqual(['built 1', 'written 1', 'built 2', 'written 2', 'built 3', 'written 3']);
    socket.destroy();
  });

  it('a request parked behind an unread answer is dropped unbuilt when the client leaves', async () => {
    const { app, seen, url } = await start();
    const socket = net.connect(Number(url.port), url.hostname);
    socket.pause();
    socket.write(pipelined(3));
    await waitUntil(
      () => seen.includes('built 1'),
      5000,
      () => seen.join(', '),
    );
    socket.destroy();
    await waitUntil(
      async () => (await connections(app.server)) === 0,
      5000,
      () => 'the server still holds the connection',
    );
    expect(seen.filter((step) => step.startsWith('built'))).toEqual(['built 1']);
  });
});

function connections(server: net.Server): Promise<number> {
  return new Promise((resolve, reject) =>
    server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
  );
}
