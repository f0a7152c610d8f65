import { randomUUID } from 'node:crypto';
import type Database from 'better-sqlite3';

/** What `publishSync(…, { transaction })` takes on SQLite, as every refusal says. */
export const ACCEPTED_TRANSACTIONS =
  'a transaction open on its own better-sqlite3 connection (`createSqliteStore({ database: db })`): ' +
  '`db` inside `db.transaction()`; the `tx` of a Drizzle `transaction()` on `drizzle({ client: db })`; ' +
  'the `trx` of a Kysely `transaction().execute()` on `new SqliteDialect({ database: db })`; or the `trx` ' +
  'of `knex.transaction()` with client `better-sqlite3` and a `connectionPool` that hands out `db`';

function refused(what: string): TypeError {
  return new TypeError(`keyhook: \`transaction\` ${what}. The SQLite store takes ${ACCEPTED_TRANSACTIONS}.`);
}

/** The data layers whose transactions the SQLite store joins. */
export type JoinedLibrary = 'better-sqlite3' | 'drizzle' | 'kysely' | 'knex';

/**
 * The data layer of `transaction` when it is a transaction open on `db`, the store's own
 * connection, so a write made now commits or rolls back with it; otherwise a TypeError naming
 * what is taken. Data layers are told by their shape, never imported. Nothing is written.
 *
 * What is checked, beyond "a transaction is open on `db`": the raw connection is `db` itself;
 * a Drizzle `tx` holds `db` as its driver; a Kysely `trx`'s connection answers a function that
 * only `db` has. A Knex `trx` does not show its connection without Knex's internals, so for
 * Knex only its shape, its state (not completed) and its driver (better-sqlite3) are checked.
 */
export function joinedLibrary(transaction: unknown, db: Database.Database): JoinedLibrary {
  if (transaction === null || (typeof transaction !== 'object' && typeof transaction !== 'function'))
    throw refused('must be a transaction object');
  const t = transaction as Record<string, unknown>;
  if (transaction === db) {
    if (!db.inTransaction) throw refused('is the store’s connection with no transaction open on it');
    return 'better-sqlite3';
  }
  const drizzleKinds = drizzleKindsOf(t);
  if (drizzleKinds.length > 0) return drizzle(t, drizzleKinds, db);
  if (typeof transaction === 'function' && typeof t.raw === 'function' && typeof t.transaction === 'function')
    return knex(t, db);
  if (typeof t.getExecutor === 'function' && typeof t.selectFrom === 'function') return kysely(t, db);
  if (typeof t.prepare === 'function' && typeof t.inTransaction === 'boolean')
    throw refused('is a better-sqlite3 connection other than the store’s own');
  throw refused('is not a transaction keyhook recognises');
}

/** A recognised transaction of `library`: some transaction must be open on the store's connection. */
function openOnStoreConnection(db: Database.Database, library: string): void {
  if (!db.inTransaction)
    throw refused(
      `is a ${library} transaction, but none is open on the store’s connection: it has finished, or it runs on another connection`,
    );
}

/** drizzle-orm's names for the classes of `value` (each class's `entityKind`), most derived first. */
function drizzleKindsOf(value: object): string[] {
  const kinds: string[] = [];
  for (let c = value.constructor as unknown; typeof c === 'function'; c = Object.getPrototypeOf(c)) {
    const kind = (c as unknown as Record<symbol, unknown>)[Symbol.for('drizzle:entityKind')];
    if (typeof kind === 'string') kinds.push(kind);
  }
  return kinds;
}

/** Drizzle: the `tx` holds its driver at `tx.session.client` (internal to Drizzle; the tests pin it). */
function drizzle(tx: Record<string, unknown>, kinds: string[], db: Database.Database): 'drizzle' {
  if (!kinds.includes('SQLiteTransaction')) {
    throw refused(
      kinds.includes('BaseSQLiteDatabase')
        ? `is a Drizzle database (${kinds[0]}), not inside a transaction: pass the \`tx\` of its transaction()`
        : `is a Drizzle ${kinds[0]}, not a Drizzle SQLite transaction`,
    );
  }
  const client = (tx.session as { client?: unknown } | undefined)?.client;
  if (client !== db) throw refused('is a Drizzle transaction on another connection than the store’s');
  openOnStoreConnection(db, 'Drizzle');
  return 'drizzle';
}

/** Knex: `isTransaction` and `isCompleted()` are public; its connection is not (see joinedLibrary). */
function knex(trx: Record<string, unknown>, db: Database.Database): 'knex' {
  if (trx.isTransaction !== true)
    throw refused('is a Knex instance, not inside a transaction: pass the `trx` of knex.transaction()');
  if (typeof trx.isCompleted === 'function' && (trx.isCompleted as () => boolean)())
    throw refused('is a Knex transaction that has already committed or rolled back');
  const driver = (trx.client as { driverName?: unknown } | undefined)?.driverName;
  if (driver !== 'better-sqlite3')
    throw refused(`is a Knex transaction on ${String(driver)}, not on better-sqlite3`);
  openOnStoreConnection(db, 'Knex');
  return 'knex';
}

interface KyselyExecutor {
  adapter?: { constructor?: { name?: unknown } };
  provideConnection(
    consumer: (connection: { executeQuery(query: unknown): unknown }) => Promise<void>,
  ): unknown;
}

/** Kysely: its SqliteDialect's connection is private, so it is asked a question only `db` can answer. */
function kysely(trx: Record<string, unknown>, db: Database.Database): 'kysely' {
  if (trx.isTransaction !== true)
    throw refused(
      'is a Kysely instance, not inside a transaction: pass the `trx` of db.transaction().execute()',
    );
  const executor = (trx.getExecutor as () => KyselyExecutor).call(trx);
  // Checked before the probe runs on it: a query that fails on Postgres would abort that transaction.
  if (executor.adapter?.constructor?.name !== 'SqliteAdapter')
    throw refused('is a Kysely transaction on another dialect than SqliteDialect');
  openOnStoreConnection(db, 'Kysely');
  const answer = askConnection(executor, db);
  if (answer === 'finished')
    throw refused('is a Kysely transaction that has already committed or rolled back');
  if (answer === 'busy')
    throw refused('is a Kysely transaction with a query still running: await it before publishing');
  if (answer === 'elsewhere') throw refused('is a Kysely transaction on another connection than the store’s');
  return 'kysely';
}

/** Per connection: a function of its own, under a name no other connection has. */
const probes = new WeakMap<Database.Database, { sql: string; calls: number }>();

function probeOf(db: Database.Database): { sql: string; calls: number } {
  let found = probes.get(db);
  if (found === undefined) {
    const name = `keyhook_connection_${randomUUID().replaceAll('-', '')}`;
    const made = { sql: `SELECT ${name}()`, calls: 0 };
    db.function(name, { directOnly: true }, () => {
      made.calls++;
      return null;
    });
    probes.set(db, made);
    found = made;
  }
  return found;
}

/**
 * Runs `SELECT <db's function>()` on the trx's connection, through Kysely's public driver API.
 * A SqliteDialect connection runs it before `provideConnection` returns (better-sqlite3 is
 * synchronous); on another connection the function is missing and the statement fails.
 */
function askConnection(
  executor: KyselyExecutor,
  db: Database.Database,
): 'here' | 'elsewhere' | 'busy' | 'finished' {
  const probe = probeOf(db);
  const { sql } = probe;
  const before = probe.calls;
  let reached = false;
  let late = false;
  try {
    const provided = executor.provideConnection(async (connection) => {
      if (late) return; // the trx was busy: it reached us after the answer; ask nothing
      reached = true;
      try {
        const ran = connection.executeQuery({
          sql,
          parameters: [],
          query: { kind: 'RawNode', sqlFragments: [sql], parameters: [] },
          queryId: { queryId: 'keyhook-connection' },
        });
        Promise.resolve(ran).catch(() => {});
      } catch {
        // another connection: no such function
      }
    });
    Promise.resolve(provided).catch(() => {});
  } catch {
    return 'finished'; // Kysely refuses a committed or rolled-back trx at once
  }
  late = true;
  if (!reached) return 'busy';
  return probe.calls > before ? 'here' : 'elsewhere';
}
