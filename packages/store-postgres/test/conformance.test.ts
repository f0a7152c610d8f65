import { silentLogger } from '@keyhook/core';
import type { Store } from '@keyhook/core/store';
import { runStoreConformance, type StoreHarness } from '@keyhook/store-conformance';
import { POSTGRES_TEST_URL, postgresAvailable, uniqueSchemaName } from '@keyhook/testing/postgres';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, describe, expect } from 'vitest';
import { createPostgresStore, PostgresStore } from '../src/index.js';

// Under CI=true this throws when Postgres is down, so CI can never skip this suite silently.
const available = await postgresAvailable();

const schemas: string[] = [];
const admin = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 2 });

/**
 * The second run's stores share one postgres.js `sql`, as the stores of one app would, and their
 * peers (a second app instance) another. The host owns them, so they end here.
 */
const hostSql = postgres(POSTGRES_TEST_URL, { max: 4, onnotice: () => {} });
const peerSql = postgres(POSTGRES_TEST_URL, { max: 4, onnotice: () => {} });

const asPostgres = (store: Store): PostgresStore => {
  if (!(store instanceof PostgresStore)) throw new TypeError('the harness was given a store it did not open');
  return store;
};

/** The harness's reads and writes behind the store's back, through the admin pool. */
const adminAccess: Pick<StoreHarness, 'migrations' | 'readKeyRow' | 'settleFeed'> = {
  // Every transaction of the cluster that holds an id below one taken now has ended.
  async settleFeed() {
    const { rows } = await admin.query<{ now: string }>('SELECT pg_current_xact_id()::text AS now');
    await expect
      .poll(
        async () =>
          (
            await admin.query<{ past: boolean }>(
              'SELECT pg_snapshot_xmin(pg_current_snapshot()) > $1::xid8 AS past',
              [rows[0]!.now],
            )
          ).rows[0]!.past,
        { timeout: 60_000, interval: 5 },
      )
      .toBe(true);
  },
  // Written through the admin pool, as another release or a hand edit would.
  migrations: {
    async record(store, version, name) {
      await admin.query(
        `INSERT INTO "${asPostgres(store).schema}".keyhook_migrations (version, name) VALUES ($1, $2)`,
        [version, name.slice(5)],
      );
    },
    async setChecksum(store, version, checksum) {
      await admin.query(
        `UPDATE "${asPostgres(store).schema}".keyhook_migrations SET checksum = $1 WHERE version = $2`,
        [checksum, version],
      );
    },
  },
  async readKeyRow(store, id) {
    const { rows } = await admin.query(`SELECT * FROM "${asPostgres(store).schema}".api_keys WHERE id = $1`, [
      id,
    ]);
    return rows[0] ?? null;
  },
};

/** A host's transaction on a pg client of its own: BEGIN, the work, then COMMIT, or ROLLBACK when it throws. */
async function onPgClient<T>(work: (transaction: unknown) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_TEST_URL });
  await client.connect();
  try {
    await client.query('BEGIN');
    const result = await work(client).catch(async (error: unknown) => {
      await client.query('ROLLBACK');
      throw error;
    });
    await client.query('COMMIT');
    return result;
  } finally {
    await client.end();
  }
}

(available ? describe : describe.skip)('PostgresStore', () => {
  afterAll(async () => {
    await Promise.all([hostSql.end({ timeout: 5 }), peerSql.end({ timeout: 5 })]);
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  });

  runStoreConformance({
    name: 'postgres',
    // publishEvent joins a pg client inside BEGIN; the other data layers: test/data-layers.test.ts.
    joinsTransactions: true,
    hostTransaction: (_store, work) => onPgClient(work),
    async create() {
      const schema = uniqueSchemaName('conf');
      schemas.push(schema);
      // With the opt-in cache feed, so the key-change cases test it; the default is covered in postgres.test.ts.
      return createPostgresStore({
        connectionString: POSTGRES_TEST_URL,
        schema,
        poolSize: 4,
        verifiedKeyCache: true,
      });
    },
    // A second app instance: its own pool on the same schema.
    createPeer: (store) =>
      createPostgresStore({
        connectionString: POSTGRES_TEST_URL,
        schema: asPostgres(store).schema,
        poolSize: 4,
        verifiedKeyCache: true,
      }),
    ...adminAccess,
  });

  // The store on a host's postgres.js `sql` (src/postgres-js.ts): every statement through it.
  runStoreConformance({
    name: 'postgres on postgres.js',
    joinsTransactions: true,
    // The host's transaction on its own postgres.js `sql`, as the app would open it: sql.begin().
    hostTransaction: <T>(_store: Store, work: (transaction: unknown) => Promise<T>) =>
      hostSql.begin((transaction) => work(transaction)) as Promise<T>,
    // Refused with a postgres.js `sql` (src/options.ts): it never reports a lost LISTEN connection.
    cachesVerifiedKeys: false,
    async create() {
      const schema = uniqueSchemaName('conf');
      schemas.push(schema);
      return createPostgresStore({ pool: hostSql, schema, logger: silentLogger });
    },
    createPeer: (store) =>
      createPostgresStore({ pool: peerSql, schema: asPostgres(store).schema, logger: silentLogger }),
    ...adminAccess,
  });
});
