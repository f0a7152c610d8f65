import { once } from 'node:events';
import net, { type AddressInfo } from 'node:net';
import { adminToken, keepWriting, type RawReply, rawRequest } from '@keyhook/testing/support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { type Backend, backends, startDataPlane } from './data-plane.js';
import { expectEnvelope as expectEnvelopeOf, hostileServer, requestHead } from './hostile-server.js';

const TEN_MB = 10 * 1024 * 1024;
const SECRET = 'kh_live_do-not-echo-me';

/**
 * Hostile traffic against the reference server, on each store: a caller is refused before its
 * body is read, a refused body is not drained, every refusal (Fastify's router's and Node's
 * parser's included) is keyhook's envelope with an x-request-id and never echoes the path or a
 * credential, and stalled requests are closed by the configured timeouts.
 */
describe.each(backends)('hostile HTTP on $name', (backend: Backend) => {
  const server = hostileServer(backend);
  const request = (method: string, path: string, headers: Record<string, string | number> = {}) =>
    requestHead(method, path, headers);
  const bytesRead = server.bytesRead;
  const expectEnvelope = (reply: RawReply, status: number, code: string) =>
    expectEnvelopeOf(reply, status, code, [SECRET]);

  describe('authentication before the body', () => {
    it.skipIf(!backend.available)(
      'no credentials and a malformed body: 401, not 400 invalid_json',
      async () => {
        const reply = await rawRequest(
          server.port,
          request('POST', '/api/v1/sources', { 'content-type': 'application/json', 'content-length': 1 }),
          '{',
        );
        expectEnvelope(reply, 401, 'missing_credentials');
      },
    );

    it.skipIf(!backend.available)(
      'a wrong key and a 10 MB body: 401 at once, the connection closed, the body not read',
      async () => {
        const chunk = Buffer.alloc(256 * 1024, 0x20);
        let written = () => 0;
        const reply = await rawRequest(
          server.port,
          request('PUT', '/api/v1/sources/src_x/items', {
            'content-type': 'application/json',
            authorization: `Bearer ${SECRET}`,
            'content-length': TEN_MB,
          }),
          chunk,
          { more: (socket) => (written = keepWriting(socket, chunk, TEN_MB)) },
        );
        expectEnvelope(reply, 401, 'invalid_api_key');
        expect(reply.headers['connection']).toBe('close');
        expect(reply.closed).toBe(true);
        // It lingers (data-plane.md §7.4), reading only what the client sends before it reads
        // the answer's end: never the whole body.
        expect(bytesRead()).toBeLessThan(TEN_MB);
        expect(written()).toBeLessThan(TEN_MB);
      },
    );

    it.skipIf(!backend.available)('no credentials and a compressed body: 401 before the 415', async () => {
      const reply = await rawRequest(
        server.port,
        request('POST', '/api/v1/sources', {
          'content-type': 'application/json',
          'content-encoding': 'gzip',
          'content-length': 1,
        }),
        '{',
      );
      expectEnvelope(reply, 401, 'missing_credentials');
    });

    it.skipIf(!backend.available)(
      'an admin route: no session and a 10 MB body is 401, closed, not read',
      async () => {
        const chunk = Buffer.alloc(256 * 1024, 0x20);
        const reply = await rawRequest(
          server.port,
          request('POST', '/api/v1/admin/keys', {
            'content-type': 'application/json',
            'content-length': TEN_MB,
          }),
          chunk,
          { more: (socket) => keepWriting(socket, chunk, TEN_MB) },
        );
        expectEnvelope(reply, 401, 'invalid_admin_session');
        expect(reply.closed).toBe(true);
        expect(bytesRead()).toBeLessThan(TEN_MB);
      },
    );

    it.skipIf(!backend.available)('an admin route: no session and a malformed body is 401', async () => {
      const reply = await rawRequest(
        server.port,
        request('POST', '/api/v1/admin/keys', { 'content-type': 'application/json', 'content-length': 1 }),
        '{',
        { closeWithinMs: 50 },
      );
      expectEnvelope(reply, 401, 'invalid_admin_session');
    });
  });

  describe('one error format', () => {
    it.skipIf(!backend.available)(
      'a bad percent-encoding in the path: 400, the path not echoed',
      async () => {
        const reply = await rawRequest(
          server.port,
          request('GET', '/api/v1/sources/%zz', { authorization: `Bearer ${SECRET}` }),
        );
        expectEnvelope(reply, 400, 'validation_failed');
      },
    );

    it.skipIf(!backend.available)(
      'a path parameter over the limit: 414 uri_too_long, not echoed',
      async () => {
        const reply = await rawRequest(
          server.port,
          request('GET', `/api/v1/sources/zz${'a'.repeat(400)}`, {
            authorization: `Bearer ${server.plane.key}`,
          }),
        );
        expectEnvelope(reply, 414, 'uri_too_long');
        expect(reply.body).not.toContain('aaaa');
      },
    );

    it.skipIf(!backend.available)('headers too large: 431 headers_too_large', async () => {
      const reply = await rawRequest(
        server.port,
        request('GET', '/api/v1/sources', { authorization: `Bearer ${SECRET}`, 'x-pad': 'p'.repeat(20_000) }),
      );
      expectEnvelope(reply, 431, 'headers_too_large');
      expect(reply.closed).toBe(true);
    });

    it.skipIf(!backend.available)('a control byte in a header: 400 in the envelope', async () => {
      const reply = await rawRequest(
        server.port,
        request('GET', '/api/v1/sources', { authorization: `Bearer ${SECRET}`, 'x-bad': 'a\u0001b' }),
      );
      expectEnvelope(reply, 400, 'validation_failed');
      expect(reply.closed).toBe(true);
    });

    it.skipIf(!backend.available)('Transfer-Encoding with Content-Length: 400 in the envelope', async () => {
      const reply = await rawRequest(
        server.port,
        request('POST', '/api/v1/sources', {
          authorization: `Bearer ${SECRET}`,
          'content-type': 'application/json',
          'content-length': 2,
          'transfer-encoding': 'chunked',
        }),
        '0\r\n\r\n',
      );
      expectEnvelope(reply, 400, 'validation_failed');
      expect(reply.closed).toBe(true);
    });

    it.skipIf(!backend.available)('an unknown path: 404 in the envelope, not echoed', async () => {
      const reply = await rawRequest(
        server.port,
        request('GET', '/api/v1/nozz', { authorization: `Bearer ${SECRET}` }),
        '',
        {
          closeWithinMs: 50,
        },
      );
      expectEnvelope(reply, 404, 'not_found');
    });
  });

  describe('timeouts', () => {
    it.skipIf(!backend.available)('headers that never end: 408 request_timeout, closed', async () => {
      const reply = await rawRequest(
        server.port,
        `GET /api/v1/sources HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${SECRET}\r\n`,
      );
      expectEnvelope(reply, 408, 'request_timeout');
      expect(reply.closed).toBe(true);
    });

    it.skipIf(!backend.available)(
      'a stalled body on an authenticated data-plane route: 408, closed',
      async () => {
        const reply = await rawRequest(
          server.port,
          request('POST', '/api/v1/sources', {
            authorization: `Bearer ${server.plane.key}`,
            'content-type': 'application/json',
            'content-length': 1000,
          }),
          '{"name":',
        );
        expectEnvelope(reply, 408, 'request_timeout');
        expect(reply.closed).toBe(true);
      },
    );

    it.skipIf(!backend.available)('a stalled body on an admin route: 408, closed', async () => {
      const reply = await rawRequest(
        server.port,
        request('POST', '/api/v1/admin/keys', {
          authorization: `Bearer ${await adminToken({ tenantId: 'acme' })}`,
          'content-type': 'application/json',
          'content-length': 1000,
        }),
        '{"name":',
      );
      expectEnvelope(reply, 408, 'request_timeout');
      expect(reply.closed).toBe(true);
    });
  });
});

/** The idle timeout alone (the request timeout far away) also closes a stalled body, without an answer. */
describe.each(backends)('idle timeout on $name', (backend: Backend) => {
  let plane: Awaited<ReturnType<typeof startDataPlane>>;
  let port: number;

  beforeAll(async () => {
    if (!backend.available) return;
    plane = await startDataPlane(backend, {
      worker: false,
      env: { KEYHOOK_HEADERS_TIMEOUT: '30s', KEYHOOK_REQUEST_TIMEOUT: '60s', KEYHOOK_IDLE_TIMEOUT: '400ms' },
    });
    port = (plane.running.server.app.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await plane?.close();
  });

  for (const [name, path, token] of [
    ['an authenticated data-plane route', '/api/v1/sources', () => plane.key],
    ['an admin route', '/api/v1/admin/keys', () => adminToken({ tenantId: 'acme' })],
  ] as const) {
    it.skipIf(!backend.available)(`a stalled body on ${name} is closed`, async () => {
      const socket = net.connect(port, '127.0.0.1');
      socket.on('error', () => {});
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${await token()}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"name":',
      );
      await once(socket, 'close');
    });
  }
});

describe('timeout configuration', () => {
  it('defaults, durations from the environment, and a headers timeout longer than the request’s refused', () => {
    const base = { KEYHOOK_ADMIN_JWT_SECRET: 'x'.repeat(32) };
    expect(loadConfig(base).timeouts).toEqual({ headersMs: 10_000, requestMs: 60_000, idleMs: 60_000 });
    expect(
      loadConfig({
        ...base,
        KEYHOOK_HEADERS_TIMEOUT: '2s',
        KEYHOOK_REQUEST_TIMEOUT: '90s',
        KEYHOOK_IDLE_TIMEOUT: '500ms',
      }).timeouts,
    ).toEqual({ headersMs: 2000, requestMs: 90_000, idleMs: 500 });
    expect(() => loadConfig({ ...base, KEYHOOK_HEADERS_TIMEOUT: '2m' })).toThrow(
      /KEYHOOK_HEADERS_TIMEOUT must not be longer than KEYHOOK_REQUEST_TIMEOUT/,
    );
    expect(() => loadConfig({ ...base, KEYHOOK_IDLE_TIMEOUT: 'soon' })).toThrow(
      /KEYHOOK_IDLE_TIMEOUT must be/,
    );
  });
});
