import type { AddressInfo, Socket } from 'node:net';
import type { RawReply } from '@keyhook/testing/support';
import { afterAll, beforeAll, beforeEach, expect } from 'vitest';
import { type Backend, startDataPlane } from './data-plane.js';

/**
 * The reference server as the hostile suites attack it: short timeouts, so a stalled request is
 * closed in a test's time (idle stays longer than both), no worker, and the bytes its sockets read
 * since each test began. Registers its own hooks; call it inside the suite's `describe`.
 */
export function hostileServer(backend: Backend) {
  const state = {
    plane: undefined as Awaited<ReturnType<typeof startDataPlane>> | undefined,
    port: 0,
    sockets: [] as Socket[],
  };
  beforeAll(async () => {
    if (!backend.available) return;
    state.plane = await startDataPlane(backend, {
      worker: false,
      env: {
        KEYHOOK_HEADERS_TIMEOUT: '300ms',
        KEYHOOK_REQUEST_TIMEOUT: '600ms',
        KEYHOOK_IDLE_TIMEOUT: '10s',
      },
    });
    const { app } = state.plane.running.server;
    state.port = (app.server.address() as AddressInfo).port;
    app.server.on('connection', (socket: Socket) => state.sockets.push(socket));
  });
  afterAll(async () => {
    await state.plane?.close();
  });
  beforeEach(() => {
    state.sockets = [];
  });
  return {
    get plane() {
      return state.plane!;
    },
    get port() {
      return state.port;
    },
    bytesRead: () => state.sockets.reduce((sum, socket) => sum + socket.bytesRead, 0),
  };
}

/** One raw HTTP/1.1 request's head, `Host: x`, with `preamble` header lines first. */
export function requestHead(
  method: string,
  path: string,
  headers: Record<string, string | number> = {},
  preamble = '',
): string {
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `${method} ${path} HTTP/1.1\r\nHost: x\r\n${preamble}${lines.join('')}\r\n`;
}

/** keyhook's envelope, a request id, and nothing of the request echoed: no path, none of `secrets`. */
export function expectEnvelope(
  reply: RawReply,
  status: number,
  code: string,
  secrets: readonly string[] = [],
) {
  expect(reply.status, reply.body).toBe(status);
  expect(reply.headers['content-type']).toMatch(/^application\/json/);
  expect(reply.headers['x-request-id']).toMatch(/^req_/);
  const body = JSON.parse(reply.body);
  expect(Object.keys(body)).toEqual(['error']);
  expect(body.error.code).toBe(code);
  expect(typeof body.error.message).toBe('string');
  expect(reply.body).not.toContain('/api');
  expect(reply.body).not.toContain('zz');
  for (const secret of secrets) expect(reply.body).not.toContain(secret);
}
