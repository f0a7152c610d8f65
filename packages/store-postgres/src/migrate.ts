import { readdir, readFile } from 'node:fs/promises';
import type pg from 'pg';
import { migrationLockKey, quoteSchema } from './schema-name.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

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

/**
 * Brings the schema up to date. Each pending migration runs in its own transaction under an
 * advisory lock for this schema, and is re-checked inside the lock, so of many instances
 * starting at once exactly one applies it and the others wait, then find it done.
 */
export async function migrate(pool: pg.Pool, schema: string): Promise<Migration[]> {
  const migrations = await loadMigrations();
  const applied = await appliedVersions(pool, schema);
  const ran: Migration[] = [];
  for (const migration of migrations) {
    if (applied.has(migration.version)) continue;
    if (await applyMigration(pool, schema, migration)) ran.push(migration);
  }
  return ran;
}

/** The versions already recorded, read without the lock: only a fast path, re-checked under it. */
async function appliedVersions(pool: pg.Pool, schema: string): Promise<Set<number>> {
  const table = `${quoteSchema(schema)}.keyhook_migrations`;
  const exists = await pool.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [
    table,
  ]);
  if (!exists.rows[0]?.present) return new Set();
  const rows = await pool.query<{ version: number }>(`SELECT version FROM ${table}`);
  return new Set(rows.rows.map((row) => row.version));
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
