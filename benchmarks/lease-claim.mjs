// npx vite-node benchmarks/lease-claim.mjs: what a Postgres lease claim costs the database when no
// endpoint has a rate (docs/decisions.md §8.18, "a plain claim first, prepared").
//
// One fresh schema (dropped at the end; skipped when nothing answers at BENCH_PG_URL) holds
// BENCH_CLAIM_QUEUE (6,000) due deliveries of one endpoint without a rate. Three forms of the claim,
// each on its own connection, lease BENCH_CLAIM_LIMIT (8) of them, BENCH_CLAIM_CALLS (600) times a
// round, each inside BEGIN … ROLLBACK so every call meets the same queue:
//   - plain, prepared: the store's leaseUnlimited as it sends it, a named statement;
//   - plain, unnamed: the same text planned with its values on every call;
//   - pacing, as sent: the store's paced claim (lockPaced, then pace with what it locked), named
//     where the store names them; the store runs it after the plain claim when that met a limited
//     endpoint, and alone while it paces.
// The figure is the backend's CPU per call (utime + stime of its process in /proc, so Postgres must
// run on this machine), the BEGIN and ROLLBACK included. The order reverses every round; the verdict
// is the median of the per-round ratios to the prepared plain claim, with min–max, over
// BENCH_ROUNDS (6). The statement texts, and which are named, are the store's own (its operation
// module's `statements`, read from its sources, which is why this script runs under vite-node).
// Exits 0 always.

import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createKeyhook, generateEncryptionKey, silentLogger } from '@keyhook/core';
import { createPostgresStore } from '@keyhook/store-postgres';
import pg from 'pg';
import { statements } from '../packages/store-postgres/src/operations/lease-deliveries.ts';
import { tablesIn } from '../packages/store-postgres/src/statements.ts';

const numberFrom = (name, fallback) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value <= 0) throw new RangeError(`${name} must be a positive whole number`);
  return value;
};
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const QUEUE = numberFrom('BENCH_CLAIM_QUEUE', 6000);
const LIMIT = numberFrom('BENCH_CLAIM_LIMIT', 8);
const CALLS = numberFrom('BENCH_CLAIM_CALLS', 600);
const ROUNDS = numberFrom('BENCH_ROUNDS', 6);
const TENANT = 'tenant_bench';
const HOLD_STATUS = 'disabled';

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
/** CPU ticks (1/100 s) a process has used, from /proc/<pid>/stat. */
const cpuTicks = (pid) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return Number(fields[11]) + Number(fields[12]);
};

const admin = new pg.Client({ connectionString: PG_URL });
try {
  await admin.connect();
} catch (error) {
  console.log(`lease claim: skipped, no PostgreSQL at ${PG_URL} (${error.message})`);
  process.exit(0);
}
const schema = `bench_claim_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
const store = await createPostgresStore({ connectionString: PG_URL, schema, logger: silentLogger });
const clients = [];
try {
  const keyhook = createKeyhook({
    eventCatalog: { 'bench.event': {} },
    store,
    adminSession: { secret: 'x'.repeat(32) },
    mode: 'development',
    encryptionKey: generateEncryptionKey(),
    logger: silentLogger,
  });
  const { webhook } = await keyhook.webhooks.create(TENANT, {
    url: 'http://127.0.0.1:9/',
    events: ['bench.event'],
  });
  const q = (table) => `"${schema}".${table}`;
  await admin.query(
    `INSERT INTO ${q('keyhook_events')} (tenant_id, id, type, payload, created_at)
      SELECT $1, 'evt_' || g, 'bench.event', repeat('x', 1000), now() FROM generate_series(1, $2::int) AS g`,
    [TENANT, QUEUE],
  );
  await admin.query(
    `INSERT INTO ${q('keyhook_deliveries')}
      (id, tenant_id, webhook_id, event_id, event_type, status, attempts, due_at, created_at, updated_at)
      SELECT 'dlv_' || lpad(g::text, 8, '0'), $1, $2, 'evt_' || g, 'bench.event', 'pending', 0,
        now() - interval '1 minute', now(), now()
      FROM generate_series(1, $3::int) AS g`,
    [TENANT, webhook.id, QUEUE],
  );

  // The store's texts, and which of them it names (prepares).
  const named = new Map();
  const sql = statements(tablesIn(schema), (text) => {
    named.set(text, `bench_${named.size}`);
    return text;
  });
  const send = (client, text, values, name = named.get(text)) => client.query({ name, text, values });
  const values = () => [new Date(), LIMIT, randomUUID(), new Date(Date.now() + 60_000), HOLD_STATUS];
  const plain = (client, name) => async () => (await send(client, sql.leaseUnlimited, values(), name)).rows;
  // The paced claim's statements with no limited endpoint: what lockPaced locked, pace leases.
  const pacing = (client) => async () => {
    const [now, limit, leaseId, leaseEnds, hold] = values();
    const locked = await send(client, sql.lockPaced, [now, limit, hold, 1000]);
    const ids = locked.rows.map((row) => row.id);
    return (await send(client, sql.pace, [now, leaseId, leaseEnds, ids, [], [], [], [], []])).rows;
  };
  const forms = [
    { name: 'plain, prepared', claim: (client) => plain(client) },
    { name: 'plain, unnamed', claim: (client) => plain(client, null) },
    { name: 'pacing, as sent', claim: pacing },
  ];
  for (const form of forms) {
    form.client = new pg.Client({ connectionString: PG_URL });
    clients.push(form.client);
    await form.client.connect();
    form.run = form.claim(form.client);
    form.pid = (await form.client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    form.perCall = [];
  }
  const claim = async (form) => {
    await form.client.query('BEGIN');
    const rows = await form.run();
    await form.client.query('ROLLBACK');
    const leased = rows.filter((row) => row.id !== null).length;
    if (leased !== LIMIT) throw new Error(`${form.name} leased ${leased}, not ${LIMIT}`);
  };
  for (const form of forms) for (let i = 0; i < 20; i++) await claim(form); // warm-up: plans cached
  for (let round = 0; round < ROUNDS; round++) {
    for (const form of round % 2 ? [...forms].reverse() : forms) {
      const before = cpuTicks(form.pid);
      for (let i = 0; i < CALLS; i++) await claim(form);
      form.perCall.push(((cpuTicks(form.pid) - before) * 10_000) / CALLS);
    }
  }

  const [prepared] = forms;
  console.log(
    `\nLease claim on Postgres: backend CPU per call (BEGIN, claim of ${LIMIT} from ${QUEUE} due, ROLLBACK)`,
  );
  console.log(
    `${ROUNDS} rounds of ${CALLS} calls, the order reversing every round; ratios to the prepared plain claim\n`,
  );
  console.log('| claim | µs per call (median) | ratio (min–max) |');
  console.log('|---|---:|---:|');
  for (const form of forms) {
    const ratios = form.perCall.map((value, round) => value / prepared.perCall[round]);
    const ratio =
      form === prepared
        ? '1'
        : `${median(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`;
    console.log(`| ${form.name} | ${median(form.perCall).toFixed(0)} | ${ratio} |`);
  }
} finally {
  for (const client of clients) await client.end().catch(() => {});
  await store.close();
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
  await admin.end();
}
