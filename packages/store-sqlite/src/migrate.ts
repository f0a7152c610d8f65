import { consoleLogger, type Logger, pendingMigrationsError } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { openDatabase, openFailure, openReadOnly } from './connection.js';
import {
  type AppliedMigration,
  applyMigrations,
  loadMigrations,
  type PendingMigration,
  pendingOf,
} from './migration-driver.js';

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
  /**
   * Where each migration applied is logged: one line at `info` with its duration (its start, file
   * and checksum at `debug`), a failure at `error`. Default: console.
   */
  logger?: Logger;
};

/** `createSqliteStore`'s `migrations` option, and its check: the same for every store. */
export { type MigrationsMode, migrationsMode } from '@keyhook/core/store';

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
  if (pending.length === 0) return;
  const filename = 'database' in source ? source.database.name : source.filename;
  const inMemory = 'database' in source ? source.database.memory : filename === ':memory:';
  throw pendingMigrationsError({
    database: inMemory ? 'the in-memory SQLite database' : `the SQLite database at ${filename}`,
    pending,
    applyWith: inMemory
      ? applyInMemory('database' in source)
      : `\`npx keyhook migrate --database ${shellWord(filename)}\` or migrate() from @keyhook/store-sqlite`,
  });
}

/**
 * An in-memory database (`:memory:`, or `''`) starts empty at every open: no command reaches
 * it, nor `migrate({ filename })`. Only `migrate({ database })` on the store's own connection does.
 */
function applyInMemory(givenConnection: boolean): string {
  const call = 'migrate({ database }) from @keyhook/store-sqlite';
  return givenConnection
    ? `${call} on that connection`
    : `${call} on a connection you open, then pass that connection to createSqliteStore({ database }): ` +
        'an in-memory database starts empty at every open';
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
