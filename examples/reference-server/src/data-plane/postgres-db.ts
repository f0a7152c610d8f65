import {
  DEFAULT_CONNECTION_TIMEOUT_MS,
  DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS,
  DEFAULT_STATEMENT_TIMEOUT_MS,
  toStoreError,
  withTransaction,
} from '@keyhook/store-postgres';
import pg from 'pg';
import type { ReferenceKeyhook } from '../catalog.js';
import type { SqlParam, StagingDb, Tx } from './db.js';

const INT8_OID = 20;

/** `?` placeholders as Postgres numbers them (`$1`, `$2`, …); the staging SQL has no `?` in literals. */
export function numberPlaceholders(sql: string): string {
  let index = 0;
  return sql.replace(/\?/g, () => `$${++index}`);
}

/**
 * The data plane's tables on Postgres, in `schema`, through a pool of its own (the keyhook store has
 * its own). An event is published on the transaction's client, so it commits or rolls back
 * with the state change that caused it.
 */
export function postgresStagingDb(
  options: {
    connectionString: string;
    schema: string;
    max?: number;
    /** The bounds keyhook's store keeps (docs/decisions.md §20.2), in ms; 0 for none. */
    statementTimeoutMs?: number;
    idleInTransactionTimeoutMs?: number;
    /** How long a request waits for a connection. Default the store's, 5 s. */
    connectTimeoutMs?: number;
  },
  events: ReferenceKeyhook['events'],
): StagingDb {
  const statementTimeout = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  const idleTimeout = options.idleInTransactionTimeoutMs ?? DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS;
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_CONNECTION_TIMEOUT_MS,
    // As the store's own pool: the server cancels a statement past the bound, and the client gives
    // up a second later on one the network swallowed.
    ...(statementTimeout > 0 && {
      statement_timeout: statementTimeout,
      query_timeout: statementTimeout + 1000,
    }),
    ...(idleTimeout > 0 && { idle_in_transaction_session_timeout: idleTimeout }),
    keepAlive: true,
    // Counts and milliseconds are BIGINT; they fit a JavaScript number. This pool only.
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        oid === INT8_OID
          ? (value: string) => Number(value)
          : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
    options: `-c search_path=${options.schema}`,
  });
  // An idle client's error (the server restarted) must not crash the process; the next query reports it.
  pool.on('error', () => {});
  const sqlCache = new Map<string, string>();
  const numbered = (sql: string) => {
    let text = sqlCache.get(sql);
    if (text === undefined) {
      text = numberPlaceholders(sql);
      sqlCache.set(sql, text);
    }
    return text;
  };
  const on = (client: pg.Pool | pg.PoolClient): Tx => {
    const query = async <T>(sql: string, params: readonly SqlParam[]) => {
      try {
        return await client.query<T & pg.QueryResultRow>(numbered(sql), params as unknown[]);
      } catch (error) {
        throw toStoreError(error);
      }
    };
    return {
      all: async <T>(sql: string, params: readonly SqlParam[] = []) => (await query<T>(sql, params)).rows,
      get: async <T>(sql: string, params: readonly SqlParam[] = []) => (await query<T>(sql, params)).rows[0],
      run: async (sql: string, params: readonly SqlParam[] = []) => (await query(sql, params)).rowCount ?? 0,
      exec: async (sql: string) => {
        try {
          await client.query(sql); // the simple protocol: several statements, no parameters
        } catch (error) {
          throw toStoreError(error);
        }
      },
      publish: async (input) => {
        if (client === pool) throw new Error('staging: an event is published inside a transaction only');
        await events.publish(input, { transaction: client });
      },
    };
  };
  return {
    dialect: 'postgres',
    async transaction(work) {
      try {
        return await withTransaction(pool, (client) => work(on(client)));
      } catch (error) {
        throw toStoreError(error);
      }
    },
    read: (work) => work(on(pool)),
    close: () => pool.end(),
  };
}
