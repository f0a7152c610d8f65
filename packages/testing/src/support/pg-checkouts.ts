import pg from 'pg';

type Callback = (error: Error | undefined, client: pg.PoolClient | undefined, done: unknown) => void;

const unguarded: Error[] = [];
let watching = false;

/**
 * Makes every `pool.connect()` of pg in this process report a client that nobody listens on for
 * 'error' while it is checked out: the crash of docs/decisions.md §20.4, waiting for a reset.
 * Looked at once the caller's own code after the checkout has run (the next macrotask), so
 * `checkOut` and `withTransaction` of `@keyhook/store-postgres` and pg-pool's own `pool.query`
 * pass, and a bare `await pool.connect()` followed by a query does not.
 */
export function watchPgCheckouts(): void {
  if (watching) return;
  watching = true;
  const prototype = pg.Pool.prototype as unknown as { connect(callback?: Callback): unknown };
  const connect = prototype.connect;
  prototype.connect = function (this: pg.Pool, callback?: Callback) {
    const at = new Error('a pg client was checked out with no listener for its connection errors');
    if (typeof callback === 'function') {
      return connect.call(this, (error, client, done) => {
        callback(error, client, done);
        if (client) inspect(client, at);
      });
    }
    return (connect.call(this) as Promise<pg.PoolClient>).then((client) => {
      setImmediate(() => inspect(client, at));
      return client;
    });
  };
}

function inspect(client: pg.PoolClient, at: Error): void {
  // Released by then, the client has pg-pool's idle listener back.
  if (client.listenerCount('error') === 0) unguarded.push(at);
}

/** The unguarded checkouts seen since the last call, each with the stack of its `connect()`. */
export function takeUnguardedCheckouts(): Error[] {
  return unguarded.splice(0);
}
