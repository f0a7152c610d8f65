// One server of the http-guard benchmark, run as a child process (child_process.fork), so the
// load generator and the server never share a CPU core's event loop.
//
//   node guard-server.mjs fastify|express [sqlite|memory]
//
// It serves the same route five times, all answering {"ok":true}: GET /open (no guard),
// GET /guarded (requireScope with sources:read; the key decides whether a rate limit is counted),
// GET /fields (the same, sending the RateLimit fields on success), GET /metered (the guard of a
// keyhook with OpenTelemetry metrics on, through a real SDK MeterProvider: telemetry.mjs) and
// GET /hook (an empty async guard, to tell the framework's hook cost from keyhook's). keyhook is
// mounted as an app would mount it, on a SQLite store in a temporary directory (or core's
// MemoryStore, to leave the read out). It tells the parent its port and an API key over IPC (one
// key without a rate limit, one with), answers {type:'cpu'} with its CPU time and {type:'metrics'}
// with the verifications /metered has counted (a scrape), answers {type:'mark'} by ending a phase
// of guard-instructions.mjs, and exits when the parent disconnects.
//
// Each keyhook runs in `mode: 'production'`, as a host's server does.
//
// BENCH_CHANGE_CHECK_MS sets the SQLite store's changeCheckIntervalMs (guard-instructions.mjs runs
// the server ~50× slower, under valgrind, and stretches it to match).
import { mkdtempSync, rmSync } from 'node:fs';
import { getPriority, tmpdir } from 'node:os';
import path from 'node:path';
import { createKeyhook, generateEncryptionKey, MemoryStore, silentLogger } from '@keyhook/core';
import { createSqliteStore } from '@keyhook/store-sqlite';
import { benchTelemetry } from './telemetry.mjs';

const [framework, storeKind = 'sqlite'] = process.argv.slice(2);
const dir = mkdtempSync(path.join(tmpdir(), 'keyhook-bench-'));
// `memory` isolates what the store lookup costs from what the rest of the guard costs.
const store =
  storeKind === 'memory'
    ? new MemoryStore()
    : createSqliteStore({
        filename: path.join(dir, 'keyhook.db'),
        logger: silentLogger,
        changeCheckIntervalMs:
          process.env.BENCH_CHANGE_CHECK_MS === undefined
            ? undefined
            : Number(process.env.BENCH_CHANGE_CHECK_MS),
      });
const keyhook = createKeyhook({
  scopes: ['sources:read'],
  store,
  adminSession: { secret: 'benchmark-admin-secret-0123456789abcdef' },
  // A persistent store needs one; it seals webhook secrets and plays no part in the guard.
  encryptionKey: generateEncryptionKey(),
  logger: silentLogger,
  mode: 'production',
  // Failed verifications limited per address, as the reference server runs: a valid key never meets it.
  rateLimit: { failedAuth: { limit: 100, window: 60 } },
});
const { secret: apiKey } = await keyhook.keys.create('bench', { name: 'bench', scopes: ['sources:read'] });
// A limit no run reaches: every request is counted and answered with its RateLimit fields.
const { secret: limitedKey } = await keyhook.keys.create('bench', {
  name: 'bench limited',
  scopes: ['sources:read'],
  rateLimit: { limit: 1_000_000_000, window: 60 },
});
// The same guard with the RateLimit fields on every success (`rateLimit.successHeaders`), for GET /fields.
const telling = createKeyhook({
  scopes: ['sources:read'],
  store,
  adminSession: { secret: 'benchmark-admin-secret-0123456789abcdef' },
  encryptionKey: generateEncryptionKey(),
  logger: silentLogger,
  mode: 'production',
  rateLimit: { failedAuth: { limit: 100, window: 60 }, successHeaders: true },
});
// The same guard with metrics on, for GET /metered. A keyhook of its own, so the other routes'
// keyhooks keep the no-op meter of an app without a provider.
const telemetry = benchTelemetry();
const metered = createKeyhook({
  scopes: ['sources:read'],
  store,
  adminSession: { secret: 'benchmark-admin-secret-0123456789abcdef' },
  encryptionKey: generateEncryptionKey(),
  logger: silentLogger,
  mode: 'production',
  rateLimit: { failedAuth: { limit: 100, window: 60 } },
  telemetry: telemetry.options,
});
const body = { ok: true };

const server = framework === 'fastify' ? await fastifyServer() : await expressServer();
const { port } = server.address();
process.send({ type: 'ready', port, apiKey, limitedKey, pid: process.pid });

process.on('message', async (message) => {
  if (message?.type === 'cpu') process.send({ type: 'cpu', usage: process.cpuUsage() });
  if (message?.type === 'mark') {
    // libuv's uv_os_getpriority, which nothing else calls: valgrind's --dump-before names it,
    // so each call closes one phase's instruction count.
    getPriority();
    process.send({ type: 'marked' });
  }
  if (message?.type === 'metrics')
    process.send({ type: 'metrics', verifications: await telemetry.counted('keyhook.auth.outcomes') });
});
process.on('disconnect', async () => {
  server.close();
  await keyhook.close();
  await telling.close();
  await metered.close();
  await telemetry.shutdown();
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
  app.get('/guarded', { onRequest: requireScope(keyhook, 'sources:read') }, async () => body);
  app.get('/fields', { onRequest: requireScope(telling, 'sources:read') }, async () => body);
  app.get('/metered', { onRequest: requireScope(metered, 'sources:read') }, async () => body);
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
  app.get('/fields', requireScope(telling, 'sources:read'), (_req, res) => res.json(body));
  app.get('/metered', requireScope(metered, 'sources:read'), (_req, res) => res.json(body));
  app.get(
    '/hook',
    async (_req, _res, next) => next(),
    (_req, res) => res.json(body),
  );
  return new Promise((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
}
