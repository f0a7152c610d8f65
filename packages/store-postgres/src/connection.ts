import type { Logger } from '@keyhook/core/store';
import pg from 'pg';
import { DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS, DEFAULT_STATEMENT_TIMEOUT_MS } from './bounds.js';
import { isPostgresJs, type PostgresJsSql, postgresJsPool } from './postgres-js.js';

export const DEFAULT_POOL_SIZE = 10;
export const DEFAULT_CONNECTION_TIMEOUT_MS = 5000;

/** The settings of a pool keyhook creates itself, as opposed to a `pool` the host passes in. */
export interface PoolSettings {
  connectionString?: string;
  poolSize?: number;
  connectionTimeoutMillis?: number;
  statementTimeoutMs?: number;
  idleInTransactionTimeoutMs?: number;
}

// Pool settings next to your own pool would be silently ignored; refuse them instead.
export function assertOneSource(options: PoolSettings & { pool?: HostPool }): void {
  const poolSettings = [
    options.connectionString,
    options.poolSize,
    options.connectionTimeoutMillis,
    options.idleInTransactionTimeoutMs,
  ];
  if (options.pool && poolSettings.some((setting) => setting !== undefined)) {
    throw new TypeError(
      'Pass either `pool` or `connectionString`/`poolSize`/`connectionTimeoutMillis`/`idleInTransactionTimeoutMs`, not both.',
    );
  }
}

/** A pool the host passes in: pg's, or a postgres.js `sql`. */
export type HostPool = pg.Pool | PostgresJsSql;

/** The host's pool as the store uses it: a pg.Pool as it is, a postgres.js `sql` through src/postgres-js.ts. */
export function hostPool(pool: HostPool): pg.Pool {
  return isPostgresJs(pool) ? postgresJsPool(pool) : pool;
}

export function openPool(settings: PoolSettings, logger: Logger): pg.Pool {
  const max = settings.poolSize ?? DEFAULT_POOL_SIZE;
  const connectionTimeoutMillis = settings.connectionTimeoutMillis ?? DEFAULT_CONNECTION_TIMEOUT_MS;
  if (!Number.isInteger(max) || max < 1) throw new TypeError('poolSize must be a positive integer.');
  if (!Number.isInteger(connectionTimeoutMillis) || connectionTimeoutMillis < 1)
    throw new TypeError('connectionTimeoutMillis must be a positive integer.');
  const statementTimeout = settings.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  const idleTimeout = settings.idleInTransactionTimeoutMs ?? DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS;
  if (!Number.isInteger(idleTimeout) || idleTimeout < 0)
    throw new TypeError('idleInTransactionTimeoutMs must be a non-negative integer (0: no bound).');
  const pool = new pg.Pool({
    connectionString: settings.connectionString,
    max,
    // Unreachable fails fast as `unavailable` instead of hanging the request (pg's default waits forever).
    connectionTimeoutMillis,
    // docs/decisions.md §20.2. pg sends a setting of 0 as no setting: the server's own applies.
    ...(statementTimeout > 0 && { statement_timeout: statementTimeout }),
    ...(idleTimeout > 0 && { idle_in_transaction_session_timeout: idleTimeout }),
    // A connection whose peer vanished without a word is found out by the kernel, not only by a query.
    keepAlive: true,
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
