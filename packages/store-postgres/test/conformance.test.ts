import type { Store } from '@keyhook/core';
import { POSTGRES_TEST_URL, postgresAvailable, uniqueSchemaName } from '@keyhook/testing/postgres';
import { runStoreConformance } from '@keyhook/testing/store-suite';
import pg from 'pg';
import { afterAll, describe } from 'vitest';
import { createPostgresStore, PostgresStore } from '../src/index.js';

// Under CI=true this throws when Postgres is down, so CI can never skip this suite silently.
const available = await postgresAvailable();

const schemas: string[] = [];
const admin = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 2 });

const asPostgres = (store: Store): PostgresStore => {
  if (!(store instanceof PostgresStore)) throw new TypeError('the harness was given a store it did not open');
  return store;
};

(available ? describe : describe.skip)('PostgresStore', () => {
  afterAll(async () => {
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  });

  runStoreConformance({
    name: 'postgres',
    // publishEvent joins a pg client inside BEGIN; test/publish-transaction.test.ts covers it.
    joinsTransactions: true,
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
      const { rows } = await admin.query(
        `SELECT * FROM "${asPostgres(store).schema}".api_keys WHERE id = $1`,
        [id],
      );
      return rows[0] ?? null;
    },
  });
});
