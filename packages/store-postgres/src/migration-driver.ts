import {
  type AppliedMigration,
  type Logger,
  type MigrationDriver,
  type MigrationFile,
  type PendingMigration,
  pendingMigrationFiles,
  type RecordedMigration,
  readMigrationFiles,
  runMigrations,
  silentLogger,
} from '@keyhook/core/store';
import type pg from 'pg';
import { withTransaction } from './checkout.js';
import { migrationLockKey, quoteSchema } from './schema-name.js';

/** One migration file, as core's runner reads it: `name` is the file name, `0004_deliveries`. */
export type Migration = MigrationFile;

export type { AppliedMigration, PendingMigration } from '@keyhook/core/store';

// Shipped beside dist/ (package.json "files"); tsup's shims give the CJS build an import.meta.url.
const MIGRATIONS_DIR = new URL('../migrations/', import.meta.url);

/** The numbered .sql files, in version order, each with its checksum (core's rules: readMigrationFiles). */
export async function loadMigrations(dir: URL = MIGRATIONS_DIR): Promise<Migration[]> {
  return readMigrationFiles(dir);
}

/** The file name without `.sql` (`0004_deliveries`), from what keyhook_migrations records (`deliveries`). */
export function fileName(version: number, name: string): string {
  return `${String(version).padStart(4, '0')}_${name}`;
}

/** The migration as people see it (logs, results, errors): `{ version: 4, name: '0004_deliveries' }`. */
export function namedByFile(migration: Migration): PendingMigration {
  return { version: migration.version, name: migration.name };
}

/**
 * The migrations this schema does not record, read without the lock and without writing (not
 * even the schema or the migrations table). Throws when the schema records a migration this
 * version does not know (a newer release migrated it), or one whose file was edited since.
 */
export async function pendingOf(
  pool: pg.Pool,
  schema: string,
  migrations?: Migration[],
): Promise<Migration[]> {
  const shipped = migrations ?? (await loadMigrations());
  return pendingMigrationFiles(targetOf(schema), shipped, await readRecorded(pool, schema));
}

/**
 * Brings the schema up to date through core's runner and returns what this call applied. Each
 * pending migration runs in its own transaction under an advisory lock for this schema, and is
 * re-checked inside the lock, so of many instances starting at once exactly one applies it and
 * the others wait, then find it done. Each one is logged at `info` once applied, with its duration
 * (its start at `debug`).
 */
export async function applyMigrations(
  pool: pg.Pool,
  schema: string,
  logger: Logger = silentLogger,
  migrations?: Migration[],
): Promise<AppliedMigration[]> {
  return runMigrations(postgresDriver(pool, schema), migrations ?? (await loadMigrations()), logger);
}

const targetOf = (schema: string) => ({
  database: `the PostgreSQL schema "${schema}"`,
  packageName: '@keyhook/store-postgres',
});

/** How Postgres executes core's runner: a transaction-scoped advisory lock per schema. */
function postgresDriver(pool: pg.Pool, schema: string): MigrationDriver<false> {
  const table = `${quoteSchema(schema)}.keyhook_migrations`;
  return {
    ...targetOf(schema),
    where: { schema },
    appliedElsewhereBy: 'another instance',
    readRecorded: () => readRecorded(pool, schema),
    applyOne: (migration) =>
      underLock(pool, schema, async (client) => {
        const done = await client.query(`SELECT 1 FROM ${table} WHERE version = $1`, [migration.version]);
        if (done.rowCount !== 0) return false;
        await client.query(`SET LOCAL search_path TO ${quoteSchema(schema)}`);
        await client.query(migration.sql);
        // The table records the name after the number (`deliveries`), as it always has.
        await client.query(`INSERT INTO ${table} (version, name, checksum) VALUES ($1, $2, $3)`, [
          migration.version,
          migration.name.slice(5),
          migration.checksum,
        ]);
        return true;
      }),
    recordChecksums: (files) =>
      underLock(pool, schema, async (client) => {
        for (const file of files) {
          await client.query(`UPDATE ${table} SET checksum = $1 WHERE version = $2 AND checksum IS NULL`, [
            file.checksum,
            file.version,
          ]);
        }
      }),
  };
}

/** The recorded versions, names and checksums, read without the lock: only a fast path, re-checked under it. */
async function readRecorded(pool: pg.Pool, schema: string): Promise<RecordedMigration[]> {
  const table = `${quoteSchema(schema)}.keyhook_migrations`;
  const exists = await pool.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [
    table,
  ]);
  if (!exists.rows[0]?.present) return [];
  // A table of a release before checksums has no checksum column: `to_jsonb` reads it as null.
  const rows = await pool.query<{ version: number; name: string; checksum: string | null }>(
    `SELECT version, name, to_jsonb(m) ->> 'checksum' AS checksum FROM ${table} AS m`,
  );
  return rows.rows.map((row) => ({
    version: row.version,
    name: fileName(row.version, row.name),
    checksum: row.checksum,
  }));
}

/**
 * One transaction under the schema's migration lock, with the schema and the migrations table
 * (and its checksum column) made first when missing. A failure rolls back and rejects.
 */
async function underLock<T>(
  pool: pg.Pool,
  schema: string,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const quoted = quoteSchema(schema);
  return withTransaction(pool, async (client) => {
    // A migration runs to its end (an index on a large table takes what it takes): no statement bound.
    await client.query('SET LOCAL statement_timeout = 0');
    await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [migrationLockKey(schema)]);
    // Only create what is missing, so a schema a DBA made beforehand needs no database-level CREATE.
    const schemaExists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    if (schemaExists.rowCount === 0) await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoted}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${quoted}.keyhook_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now(),
        checksum text
      )`,
    );
    // A table of a release before checksums gets the column. Looked up first: ALTER TABLE takes
    // an exclusive lock even when the column exists, and would hold it for the whole migration,
    // blocking pendingMigrations() and `migrations: 'refuse'`, which read without this lock.
    const summed = await client.query(
      `SELECT 1 FROM information_schema.columns
        WHERE table_schema = $1 AND table_name = 'keyhook_migrations' AND column_name = 'checksum'`,
      [schema],
    );
    if (summed.rowCount === 0)
      await client.query(`ALTER TABLE ${quoted}.keyhook_migrations ADD COLUMN checksum text`);
    return work(client);
  });
}
