import { readdir, readFile } from 'node:fs/promises';
import {
  type AppliedMigration,
  applyLogged,
  assertKnownMigrations,
  type Logger,
  type PendingMigration,
  silentLogger,
} from '@keyhook/core/store';
import type pg from 'pg';
import { migrationLockKey, quoteSchema } from './schema-name.js';

export interface Migration {
  version: number;
  /** The name after the number, e.g. `api_keys`: what `keyhook_migrations.name` records. */
  name: string;
  sql: string;
}

export type { AppliedMigration, PendingMigration } from '@keyhook/core/store';

// Shipped beside dist/ (package.json "files"); tsup's shims give the CJS build an import.meta.url.
const MIGRATIONS_DIR = new URL('../migrations/', import.meta.url);

const MIGRATION_FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/;

/** The numbered .sql files, in version order. */
export async function loadMigrations(dir: URL = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((file) => file.endsWith('.sql')).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    const match = MIGRATION_FILE.exec(file);
    if (!match) throw new Error(`keyhook: migration file ${file} is not named NNNN_name.sql`);
    const version = Number(match[1]);
    if (migrations.some((m) => m.version === version))
      throw new Error(`keyhook: two migrations share version ${version}`);
    migrations.push({ version, name: match[2]!, sql: await readFile(new URL(file, dir), 'utf8') });
  }
  return migrations;
}

/** The file name without `.sql`: how a migration is named to people (logs, results, errors). */
export function fileName(version: number, name: string): string {
  return `${String(version).padStart(4, '0')}_${name}`;
}

/** The migration as people see it (logs, results, errors): `{ version: 4, name: '0004_deliveries' }`. */
export function namedByFile(migration: Migration): PendingMigration {
  return { version: migration.version, name: fileName(migration.version, migration.name) };
}

/**
 * The migrations this schema does not record, read without the lock and without writing (not
 * even the schema or the migrations table). Throws when the schema records a migration this
 * version does not know: a newer release migrated it.
 */
export async function pendingOf(
  pool: pg.Pool,
  schema: string,
  migrations?: Migration[],
): Promise<Migration[]> {
  const shipped = migrations ?? (await loadMigrations());
  const recorded = await readRecorded(pool, schema);
  assertKnown(schema, recorded, shipped);
  return shipped.filter((migration) => !recorded.has(migration.version));
}

/**
 * Brings the schema up to date and returns what this call applied. Each pending migration runs
 * in its own transaction under an advisory lock for this schema, and is re-checked inside the
 * lock, so of many instances starting at once exactly one applies it and the others wait, then
 * find it done. Each one is logged as it starts and ends, with its duration.
 */
export async function applyMigrations(
  pool: pg.Pool,
  schema: string,
  logger: Logger = silentLogger,
  migrations?: Migration[],
): Promise<AppliedMigration[]> {
  const applied: AppliedMigration[] = [];
  for (const migration of await pendingOf(pool, schema, migrations)) {
    const done = await applyLogged(
      {
        logger,
        migration: namedByFile(migration),
        where: { schema },
        appliedElsewhereBy: 'another instance',
      },
      () => applyMigration(pool, schema, migration),
    );
    if (done) applied.push(done);
  }
  return applied;
}

/** The recorded versions and names, read without the lock: only a fast path, re-checked under it. */
async function readRecorded(pool: pg.Pool, schema: string): Promise<Map<number, string>> {
  const table = `${quoteSchema(schema)}.keyhook_migrations`;
  const exists = await pool.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [
    table,
  ]);
  if (!exists.rows[0]?.present) return new Map();
  const rows = await pool.query<{ version: number; name: string }>(`SELECT version, name FROM ${table}`);
  return new Map(rows.rows.map((row) => [row.version, row.name]));
}

// A schema from a newer release, or a renamed file, means this code and the schema disagree:
// running on it would read and write tables this code does not know.
function assertKnown(schema: string, recorded: Map<number, string>, migrations: Migration[]): void {
  assertKnownMigrations({
    database: `the PostgreSQL schema "${schema}"`,
    packageName: '@keyhook/store-postgres',
    recorded: new Map([...recorded].map(([version, name]) => [version, fileName(version, name)])),
    shipped: migrations.map(namedByFile),
  });
}

async function applyMigration(pool: pg.Pool, schema: string, migration: Migration): Promise<boolean> {
  const quoted = quoteSchema(schema);
  const client = await pool.connect();
  let failed = false;
  // A connection the server ends mid-migration emits 'error'; heard here, it fails the query instead of the process.
  const onError = () => {
    failed = true;
  };
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [migrationLockKey(schema)]);
    // Only create what is missing, so a schema a DBA made beforehand needs no database-level CREATE.
    const schemaExists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    if (schemaExists.rowCount === 0) await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoted}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${quoted}.keyhook_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`,
    );
    const done = await client.query(`SELECT 1 FROM ${quoted}.keyhook_migrations WHERE version = $1`, [
      migration.version,
    ]);
    const pending = done.rowCount === 0;
    if (pending) {
      await client.query(`SET LOCAL search_path TO ${quoted}`);
      await client.query(migration.sql);
      await client.query(`INSERT INTO ${quoted}.keyhook_migrations (version, name) VALUES ($1, $2)`, [
        migration.version,
        migration.name,
      ]);
    }
    await client.query('COMMIT');
    return pending;
  } catch (error) {
    failed = true;
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    // A client that failed mid-transaction may be broken: destroy it rather than pool it.
    client.off('error', onError);
    client.release(failed);
  }
}
