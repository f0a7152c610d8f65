import { once } from 'node:events';
import net, { type AddressInfo, type Socket } from 'node:net';
import { LINGER_MAX_BYTES } from '@keyhook/core/http';
import { adminToken, rawRequest, waitUntil } from '@keyhook/testing/support';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Backend, backends, startDataPlane } from './data-plane.js';
import { expectEnvelope, requestHead } from './hostile-server.js';

const MiB = 1024 * 1024;
const IDLE_SECONDS = 2;

/** `size` bytes of spaces, as one chunk of a chunked body and its end. */
function chunked(size: number): Buffer {
  return Buffer.concat([
    Buffer.from(`${size.toString(16)}\r\n`),
    Buffer.alloc(size, 0x20),
    Buffer.from('\r\n0\r\n\r\n'),
  ]);
}

/**
 * What a client can provoke on the connection itself, on each store: idle keep-alive connections
 * close at KEYHOOK_IDLE_TIMEOUT, requests Node or Fastify refuse outside a route are answered in
 * the envelope, and a client that sends its whole body before it reads hears why it was refused
 * (data-plane.md §7.4).
 */
describe.each(backends)('connections on $name', (backend: Backend) => {
  let plane: Awaited<ReturnType<typeof startDataPlane>>;
  let port: number;
  let sockets: Socket[] = [];
  const bytesRead = () => sockets.reduce((sum, socket) => sum + socket.bytesRead, 0);

  beforeAll(async () => {
    if (!backend.available) return;
    plane = await startDataPlane(backend, {
      worker: false,
      env: { KEYHOOK_IDLE_TIMEOUT: `${IDLE_SECONDS}s` },
    });
    const { app } = plane.running.server;
    port = (app.server.address() as AddressInfo).port;
    app.server.on('connection', (socket: Socket) => sockets.push(socket));
  });
  afterAll(async () => {
    await plane?.close();
  });
  beforeEach(() => {
    sockets = [];
  });

  describe('keep-alive', () => {
    it.skipIf(!backend.available)(
      'an idle keep-alive connection is closed after KEYHOOK_IDLE_TIMEOUT, the time Keep-Alive states',
      async () => {
        const socket = net.connect(port, '127.0.0.1');
        let received = '';
        let answeredAt = 0;
        socket.on('data', (chunk: Buffer) => {
          received += chunk.toString('latin1');
          if (answeredAt === 0 && received.includes('{"status":"ok"}')) answeredAt = performance.now();
        });
        const closed = once(socket, 'close');
        socket.write(requestHead('GET', '/healthz'));
        await waitUntil(() => answeredAt > 0);
        expect(received).toMatch(/^HTTP\/1\.1 200 /);
        expect(received).toMatch(new RegExp(`\r\nKeep-Alive: timeout=${IDLE_SECONDS}\r\n`, 'i'));
        // Between requests the server's socket waits the idle timeout, not Node's keepAliveTimeout + 1 s.
        await waitUntil(() => sockets[0]?.timeout === IDLE_SECONDS * 1000);
        await closed;
        // Timers do not fire early; the server's started a moment before the client read the answer.
        expect(performance.now() - answeredAt).toBeGreaterThan(IDLE_SECONDS * 1000 - 100);
      },
    );
  });

  describe('answers outside a route, in the envelope', () => {
    it.skipIf(!backend.available)('no Host header: 400 validation_failed, closed', async () => {
      const reply = await rawRequest(port, 'GET /healthz HTTP/1.1\r\n\r\n');
      expectEnvelope(reply, 400, 'validation_failed');
      expect(reply.closed).toBe(true);
    });

    it.skipIf(!backend.available)('HTTP/1.0, which needs no Host header, is served', async () => {
      const reply = await rawRequest(port, 'GET /healthz HTTP/1.0\r\n\r\n');
      expect(reply.status).toBe(200);
      expect(reply.headers['x-request-id']).toMatch(/^req_/);
    });

    it.skipIf(!backend.available)('CONNECT: 404 not_found, closed', async () => {
      for (const target of ['example.com:443', '/api/v1/sources']) {
        const reply = await rawRequest(port, `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
        expectEnvelope(reply, 404, 'not_found');
        expect(reply.closed).toBe(true);
      }
    });

    it.skipIf(!backend.available)(
      'methods without a route (PROPFIND, TRACE, MKCOL): 404 not_found',
      async () => {
        for (const method of ['PROPFIND', 'TRACE', 'MKCOL']) {
          const reply = await rawRequest(
            port,
            requestHead(method, '/api/v1/sources', { connection: 'close' }),
          );
          expectEnvelope(reply, 404, 'not_found');
        }
      },
    );
  });

  /** A client that writes all of an 11 MiB request before it reads a byte of the answer. */
  describe('a body past the limit, sent whole before the answer is read', () => {
    const routes = [
      ['the data plane (10 MiB limit)', 'PUT', '/api/v1/sources/src_x/items', () => plane.key],
      ['an admin route (64 KiB limit)', 'POST', '/api/v1/admin/keys', () => adminToken({ tenantId: 'acme' })],
    ] as const;
    for (const [where, method, path, token] of routes) {
      for (const framing of ['Content-Length', 'chunked'] as const) {
        it.skipIf(!backend.available)(`${where}, ${framing}: the client reads its 413`, async () => {
          const size = 11 * MiB;
          const headers = {
            authorization: `Bearer ${await token()}`,
            'content-type': 'application/json',
            ...(framing === 'chunked' ? { 'transfer-encoding': 'chunked' } : { 'content-length': size }),
          };
          const body = framing === 'chunked' ? chunked(size) : Buffer.alloc(size, 0x20);
          const reply = await rawRequest(port, requestHead(method, path, headers), body, {
            writeFirst: true,
          });
          expectEnvelope(reply, 413, 'payload_too_large');
          expect(reply.headers['connection']).toBe('close');
          expect(reply.closed).toBe(true);
        });
      }
    }

    it.skipIf(!backend.available)(
      'a refusal before the body (a wrong key): the client reads its 401',
      async () => {
        const reply = await rawRequest(
          port,
          requestHead('PUT', '/api/v1/sources/src_x/items', {
            authorization: 'Bearer sk_live_wrong',
            'content-type': 'application/json',
            'content-length': 11 * MiB,
          }),
          Buffer.alloc(11 * MiB, 0x20),
          { writeFirst: true },
        );
        expectEnvelope(reply, 401, 'invalid_api_key');
        expect(reply.closed).toBe(true);
      },
    );

    it.skipIf(!backend.available)('headers over the limit, then more: the client reads its 431', async () => {
      const reply = await rawRequest(
        port,
        requestHead('GET', '/api/v1/sources', { 'x-pad': 'p'.repeat(20_000) }),
        Buffer.alloc(11 * MiB, 0x20),
        { writeFirst: true },
      );
      expectEnvelope(reply, 431, 'headers_too_large');
      expect(reply.closed).toBe(true);
    });

    it.skipIf(!backend.available)('CONNECT, then tunnel bytes: the client reads its 404', async () => {
      const reply = await rawRequest(
        port,
        'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n',
        Buffer.alloc(11 * MiB, 0x16),
        { writeFirst: true },
      );
      expectEnvelope(reply, 404, 'not_found');
      expect(reply.closed).toBe(true);
    });

    it.skipIf(!backend.available)(
      `a client that never stops is cut off after ${LINGER_MAX_BYTES / MiB} MiB more`,
      async () => {
        const socket = net.connect(port, '127.0.0.1');
        socket.on('error', () => {}); // its writes fail when it is cut off
        const closed = new Promise((resolve) => socket.on('close', resolve));
        socket.pause(); // it never reads, so it never sees the answer's end
        socket.write(
          requestHead('POST', '/api/v1/admin/keys', {
            authorization: `Bearer ${await adminToken({ tenantId: 'acme' })}`,
            'content-type': 'application/json',
            'content-length': 64 * MiB,
          }),
        );
        socket.write(Buffer.alloc(64 * MiB, 0x20));
        await closed;
        // Refused from its Content-Length, before the body: all the server read is the lingering.
        expect(bytesRead()).toBeGreaterThan(LINGER_MAX_BYTES);
        expect(bytesRead()).toBeLessThan(LINGER_MAX_BYTES + MiB);
      },
    );
  });
});
