/**
 * The README's blocks for joining a transaction, run as a reader pastes them: each against the
 * real library on a fresh schema, with its own values (`pool`, `sql`, `knex`, `prisma`,
 * `dataSource`, `keyhook`, `tenantId`, `invoiceId`) in place. Each must leave the invoice paid
 * and its `invoice.paid` event committed.
 */
import { createKeyhook, silentLogger } from '@keyhook/core';
import { POSTGRES_TEST_URL, postgresAvailable, uniqueSchemaName } from '@keyhook/testing/postgres';
import { runReadmeBlock } from '@keyhook/testing/readme';
import { TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY } from '@keyhook/testing/support';
import knex from 'knex';
import pg from 'pg';
import postgres from 'postgres';
import { DataSource } from 'typeorm';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore } from '../src/index.js';
import { openPrisma } from './prisma/client.js';

const available = await postgresAvailable();
const admin = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 2 });
afterAll(() => admin.end());

/** Opens what the block names, with `search_path` on the schema; returns it and how to close it. */
type Open = (schema: string) => Promise<{ values: Record<string, unknown>; close(): Promise<void> }>;

const onPool: Open = async (schema) => {
  const pool = new pg.Pool({ connectionString: POSTGRES_TEST_URL, options: `-c search_path="${schema}"` });
  return { values: { pool }, close: () => pool.end() };
};

const BLOCKS: [marker: string, open: Open][] = [
  ['withTransaction(pool', onPool],
  [
    'sql.begin(',
    async (schema) => {
      const sql = postgres(POSTGRES_TEST_URL, { connection: { search_path: schema }, onnotice: () => {} });
      return { values: { sql }, close: () => sql.end() };
    },
  ],
  ['drizzle({ client: pool })', onPool],
  ['new PostgresDialect({ pool })', onPool],
  [
    'knex.transaction(',
    async (schema) => {
      const db = knex({ client: 'pg', connection: POSTGRES_TEST_URL, searchPath: [schema] });
      return { values: { knex: db }, close: () => db.destroy() };
    },
  ],
  [
    'prisma.$transaction(',
    async (schema) => {
      const { prisma, close } = await openPrisma(POSTGRES_TEST_URL, schema);
      return { values: { prisma }, close };
    },
  ],
  [
    'dataSource.transaction(',
    async (schema) => {
      const dataSource = new DataSource({
        type: 'postgres',
        url: POSTGRES_TEST_URL,
        extra: { options: `-c search_path="${schema}"` },
      });
      await dataSource.initialize();
      return { values: { dataSource }, close: () => dataSource.destroy() };
    },
  ],
];

describe.runIf(available)('the README’s blocks for joining a transaction run', () => {
  it.each(BLOCKS)('the block with %s', async (marker, open) => {
    const schema = uniqueSchemaName('readme');
    const store = await createPostgresStore({ connectionString: POSTGRES_TEST_URL, schema, poolSize: 2 });
    const keyhook = createKeyhook({
      store,
      adminSession: { secret: TEST_ADMIN_SECRET },
      encryptionKey: TEST_ENCRYPTION_KEY,
      logger: silentLogger,
      eventCatalog: { 'invoice.paid': { description: 'An invoice was paid.' } },
    });
    await admin.query(`CREATE TABLE "${schema}".invoices (id text PRIMARY KEY, status text NOT NULL)`);
    await admin.query(`INSERT INTO "${schema}".invoices VALUES ('inv_1', 'open')`);
    const opened = await open(schema);
    try {
      await runReadmeBlock(new URL('..', import.meta.url), marker, {
        ...opened.values,
        keyhook,
        tenantId: 'acme',
        invoiceId: 'inv_1',
      });
      const invoice = await admin.query(`SELECT status FROM "${schema}".invoices`);
      expect(invoice.rows).toEqual([{ status: 'paid' }]);
      const events = await admin.query(`SELECT tenant_id, id, type FROM "${schema}".keyhook_events`);
      expect(events.rows).toEqual([{ tenant_id: 'acme', id: 'evt_paid_inv_1', type: 'invoice.paid' }]);
    } finally {
      await opened.close();
      await keyhook.close();
      await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
    }
  });
});
