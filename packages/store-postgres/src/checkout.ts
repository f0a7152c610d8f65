import type pg from 'pg';

/**
 * Checks a client out of `pool` and listens for its 'error' until it is released. pg-pool drops
 * its own listener while a client is out; a server that ends the connection then (a restart, a
 * failover, a reset, pg_terminate_backend) emits 'error' on the client, and unheard that is an
 * uncaught exception that kills the process. The query in flight fails on its own.
 *
 * `release()` works as pg's, and destroys the client (never pools it) once its connection failed.
 * Every checkout in keyhook and its examples goes through here (or `withTransaction`); the
 * Postgres test suites fail on one that does not (`@keyhook/testing/pg-checkouts`).
 */
export async function checkOut(pool: pg.Pool, onError?: (error: Error) => void): Promise<pg.PoolClient> {
  const client = await pool.connect();
  let broken = false;
  const listener = (error: Error) => {
    broken = true;
    onError?.(error);
  };
  client.on('error', listener);
  // pg-pool gives each checkout a release of its own, so this wrapper ends with it.
  const release = client.release;
  client.release = (destroy?: Error | boolean) => {
    client.off('error', listener);
    release.call(client, broken || destroy);
  };
  return client;
}

export interface TransactionOptions {
  /** The statement that opens the transaction. Default `BEGIN`. */
  begin?: string;
  /**
   * pg's client-side `query_timeout` for BEGIN, COMMIT and ROLLBACK, in ms, as the store bounds
   * its own statements: a COMMIT sent into a network that no longer answers fails rather than
   * waits for TCP to give up. Default none.
   */
  readTimeout?: number | undefined;
}

/**
 * Runs `work` in one transaction on one client of `pool`: COMMIT when it resolves, ROLLBACK when
 * it throws, and the client destroyed rather than pooled when its connection failed, its ROLLBACK
 * failed, or a statement timed out client-side (the connection may still be busy with it). Errors
 * come out as they were thrown; a host maps them (`toStoreError` makes connection failures `unavailable`).
 */
export async function withTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
  options: TransactionOptions = {},
): Promise<T> {
  let broken = false;
  const client = await checkOut(pool, () => {
    broken = true;
  });
  const control = (text: string) =>
    client.query(
      options.readTimeout === undefined
        ? text
        : ({ text, query_timeout: options.readTimeout } as pg.QueryConfig),
    );
  try {
    await control(options.begin ?? 'BEGIN');
    const result = await work(client);
    await control('COMMIT');
    return result;
  } catch (error) {
    if (!broken && !isReadTimeout(error)) {
      await control('ROLLBACK').catch(() => {
        broken = true;
      });
    } else {
      broken = true;
    }
    throw error;
  } finally {
    client.release(broken);
  }
}

/** pg's client-side `query_timeout`: the server may still be running the statement, or never got it. */
export function isReadTimeout(error: unknown): boolean {
  return error instanceof Error && error.message === 'Query read timeout';
}

/**
 * Listens for the connection errors of every client of `pool`, idle or checked out, for as long
 * as the pool lives; `onError` hears each. For a pool whose clients a data layer checks out
 * itself (Drizzle's and Kysely's transactions call `pool.connect()` and attach no listener), so
 * that a reset while one is out fails its statement rather than the process (docs/decisions.md
 * §20.4). Returns `pool`.
 */
export function guardPool(pool: pg.Pool, onError: (error: Error) => void): pg.Pool {
  pool.on('error', onError);
  pool.on('acquire', (client) => client.on('error', onError));
  pool.on('release', (_error, client) => client.off('error', onError));
  return pool;
}
