import { consoleLogger, type Logger } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import {
  type AppliedMigration,
  applyMigrations,
  loadMigrations,
  type PendingMigration,
  pendingOf,
} from './migrate.js';
import { openDatabase, openFailure, openReadOnly } from './open.js';

/** Where migrations run: the same two choices `createSqliteStore` takes. */
export type SqliteDatabaseSource =
  | {
      /** Path of the database file; created when missing (by `migrate()` only). */
      filename: string;
      /** How long to wait for another connection's write lock. Default 5000. */
      busyTimeoutMs?: number;
    }
  | {
      /** A connection you opened. You own it: it is left open. */
      database: Database.Database;
    };

/** What `migrate()` takes: the database, and where to log each migration. */
export type SqliteMigrateOptions = SqliteDatabaseSource & {
  /** Where each migration's start and end (with its duration) are logged, at `info`. Default: console. */
  logger?: Logger;
};

/**
 * What `createSqliteStore` does with pending migrations: `'apply'` them as it opens (the
 * default), or `'refuse'` to open until `migrate()` or `npx keyhook migrate` has applied them.
 */
export type MigrationsMode = 'apply' | 'refuse';

/**
 * Applies the pending migrations, each in its own transaction, and resolves with what this call
 * applied, in order: nothing when the database is up to date. Run it in a release step, then
 * open the store with `migrations: 'refuse'`. Rejects, writing nothing more, when the database
 * was migrated by a newer release or a migration fails (that migration is rolled back).
 */
export async function migrate(options: SqliteMigrateOptions): Promise<AppliedMigration[]> {
  const logger = options.logger ?? consoleLogger;
  const db = 'database' in options ? options.database : openDatabase(options.filename, options.busyTimeoutMs);
  try {
    return applyMigrations(db, loadMigrations(), logger);
  } catch (error) {
    throw openFailure(db.name, 'migrate', error);
  } finally {
    if (!('database' in options)) db.close();
  }
}

/**
 * The migrations `migrate()` would apply, without applying anything: a missing file is not
 * created, and an existing one is only read. Rejects when the database was migrated by a newer
 * release.
 */
export async function pendingMigrations(source: SqliteDatabaseSource): Promise<PendingMigration[]> {
  return listPending(source);
}

/** For `migrations: 'refuse'`: throws, having written nothing, when the database is behind. */
export function refuseIfPending(source: SqliteDatabaseSource): void {
  const pending = listPending(source);
  if (pending.length > 0) {
    throw pendingMigrationsError('database' in source ? source.database.name : source.filename, pending);
  }
}

/** Checks the option, so a typo fails at open instead of quietly meaning `'apply'`. */
export function migrationsMode(mode: MigrationsMode | undefined): MigrationsMode {
  if (mode === undefined) return 'apply';
  if (mode === 'apply' || mode === 'refuse') return mode;
  throw new TypeError(`migrations must be 'apply' or 'refuse', got ${JSON.stringify(mode)}`);
}

/**
 * The refusal of a store opened with `migrations: 'refuse'` on a database that is behind: it
 * names what is pending and how to apply it, since the fix is a command to run, not a retry.
 */
function pendingMigrationsError(filename: string, pending: PendingMigration[]): Error {
  const names = pending.map((migration) => migration.name).join(', ');
  const count = pending.length === 1 ? '1 migration is' : `${pending.length} migrations are`;
  return new Error(
    `keyhook: cannot open the SQLite database at ${filename}: ${count} pending (${names}) and the ` +
      `store was created with migrations: 'refuse'. Apply them first with ` +
      `\`npx keyhook migrate --database ${shellWord(filename)}\` or migrate() from @keyhook/store-sqlite.`,
  );
}

// The command in the message is meant to be pasted: a path with spaces or quotes stays one word.
function shellWord(text: string): string {
  return /^[\w./:@+-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

function listPending(source: SqliteDatabaseSource): PendingMigration[] {
  const migrations = loadMigrations();
  const db = 'database' in source ? source.database : openReadOnly(source.filename, source.busyTimeoutMs);
  if (db === null) return migrations.map(({ version, name }) => ({ version, name }));
  try {
    return pendingOf(db, migrations).map(({ version, name }) => ({ version, name }));
  } catch (error) {
    throw openFailure(db.name, 'open', error);
  } finally {
    if (!('database' in source)) db.close();
  }
}
