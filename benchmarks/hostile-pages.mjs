// node benchmarks/hostile-pages.mjs: how much memory do large list answers cost the server, when
// clients read them and when they do not (issue 33, point 1)?
//
// The reference server (examples/reference-server/dist/main.js, built first: `npx turbo run
// build --filter=@keyhook/reference-server...`; BENCH_SERVER_DIR names another build's
// directory, for a before/after) runs in a child process on SQLite (a fresh file) and on
// Postgres (a fresh schema, dropped at the end; skipped when no server answers at BENCH_PG_URL),
// with its default list byte budget (1 MiB) unless BENCH_LIST_BYTE_BUDGET says. A source holds
// BENCH_ITEMS (120) items of 1 MiB each (the largest an item may be), written by one server
// process; a fresh one on the same database is measured. Then, one after the other:
//   read      BENCH_READERS (10) clients at once GET /sources/:id/items?limit=100 and read their
//             answers: the answer's size and items.
//   unread    BENCH_CLIENTS (20) connections each send BENCH_PIPELINE (3) pipelined GETs of
//             ?limit=100 pages (the first three pages' cursors) in one write and never read a
//             byte; they are held open BENCH_HOLD_MS (4000), then closed.
// During each phase the server's RSS is sampled every 20 ms from /proc/<pid>/status, and a client
// of its own polls GET /healthz (one request every 10 ms after the previous answer).
// Reported per store and phase: the server's RSS before and at its peak, the /healthz latency
// (worst and p99) and its answers other than 200, and for the read phase the answer's bytes and items. Target: the peak RSS
// under 300 MB with 20 non-reading clients, and /healthz answering 200 meanwhile.
//
// Environment: BENCH_ITEMS (120), BENCH_READERS (10), BENCH_CLIENTS (20), BENCH_PIPELINE (3),
// BENCH_HOLD_MS (4000), BENCH_STORES (sqlite,postgres), BENCH_PG_URL
// (postgres://postgres@127.0.0.1:5432/test), BENCH_LIST_BYTE_BUDGET (unset: the server's
// default), BENCH_SERVER_DIR (examples/reference-server).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAdminToken } from '@keyhook/core';
import { pgAdmin, pgReachable, request, startServer } from './reference-server-child.mjs';

const ITEMS = Number(process.env.BENCH_ITEMS ?? 120);
const READERS = Number(process.env.BENCH_READERS ?? 10);
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 20);
const PIPELINE = Number(process.env.BENCH_PIPELINE ?? 3);
const HOLD_MS = Number(process.env.BENCH_HOLD_MS ?? 4000);
const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',').map((s) => s.trim());
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const BUDGET = process.env.BENCH_LIST_BYTE_BUDGET;
const SERVER_DIR = process.env.BENCH_SERVER_DIR
  ? path.resolve(process.env.BENCH_SERVER_DIR)
  : fileURLToPath(new URL('../examples/reference-server', import.meta.url));
const TARGET_MB = 300;
const ITEM_BYTES = 1024 * 1024;
const SECRET = 'hostile-pages-bench-admin-secret-0123456789';
const ENCRYPTION_KEY = Buffer.alloc(32, 9).toString('base64');
const SCOPES = ['sources:read', 'sources:write', 'items:read', 'items:write'];
const serverOptions = (env) => ({
  script: path.join(SERVER_DIR, 'dist/main.js'),
  secret: SECRET,
  env: { ...(BUDGET && { KEYHOOK_LIST_BYTE_BUDGET: BUDGET }), ...env },
});

/** The process's resident set, in MB, as the kernel counts it. */
function rssMb(pid) {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

/** Samples the server's RSS every 20 ms and polls /healthz (every 10 ms after each answer) until stopped. */
function watch(server) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const rss = [];
  const health = [];
  const sampler = setInterval(() => rss.push(rssMb(server.pid)), 20);
  let stopped = false;
  let failed = 0;
  const polling = (async () => {
    while (!stopped) {
      const started = performance.now();
      const reply = await request(agent, server.url, 'GET', '/healthz');
      health.push(performance.now() - started);
      if (reply.status !== 200) failed++;
      await sleep(10);
    }
    agent.destroy();
  })();
  return async () => {
    stopped = true;
    clearInterval(sampler);
    await polling;
    const sorted = [...health].sort((a, b) => a - b);
    return {
      peakMb: Math.max(...rss),
      healthWorst: sorted.at(-1),
      healthP99: sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))],
      polls: sorted.length,
      failed,
    };
  };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Connections that send their pipelined GETs in one write and never read the answers. */
async function unreadClients(server, paths, key) {
  const sockets = [];
  const requests = paths
    .map(
      (p) =>
        `GET ${p} HTTP/1.1\r\nhost: ${server.url.host}\r\nauthorization: Bearer ${key}\r\nconnection: keep-alive\r\n\r\n`,
    )
    .join('');
  for (let i = 0; i < CLIENTS; i++) {
    const socket = net.connect(Number(server.url.port), server.url.hostname);
    socket.on('error', () => {});
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.pause(); // not one byte read: the kernel's buffers fill, then the server's
    socket.write(requests);
    sockets.push(socket);
  }
  return sockets;
}

async function benchStore(store) {
  let env;
  let cleanup;
  if (store === 'sqlite') {
    const dir = mkdtempSync(path.join(tmpdir(), 'keyhook-pages-'));
    env = { KEYHOOK_SQLITE_PATH: path.join(dir, 'keyhook.db') };
    cleanup = async () => rmSync(dir, { recursive: true, force: true });
  } else {
    const schema = `bench_pages_${Math.random().toString(36).slice(2, 10)}`;
    env = { DATABASE_URL: PG_URL, KEYHOOK_PG_SCHEMA: schema, KEYHOOK_ENCRYPTION_KEY: ENCRYPTION_KEY };
    cleanup = () => pgAdmin(PG_URL, `DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  }
  let server = await startServer(serverOptions(env));
  const agent = new http.Agent({ keepAlive: true, maxSockets: READERS });
  try {
    const admin = await createAdminToken({ secret: SECRET, tenantId: 'bench', subject: 'bench' });
    const created = await request(agent, server.url, 'POST', '/api/v1/admin/keys', {
      token: admin,
      body: { name: 'pages bench', scopes: SCOPES },
    });
    if (created.status !== 201) throw new Error(`key: ${created.status} ${JSON.stringify(created.body)}`);
    const key = created.body.secret;
    const api = (method, pathname, body) =>
      request(agent, server.url, method, `/api/v1${pathname}`, { token: key, body });
    const sourceId = (await api('POST', '/sources', { name: 'large items' })).body.source.id;
    for (let n = 0; n < ITEMS; n++) {
      const itemKey = `item-${String(n).padStart(4, '0')}`;
      const content = `${itemKey} `.padEnd(ITEM_BYTES, 'x');
      const put = await api('PUT', `/sources/${sourceId}/items/${itemKey}`, { content });
      if (put.status !== 201) throw new Error(`put: ${put.status} ${JSON.stringify(put.body).slice(0, 300)}`);
    }
    // A fresh process on the same database: what the upload left on the heap is not counted.
    await server.stop();
    server = await startServer(serverOptions(env));
    // The first pages' paths, as a reading client walks them.
    const pagePaths = [];
    let cursor = null;
    while (pagePaths.length < PIPELINE) {
      const pagePath = `/api/v1/sources/${sourceId}/items?limit=100${cursor ? `&cursor=${cursor}` : ''}`;
      pagePaths.push(pagePath);
      const reply = await request(agent, server.url, 'GET', pagePath, { token: key });
      cursor = reply.body.nextCursor;
      if (cursor === null) break;
    }
    await sleep(500);
    const idleMb = rssMb(server.pid);

    const readWatch = watch(server);
    const answers = await Promise.all(
      Array.from({ length: READERS }, () =>
        request(agent, server.url, 'GET', `/api/v1/sources/${sourceId}/items?limit=100`, { token: key }),
      ),
    );
    if (answers.some((a) => a.status !== 200)) throw new Error(`read: ${answers.map((a) => a.status)}`);
    const read = {
      ...(await readWatch()),
      idleMb,
      answerBytes: answers[0].bytes,
      items: answers[0].body.data.length,
    };
    agent.destroy();
    await sleep(1000);

    const beforeUnreadMb = rssMb(server.pid);
    const unreadWatch = watch(server);
    const paths = Array.from({ length: PIPELINE }, (_, i) => pagePaths[i % pagePaths.length]);
    const sockets = await unreadClients(server, paths, key);
    await sleep(HOLD_MS);
    const unread = { ...(await unreadWatch()), idleMb: beforeUnreadMb };
    for (const socket of sockets) socket.destroy();
    return { read, unread };
  } finally {
    await server.stop();
    await cleanup();
  }
}

console.log(
  `keyhook hostile-pages benchmark — Node ${process.version}; ${ITEMS} items of 1 MiB; list byte budget ${BUDGET ?? 'the default'}; server ${path.relative(process.cwd(), SERVER_DIR) || '.'}`,
);
const results = {};
for (const store of STORES) {
  if (store === 'postgres' && !(await pgReachable(PG_URL))) {
    console.log(`postgres: skipped, nothing answers at ${PG_URL}`);
    continue;
  }
  results[store] = await benchStore(store);
}

const mb = (value) => `${value.toFixed(0)} MB`;
const ms = (value) => `${value.toFixed(1)} ms`;
console.log(
  '\nstore     phase                                   RSS before  RSS peak   /healthz worst  p99        polls  answer',
);
const verdicts = [];
for (const [store, { read, unread }] of Object.entries(results)) {
  console.log(
    `${store.padEnd(9)} ${`read: ${READERS} clients, ?limit=100`.padEnd(39)} ${mb(read.idleMb).padEnd(11)} ${mb(read.peakMb).padEnd(10)} ${ms(read.healthWorst).padEnd(15)} ${ms(read.healthP99).padEnd(10)} ${`${read.polls} (${read.failed})`.padEnd(16)} ${(read.answerBytes / 1024 / 1024).toFixed(2)} MiB, ${read.items} items`,
  );
  const met = unread.peakMb < TARGET_MB && unread.polls > 0 && unread.failed === 0;
  verdicts.push({ store, peakMb: Math.round(unread.peakMb), met });
  console.log(
    `${store.padEnd(9)} ${`unread: ${CLIENTS} × ${PIPELINE} pipelined, ${HOLD_MS / 1000} s`.padEnd(39)} ${mb(unread.idleMb).padEnd(11)} ${mb(unread.peakMb).padEnd(10)} ${ms(unread.healthWorst).padEnd(15)} ${ms(unread.healthP99).padEnd(10)} ${`${unread.polls} (${unread.failed})`.padEnd(16)} target peak < ${TARGET_MB} MB: ${met ? 'met' : 'NOT met'}`,
  );
}
console.log(
  `json ${JSON.stringify({ items: ITEMS, clients: CLIENTS, pipeline: PIPELINE, budget: BUDGET ?? null, results, verdicts })}`,
);
