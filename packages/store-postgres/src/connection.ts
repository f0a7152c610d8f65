import type { Logger } from '@keyhook/core/store';
import pg from 'pg';

export const DEFAULT_POOL_SIZE = 10;
export const DEFAULT_CONNECTION_TIMEOUT_MS = 5000;

/** The settings of a pool keyhook creates itself, as opposed to a `pool` the host passes in. */
export interface PoolSettings {
  connectionString?: string;
  poolSize?: number;
  connectionTimeoutMillis?: number;
}

// Pool settings next to your own pool would be silently ignored; refuse them instead.
export function assertOneSource(options: PoolSettings & { pool?: pg.Pool }): void {
  const poolSettings = [options.connectionString, options.poolSize, options.connectionTimeoutMillis];
  if (options.pool && poolSettings.some((setting) => setting !== undefined)) {
    throw new TypeError(
      'Pass either `pool` or `connectionString`/`poolSize`/`connectionTimeoutMillis`, not both.',
    );
  }
}

export function openPool(settings: PoolSettings, logger: Logger): pg.Pool {
  const max = settings.poolSize ?? DEFAULT_POOL_SIZE;
  const connectionTimeoutMillis = settings.connectionTimeoutMillis ?? DEFAULT_CONNECTION_TIMEOUT_MS;
  if (!Number.isInteger(max) || max < 1) throw new TypeError('poolSize must be a positive integer.');
  if (!Number.isInteger(connectionTimeoutMillis) || connectionTimeoutMillis < 1)
    throw new TypeError('connectionTimeoutMillis must be a positive integer.');
  const pool = new pg.Pool({
    connectionString: settings.connectionString,
    max,
    // Unreachable fails fast as `unavailable` instead of hanging the request (pg's default waits forever).
    connectionTimeoutMillis,
    application_name: 'keyhook',
  });
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
