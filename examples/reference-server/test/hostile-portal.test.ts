import { keepWriting, type RawReply, rawRequest } from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';
import { PORTAL_PATH } from '../src/server.js';
import { type Backend, backends } from './data-plane.js';
import { expectEnvelope as expectEnvelopeOf, hostileServer, requestHead } from './hostile-server.js';

const TEN_MB = 10 * 1024 * 1024;
const LINK = `kpl_${'z'.repeat(43)}`;

/**
 * The customer portal's paths hold to the rules of hostile-http.test.ts: every refusal is keyhook's
 * envelope with an x-request-id that echoes neither the path nor a token, a refused body is not
 * read, and a stalled one is closed by the configured timeout.
 */
describe.each(backends)("hostile HTTP on the portal's paths, on $name", (backend: Backend) => {
  const server = hostileServer(backend);
  /** A request as the portal's page would send it: from its own origin (`Host: x`). */
  const request = (method: string, path: string, headers: Record<string, string | number> = {}) =>
    requestHead(method, `${PORTAL_PATH}${path}`, headers, 'Origin: http://x\r\n');
  const bytesRead = server.bytesRead;
  const json = (length: number) => ({ 'content-type': 'application/json', 'content-length': length });
  const expectEnvelope = (reply: RawReply, status: number, code: string) =>
    expectEnvelopeOf(reply, status, code);

  it.skipIf(!backend.available)('an unknown page or asset: 404 in the envelope, not echoed', async () => {
    for (const path of ['/nozz', '/assets/zz.js', '/assets/..%2f..%2fpackage.json', '/api/nozz']) {
      const reply = await rawRequest(server.port, request('GET', path), '', { closeWithinMs: 50 });
      expectEnvelope(reply, 404, 'not_found');
    }
  });

  it.skipIf(!backend.available)('a bad percent-encoding in an asset name: 400, not echoed', async () => {
    const reply = await rawRequest(server.port, request('GET', '/assets/%zz'));
    expectEnvelope(reply, 400, 'validation_failed');
  });

  it.skipIf(!backend.available)('the exchange from another origin: 403, the link left unused', async () => {
    const body = JSON.stringify({ token: LINK });
    const reply = await rawRequest(
      server.port,
      request('POST', '/api/exchange', { ...json(body.length), 'sec-fetch-site': 'cross-site' }).replace(
        'Origin: http://x',
        'Origin: https://evil.example',
      ),
      body,
      { closeWithinMs: 50 },
    );
    expectEnvelope(reply, 403, 'forbidden');
    expect(reply.body).not.toContain(LINK);
  });

  it.skipIf(!backend.available)('the exchange with a malformed body: 400 invalid_json', async () => {
    const reply = await rawRequest(server.port, request('POST', '/api/exchange', json(1)), '{', {
      closeWithinMs: 50,
    });
    expectEnvelope(reply, 400, 'invalid_json');
  });

  it.skipIf(!backend.available)(
    'the exchange with an unknown link: 401 invalid_portal_link, the link not echoed',
    async () => {
      const body = JSON.stringify({ token: LINK });
      const reply = await rawRequest(server.port, request('POST', '/api/exchange', json(body.length)), body, {
        closeWithinMs: 50,
      });
      expectEnvelope(reply, 401, 'invalid_portal_link');
      expect(reply.body).not.toContain(LINK);
    },
  );

  for (const [name, path, status, code] of [
    ['the exchange', '/api/exchange', 413, 'payload_too_large'],
    ['the portal API without a session', '/api/keys', 401, 'invalid_portal_session'],
  ] as const) {
    it.skipIf(!backend.available)(
      `${name} and a 10 MB body: ${status}, closed, the body not read`,
      async () => {
        const chunk = Buffer.alloc(256 * 1024, 0x20);
        const reply = await rawRequest(server.port, request('POST', path, json(TEN_MB)), chunk, {
          more: (socket) => keepWriting(socket, chunk, TEN_MB),
        });
        expectEnvelope(reply, status, code);
        expect(reply.headers['connection']).toBe('close');
        expect(reply.closed).toBe(true);
        // It lingers (data-plane.md §7.4), reading only what the client sends before it reads
        // the answer's end: never the whole body.
        expect(bytesRead()).toBeLessThan(TEN_MB);
      },
    );
  }

  it.skipIf(!backend.available)('a stalled body on the exchange: 408 request_timeout, closed', async () => {
    const reply = await rawRequest(server.port, request('POST', '/api/exchange', json(1000)), '{"token":');
    expectEnvelope(reply, 408, 'request_timeout');
    expect(reply.closed).toBe(true);
  });
});
