/**
 * The data layers a host writes through on the store's better-sqlite3 connection, each opened
 * the way packages/store-sqlite/README.md's "Joining your own transaction" shows: raw
 * better-sqlite3, Drizzle, Kysely and Knex, with what test/data-layers.test.ts asks of each (one
 * of its transactions, the host's own write of an order inside one, and its top-level object).
 * Shared with test/fixtures/publish-and-die.ts, which runs outside vitest: no vitest import here.
 */
import type Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { sqliteTable, text } from 'drizzle-orm/sqlite-core';
import knex from 'knex';
import { Kysely, SqliteDialect } from 'kysely';

/** The host's own table. */
export const ORDERS_TABLE = 'CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT NOT NULL)';

/** One step of a host transaction, given the layer's transaction object. */
export type Step = (tx: unknown) => void | Promise<void>;

/** A data layer opened on one connection. */
export interface Opened {
  /** The library's own object, outside any transaction. */
  outside: unknown;
  /** Runs `steps` in one transaction of the layer; rolls back and rejects when one throws. */
  transaction(steps: Step[]): Promise<void>;
  /** The host's own write, in the layer's words. */
  insert(id: string): Step;
  close(): Promise<void>;
}

export interface Layer {
  name: string;
  /** Its transaction stays open across awaits (the others' are synchronous). */
  async: boolean;
  /** The store can tell its transaction on another connection (Knex does not show it). */
  showsConnection: boolean;
  open(db: Database.Database): Opened;
}

function synchronously(result: void | Promise<void>): void {
  if (result instanceof Promise) throw new Error('a synchronous transaction was given an async step');
}

const orders = sqliteTable('orders', { id: text('id').primaryKey(), status: text('status').notNull() });

export const LAYERS: Layer[] = [
  {
    name: 'better-sqlite3',
    async: false,
    showsConnection: true,
    open: (db) => ({
      outside: db,
      transaction: async (steps) =>
        db.transaction(() => {
          for (const step of steps) synchronously(step(db));
        })(),
      insert: (id) => () => {
        db.prepare("INSERT INTO orders (id, status) VALUES (?, 'paid')").run(id);
      },
      close: async () => {},
    }),
  },
  {
    name: 'Drizzle',
    async: false,
    showsConnection: true,
    open: (db) => {
      const orm = drizzle({ client: db });
      type Tx = Parameters<Parameters<typeof orm.transaction>[0]>[0];
      return {
        outside: orm,
        transaction: async (steps) =>
          orm.transaction((tx) => {
            for (const step of steps) synchronously(step(tx));
          }),
        insert: (id) => (tx) => {
          (tx as Tx).insert(orders).values({ id, status: 'paid' }).run();
        },
        close: async () => {},
      };
    },
  },
  {
    name: 'Kysely',
    async: true,
    showsConnection: true,
    open: (db) => {
      const orm = new Kysely<{ orders: { id: string; status: string } }>({
        dialect: new SqliteDialect({ database: db }),
      });
      return {
        outside: orm,
        transaction: (steps) =>
          orm.transaction().execute(async (trx) => {
            for (const step of steps) await step(trx);
          }),
        insert: (id) => async (trx) => {
          await (trx as typeof orm).insertInto('orders').values({ id, status: 'paid' }).execute();
        },
        // Not orm.destroy(): it would close the connection, which the store shares.
        close: async () => {},
      };
    },
  },
  {
    name: 'Knex',
    async: true,
    showsConnection: false,
    open: (db) => {
      const pool = new knex.KnexPool({ create: () => db, destroy: () => {}, min: 0, max: 1 });
      const orm = knex({ client: 'better-sqlite3', connectionPool: pool, useNullAsDefault: true });
      return {
        outside: orm,
        transaction: (steps) =>
          orm.transaction(async (trx) => {
            for (const step of steps) await step(trx);
          }),
        insert: (id) => async (trx) => {
          await (trx as typeof orm)('orders').insert({ id, status: 'paid' });
        },
        close: async () => {
          await orm.destroy();
          await pool.destroy();
        },
      };
    },
  },
];
