import { describe, expect, it } from 'vitest';
import { keepWriting, rawRequest } from '../support/raw-http.js';
import { createKey } from './client.js';
import type { SuiteContext } from './suite-context.js';

const TEN_MB = 10 * 1024 * 1024;

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
  });
}
