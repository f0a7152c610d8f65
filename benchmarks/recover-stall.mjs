// node benchmarks/recover-stall.mjs: does bulk recovery block the event loop?
//
// For each store (SQLite in a fresh file; Postgres in a fresh schema, dropped at the end, when a
// server answers at BENCH_PG_URL), a keyhook without a worker holds one webhook with
// BENCH_DELIVERIES (100 000) failed deliveries, written straight into the store's tables. Then
// `keyhook.deliveries.recover()` queues them all again, while a 1 ms interval timer in this
// process records how late each of its ticks fires: the longest lateness is the longest time
// the event loop was blocked. Between rounds the deliveries are set back to failed.
// Reported per store: deliveries queued, how long the recovery took, and the longest block, as
// the median over BENCH_ROUNDS rounds (3) with min–max. Target: the longest block ≤ 50 ms in
// every round.
//
// Environment: BENCH_DELIVERIES (100000), BENCH_ROUNDS (3), BENCH_STORES (sqlite,postgres),
// BENCH_PG_URL (postgres://postgres@127.0.0.1:5432/test).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createKeyhook, generateEncryptionKey, silentLogger } from '@keyhook/core';
import { createPostgresStore } from '@keyhook/store-postgres';
import { createSqliteStore } from '@keyhook/store-sqlite';
import Database from 'better-sqlite3';
import pg from 'pg';

const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',').map((s) => s.trim());
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const TARGET_MS = 50;
const TENANT = 'bench';

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** Runs `work` while a 1 ms interval measures how late its ticks fire; returns the result, ms and the worst lateness. */
async function measured(work) {
  let last = performance.now();
  let worst = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last - 1);
    last = now;
  }, 1);
  const started = performance.now();
  try {
    const result = await work();
    return {
      result,
      ms: performance.now() - started,
      worstMs: Math.max(worst, performance.now() - last - 1),
    };
  } finally {
    clearInterval(timer);
  }
}

async function keyhookOn(store) {
  const keyhook = createKeyhook({
    eventCatalog: { 'run.completed': {} },
    store,
    adminSession: { secret: 'recover-stall-bench-admin-secret-0123456789' },
    encryptionKey: generateEncryptionKey(),
    logger: silentLogger,
    mode: 'development',
  });
  const { webhook } = await keyhook.webhooks.create(TENANT, {
    url: 'http://127.0.0.1:9/hook',
    events: ['run.completed'],
  });
  return { keyhook, webhookId: webhook.id };
}

const stores = {
  async sqlite() {
    const dir = mkdtempSync(path.join(tmpdir(), 'keyhook-recover-'));
    const filename = path.join(dir, 'keyhook.db');
    const store = createSqliteStore({ filename, logger: silentLogger });
    const { keyhook, webhookId } = await keyhookOn(store);
    const db = new Database(filename);
    const t = Date.now() - 3_600_000;
    db.exec('BEGIN');
    db.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ? - 1)
       INSERT INTO keyhook_events (tenant_id, id, type, payload, created_at)
       SELECT ?, printf('evt_bench%07d', i), 'run.completed', '{"n":1}', ? + i FROM n`,
    ).run(DELIVERIES, TENANT, t);
    db.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ? - 1)
       INSERT INTO keyhook_deliveries (id, tenant_id, webhook_id, event_id, event_type, status, attempts,
         due_at, lease_id, held_since, last_attempt_at, created_at, updated_at)
       SELECT printf('dlv_bench%07d', i), ?, ?, printf('evt_bench%07d', i), 'run.completed', 'failed', 1,
         NULL, NULL, NULL, ? + i, ? + i, ? + i FROM n`,
    ).run(DELIVERIES, TENANT, webhookId, t, t, t);
    db.exec('COMMIT');
    const reset = db.prepare(
      `UPDATE keyhook_deliveries SET status = 'failed', due_at = NULL, held_since = NULL, lease_id = NULL
       WHERE webhook_id = ?`,
    );
    return {
      keyhook,
      webhookId,
      since: new Date(t - 1_000).toISOString(),
      reset: async () => reset.run(webhookId),
      close: async () => {
        db.close();
        await keyhook.close();
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },

  async postgres() {
    const admin = new pg.Client({ connectionString: PG_URL });
    try {
      await admin.connect();
    } catch {
      return null;
    }
    const schema = `keyhook_recover_${process.pid}`;
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    const store = await createPostgresStore({ connectionString: PG_URL, schema, logger: silentLogger });
    const { keyhook, webhookId } = await keyhookOn(store);
    const t = new Date(Date.now() - 3_600_000);
    await admin.query(`SET search_path TO "${schema}"`);
    await admin.query(
      `INSERT INTO keyhook_events (tenant_id, id, type, payload, created_at)
       SELECT $2, 'evt_bench' || lpad(i::text, 7, '0'), 'run.completed', '{"n":1}', $3::timestamptz + i * interval '1 ms'
       FROM generate_series(0, $1 - 1) AS i`,
      [DELIVERIES, TENANT, t],
    );
    await admin.query(
      `INSERT INTO keyhook_deliveries (id, tenant_id, webhook_id, event_id, event_type, status, attempts,
         due_at, lease_id, held_since, last_attempt_at, created_at, updated_at)
       SELECT 'dlv_bench' || lpad(i::text, 7, '0'), $2, $3, 'evt_bench' || lpad(i::text, 7, '0'), 'run.completed',
         'failed', 1, NULL, NULL, NULL, $4::timestamptz + i * interval '1 ms',
         $4::timestamptz + i * interval '1 ms', $4::timestamptz + i * interval '1 ms'
       FROM generate_series(0, $1 - 1) AS i`,
      [DELIVERIES, TENANT, webhookId, t],
    );
    await admin.query('ANALYZE keyhook_deliveries');
    return {
      keyhook,
      webhookId,
      since: new Date(t.getTime() - 1_000).toISOString(),
      reset: () =>
        admin.query(
          `UPDATE keyhook_deliveries SET status = 'failed', due_at = NULL, held_since = NULL, lease_id = NULL
           WHERE webhook_id = $1`,
          [webhookId],
        ),
      close: async () => {
        await keyhook.close();
        await store.close();
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await admin.end();
      },
    };
  },
};

console.log(`keyhook recover-stall benchmark — Node ${process.version}`);
console.log(
  `${DELIVERIES} failed deliveries of one webhook, ${ROUNDS} rounds per store; target: longest block ≤ ${TARGET_MS} ms\n`,
);
const verdicts = [];
for (const name of STORES) {
  const setup = await stores[name]?.();
  if (!setup) {
    console.log(`${name}: skipped (no server at ${PG_URL})`);
    continue;
  }
  const rounds = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      if (round > 0) await setup.reset();
      const { result, ms, worstMs } = await measured(() =>
        setup.keyhook.deliveries.recover(TENANT, setup.webhookId, { since: setup.since }),
      );
      if (result !== DELIVERIES) throw new Error(`${name}: recovered ${result} of ${DELIVERIES}`);
      rounds.push({ ms, worstMs });
      console.log(
        `${name} round ${round + 1}: ${result} queued in ${ms.toFixed(0)} ms, longest block ${worstMs.toFixed(1)} ms`,
      );
    }
  } finally {
    await setup.close();
  }
  const worst = rounds.map((r) => r.worstMs);
  const verdict =
    Math.max(...worst) <= TARGET_MS ? 'met' : Math.min(...worst) > TARGET_MS ? 'NOT met' : 'within noise';
  verdicts.push({ name, worst, ms: rounds.map((r) => r.ms), verdict });
  console.log(
    `${name}: longest block ${median(worst).toFixed(1)} ms (${Math.min(...worst).toFixed(1)}–${Math.max(...worst).toFixed(1)}), ` +
      `recovery ${median(rounds.map((r) => r.ms)).toFixed(0)} ms, target ≤ ${TARGET_MS} ms: ${verdict}\n`,
  );
}
console.log(`json ${JSON.stringify(verdicts)}`);
