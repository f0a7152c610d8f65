export { DEFAULT_BUSY_TIMEOUT_MS } from './open.js';
export {
  createSqliteStore,
  DEFAULT_CHANGE_CHECK_INTERVAL_MS,
  SqliteStore,
  type SqliteStoreOptions,
} from './store.js';
