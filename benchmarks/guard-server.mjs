// One server of the http-guard benchmark, run as a child process (child_process.fork), so the
// load generator and the server never share a CPU core's event loop.
//
//   node guard-server.mjs fastify|express [sqlite|memory]
//
// It serves the same route three times, all answering {"ok":true}: GET /open (no guard),
// GET /guarded (requireScope with sources:read) and GET /hook (an empty async guard, to tell
// the framework's hook cost from keyhook's). keyhook is mounted as an app would mount it, on
// a SQLite store in a temporary directory (or core's MemoryStore, to leave the read out). It tells the parent its port and an API key over
// IPC, answers {type:'cpu'} with its CPU time, and exits when the parent disconnects.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createKeyhook, generateEncryptionKey, MemoryStore, silentLogger } from '@keyhook/core';
import { createSqliteStore } from '@keyhook/store-sqlite';

const [framework, storeKind = 'sqlite'] = process.argv.slice(2);
const dir = mkdtempSync(path.join(tmpdir(), 'keyhook-bench-'));
// `memory` isolates what the store lookup costs from what the rest of the guard costs.
const store =
  storeKind === 'memory'
    ? new MemoryStore()
    : createSqliteStore({ filename: path.join(dir, 'keyhook.db'), logger: silentLogger });
const keyhook = createKeyhook({
  store,
  adminSession: { secret: 'benchmark-admin-secret-0123456789abcdef' },
  // A persistent store needs one; it seals webhook secrets and plays no part in the guard.
  encryptionKey: generateEncryptionKey(),
  logger: silentLogger,
});
const { secret: apiKey } = await keyhook.keys.create('bench', { name: 'bench', scopes: ['sources:read'] });
const body = { ok: true };

const server = framework === 'fastify' ? await fastifyServer() : await expressServer();
const { port } = server.address();
process.send({ type: 'ready', port, apiKey, pid: process.pid });

process.on('message', (message) => {
  if (message?.type === 'cpu') process.send({ type: 'cpu', usage: process.cpuUsage() });
});
process.on('disconnect', async () => {
  server.close();
  await keyhook.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
});

async function fastifyServer() {
  const { default: Fastify } = await import('fastify');
  const { keyhookFastify, requireScope } = await import('@keyhook/adapter-fastify');
  const app = Fastify({ logger: false });
  await app.register(keyhookFastify, { keyhook });
  app.get('/open', async () => body);
  app.get('/guarded', { preHandler: requireScope(keyhook, 'sources:read') }, async () => body);
  // An async preHandler that does nothing: what any guard costs before it does any work.
  app.get('/hook', { preHandler: async () => {} }, async () => body);
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app.server;
}

async function expressServer() {
  const { default: express } = await import('express');
  const { keyhookRouter, requireScope } = await import('@keyhook/adapter-express');
  const app = express();
  app.use(keyhookRouter(keyhook));
  app.get('/open', (_req, res) => res.json(body));
  app.get('/guarded', requireScope(keyhook, 'sources:read'), (_req, res) => res.json(body));
  app.get(
    '/hook',
    async (_req, _res, next) => next(),
    (_req, res) => res.json(body),
  );
  return new Promise((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
}
