export { DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS, DEFAULT_STATEMENT_TIMEOUT_MS } from './bounds.js';
export { checkOut, guardPool, type TransactionOptions, withTransaction } from './checkout.js';
export { DEFAULT_CONNECTION_TIMEOUT_MS, DEFAULT_POOL_SIZE, type HostPool } from './connection.js';
export type { SqlExecutor } from './host-transaction.js';
export {
  type MigrationsMode,
  migrate,
  type PostgresDatabaseSource,
  type PostgresMigrateOptions,
  pendingMigrations,
} from './migrate.js';
export type { AppliedMigration, PendingMigration } from './migration-driver.js';
export { createPostgresStore, type PostgresStoreOptions } from './options.js';
export type { PostgresJsSql } from './postgres-js.js';
export { PostgresStore, type PostgresStoreParts } from './postgres-store.js';
export { DEFAULT_SCHEMA } from './schema-name.js';
/** For hosts that share the database: a connection failure becomes `unavailable` (503). */
export { toStoreError } from './unavailable.js';
