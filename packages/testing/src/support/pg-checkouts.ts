import pg from 'pg';

type Callback = (error: Error | undefined, client: pg.PoolClient | undefined, done: unknown) => void;

const unguarded: Error[] = [];
let watching = false;

/**
 * Makes every `pool.connect()` of pg in this process report a client that nobody listens on for
 * 'error' while it is checked out: the crash of docs/decisions.md §20.4, waiting for a reset.
 * Looked at once the caller's own code after the checkout has run (the next macrotask), so
 * `checkOut` and `withTransaction` of `@keyhook/store-postgres` and pg-pool's own `pool.query`
 * pass, and a bare `await pool.connect()` followed by a query does not. A checkout a dependency
 * makes (a host's data layer, such as TypeORM or Kysely, on its own pool) is its own concern
 * and is not reported: the rule is for the code in this repository.
 */
export function watchPgCheckouts(): void {
  if (watching) return;
  watching = true;
  const prototype = pg.Pool.prototype as unknown as { connect(callback?: Callback): unknown };
  const connect = prototype.connect;
  prototype.connect = function watchedConnect(this: pg.Pool, callback?: Callback) {
    if (checkedOutByDependency(watchedConnect)) return connect.call(this, callback);
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

/** Whether the code that called `connect` (pg-pool's own callers passed over) lives in node_modules. */
function checkedOutByDependency(connect: (...args: never[]) => unknown): boolean {
  const saved = Error.prepareStackTrace;
  Error.prepareStackTrace = (_error, sites) => sites;
  const holder: { stack?: NodeJS.CallSite[] } = {};
  Error.captureStackTrace(holder, connect);
  const sites = holder.stack ?? [];
  Error.prepareStackTrace = saved;
  const caller = sites
    .map((site) => site.getFileName() ?? '')
    .find((file) => file !== '' && !file.startsWith('node:') && !file.includes('/node_modules/pg-pool/'));
  return caller?.includes('/node_modules/') ?? false;
}

function inspect(client: pg.PoolClient, at: Error): void {
  // Released by then, the client has pg-pool's idle listener back.
  if (client.listenerCount('error') === 0) unguarded.push(at);
}

/** The unguarded checkouts seen since the last call, each with the stack of its `connect()`. */
export function takeUnguardedCheckouts(): Error[] {
  return unguarded.splice(0);
}
