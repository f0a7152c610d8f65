import { POSTGRES_TEST_URL, postgresAvailable, uniqueSchemaName } from '@keyhook/testing/postgres';
import { checkPostgresIndexes, smallTablespace } from '@keyhook/testing/support';
import pg from 'pg';
import { expect } from 'vitest';
import { fullDiskSuite } from './full-disk.js';
import { postgresEnv } from './instances.js';

const withPostgres = await postgresAvailable();

// Every table and index of the server's schema (keyhook's and the data plane's) in a tablespace on
// an 8 MiB tmpfs: its connections create them with default_tablespace set. The WAL stays in the
// server's data directory, which does not fill (docs/decisions.md §20.3).
fullDiskSuite('Postgres', async () => {
  if (!withPostgres) return null;
  const admin = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 2 });
  const tablespace = await smallTablespace('ref_full_pg', 8, (sql) => admin.query(sql));
  if (tablespace === null) {
    await admin.end();
    return null;
  }
  const schema = uniqueSchemaName('ref_full');
  const url = new URL(POSTGRES_TEST_URL);
  // The URL's options replace those of a pool's config: the data plane's search_path goes here too.
  url.searchParams.set('options', `${tablespace.options} -c search_path=${schema}`);
  const env = { ...postgresEnv(schema), DATABASE_URL: url.toString() };
  return {
    disk: tablespace.disk,
    env,
    eventIds: async () =>
      (await admin.query(`SELECT id FROM "${schema}".keyhook_events ORDER BY id`)).rows.map((row) => row.id),
    checkSound: async () => {
      const elsewhere = await admin.query(
        `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = $1 AND c.relkind IN ('r', 'i', 't') AND c.reltablespace = 0`,
        [schema],
      );
      expect(elsewhere.rows).toEqual([]);
      expect(await checkPostgresIndexes((sql, values) => admin.query(sql, values), schema)).toBeGreaterThan(
        10,
      );
    },
    tearDown: async () => {
      try {
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await tablespace.remove();
      } finally {
        await admin.end();
      }
    },
  };
});
