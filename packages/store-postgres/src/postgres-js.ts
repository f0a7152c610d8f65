import { EventEmitter } from 'node:events';
import type pg from 'pg';
import type { NotificationSource } from './change-feed.js';

/**
 * What the store uses of a postgres.js `sql` (3.4 and later): its statements, a reserved
 * connection for each of the store's transactions, and `listen`. Structural, so that postgres.js
 * is no dependency of keyhook's.
 */
export interface PostgresJsSql {
  /** Runs each of the store's statements. */
  unsafe(text: string, values?: never[], options?: { prepare?: boolean }): PromiseLike<unknown>;
  /** A connection for each of the store's transactions, for the transaction's length. */
  reserve(): PromiseLike<unknown>;
  /** The store's wake-ups, on postgres.js's own listening connection. */
  listen(channel: string, onnotify: (payload: string) => void, onlisten?: () => void): PromiseLike<unknown>;
  /** Read to refuse a `sql` whose rows the store could not read (transforms, `fetch_types: false`). */
  options: object;
}

interface PendingQuery extends PromiseLike<RowList> {
  cancel(): unknown;
  /** Rows as arrays of their cells (pg's `rowMode: 'array'`); the same query. */
  values(): PendingQuery;
}

type RowList = (Record<string, unknown> | unknown[])[] & { count?: number | null };

interface Runner {
  unsafe(text: string, values: unknown[], options: { prepare: boolean }): PendingQuery;
}

interface ReservedSql extends Runner {
  release(): void;
}

interface ListenHandle {
  unlisten(): Promise<unknown>;
}

interface SqlInternals extends Runner {
  reserve(): Promise<ReservedSql>;
  listen(channel: string, onnotify: (payload: string) => void, onlisten?: () => void): Promise<ListenHandle>;
  options: {
    fetch_types?: unknown;
    transform?: { column?: { from?: unknown }; value?: { from?: unknown }; row?: { from?: unknown } };
  };
}

/** Whether `pool` is one of postgres.js's `sql`s (top-level, reserved or a transaction's) rather than a pg.Pool. */
export function isPostgresJs(pool: unknown): pool is PostgresJsSql {
  return (
    typeof pool === 'function' && typeof (pool as unknown as Record<string, unknown>).unsafe === 'function'
  );
}

/**
 * A postgres.js `sql` seen as the part of a pg.Pool the store uses: `query`, `connect` (a
 * reserved connection as a client) and `end` (a no-op: the host owns its `sql`). A TypeError for
 * a `sql` whose rows the store could not read as it writes them: a transaction's or a reserved
 * `sql`, column, value or row transforms, or `fetch_types: false` (arrays then come back as text).
 */
export function postgresJsPool(source: PostgresJsSql): pg.Pool {
  const sql = source as unknown as SqlInternals & Record<string, unknown>;
  if (
    typeof sql.reserve !== 'function' ||
    typeof sql.savepoint === 'function' ||
    typeof sql.release === 'function'
  )
    throw new TypeError(
      "keyhook: `pool` is a postgres.js transaction's or reserved `sql`; pass the top-level `sql` that postgres() returned.",
    );
  const transform = sql.options.transform;
  if (transform?.column?.from || transform?.value?.from || transform?.row?.from)
    throw new TypeError(
      'keyhook: `pool` is a postgres.js `sql` that transforms the rows it reads (`transform`); the store reads ' +
        "columns by their own names: pass a `sql` without one (postgres(url) with the host's other options).",
    );
  if (sql.options.fetch_types === false)
    throw new TypeError(
      'keyhook: `pool` is a postgres.js `sql` with `fetch_types: false`, which reads arrays as text; pass one that fetches types.',
    );
  return new PostgresJsPool(sql) as unknown as pg.Pool;
}

/** LISTEN on postgres.js's own listening connection (one per `sql`, outside its `max`). */
export function postgresJsNotifications(source: PostgresJsSql): NotificationSource {
  const sql = source as unknown as SqlInternals;
  return {
    // postgres.js re-listens by itself after a lost connection and says so only by calling
    // `onlisten` again; it never reports the loss. So it serves delivery wake-ups (workers poll
    // meanwhile), never the verified-key cache (src/options.ts refuses it).
    reportsLoss: false,
    async listen(channels, events) {
      let listening = false;
      const onlisten = () => {
        if (listening) events.resumed();
      };
      const handles = await Promise.allSettled(
        channels.map((channel) =>
          sql.listen(channel, (payload) => events.notification(channel, payload), onlisten),
        ),
      );
      const held = handles.flatMap((handle) => (handle.status === 'fulfilled' ? [handle.value] : []));
      const close = () => {
        for (const handle of held) handle.unlisten().catch(() => {});
      };
      const failed = handles.find((handle) => handle.status === 'rejected');
      if (failed) {
        close();
        throw failed.reason;
      }
      listening = true;
      return { close };
    },
  };
}

/** pg's query arguments as the store passes them: a config, or a text with its values. */
function statementOf(
  statement: string | (pg.QueryConfig & { query_timeout?: number }),
  values?: unknown[],
): { text: string; values: unknown[]; prepare: boolean; byPosition: boolean; timeoutMs: number | undefined } {
  if (typeof statement === 'string')
    return { text: statement, values: values ?? [], prepare: false, byPosition: false, timeoutMs: undefined };
  return {
    text: statement.text,
    values: statement.values ?? [],
    // A named statement on pg is a prepared one on postgres.js (which names it by its text).
    prepare: statement.name !== undefined,
    byPosition: (statement as { rowMode?: string }).rowMode === 'array',
    timeoutMs: statement.query_timeout,
  };
}

/**
 * One statement on `runner`, its rows as pg's result: objects, or arrays for pg's `rowMode:
 * 'array'`. A Date goes as ISO text (pg sends one in local time; either is the same instant).
 * With a bound, the statement is cancelled on the server when it runs out, and the caller hears
 * pg's own "Query read timeout" (src/unavailable.ts).
 */
function run(
  runner: Runner,
  statement: string | pg.QueryConfig,
  values?: unknown[],
): Promise<{ rows: (Record<string, unknown> | unknown[])[]; rowCount: number | null }> {
  const { text, values: args, prepare, byPosition, timeoutMs } = statementOf(statement, values);
  const query = runner.unsafe(
    text,
    args.map((value) => (value instanceof Date ? value.toISOString() : value)),
    { prepare },
  );
  const pending = byPosition ? query.values() : query;
  const answer = Promise.resolve(pending).then(
    (rows) => ({ rows, rowCount: rows.count ?? null }),
    (error: unknown) => {
      throw withPgFields(error);
    },
  );
  if (timeoutMs === undefined) return answer;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      pending.cancel();
      reject(new Error('Query read timeout'));
    }, timeoutMs);
    answer.then(resolve, reject).finally(() => clearTimeout(timer));
  });
}

/** postgres.js's names of a server error's fields, and pg's (which the store reads). */
const PG_FIELDS = [
  ['constraint_name', 'constraint'],
  ['table_name', 'table'],
  ['column_name', 'column'],
  ['schema_name', 'schema'],
  ['data_type_name', 'dataType'],
] as const;

/** A postgres.js error with pg's names of its fields beside its own. */
function withPgFields(error: unknown): unknown {
  if (error === null || typeof error !== 'object') return error;
  const fields = error as Record<string, unknown>;
  for (const [from, to] of PG_FIELDS)
    if (fields[from] !== undefined && fields[to] === undefined) fields[to] = fields[from];
  return error;
}

class PostgresJsPool {
  constructor(private readonly sql: SqlInternals) {}

  query(statement: string | pg.QueryConfig, values?: unknown[]) {
    return run(this.sql, statement, values);
  }

  async connect(): Promise<PostgresJsClient> {
    return new PostgresJsClient(await this.sql.reserve());
  }

  /** The host owns its `sql`: the store never ends it. */
  async end(): Promise<void> {}
}

/**
 * A reserved connection as a pg client. Its errors surface on its statements (postgres.js emits
 * no event), so 'error' never fires; `release(true)` is `release()`, since postgres.js closes a
 * reserved connection that comes back inside a transaction or with a statement in flight.
 */
class PostgresJsClient extends EventEmitter {
  private released = false;

  constructor(private readonly reserved: ReservedSql) {
    super();
  }

  query(statement: string | pg.QueryConfig, values?: unknown[]) {
    return run(this.reserved, statement, values);
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.reserved.release();
  }
}
