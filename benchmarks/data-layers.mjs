// node benchmarks/data-layers.mjs: what a publish costs inside each data layer's transaction.
//
// keyhook's `events.publish(input, { transaction })` on Postgres joins a transaction of pg,
// postgres.js, Drizzle (node-postgres and postgres-js drivers), Kysely, Knex, Prisma 7 (with
// @prisma/adapter-pg) or TypeORM. Each library is opened and its transaction begun as
// packages/store-postgres/test/data-layers/layers.ts does. Every transaction is a host's payment:
// one statement through the library's raw-SQL call, its own INSERT of an invoice, the publish,
// then COMMIT. One keyhook on a fresh schema with one webhook subscribed, so each publish writes
// its event and one delivery. No worker runs: nothing else uses the machine or the tables while
// publishes are timed (the deliveries stay pending, never sent). At the end, the invoices, events
// and deliveries are counted: one each per transaction.
//
// Per library, in each of BENCH_LAYERS_ROUNDS (else BENCH_ROUNDS, else 5) rounds, two runs side
// by side: the library, and raw pg (a pg.Pool client in `withTransaction`'s BEGIN … COMMIT, from
// @keyhook/store-postgres). Which of the two goes first alternates every round, and the
// libraries' order reverses. Each run sends BENCH_LAYERS_WARMUP (50) transactions untimed, then
// BENCH_LAYERS_PUBLISHES (400), one at a time, and times in each:
//   publish      the `await keyhook.events.publish(…)` alone (the judged figure);
//   statement    `SELECT $1::text` through the library's raw-SQL call (`tx.unsafe`, `trx.raw`,
//                `$queryRawUnsafe`, …), against pg's `client.query`: its own cost per statement;
//   write        the library's own INSERT (its query builder or model), against pg's;
//   transaction  the whole call, from opening the transaction to its COMMIT answered.
// Before the rounds, every layer sends BENCH_LAYERS_PREWARM (300) transactions: connections
// open, statements prepared, code compiled. "pg" in the list is the baseline against itself on
// a pool of its own: an A/A control of what one pair's ratio wanders by. "SqlExecutor (pg)" is
// pg behind store-postgres's exported SqlExecutor contract, the route of a data layer keyhook
// does not recognise: the cost of keyhook's generic path (unnamed statements, rows decoded)
// without any library's own. "SqlExecutor prepared (pg)", a diagnostic, is the same executor
// sending each statement prepared under a name, as keyhook's pg path does: the part of that
// cost that is the server parsing and planning the publish statement anew each time. The A/A
// control and the diagnostic are printed, not judged.
//
// Target: a publish inside each library's transaction costs at most 1.15 × the same publish on
// raw pg in the same round: the median of the per-round ratios of p50s, printed with their
// min–max (met; within noise when the min–max holds 1.15; not met). BENCH_LAYERS picks libraries
// by name (comma-separated, e.g. `kysely,prisma`). Prisma's client is generated offline on first
// use from packages/store-postgres/test/prisma/schema.prisma into os.tmpdir() (keyed by a hash of
// the schema and the versions) and its TypeScript transpiled there; a library that cannot be
// opened is skipped with the reason. A quick run: BENCH_LAYERS_ROUNDS=1 BENCH_LAYERS_PUBLISHES=50
// BENCH_LAYERS_WARMUP=10 BENCH_LAYERS_PREWARM=20. Needs the built packages and Postgres
// (BENCH_PG_URL, postgres://postgres@127.0.0.1:5432/test); skipped without it. Exits 0 always.
import { createHash, randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createKeyhook } from '@keyhook/core';
import { generatePrismaClient } from '../packages/store-postgres/test/prisma/generate.mjs';
import {
  ADMIN_SECRET,
  cleanups,
  countingLogger,
  dropSchema,
  ENCRYPTION_KEY,
  loadPg,
  median,
  numberFrom,
  PG_URL,
  percentile,
  postgresReachable,
  runCleanups,
} from './peers.mjs';

const ROUNDS = numberFrom('BENCH_LAYERS_ROUNDS', process.env.BENCH_ROUNDS ?? 5);
const PUBLISHES = numberFrom('BENCH_LAYERS_PUBLISHES', 400);
const WARMUP = numberFrom('BENCH_LAYERS_WARMUP', 50);
const PREWARM = numberFrom('BENCH_LAYERS_PREWARM', 300);
const ONLY = process.env.BENCH_LAYERS?.split(',').map((name) => name.trim().toLowerCase());
/** Every library's pool; one connection is in use at a time. */
const POOL = 4;
const TARGET = 1.15;
const TENANT = 'acme';
const EVENT_TYPE = 'invoice.paid';

// ---------------------------------------------------------------------------------------------
// Prisma: its client generated offline, by the data-layer tests' generate.mjs.

/** The generated client's entry, generating it into os.tmpdir() unless it is there already. */
const prismaClientEntry = () =>
  generatePrismaClient({
    into: path.join(os.tmpdir(), `keyhook-bench-prisma-${os.userInfo().uid}`),
    javascript: true,
  });
// ---------------------------------------------------------------------------------------------
// The layers: each opens its library on the database with its invoices in `schema`, and gives
// `transaction(work)` (work gets the library's transaction object), `statement(tx)` (one
// `SELECT $1::text` through its raw-SQL call) and `insertInvoice(tx, id)`.

const drizzleInvoices = async (schema) => {
  const { pgSchema, text } = await import('drizzle-orm/pg-core');
  return pgSchema(schema).table('invoices', {
    id: text('id').primaryKey(),
    status: text('status').notNull(),
  });
};

/** pg behind a SqlExecutor of its own, each statement sent as `config(text, values)` gives it. */
function executorLayer(name, config) {
  return {
    name,
    async open(schema) {
      const { pg, withTransaction } = await loadPg();
      const pool = new pg.Pool({ connectionString: PG_URL, max: POOL });
      const executorOf = (client) => ({
        executeSql: async (text, values) => (await client.query(config(text, values))).rows,
      });
      return {
        transaction: (work) => withTransaction(pool, (client) => work(executorOf(client))),
        statement: (tx) => tx.executeSql('SELECT $1::text AS probe', ['x']),
        insertInvoice: (tx, id) =>
          tx.executeSql(`INSERT INTO "${schema}".invoices (id, status) VALUES ($1, 'paid')`, [id]),
        close: () => pool.end(),
      };
    },
  };
}

const LAYERS = [
  {
    name: 'pg',
    control: 'A/A control',
    async open(schema) {
      const { pg, withTransaction } = await loadPg();
      const pool = new pg.Pool({ connectionString: PG_URL, max: POOL });
      return {
        transaction: (work) => withTransaction(pool, work),
        statement: (tx) => tx.query('SELECT $1::text AS probe', ['x']),
        insertInvoice: (tx, id) =>
          tx.query(`INSERT INTO "${schema}".invoices (id, status) VALUES ($1, 'paid')`, [id]),
        close: () => pool.end(),
      };
    },
  },
  executorLayer('SqlExecutor (pg)', (text, values) => ({ text, values })),
  {
    // Not a data layer: the executor above, each statement prepared under a name from its text,
    // as keyhook's own pg path sends them. What is left of its gap to raw pg is not parsing and planning.
    ...executorLayer('SqlExecutor prepared (pg)', (text, values) => ({
      name: `bench_${createHash('sha1').update(text).digest('hex').slice(0, 16)}`,
      text,
      values,
    })),
    control: 'diagnostic',
  },
  {
    name: 'postgres.js',
    async open(schema) {
      const { default: postgres } = await import('postgres');
      const sql = postgres(PG_URL, { max: POOL, onnotice: () => {} });
      return {
        transaction: (work) => sql.begin((tx) => work(tx)),
        statement: (tx) => tx.unsafe('SELECT $1::text AS probe', ['x']),
        insertInvoice: (t, id) => t`INSERT INTO ${t(schema)}.invoices ${t({ id, status: 'paid' })}`,
        close: () => sql.end(),
      };
    },
  },
  {
    name: 'drizzle (node-postgres)',
    async open(schema) {
      const { pg } = await loadPg();
      const { drizzle } = await import('drizzle-orm/node-postgres');
      const { sql } = await import('drizzle-orm');
      const pool = new pg.Pool({ connectionString: PG_URL, max: POOL });
      const db = drizzle({ client: pool });
      const invoices = await drizzleInvoices(schema);
      return {
        transaction: (work) => db.transaction((tx) => work(tx)),
        statement: (tx) => tx.execute(sql`SELECT ${'x'}::text AS probe`),
        insertInvoice: (tx, id) => tx.insert(invoices).values({ id, status: 'paid' }),
        close: () => pool.end(),
      };
    },
  },
  {
    name: 'drizzle (postgres-js)',
    async open(schema) {
      const { default: postgres } = await import('postgres');
      const { drizzle } = await import('drizzle-orm/postgres-js');
      const { sql } = await import('drizzle-orm');
      const db = drizzle({ client: postgres(PG_URL, { max: POOL, onnotice: () => {} }) });
      const invoices = await drizzleInvoices(schema);
      return {
        transaction: (work) => db.transaction((tx) => work(tx)),
        statement: (tx) => tx.execute(sql`SELECT ${'x'}::text AS probe`),
        insertInvoice: (tx, id) => tx.insert(invoices).values({ id, status: 'paid' }),
        close: () => db.$client.end(),
      };
    },
  },
  {
    name: 'kysely',
    async open(schema) {
      const { pg } = await loadPg();
      const { Kysely, PostgresDialect, sql } = await import('kysely');
      const db = new Kysely({
        dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: PG_URL, max: POOL }) }),
      });
      return {
        transaction: (work) => db.transaction().execute((trx) => work(trx)),
        statement: (trx) => sql`SELECT ${'x'}::text AS probe`.execute(trx),
        insertInvoice: (trx, id) =>
          trx.withSchema(schema).insertInto('invoices').values({ id, status: 'paid' }).execute(),
        close: () => db.destroy(),
      };
    },
  },
  {
    name: 'knex',
    async open(schema) {
      const { default: knex } = await import('knex');
      const db = knex({ client: 'pg', connection: PG_URL, pool: { min: 0, max: POOL } });
      return {
        transaction: (work) => db.transaction((trx) => work(trx)),
        statement: (trx) => trx.raw('SELECT ?::text AS probe', ['x']),
        insertInvoice: (trx, id) => trx.withSchema(schema).insert({ id, status: 'paid' }).into('invoices'),
        close: () => db.destroy(),
      };
    },
  },
  {
    name: 'typeorm',
    async open(schema) {
      const { DataSource } = await import('typeorm');
      const dataSource = new DataSource({ type: 'postgres', url: PG_URL, schema, poolSize: POOL });
      await dataSource.initialize();
      return {
        transaction: (work) => dataSource.transaction((manager) => work(manager)),
        statement: (manager) => manager.query('SELECT $1::text AS probe', ['x']),
        insertInvoice: (manager, id) =>
          manager
            .createQueryBuilder()
            .insert()
            .into(`${schema}.invoices`, ['id', 'status'])
            .values({ id, status: 'paid' })
            .execute(),
        close: () => dataSource.destroy(),
      };
    },
  },
  {
    name: 'prisma',
    async open(schema) {
      const { PrismaClient } = await import(pathToFileURL(await prismaClientEntry()).href);
      const { PrismaPg } = await import('@prisma/adapter-pg');
      const adapter = new PrismaPg(
        { connectionString: PG_URL, max: POOL, options: `-c search_path="${schema}"` },
        { schema },
      );
      const client = new PrismaClient({ adapter });
      return {
        transaction: (work) => client.$transaction((tx) => work(tx)),
        statement: (tx) => tx.$queryRawUnsafe('SELECT $1::text AS probe', 'x'),
        insertInvoice: (tx, id) => tx.invoice.create({ data: { id, status: 'paid' } }),
        close: () => client.$disconnect(),
      };
    },
  },
];
// ---------------------------------------------------------------------------------------------
// Runs.

let invoiceSeq = 0;

/**
 * `n` transactions of `layer`, one at a time: a raw statement, the library's INSERT, the publish,
 * COMMIT. With `timed`, each one's statement, write, publish and whole transaction in µs, sorted.
 */
async function run(keyhook, layer, n, timed) {
  const statement = [];
  const write = [];
  const publish = [];
  const transaction = [];
  const problems = [];
  for (let i = 0; i < n; i++) {
    const invoiceId = `inv_${++invoiceSeq}`;
    const started = performance.now();
    const published = await layer.transaction(async (tx) => {
      const s0 = performance.now();
      await layer.statement(tx);
      const t0 = performance.now();
      await layer.insertInvoice(tx, invoiceId);
      const t1 = performance.now();
      const result = await keyhook.events.publish(
        { tenantId: TENANT, type: EVENT_TYPE, data: { invoiceId } },
        { transaction: tx },
      );
      const t2 = performance.now();
      if (timed) {
        statement.push((t0 - s0) * 1000);
        write.push((t1 - t0) * 1000);
        publish.push((t2 - t1) * 1000);
      }
      return result;
    });
    if (timed) transaction.push((performance.now() - started) * 1000);
    if (published.deliveries.length !== 1 && problems.length < 3)
      problems.push(`a publish wrote ${published.deliveries.length} deliveries, expected 1`);
  }
  const sorted = (values) => Float64Array.from(values).sort();
  return {
    statement: sorted(statement),
    write: sorted(write),
    publish: sorted(publish),
    transaction: sorted(transaction),
    problems,
  };
}

const p50 = (values) => percentile(values, 50);
const us = (value) => Math.round(value).toLocaleString('en-US');
const ratio = (value) => value.toFixed(3);
const range = (values) =>
  `${ratio(median(values))} (${ratio(Math.min(...values))}–${ratio(Math.max(...values))})`;
function verdict(values) {
  if (median(values) <= TARGET) return 'met';
  return Math.min(...values) <= TARGET ? 'within noise' : 'not met';
}

const unreachable = await postgresReachable();
if (unreachable) {
  console.log(`data-layers benchmark skipped: ${PG_URL} cannot be reached (${unreachable})`);
  process.exit(0);
}

console.log(
  `keyhook publish inside data layers' transactions — Node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model.trim()}`,
);
console.log(
  `${ROUNDS} rounds of ${PUBLISHES} transactions per run after ${WARMUP} untimed (${PREWARM} per layer before the rounds); ` +
    `one subscribed webhook, no worker; target: publish p50 ≤ ${TARGET} × raw pg's in the same round`,
);

const { pg, createPostgresStore } = await loadPg();
const schema = `layers_bench_${randomBytes(6).toString('hex')}`;
const drop = () => dropSchema(schema);
cleanups.add(drop);
const logger = countingLogger();
const opened = [];
let keyhook;
let store;
const problems = [];
try {
  store = await createPostgresStore({ connectionString: PG_URL, schema, logger });
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE TABLE "${schema}".invoices (id text PRIMARY KEY, status text NOT NULL)`);
  } finally {
    await admin.end();
  }
  keyhook = createKeyhook({
    store,
    adminSession: { secret: ADMIN_SECRET },
    encryptionKey: ENCRYPTION_KEY,
    mode: 'development',
    logger,
    eventCatalog: { [EVENT_TYPE]: {} },
  });
  // Never sent: no worker runs. Its subscription makes each publish write one delivery.
  await keyhook.webhooks.create(TENANT, { url: 'http://127.0.0.1:9/hooks', events: [EVENT_TYPE] });

  const baseline = await LAYERS[0].open(schema);
  opened.push(baseline);
  const layers = [];
  for (const definition of LAYERS) {
    if (ONLY && !ONLY.includes(definition.name.toLowerCase())) continue;
    try {
      const layer = {
        name: definition.name,
        control: definition.control,
        ...(await definition.open(schema)),
      };
      opened.push(layer);
      const warm = await run(keyhook, layer, PREWARM, false);
      problems.push(...warm.problems.map((problem) => `${layer.name}: ${problem}`));
      layers.push({ ...layer, rounds: [] });
    } catch (error) {
      console.log(`${definition.name}: skipped (${error?.message?.split('\n')[0] ?? error})`);
    }
  }
  await run(keyhook, baseline, PREWARM, false);

  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? layers : [...layers].reverse();
    for (const layer of order) {
      const pair = {};
      const sides = [
        ['raw', baseline],
        ['layer', layer],
      ];
      for (const [side, target] of round % 2 === 0 ? sides : sides.reverse()) {
        await run(keyhook, target, WARMUP, false);
        pair[side] = await run(keyhook, target, PUBLISHES, true);
        problems.push(...pair[side].problems.map((problem) => `${target.name ?? 'raw pg'}: ${problem}`));
      }
      pair.publishRatio = p50(pair.layer.publish) / p50(pair.raw.publish);
      layer.rounds.push(pair);
      console.log(
        `round ${round + 1}/${ROUNDS}  ${layer.name.padEnd(26)} publish p50 ${us(p50(pair.layer.publish)).padStart(6)} µs, ` +
          `raw pg ${us(p50(pair.raw.publish)).padStart(6)} µs, ratio ${ratio(pair.publishRatio)}; ` +
          `transaction p50 ${us(p50(pair.layer.transaction))} / ${us(p50(pair.raw.transaction))} µs; ` +
          `statement p50 ${us(p50(pair.layer.statement))} / ${us(p50(pair.raw.statement))} µs; ` +
          `own write p50 ${us(p50(pair.layer.write))} / ${us(p50(pair.raw.write))} µs` +
          (round % 2 === 0 ? ' (raw pg first)' : ' (library first)'),
      );
    }
  }

  const rows = [
    [
      'library',
      'publish p50 µs',
      'raw pg p50 µs',
      `publish / raw pg (≤ ${TARGET})`,
      'verdict',
      'publish − raw pg, µs',
      'one statement p50 µs, library / pg',
      'own INSERT p50 µs, library / pg',
      'transaction p50 µs, library / raw pg',
      'transaction ratio',
    ],
  ];
  const verdicts = [];
  for (const layer of layers) {
    const r = layer.rounds;
    const mid = (side, figure) => median(r.map((pair) => p50(pair[side][figure])));
    const ratios = r.map((pair) => pair.publishRatio);
    const transactionRatios = r.map((pair) => p50(pair.layer.transaction) / p50(pair.raw.transaction));
    const extra = median(r.map((pair) => p50(pair.layer.publish) - p50(pair.raw.publish)));
    const name = layer.control ? `${layer.name}, ${layer.control}` : layer.name;
    const judged = layer.control ? `— (${verdict(ratios)})` : verdict(ratios);
    rows.push([
      name,
      us(mid('layer', 'publish')),
      us(mid('raw', 'publish')),
      range(ratios),
      judged,
      `${extra >= 0 ? '+' : '−'}${us(Math.abs(extra))}`,
      `${us(mid('layer', 'statement'))} / ${us(mid('raw', 'statement'))}`,
      `${us(mid('layer', 'write'))} / ${us(mid('raw', 'write'))}`,
      `${us(mid('layer', 'transaction'))} / ${us(mid('raw', 'transaction'))}`,
      range(transactionRatios),
    ]);
    if (!layer.control)
      verdicts.push(
        `${name}: publish p50 / raw pg ${range(ratios)} over ${r.length} rounds, target ≤ ${TARGET}: ${verdict(ratios)}` +
          (verdict(ratios) === 'met'
            ? ''
            : ` (median ${((median(ratios) / TARGET - 1) * 100).toFixed(1)} % over)`),
      );
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => String(row[i]).length)));
  const line = (row) => `| ${row.map((cell, i) => String(cell).padEnd(widths[i])).join(' | ')} |`;
  console.log(
    `\nmedians over ${ROUNDS} rounds of each run's p50; ratios: median of the per-round ratios (min–max)\n`,
  );
  console.log(line(rows[0]));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const row of rows.slice(1)) console.log(line(row));
  console.log(`\n${verdicts.join('\n')}`);
  const { rows: counts } = await baseline.transaction((client) =>
    client.query(
      `SELECT (SELECT count(*) FROM "${schema}".invoices)::int AS invoices,
        (SELECT count(*) FROM "${schema}".keyhook_events)::int AS events,
        (SELECT count(*) FROM "${schema}".keyhook_deliveries)::int AS deliveries`,
    ),
  );
  const { invoices, events, deliveries } = counts[0];
  if (invoices !== invoiceSeq || events !== invoiceSeq || deliveries !== invoiceSeq)
    problems.push(
      `${invoiceSeq} transactions committed ${invoices} invoices, ${events} events, ${deliveries} deliveries`,
    );
  if (logger.warnings.length) problems.push(`keyhook warned: ${logger.warnings.slice(0, 3).join('; ')}`);
  for (const problem of problems) console.log(`PROBLEM: ${problem}`);
} catch (error) {
  console.log(`\nERROR: ${error?.stack ?? error}`);
} finally {
  for (const layer of opened) await layer.close().catch(() => {});
  await keyhook?.close();
  await store?.close();
  await runCleanups();
}
process.exit(0);
