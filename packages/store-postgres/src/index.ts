export {
  createPostgresStore,
  DEFAULT_CONNECTION_TIMEOUT_MS,
  DEFAULT_POOL_SIZE,
  type PostgresStoreOptions,
} from './create-store.js';
export { PostgresStore, type PostgresStoreParts } from './postgres-store.js';
export { DEFAULT_SCHEMA } from './schema-name.js';
/** For hosts that share the database: a connection failure becomes `unavailable` (503). */
export { toStoreError } from './unavailable.js';
