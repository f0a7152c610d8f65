import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { keyhookRouter, requireScope } from '@keyhook/adapter-express';
import { createKeyhook, MemoryStore, silentLogger } from '@keyhook/core';
import {
  adminToken,
  keepWriting,
  rawRequest,
  TEST_ADMIN_SECRET,
  TEST_CATALOG,
} from '@keyhook/testing/support';
import express from 'express';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const TEN_MB = 10 * 1024 * 1024;

const newKeyhook = () =>
  createKeyhook({
    ...TEST_CATALOG,
    store: new MemoryStore(),
    adminSession: { secret: TEST_ADMIN_SECRET },
    logger: silentLogger,
  });

/**
 * Refusals before the body run in the one HTTP suite (`@keyhook/testing/http-suite`,
 * refusals.ts) against both adapters; these are the Express-only parts: keyhook's own bounded
 * body reader on a chunked body, and a guard placed after a body parser says so.
 */
describe('Express: refusals before the body', () => {
  let server: Server;
  let port: number;
  let sockets: Socket[];

  beforeEach(async () => {
    const app = express();
    app.use(keyhookRouter(newKeyhook()));
    server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
    sockets = [];
    server.on('connection', (socket: Socket) => sockets.push(socket));
  });
  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const bytesRead = () => sockets.reduce((sum, socket) => sum + socket.bytesRead, 0);

  it('a chunked admin body past the limit: the server stops reading and closes', async () => {
    const head =
      'POST /api/v1/admin/keys HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
      `Authorization: Bearer ${await adminToken()}\r\nTransfer-Encoding: chunked\r\n\r\n`;
    const piece = Buffer.alloc(32 * 1024, 0x20);
    const chunk = Buffer.concat([
      Buffer.from(`${piece.length.toString(16)}\r\n`),
      piece,
      Buffer.from('\r\n'),
    ]);
    const reply = await rawRequest(port, head, Buffer.concat([chunk, chunk, chunk]), {
      more: (socket) => keepWriting(socket, chunk, TEN_MB),
    });
    expect(reply.status).toBe(413);
    expect(JSON.parse(reply.body).error.code).toBe('payload_too_large');
    expect(reply.closed).toBe(true);
    // It lingers (docs/decisions.md §1.5), reading only what the client sends before it reads the
    // answer's end: never the whole body.
    expect(bytesRead()).toBeLessThan(TEN_MB);
  });

  it('behind an app-wide body parser it still guards, and warns once that it must come first', async () => {
    const keyhook = newKeyhook();
    const app = express();
    app.use(express.json());
    app.post('/late', requireScope(keyhook, 'items:write'), (_req, res) => void res.json({ ok: true }));
    const late = app.listen(0, '127.0.0.1');
    await once(late, 'listening');
    const url = `http://127.0.0.1:${(late.address() as AddressInfo).port}/late`;
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      for (let i = 0; i < 2; i++) {
        const reply = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"a":1}',
        });
        expect(reply.status).toBe(401);
      }
      await new Promise((resolve) => setImmediate(resolve));
      const ours = warnings.filter((w) => (w as { code?: string }).code === 'KEYHOOK_GUARD_AFTER_BODY');
      expect(ours).toHaveLength(1);
    } finally {
      process.off('warning', onWarning);
      late.closeAllConnections();
      await new Promise((resolve) => late.close(resolve));
    }
  });
});
