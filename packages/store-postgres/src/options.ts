import { consoleLogger, type Logger, type MigrationsMode, migrationsMode } from '@keyhook/core/store';
import type pg from 'pg';
import { DEFAULT_STATEMENT_TIMEOUT_MS, StatementBounds } from './bounds.js';
import { KeyChangeFeed, poolNotifications } from './change-feed.js';
import { assertOneSource, type HostPool, hostPool, openPool } from './connection.js';
import { refuseIfPending } from './migrate.js';
import { applyMigrations } from './migration-driver.js';
import { isPostgresJs, postgresJsNotifications } from './postgres-js.js';
import { PostgresStore } from './postgres-store.js';
import { assertSchemaName, DEFAULT_SCHEMA } from './schema-name.js';
import { toStoreError } from './unavailable.js';

export interface PostgresStoreOptions {
  /** `postgres://…`. Without it (and without `pool`) pg reads the PG* environment variables. */
  connectionString?: string;
  /**
   * Your own pool: a pg.Pool, or a postgres.js `sql`. You own it: `close()` leaves it open. Not
   * combinable with the pool settings below. What the store needs of it: the package README, under Usage.
   */
  pool?: HostPool;
  /** The schema keyhook's tables live in. Default `keyhook`. */
  schema?: string;
  /** Connections in the pool the store creates. Default 10. */
  poolSize?: number;
  /** How long the store's own pool waits for a connection before failing `unavailable`. Default 5000 ms. */
  connectionTimeoutMillis?: number;
  /**
   * The longest one of the store's statements may run before it fails `unavailable` (503), in ms.
   * Default 5000; a statement whose work grows with a queue (holding an endpoint's deliveries,
   * deleting an endpoint) gets 12 times as long; 0 turns the bound off. On the store's own pool
   * it is the server's `statement_timeout`, and the client gives up 1 s later (a network that
   * stopped answering); with your own `pool`, only the client's bound is the store's, and the
   * server keeps the one you set on the pool or the role.
   */
  statementTimeoutMs?: number;
  /**
   * How long a transaction on the store's own pool may sit idle before the server ends it and
   * frees its locks (`idle_in_transaction_session_timeout`), in ms. Default 10000; 0 turns it off.
   * Not combinable with `pool`: set it on yours.
   */
  idleInTransactionTimeoutMs?: number;
  /**
   * Where idle-connection errors of the store's own pool, and each migration applied (one line at
   * `info` with its duration; its start, schema and checksum at `debug`), are reported. Default: console.
   */
  logger?: Logger;
  /**
   * Let core cache verified keys, kept fresh by LISTEN/NOTIFY (one pool connection listens).
   * Off by default: another instance's revoke can then reach this one a notification's delay
   * (about a millisecond) late, and docs/decisions.md §3.9 asks for the very next request. Off,
   * every verification reads the row and the bound is zero.
   */
  verifiedKeyCache?: boolean;
  /**
   * `'apply'` (default): pending migrations run as the store opens. `'refuse'`: opening fails,
   * writing nothing, while any is pending; apply them ahead with `migrate()` or
   * `npx keyhook migrate` in a release step.
   */
  migrations?: MigrationsMode;
  /**
   * Send the statements of the delivery path and of key verification as named (prepared)
   * statements, parsed once per connection. Default true. Set false behind a pooler that cannot
   * carry them: PgBouncer in transaction mode before 1.21, or without `max_prepared_statements`.
   */
  preparedStatements?: boolean;
}

/**
 * Opens a PostgresStore once its schema is up to date: pending migrations are applied first, or,
 * with `migrations: 'refuse'`, refused. Rejects with `KeyhookError('unavailable')` when the
 * database cannot be reached, and in either mode when the schema records a migration this version
 * does not ship (a newer release migrated it) or a shipped one under another name.
 */
export async function createPostgresStore(options: PostgresStoreOptions = {}): Promise<PostgresStore> {
  const schema = assertSchemaName(options.schema ?? DEFAULT_SCHEMA);
  const mode = migrationsMode(options.migrations);
  assertOneSource(options);
  if (isPostgresJs(options.pool) && options.verifiedKeyCache)
    throw new TypeError(
      'keyhook: `verifiedKeyCache` needs a pg.Pool: postgres.js does not report a lost LISTEN connection, ' +
        'so a revoke sent meanwhile could go unheard. Leave it off with a postgres.js `sql`.',
    );
  if (options.pool && !isPostgresJs(options.pool)) assertPoolServesStore(options.pool);
  const logger = options.logger ?? consoleLogger;
  const ownsPool = options.pool === undefined;
  // Checked before anything opens (the store takes the same value).
  new StatementBounds(options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS, ownsPool);
  const pool = options.pool ? hostPool(options.pool) : openPool(options, logger);
  const source = isPostgresJs(options.pool) ? postgresJsNotifications(options.pool) : poolNotifications(pool);
  const feed = new KeyChangeFeed(source, schema, logger);
  try {
    if (mode === 'apply') await applyMigrations(pool, schema, logger);
    else await refuseIfPending(pool, schema);
    if (options.verifiedKeyCache) await feed.start();
  } catch (error) {
    await feed.stop();
    if (ownsPool) await pool.end().catch(() => {});
    throw toStoreError(error);
  }
  return new PostgresStore({
    pool,
    schema,
    ownsPool,
    feed,
    logger,
    preparedStatements: options.preparedStatements ?? true,
    statementTimeoutMs: options.statementTimeoutMs,
  });
}

/**
 * A host's pool must hold the store's listening connection (held for as long as a worker or the
 * verified-key cache runs) and still have one for the store's statements: `max` of at least 2.
 */
function assertPoolServesStore(pool: pg.Pool): void {
  const max = (pool as pg.Pool & { options?: { max?: unknown } }).options?.max;
  if (typeof max === 'number' && max < 2) {
    throw new TypeError(
      `keyhook: the store needs a pool of at least 2 connections (this one has max ${max}): it holds one ` +
        'for LISTEN while a worker or the verified-key cache runs, and runs its statements on the others.',
    );
  }
}
