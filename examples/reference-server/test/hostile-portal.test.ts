import type { AddressInfo, Socket } from 'node:net';
import { keepWriting, type RawReply, rawRequest } from '@keyhook/testing/support';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PORTAL_PATH } from '../src/server.js';
import { type Backend, backends, startDataPlane } from './data-plane.js';

const TEN_MB = 10 * 1024 * 1024;
const LINK = `kpl_${'z'.repeat(43)}`;

/**
 * The customer portal's paths hold to the rules of hostile-http.test.ts: every refusal is keyhook's
 * envelope with an x-request-id that echoes neither the path nor a token, a refused body is not
 * read, and a stalled one is closed by the configured timeout.
 */
describe.each(backends)("hostile HTTP on the portal's paths, on $name", (backend: Backend) => {
  let plane: Awaited<ReturnType<typeof startDataPlane>>;
  let port: number;
  let sockets: Socket[] = [];

  beforeAll(async () => {
    if (!backend.available) return;
    plane = await startDataPlane(backend, {
      worker: false,
      env: {
        KEYHOOK_HEADERS_TIMEOUT: '300ms',
        KEYHOOK_REQUEST_TIMEOUT: '600ms',
        KEYHOOK_IDLE_TIMEOUT: '10s',
      },
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

  /** A request as the portal's page would send it: from its own origin (`Host: x`). */
  const request = (method: string, path: string, headers: Record<string, string | number> = {}) =>
    `${method} ${PORTAL_PATH}${path} HTTP/1.1\r\nHost: x\r\nOrigin: http://x\r\n${Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('')}\r\n`;
  const bytesRead = () => sockets.reduce((sum, socket) => sum + socket.bytesRead, 0);
  const json = (length: number) => ({ 'content-type': 'application/json', 'content-length': length });

  function expectEnvelope(reply: RawReply, status: number, code: string) {
    expect(reply.status, reply.body).toBe(status);
    expect(reply.headers['content-type']).toMatch(/^application\/json/);
    expect(reply.headers['x-request-id']).toMatch(/^req_/);
    const body = JSON.parse(reply.body);
    expect(Object.keys(body)).toEqual(['error']);
    expect(body.error.code).toBe(code);
    expect(reply.body).not.toContain('/api');
    expect(reply.body).not.toContain('zz');
  }

  it.skipIf(!backend.available)('an unknown page or asset: 404 in the envelope, not echoed', async () => {
    for (const path of ['/nozz', '/assets/zz.js', '/assets/..%2f..%2fpackage.json', '/api/nozz']) {
      const reply = await rawRequest(port, request('GET', path), '', { closeWithinMs: 50 });
      expectEnvelope(reply, 404, 'not_found');
    }
  });

  it.skipIf(!backend.available)('a bad percent-encoding in an asset name: 400, not echoed', async () => {
    const reply = await rawRequest(port, request('GET', '/assets/%zz'));
    expectEnvelope(reply, 400, 'validation_failed');
  });

  it.skipIf(!backend.available)('the exchange from another origin: 403, the link left unused', async () => {
    const body = JSON.stringify({ token: LINK });
    const reply = await rawRequest(
      port,
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
    const reply = await rawRequest(port, request('POST', '/api/exchange', json(1)), '{', {
      closeWithinMs: 50,
    });
    expectEnvelope(reply, 400, 'invalid_json');
  });

  it.skipIf(!backend.available)(
    'the exchange with an unknown link: 401 invalid_portal_link, the link not echoed',
    async () => {
      const body = JSON.stringify({ token: LINK });
      const reply = await rawRequest(port, request('POST', '/api/exchange', json(body.length)), body, {
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
        const reply = await rawRequest(port, request('POST', path, json(TEN_MB)), chunk, {
          more: (socket) => keepWriting(socket, chunk, TEN_MB),
        });
        expectEnvelope(reply, status, code);
        expect(reply.headers['connection']).toBe('close');
        expect(reply.closed).toBe(true);
        expect(bytesRead()).toBeLessThan(TEN_MB / 4);
      },
    );
  }

  it.skipIf(!backend.available)('a stalled body on the exchange: 408 request_timeout, closed', async () => {
    const reply = await rawRequest(port, request('POST', '/api/exchange', json(1000)), '{"token":');
    expectEnvelope(reply, 408, 'request_timeout');
    expect(reply.closed).toBe(true);
  });
});
