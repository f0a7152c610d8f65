// node benchmarks/paced-endpoints.mjs: do several rate-limited endpoints side by side each keep
// their pace, on every store and instance count?
//
// Three endpoints limited to BENCH_PACED_RATES (1000, 100 and 20 per second), each subscribed to
// one event type, and a burst of BENCH_PACED_EVENTS (300) events published as fast as one caller
// can, each going to all three. The receiver (arrivals-receiver.mjs) records each arrival's
// time in a child process. Per store (SQLite; Postgres with one instance, and with two on one
// schema, each with its worker) and endpoint:
//   - the backlog's finish: its last arrival after the first publish, against the target
//     N / rate + 2 s;
//   - the busiest 1 s window at the receiver, against the bound rate + 1 (docs/decisions.md §8.18).
//
// Environment: BENCH_PACED_RATES (1000,100,20), BENCH_PACED_EVENTS (300),
// BENCH_PG_URL (postgres://postgres@127.0.0.1:5432/test; Postgres skipped when nothing answers).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createKeyhook, generateEncryptionKey, silentLogger } from '@keyhook/core';
import { createPostgresStore } from '@keyhook/store-postgres';
import { createSqliteStore } from '@keyhook/store-sqlite';
import pg from 'pg';
import { startArrivalsReceiver } from './arrivals-receiver.mjs';

const RATES = (process.env.BENCH_PACED_RATES ?? '1000,100,20').split(',').map(Number);
const EVENTS = Number(process.env.BENCH_PACED_EVENTS ?? 300);
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const TENANT = 'bench';

console.log(`keyhook paced-endpoints benchmark — Node ${process.version}`);
console.log(
  `${EVENTS} events at once, each to endpoints limited to ${RATES.join(', ')} per second; ` +
    'target: each backlog done within N / rate + 2 s of the first publish, at most rate + 1 in any 1 s window\n',
);

const receiver = await startArrivalsReceiver();

const encryptionKey = generateEncryptionKey();
const keyhookOn = (store) =>
  createKeyhook({
    eventCatalog: { 'run.completed': {} },
    store,
    adminSession: { secret: 'paced-endpoints-bench-admin-secret-0123456789' },
    encryptionKey,
    logger: silentLogger,
    mode: 'development',
  });

/** Arrivals at `route` once there are `count` of them, or what came by the deadline. */
async function arrived(route, count, deadline) {
  for (;;) {
    const times = await receiver.arrivals(route);
    if (times.length >= count || Date.now() > deadline) return times;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function busiest(times) {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let start = 0, end = 0; start < sorted.length; start++) {
    while (end < sorted.length && sorted[end] < sorted[start] + 1000) end++;
    most = Math.max(most, end - start);
  }
  return most;
}

/** One configuration: its keyhooks (one per instance), their workers, the burst, the figures. */
async function run(label, keyhooks) {
  const [keyhook] = keyhooks;
  const workers = keyhooks.map((k) => k.createWorker());
  for (const worker of workers) worker.start();
  const routes = [];
  for (const perSecond of RATES) {
    const route = `/${label.replace(/\W+/g, '-')}/${perSecond}`;
    routes.push(route);
    await keyhook.webhooks.create(TENANT, {
      url: receiver.url(route),
      events: ['run.completed'],
      deliveryRate: { perSecond },
    });
  }
  const started = Date.now();
  // At once, as a burst of requests would publish them.
  await Promise.all(
    Array.from({ length: EVENTS }, (_, n) =>
      keyhook.events.publish({ tenantId: TENANT, type: 'run.completed', data: { n } }),
    ),
  );
  const rows = [];
  for (const [i, perSecond] of RATES.entries()) {
    const targetMs = (EVENTS / perSecond) * 1000 + 2000;
    const times = await arrived(routes[i], EVENTS, started + targetMs * 3 + 30_000);
    const finishMs = times.length < EVENTS ? Number.POSITIVE_INFINITY : Math.max(...times) - started;
    const window = busiest(times);
    rows.push({
      store: label,
      perSecond,
      arrived: times.length,
      finishS: finishMs / 1000,
      targetS: targetMs / 1000,
      finish: finishMs <= targetMs ? 'met' : 'NOT met',
      busiest: window,
      bound: window <= perSecond + 1 ? 'met' : 'NOT met',
    });
  }
  await Promise.all(workers.map((worker) => worker.stop()));
  return rows;
}

const rows = [];
const dir = mkdtempSync(path.join(os.tmpdir(), 'keyhook-paced-'));
try {
  const store = createSqliteStore({ filename: path.join(dir, 'keyhook.db'), logger: silentLogger });
  const keyhook = keyhookOn(store);
  rows.push(...(await run('sqlite', [keyhook])));
  await keyhook.close();
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const admin = new pg.Client({ connectionString: PG_URL });
const reachable = await admin.connect().then(
  () => true,
  () => false,
);
if (!reachable) console.log(`postgres: skipped (no server at ${PG_URL})`);
for (const instances of reachable ? [1, 2] : []) {
  const schema = `keyhook_paced_${process.pid}_${instances}`;
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  const stores = [];
  for (let i = 0; i < instances; i++)
    stores.push(await createPostgresStore({ connectionString: PG_URL, schema, logger: silentLogger }));
  const keyhooks = stores.map(keyhookOn);
  try {
    rows.push(...(await run(`postgres × ${instances}`, keyhooks)));
  } finally {
    for (const k of keyhooks) await k.close();
    for (const s of stores) await s.close();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  }
}
if (reachable) await admin.end();
receiver.close();

console.log(
  '| store | limit /s | arrived | backlog done after, s | target, s | verdict | busiest 1 s | bound (rate + 1) |',
);
console.log('|---|---:|---:|---:|---:|---|---:|---|');
for (const r of rows)
  console.log(
    `| ${r.store} | ${r.perSecond} | ${r.arrived} | ${r.finishS.toFixed(1)} | ${r.targetS.toFixed(1)} | ${r.finish} | ${r.busiest} | ${r.bound} |`,
  );
