export { DEFAULT_BUSY_TIMEOUT_MS, openDatabase } from './connection.js';
export {
  type MigrationsMode,
  migrate,
  pendingMigrations,
  type SqliteDatabaseSource,
  type SqliteMigrateOptions,
} from './migrate.js';
export type { AppliedMigration, PendingMigration } from './migration-driver.js';
export { createSqliteStore, type SqliteStoreOptions } from './options.js';
export { DEFAULT_CHANGE_CHECK_INTERVAL_MS, SqliteStore } from './sqlite-store.js';
/** For hosts that share the database: a driver error that means "out of reach" becomes `unavailable` (503). */
export { translateDriverError as toStoreError } from './unavailable.js';
