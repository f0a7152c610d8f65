import type { Logger } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import type { MigrationsMode } from './migrate.js';
import { SqliteStore } from './sqlite-store.js';

export type SqliteStoreOptions = (
  | {
      /** Path of the database file; created, with its schema, when missing. */
      filename: string;
      /** How long a statement waits for another process's write lock before `unavailable`. Default 5000. */
      busyTimeoutMs?: number;
    }
  | {
      /** A connection you opened. You own it: `close()` leaves it open. */
      database: Database.Database;
    }
) & {
  /**
   * How often, at most, to ask SQLite whether another connection changed the file (PRAGMA
   * data_version costs about as much as a key read). Changes through this store are seen at
   * once; another process's revoke is seen within this bound. Default 1 ms; 0 asks every time.
   */
  changeCheckIntervalMs?: number;
  /**
   * `'apply'` (default): pending migrations run as the store opens. `'refuse'`: opening fails,
   * writing nothing, while any is pending; apply them ahead with `migrate()` or
   * `npx keyhook migrate` (a long rebuild then holds the write lock in a release step, not at start).
   */
  migrations?: MigrationsMode;
  /**
   * Where each migration applied is logged: one line at `info` with its duration (its start, file
   * and checksum at `debug`), a failure at `error`. Default: console.
   */
  logger?: Logger;
};

/**
 * Opens a SQLite store: the file is created and migrated when needed, or, with
 * `migrations: 'refuse'`, refused while a migration is pending.
 */
export function createSqliteStore(options: SqliteStoreOptions): SqliteStore {
  return new SqliteStore(options);
}
