import { readIsoTimestamptz } from './timestamps.js';

/**
 * One statement of keyhook's, run inside a transaction of yours: `text` with `$1…` placeholders
 * and its `values`; resolves with its rows. The way in for a data layer keyhook does not
 * recognise: wrap its transaction in one and pass it as `{ transaction }`.
 */
export interface SqlExecutor {
  /** Runs `text` with `values` for its `$1…` inside your transaction; resolves with the rows it returned. */
  executeSql(text: string, values: unknown[]): Promise<readonly Record<string, unknown>[]>;
}

/** A statement as the store sends it: pg's query config (a name for a prepared one, a bound, parsers). */
export interface StatementConfig {
  text: string;
  values?: unknown[];
  name?: string;
}

/**
 * What the store's statements run on: a pg client (the store's pool client, or yours), or a
 * transaction of another data layer seen through its `SqlExecutor`. Rows come back as pg's
 * default parsers give them: timestamptz as a Date, int4 as a number.
 */
export interface Queryable {
  query<R = Record<string, unknown>>(statement: StatementConfig | string): Promise<StatementResult<R>>;
  /** False when a column of type `void` cannot be read (Prisma refuses it): the store then sends a text one. */
  readsVoid?: boolean;
}

/** A statement's rows; how many it changed when the client says (pg does; an executor does not). */
export interface StatementResult<R> {
  rows: R[];
  rowCount?: number | null;
}

/** A caller's transaction the store publishes in. */
export interface JoinedTransaction {
  /** The data layer it came from, for messages. */
  library: string;
  /**
   * For a layer that pays a round trip through itself on every statement and cannot prepare one
   * (Prisma): what lets the store publish in one call (src/publish-function.ts).
   */
  oneCall?: OneCallLayer;
  /**
   * Runs `work` in a savepoint of the transaction: released when it resolves; rolled back to,
   * and released, when it throws, which leaves the caller's transaction usable.
   */
  inSavepoint<T>(name: string, work: (client: Queryable) => Promise<T>): Promise<T>;
}

export interface OneCallLayer {
  /** An object that stands for the layer's database: the same for every transaction of one client. */
  database: object;
  executor: SqlExecutor;
}

/** SAVEPOINT, the work, RELEASE; on failure ROLLBACK TO and RELEASE (`undo`), and the failure rethrown. */
async function withSavepoint<T>(
  client: Queryable,
  name: string,
  work: (client: Queryable) => Promise<T>,
  undo: () => Promise<unknown>,
): Promise<T> {
  await client.query(`SAVEPOINT ${name}`);
  try {
    const result = await work(client);
    await client.query(`RELEASE SAVEPOINT ${name}`);
    return result;
  } catch (error) {
    await undo().catch(() => {});
    throw error;
  }
}

/** What `{ transaction }` takes on Postgres, as every refusal says. */
export const ACCEPTED_TRANSACTIONS =
  'a pg client on which BEGIN ran; the `sql` of postgres.js `sql.begin()`; the `tx` of a Drizzle ' +
  '`db.transaction()` (node-postgres or postgres-js driver); the `trx` of Kysely ' +
  '`db.transaction().execute()`; the `trx` of `knex.transaction()`; the `tx` of Prisma ' +
  '`$transaction()`; the EntityManager or QueryRunner of a TypeORM transaction; or a SqlExecutor';

export function refused(what: string): TypeError {
  return new TypeError(`keyhook: \`transaction\` ${what}. It takes ${ACCEPTED_TRANSACTIONS}.`);
}

/**
 * SQLSTATE of an error from any of the data layers: `code` (pg, postgres.js, TypeORM's copy),
 * TypeORM's `driverError`, Prisma's `meta.driverAdapterError.cause.originalCode`.
 */
export function sqlStateOf(error: unknown, depth = 0): string | undefined {
  if (error === null || typeof error !== 'object' || depth > 4) return undefined;
  const { code, originalCode, meta, driverError, cause } = error as {
    code?: unknown;
    originalCode?: unknown;
    meta?: { driverAdapterError?: unknown } | null;
    driverError?: unknown;
    cause?: unknown;
  };
  // Prisma's own codes (P2010, …) look like SQLSTATEs: its driver's error, when there is one, comes first.
  const adapterState = sqlStateOf(meta?.driverAdapterError, depth + 1);
  if (adapterState !== undefined) return adapterState;
  for (const candidate of [originalCode, code])
    if (typeof candidate === 'string' && /^[0-9A-Z]{5}$/.test(candidate)) return candidate;
  return sqlStateOf(driverError, depth + 1) ?? sqlStateOf(cause, depth + 1);
}

/**
 * `transaction` as a JoinedTransaction, by what it is; a TypeError naming what is accepted for
 * anything else, for a data layer's object that is not inside a transaction, and for one whose
 * transaction has finished, when the library can tell. Nothing has been sent when it throws.
 */
export function joinTransaction(transaction: unknown): JoinedTransaction {
  if (transaction === null || (typeof transaction !== 'object' && typeof transaction !== 'function'))
    throw refused('must be a transaction object');
  const t = transaction as Record<string, unknown> & ((...args: unknown[]) => unknown);
  if (typeof t.executeSql === 'function') return throughExecutor(t as unknown as SqlExecutor, 'SqlExecutor');
  const drizzleKind = drizzleKindOf(t);
  if (drizzleKind !== undefined) return drizzle(t, drizzleKind);
  if (typeof t === 'function' && typeof t.unsafe === 'function') return postgresJs(t);
  if (typeof t === 'function' && typeof t.raw === 'function' && 'isTransaction' in t) return knex(t);
  if (typeof t.executeQuery === 'function' && typeof t.withoutPlugins === 'function') return kysely(t);
  if (typeof t.$queryRawUnsafe === 'function') return prisma(t);
  if (typeof t.query === 'function' && 'queryRunner' in t) return typeormManager(t);
  if (typeof t.query === 'function' && typeof t.isTransactionActive === 'boolean') return typeormRunner(t);
  if (typeof t.query === 'function' && typeof t.totalCount !== 'number')
    return pgClient(t as unknown as Queryable);
  if (typeof t.totalCount === 'number')
    throw refused('is a pg.Pool, whose queries may each run on another connection; pass a client from it');
  throw refused('is not a transaction keyhook recognises');
}

/** A pg client: the store's statements as they are (their names, bound and parsers); one round trip to undo. */
function pgClient(client: Queryable, library = 'pg'): JoinedTransaction {
  return {
    library,
    inSavepoint: (name, work) =>
      withSavepoint(client, name, work, () =>
        client.query(`ROLLBACK TO SAVEPOINT ${name}; RELEASE SAVEPOINT ${name}`),
      ),
  };
}

/** What runs a SqlExecutor's statements: rows decoded to what pg's parsers give. */
function executorClient(executor: SqlExecutor): Queryable {
  return {
    readsVoid: false,
    async query<R>(statement: StatementConfig | string) {
      const { text, values = [] } = typeof statement === 'string' ? { text: statement } : statement;
      return { rows: readExecutorRows(await executor.executeSql(text, values)) as R[] };
    },
  };
}

/** Rows from a SqlExecutor, as pg's parsers would give them (decodeRow). */
export function readExecutorRows(rows: readonly Record<string, unknown>[]): Record<string, unknown>[] {
  return rows.map(decodeRow);
}

/** A SqlExecutor, and the data layers that go through one: undone in two statements. */
function throughExecutor(executor: SqlExecutor, library: string): JoinedTransaction {
  const client = executorClient(executor);
  return {
    library,
    inSavepoint: (name, work) =>
      withSavepoint(client, name, work, async () => {
        await client.query(`ROLLBACK TO SAVEPOINT ${name}`);
        await client.query(`RELEASE SAVEPOINT ${name}`);
      }),
  };
}

/**
 * A row from a data layer whose parsers differ from pg's: a bigint (Prisma) becomes a number,
 * and a timestamp column's text (`…_at`, `…_since`; Drizzle's node-postgres driver reads them
 * as text) a Date.
 */
function decodeRow(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) {
    if (typeof value === 'bigint') out[key] = Number(value);
    else if (typeof value === 'string' && (key.endsWith('_at') || key.endsWith('_since')))
      out[key] = readIsoTimestamptz(value) ?? new Date(value);
    else out[key] = value;
  }
  return out;
}

/** A Date as ISO 8601 text with its offset; any other value as it is. */
function isoDate(value: unknown): unknown {
  return value instanceof Date ? value.toISOString() : value;
}

/** drizzle-orm's name for the class of `value` (its `entityKind`), when it is one of Drizzle's. */
function drizzleKindOf(value: object): string | undefined {
  const kind = (value.constructor as unknown as Record<symbol, unknown> | undefined)?.[
    Symbol.for('drizzle:entityKind')
  ];
  return typeof kind === 'string' ? kind : undefined;
}

/**
 * A Drizzle transaction reaches keyhook through its driver's own transaction: the pg client of
 * node-postgres, or the `sql` of postgres-js's `begin` (`tx._.session.client`).
 */
function drizzle(tx: Record<string, unknown>, kind: string): JoinedTransaction {
  if (kind === 'NodePgDatabase' || kind === 'PostgresJsDatabase' || kind.endsWith('Database'))
    throw refused(
      `is a Drizzle database (${kind}), not inside a transaction: pass the \`tx\` of db.transaction()`,
    );
  const client = (tx._ as { session?: { client?: unknown } } | undefined)?.session?.client;
  if (kind === 'NodePgTransaction' && client !== undefined) return pgClient(client as Queryable, 'drizzle');
  if (kind === 'PostgresJsTransaction' && typeof client === 'function')
    return postgresJs(client as never, 'drizzle');
  throw refused(`is a Drizzle ${kind}; keyhook joins Drizzle's node-postgres and postgres-js transactions`);
}

/** Prepared, as on pg; a host's `postgres({ prepare: false })` (a pooler in transaction mode) still wins. */
const PREPARED = { prepare: true };

type PostgresJsSql = ((...args: never[]) => unknown) & {
  unsafe(
    text: string,
    values: unknown[],
    options: { prepare: boolean },
  ): Promise<readonly Record<string, unknown>[]>;
  savepoint<T>(work: (sql: PostgresJsSql) => Promise<T>): Promise<T>;
};

/**
 * postgres.js: the `sql` that `sql.begin()` hands its callback (it has `savepoint`; the top-level
 * `sql` has not). The publish runs in its `savepoint()`: a statement that fails inside a bare
 * SAVEPOINT would still fail the whole `begin()`, which remembers every error it saw.
 */
function postgresJs(sql: Record<string, unknown>, library = 'postgres.js'): JoinedTransaction {
  if (typeof sql.savepoint !== 'function')
    throw refused(
      'is a postgres.js `sql` outside a transaction: pass the `sql` that sql.begin() gives its callback',
    );
  const tx = sql as unknown as PostgresJsSql;
  return {
    library,
    async inSavepoint(_name, work) {
      try {
        return await tx.savepoint((sp) =>
          work(
            executorClient({
              // A Date as ISO text: Drizzle's postgres-js driver replaces the timestamp serializers with ones that take text.
              executeSql: (text, values) => sp.unsafe(text, values.map(isoDate), PREPARED),
            }),
          ),
        );
      } catch (error) {
        if ((error as { code?: unknown }).code === 'UNSAFE_TRANSACTION')
          throw refused(`is a ${library} transaction that has already ended`);
        throw error;
      }
    },
  };
}

/** Knex (client `pg`): through the connection its transaction holds (`trx.client.acquireConnection()`). */
function knex(trx: Record<string, unknown>): JoinedTransaction {
  if (trx.isTransaction !== true)
    throw refused('is a Knex instance, not inside a transaction: pass the `trx` of knex.transaction()');
  if ((trx.isCompleted as () => boolean)())
    throw refused('is a Knex transaction that has already committed or rolled back');
  const dialect = ((trx.client as { config?: { client?: unknown } } | undefined)?.config?.client ??
    '') as unknown;
  if (typeof dialect === 'string' && !/^(pg|postgres|postgresql|pgnative)$/.test(dialect))
    throw refused(`is a Knex transaction on ${dialect}, not PostgreSQL`);
  // The transaction's own pg client, so the statements go as on pg: named, parsed once per connection.
  const acquire = (trx.client as { acquireConnection: () => Promise<Queryable> }).acquireConnection;
  return {
    library: 'knex',
    inSavepoint: async (name, work) =>
      pgClient(await acquire.call(trx.client), 'knex').inSavepoint(name, work),
  };
}

interface KyselyConnection {
  executeQuery(query: unknown): Promise<{ rows: Record<string, unknown>[] }>;
}

/**
 * Kysely: the statements on the transaction's own connection (`provideConnection`), past the
 * instance's plugins (a CamelCasePlugin would rename the columns). Kysely's pg connection hands a
 * query's `sql` to pg's `client.query` as it is, so there it gets the store's query config and the
 * statements go as on pg: named, parsed once per connection. Any other connection gets the text.
 */
function kysely(trx: Record<string, unknown>): JoinedTransaction {
  if (trx.isTransaction !== true)
    throw refused(
      'is a Kysely instance, not inside a transaction: pass the `trx` of db.transaction().execute()',
    );
  const executor = (
    trx.getExecutor as () => {
      provideConnection<T>(consumer: (connection: KyselyConnection) => Promise<T>): Promise<T>;
    }
  ).call(trx);
  return {
    library: 'kysely',
    async inSavepoint(name, work) {
      try {
        return await executor.provideConnection((connection) => {
          const run = (sql: unknown, text: string, parameters: unknown[]) =>
            connection.executeQuery({
              sql,
              parameters,
              query: { kind: 'RawNode', sqlFragments: [text], parameters: [] },
              queryId: { queryId: 'keyhook' },
            });
          if (connection.constructor.name === 'PostgresConnection') {
            const client: Queryable = {
              async query<R>(statement: StatementConfig | string) {
                const config = typeof statement === 'string' ? { text: statement } : statement;
                return { rows: (await run(config, config.text, config.values ?? [])).rows as R[] };
              },
            };
            return pgClient(client, 'kysely').inSavepoint(name, work);
          }
          return throughExecutor(
            { executeSql: async (text, values) => (await run(text, text, values)).rows },
            'kysely',
          ).inSavepoint(name, work);
        });
      } catch (error) {
        if (error instanceof Error && /^Transaction is already (committed|rolled back)/.test(error.message))
          throw refused('is a Kysely transaction that has already committed or rolled back');
        throw error;
      }
    },
  };
}

/** Prisma: the `tx` of an interactive `$transaction` (the top-level client has `$transaction`; `tx` has not). */
function prisma(tx: Record<string, unknown>): JoinedTransaction {
  // The top-level client has $connect; the `tx` of an interactive transaction has not (both have $transaction).
  if (typeof tx.$connect === 'function')
    throw refused(
      'is a Prisma client, not inside a transaction: pass the `tx` of prisma.$transaction(async (tx) => …)',
    );
  const queryRaw = tx.$queryRawUnsafe as (
    text: string,
    ...values: unknown[]
  ) => Promise<Record<string, unknown>[]>;
  const executor: SqlExecutor = {
    async executeSql(text, values) {
      try {
        // A Date as ISO text: @prisma/adapter-pg sends a Date without its offset, read in the session's time zone.
        return await queryRaw.call(tx, text, ...values.map(isoDate));
      } catch (error) {
        // P2028: the transaction has ended (committed, rolled back, or timed out).
        if ((error as { code?: unknown }).code === 'P2028')
          throw refused('is a Prisma transaction that has already finished');
        throw error;
      }
    },
  };
  const joined = throughExecutor(executor, 'prisma');
  // Every transaction of one client shares its engine, and so its database (Prisma's internals; the tests pin it).
  const engine = tx._engine;
  if (engine !== null && typeof engine === 'object') joined.oneCall = { database: engine, executor };
  return joined;
}

interface TypeormRunner {
  databaseConnection: Queryable;
  isTransactionActive: boolean;
  isReleased: boolean;
  connection?: { options?: { type?: unknown } };
}

/** TypeORM: the manager that `dataSource.transaction()` hands its callback carries its QueryRunner, which holds a pg client. */
function typeormManager(manager: Record<string, unknown>): JoinedTransaction {
  const runner = manager.queryRunner as TypeormRunner | undefined;
  if (!runner)
    throw refused(
      'is a TypeORM EntityManager outside a transaction: pass the one dataSource.transaction() gives its callback',
    );
  return typeormRunner(runner as unknown as Record<string, unknown>);
}

function typeormRunner(value: Record<string, unknown>): JoinedTransaction {
  const runner = value as unknown as TypeormRunner;
  if (runner.isReleased || !runner.isTransactionActive)
    throw refused('is a TypeORM QueryRunner with no transaction open: call startTransaction() first');
  const type = runner.connection?.options?.type;
  if (type !== undefined && type !== 'postgres')
    throw refused(`is a TypeORM transaction on ${String(type)}, not PostgreSQL`);
  // The transaction's own pg client, so the statements go as on pg: named, parsed once per connection.
  return pgClient(runner.databaseConnection, 'typeorm');
}
