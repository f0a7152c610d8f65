import net from 'node:net';
import { LINGER_MAX_BYTES } from '@keyhook/core/http';
import { describe, expect, it } from 'vitest';
import { adminToken } from '../support/credentials.js';
import { keepWriting, rawRequest } from '../support/raw-http.js';
import { createKey } from './client.js';
import type { SuiteContext } from './suite-context.js';

const TEN_MB = 10 * 1024 * 1024;
const ELEVEN_MIB = 11 * 1024 * 1024;

/**
 * A refused caller's body is never parsed, and never read to its end: the guard runs before the
 * body (the host's parser never sees it), and an answer given while the body is still coming
 * closes the connection, so Node does not drain it. Raw sockets, so no client fixes anything up.
 */
export function refusalBeforeBodyCases(ctx: SuiteContext): void {
  describe('refusals before the body (hostile traffic)', () => {
    const port = () => Number(new URL(ctx.baseUrl).port);
    const post = (path: string, headers: Record<string, string | number>, length: number) =>
      `POST ${ctx.prefix}${path} HTTP/1.1\r\nHost: x\r\n${Object.entries(headers)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('')}Content-Length: ${length}\r\n\r\n`;
    /** Sends `length` bytes of spaces after `head`, for as long as the server reads them. */
    const flood = async (head: string) => {
      const chunk = Buffer.alloc(256 * 1024, 0x20);
      let written = () => 0;
      const reply = await rawRequest(port(), head, chunk, {
        more: (socket) => (written = keepWriting(socket, chunk, TEN_MB)),
      });
      return { reply, written: written() };
    };

    it("no credentials and a malformed body on a host route: 401 in keyhook's envelope, not the parser's 400", async () => {
      const reply = await rawRequest(
        port(),
        post('/host/items', { 'content-type': 'application/json' }, 1),
        '{',
        { closeWithinMs: 50 },
      );
      expect(reply.status).toBe(401);
      expect(JSON.parse(reply.body).error.code).toBe('missing_credentials');
      expect(reply.headers['x-request-id']).toMatch(/^req_/);
    });

    it('a wrong key and a 10 MB body: 401 before the body is read, and the connection closed, not drained', async () => {
      const { reply, written } = await flood(
        post(
          '/host/items',
          { 'content-type': 'application/json', authorization: 'Bearer sk_live_nope' },
          TEN_MB,
        ),
      );
      expect(reply.status).toBe(401);
      expect(reply.headers['connection']).toBe('close');
      expect(reply.closed).toBe(true);
      // The server stopped reading long before the 10 MB the client announced.
      expect(written).toBeLessThan(TEN_MB);
    });

    it('a valid key still gets its body parsed, on a connection kept alive', async () => {
      const { secret } = await createKey(ctx, { scopes: ['items:write'] });
      const body = JSON.stringify({ a: 1 });
      const reply = await rawRequest(
        port(),
        post(
          '/host/items',
          { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
          body.length,
        ),
        body,
        { closeWithinMs: 200 },
      );
      expect(reply.status).toBe(200);
      expect(JSON.parse(reply.body).body).toEqual({ a: 1 });
      expect(reply.closed).toBe(false);
    });

    it("keyhook's admin routes: no session and a malformed body is 401; a 10 MB body is refused unread", async () => {
      const malformed = await rawRequest(
        port(),
        post('/admin/keys', { 'content-type': 'application/json' }, 1),
        '{',
        { closeWithinMs: 50 },
      );
      expect(malformed.status).toBe(401);
      expect(JSON.parse(malformed.body).error.code).toBe('invalid_admin_session');
      const { reply, written } = await flood(
        post('/admin/keys', { 'content-type': 'application/json' }, TEN_MB),
      );
      expect(reply.status).toBe(401);
      expect(reply.headers['connection']).toBe('close');
      expect(reply.closed).toBe(true);
      expect(written).toBeLessThan(TEN_MB);
    });

    // docs/decisions.md §1.5: the connection lingers after such an answer; closed at once, with
    // the body unread, it is reset, and the client's next write fails before it reads a byte.
    it('a client that sends all of an 11 MiB body before it reads: it reads its 401, and past the limit its 413', async () => {
      const spaces = Buffer.alloc(ELEVEN_MIB, 0x20);
      const wrongKey = await rawRequest(
        port(),
        post(
          '/host/items',
          { 'content-type': 'application/json', authorization: 'Bearer sk_live_nope' },
          ELEVEN_MIB,
        ),
        spaces,
        { writeFirst: true },
      );
      expect(wrongKey.status).toBe(401);
      expect(wrongKey.closed).toBe(true);
      const session = {
        'content-type': 'application/json',
        authorization: `Bearer ${await adminToken({ now: ctx.clock.now() })}`,
      };
      const tooLarge = await rawRequest(port(), post('/admin/keys', session, ELEVEN_MIB), spaces, {
        writeFirst: true,
      });
      expect(tooLarge.status).toBe(413);
      expect(JSON.parse(tooLarge.body).error.code).toBe('payload_too_large');
      const chunked = post('/admin/keys', { ...session, 'transfer-encoding': 'chunked' }, 0).replace(
        'Content-Length: 0\r\n',
        '',
      );
      const body = Buffer.concat([
        Buffer.from(`${ELEVEN_MIB.toString(16)}\r\n`),
        spaces,
        Buffer.from('\r\n0\r\n\r\n'),
      ]);
      const tooLargeChunked = await rawRequest(port(), chunked, body, { writeFirst: true });
      expect(tooLargeChunked.status).toBe(413);
      expect(tooLargeChunked.closed).toBe(true);
    });

    it(`a client that never reads and never stops is cut off after LINGER_MAX_BYTES (${LINGER_MAX_BYTES / 1024 / 1024} MiB) more`, async () => {
      const socket = net.connect(port(), '127.0.0.1');
      const failed = new Promise<string | undefined>((resolve) =>
        socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code)),
      );
      socket.pause(); // it never reads, so it never sees the answer's end
      socket.write(post('/host/items', { authorization: 'Bearer sk_live_nope' }, 4 * LINGER_MAX_BYTES));
      socket.write(Buffer.alloc(4 * LINGER_MAX_BYTES, 0x20));
      // Reset once the server has dropped its fill, long before the client is done writing.
      expect(await failed).toMatch(/^(EPIPE|ECONNRESET)$/);
      socket.destroy();
    });
  });
}
