import { consoleLogger, type Logger } from '@keyhook/core/store';
import pg from 'pg';
import { KeyChangeFeed } from './change-feed.js';
import { migrate } from './migrate.js';
import { PostgresStore } from './postgres-store.js';
import { assertSchemaName, DEFAULT_SCHEMA } from './schema-name.js';
import { toStoreError } from './unavailable.js';

export interface PostgresStoreOptions {
  /** `postgres://…`. Without it (and without `pool`) pg reads the PG* environment variables. */
  connectionString?: string;
  /** Your own pool. You own it: `close()` leaves it open. Not combinable with the pool settings below. */
  pool?: pg.Pool;
  /** The schema keyhook's tables live in. Default `keyhook`. */
  schema?: string;
  /** Connections in the pool the store creates. Default 10. */
  poolSize?: number;
  /** How long the store's own pool waits for a connection before failing `unavailable`. Default 5000 ms. */
  connectionTimeoutMillis?: number;
  /** Where idle-connection errors of the store's own pool are reported. Default: console. */
  logger?: Logger;
  /**
   * Let core cache verified keys, kept fresh by LISTEN/NOTIFY (one pool connection listens).
   * Off by default: another instance's revoke can then reach this one a notification's delay
   * (about a millisecond) late, and DESIGN.md §3 asks for the very next request. Off, every
   * verification reads the row and the bound is zero.
   */
  verifiedKeyCache?: boolean;
}

export const DEFAULT_POOL_SIZE = 10;
export const DEFAULT_CONNECTION_TIMEOUT_MS = 5000;

/**
 * Opens a PostgresStore and applies pending migrations before it resolves. Rejects with
 * `KeyhookError('unavailable')` when the database cannot be reached.
 */
export async function createPostgresStore(options: PostgresStoreOptions = {}): Promise<PostgresStore> {
  const schema = assertSchemaName(options.schema ?? DEFAULT_SCHEMA);
  assertOneSource(options);
  const ownsPool = options.pool === undefined;
  const pool = options.pool ?? openPool(options);
  const feed = new KeyChangeFeed(pool, schema, options.logger ?? consoleLogger);
  try {
    await migrate(pool, schema);
    if (options.verifiedKeyCache) await feed.start();
  } catch (error) {
    await feed.stop();
    if (ownsPool) await pool.end().catch(() => {});
    throw toStoreError(error);
  }
  return new PostgresStore({ pool, schema, ownsPool, feed });
}

// Pool settings next to your own pool would be silently ignored; refuse them instead.
function assertOneSource(options: PostgresStoreOptions): void {
  const poolSettings = [options.connectionString, options.poolSize, options.connectionTimeoutMillis];
  if (options.pool && poolSettings.some((setting) => setting !== undefined)) {
    throw new TypeError(
      'Pass either `pool` or `connectionString`/`poolSize`/`connectionTimeoutMillis`, not both.',
    );
  }
}

function openPool(options: PostgresStoreOptions): pg.Pool {
  const max = options.poolSize ?? DEFAULT_POOL_SIZE;
  const connectionTimeoutMillis = options.connectionTimeoutMillis ?? DEFAULT_CONNECTION_TIMEOUT_MS;
  if (!Number.isInteger(max) || max < 1) throw new TypeError('poolSize must be a positive integer.');
  if (!Number.isInteger(connectionTimeoutMillis) || connectionTimeoutMillis < 1)
    throw new TypeError('connectionTimeoutMillis must be a positive integer.');
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max,
    // Unreachable fails fast as `unavailable` instead of hanging the request (pg's default waits forever).
    connectionTimeoutMillis,
    application_name: 'keyhook',
  });
  const logger = options.logger ?? consoleLogger;
  // An idle client dying (server restart, network cut) is emitted here; unhandled, it would crash the process.
  // Only the message and code: pg-pool attaches the whole client (and its settings) to the error.
  pool.on('error', (error) =>
    logger.warn(
      { err: { message: error.message, code: (error as { code?: unknown }).code } },
      'an idle PostgreSQL connection failed',
    ),
  );
  return pool;
}
