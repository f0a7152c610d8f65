import { consoleLogger, type Logger, pendingMigrationsError } from '@keyhook/core/store';
import type pg from 'pg';
import { assertOneSource, type HostPool, hostPool, openPool } from './connection.js';
import {
  type AppliedMigration,
  applyMigrations,
  namedByFile,
  type PendingMigration,
  pendingOf,
} from './migration-driver.js';
import { assertSchemaName, DEFAULT_SCHEMA } from './schema-name.js';
import { toStoreError } from './unavailable.js';

/** Where migrations run: the same choices `createPostgresStore` takes. */
export interface PostgresDatabaseSource {
  /** `postgres://…`. Without it (and without `pool`) pg reads the PG* environment variables. */
  connectionString?: string;
  /** Your own pool, pg's or a postgres.js `sql`. You own it: it is left open. Not combinable with `connectionString`. */
  pool?: HostPool;
  /** The schema keyhook's tables live in. Default `keyhook`. */
  schema?: string;
  /** How long to wait for a connection before failing `unavailable`. Default 5000 ms. */
  connectionTimeoutMillis?: number;
}

/** What `migrate()` takes: the schema and how to reach it, and where to log each migration. */
export interface PostgresMigrateOptions extends PostgresDatabaseSource {
  /**
   * Where each migration applied is logged: one line at `info` with its duration (its start, schema
   * and checksum at `debug`), a failure at `error`. Default: console.
   */
  logger?: Logger;
}

/** `createPostgresStore`'s `migrations` option: the same for every store. */
export type { MigrationsMode } from '@keyhook/core/store';

/**
 * Applies the pending migrations, each in its own transaction, and resolves with what this call
 * applied, in order: nothing when the schema is up to date. Run it in a release step, then open
 * the store with `migrations: 'refuse'`. Safe to run from several places at once (an advisory
 * lock per schema). Rejects when the schema was migrated by a newer release, when a migration
 * fails (that one is rolled back), or with `KeyhookError('unavailable')` when the database
 * cannot be reached.
 */
export async function migrate(options: PostgresMigrateOptions = {}): Promise<AppliedMigration[]> {
  const logger = options.logger ?? consoleLogger;
  return withPool(options, logger, (pool, schema) => applyMigrations(pool, schema, logger));
}

/**
 * The migrations `migrate()` would apply, without applying anything: nothing is created, not
 * even the schema. Rejects when the schema was migrated by a newer release.
 */
export async function pendingMigrations(source: PostgresDatabaseSource = {}): Promise<PendingMigration[]> {
  return withPool(source, consoleLogger, listPending);
}

/**
 * For `migrations: 'refuse'`: throws, having written nothing, when the schema is behind. The
 * refusal names the schema and the command, never the connection string (it may hold a password).
 */
export async function refuseIfPending(pool: pg.Pool, schema: string): Promise<void> {
  const pending = await listPending(pool, schema);
  if (pending.length === 0) return;
  throw pendingMigrationsError({
    database: `the PostgreSQL schema "${schema}"`,
    pending,
    applyWith:
      `\`npx keyhook migrate --database "$DATABASE_URL" --schema ${schema}\` or migrate() from ` +
      '@keyhook/store-postgres',
  });
}

async function listPending(pool: pg.Pool, schema: string): Promise<PendingMigration[]> {
  return (await pendingOf(pool, schema)).map(namedByFile);
}

// A pool of one connection is enough: migrations run one after another.
async function withPool<T>(
  source: PostgresDatabaseSource,
  logger: Logger,
  run: (pool: pg.Pool, schema: string) => Promise<T>,
): Promise<T> {
  const schema = assertSchemaName(source.schema ?? DEFAULT_SCHEMA);
  assertOneSource(source);
  const pool = source.pool ? hostPool(source.pool) : openPool({ ...source, poolSize: 1 }, logger);
  try {
    return await run(pool, schema);
  } catch (error) {
    throw toStoreError(error);
  } finally {
    if (!source.pool) await pool.end().catch(() => {});
  }
}
