/**
 * The data layers a host writes through, each opened on a database and schema the way its own
 * documentation does, with the three things the suite asks of it: one of its transactions, its
 * own write of an invoice inside one, and its top-level object (not inside a transaction).
 */
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { pgSchema, text } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePostgresJs } from 'drizzle-orm/postgres-js';
import knex, { type Knex } from 'knex';
import { Kysely, type Kysely as KyselyDb, PostgresDialect, type Transaction } from 'kysely';
import pg from 'pg';
import postgres from 'postgres';
import { DataSource, type EntityManager, type QueryRunner } from 'typeorm';
import { withTransaction } from '../src/index.js';
import { openPrisma, type PrismaTransactionClient } from './prisma/client.js';

export interface OpenLayer {
  /** Runs `work` in one of the library's transactions: commits when it resolves, rolls back when it throws. */
  transaction<T>(work: (tx: unknown) => Promise<T>): Promise<T>;
  /** The library's own write of one invoice, inside `tx`. */
  insertInvoice(tx: unknown, id: string): Promise<void>;
  /** The library's top-level object: what a host holds outside a transaction. */
  outside: unknown;
  close(): Promise<void>;
}

export interface DataLayer {
  name: string;
  /** Opens the library on `url`, writing invoices to `schema`.invoices. */
  open(url: string, schema: string): Promise<OpenLayer>;
}

/** The host's own table, in the store's schema. */
export const invoicesTable = (schema: string) =>
  `CREATE TABLE "${schema}".invoices (id text PRIMARY KEY, status text NOT NULL)`;

const rawPg: DataLayer = {
  name: 'pg',
  async open(url, schema) {
    const pool = new pg.Pool({ connectionString: url, max: 10 });
    return {
      transaction: (work) => withTransaction(pool, work),
      async insertInvoice(tx, id) {
        await (tx as pg.PoolClient).query(
          `INSERT INTO "${schema}".invoices (id, status) VALUES ($1, 'paid')`,
          [id],
        );
      },
      outside: pool,
      close: () => pool.end(),
    };
  },
};

const postgresJs: DataLayer = {
  name: 'postgres.js',
  async open(url, schema) {
    const sql = postgres(url, { max: 10, onnotice: () => {} });
    return {
      transaction: async (work) => (await sql.begin((tx) => work(tx))) as never,
      async insertInvoice(tx, id) {
        const t = tx as postgres.TransactionSql;
        await t`INSERT INTO ${t(schema)}.invoices ${t({ id, status: 'paid' })}`;
      },
      outside: sql,
      close: () => sql.end(),
    };
  },
};

const invoicesIn = (schema: string) =>
  pgSchema(schema).table('invoices', { id: text('id').primaryKey(), status: text('status').notNull() });

/** Drizzle on one of its drivers: `connect` opens the driver and Drizzle on it. */
function drizzleLayer(
  name: string,
  connect: (url: string) => {
    db: ReturnType<typeof drizzlePg> | ReturnType<typeof drizzlePostgresJs>;
    end(): Promise<void>;
  },
): DataLayer {
  return {
    name,
    async open(url, schema) {
      const { db, end } = connect(url);
      const invoices = invoicesIn(schema);
      return {
        transaction: (work) =>
          (db.transaction as (run: (tx: unknown) => Promise<unknown>) => Promise<never>)(work),
        async insertInvoice(tx, id) {
          // Both drivers' transactions build the same insert.
          await (tx as Pick<ReturnType<typeof drizzlePg>, 'insert'>)
            .insert(invoices)
            .values({ id, status: 'paid' });
        },
        outside: db,
        close: end,
      };
    },
  };
}

const drizzleNodePostgres = drizzleLayer('drizzle (node-postgres)', (url) => {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  return { db: drizzlePg({ client: pool }), end: () => pool.end() };
});

const drizzlePostgresJsLayer = drizzleLayer('drizzle (postgres-js)', (url) => {
  const sql = postgres(url, { max: 10, onnotice: () => {} });
  return { db: drizzlePostgresJs({ client: sql }), end: () => sql.end() };
});

interface KyselyTables {
  invoices: { id: string; status: string };
}

const kysely: DataLayer = {
  name: 'kysely',
  async open(url, schema) {
    const db: KyselyDb<KyselyTables> = new Kysely<KyselyTables>({
      dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 10 }) }),
    });
    return {
      transaction: (work) => db.transaction().execute((trx) => work(trx)),
      async insertInvoice(tx, id) {
        await (tx as Transaction<KyselyTables>)
          .withSchema(schema)
          .insertInto('invoices')
          .values({ id, status: 'paid' })
          .execute();
      },
      outside: db,
      close: () => db.destroy(),
    };
  },
};

const knexLayer: DataLayer = {
  name: 'knex',
  async open(url, schema) {
    const db = knex({ client: 'pg', connection: url, pool: { min: 0, max: 10 } });
    return {
      transaction: (work) => db.transaction((trx) => work(trx)),
      async insertInvoice(tx, id) {
        await (tx as Knex.Transaction).withSchema(schema).insert({ id, status: 'paid' }).into('invoices');
      },
      outside: db,
      close: () => db.destroy(),
    };
  },
};

/** The invoice through TypeORM's query builder on `manager`. */
const typeormInvoice = (manager: EntityManager, schema: string, id: string) =>
  manager
    .createQueryBuilder()
    .insert()
    .into(`${schema}.invoices`, ['id', 'status'])
    .values({ id, status: 'paid' })
    .execute();

const typeorm: DataLayer = {
  name: 'typeorm',
  async open(url, schema) {
    const dataSource = new DataSource({ type: 'postgres', url, schema, poolSize: 10 });
    await dataSource.initialize();
    return {
      transaction: (work) => dataSource.transaction((manager) => work(manager)),
      async insertInvoice(tx, id) {
        await typeormInvoice(tx as EntityManager, schema, id);
      },
      outside: dataSource.manager,
      close: () => dataSource.destroy(),
    };
  },
};

/** TypeORM's other way: a QueryRunner of the host's, between startTransaction() and commitTransaction(). */
const typeormQueryRunner: DataLayer = {
  name: 'typeorm (QueryRunner)',
  async open(url, schema) {
    const dataSource = new DataSource({ type: 'postgres', url, schema, poolSize: 10 });
    await dataSource.initialize();
    return {
      async transaction(work) {
        const runner = dataSource.createQueryRunner();
        await runner.connect();
        await runner.startTransaction();
        try {
          const result = await work(runner);
          await runner.commitTransaction();
          return result;
        } catch (error) {
          await runner.rollbackTransaction();
          throw error;
        } finally {
          await runner.release();
        }
      },
      async insertInvoice(tx, id) {
        await typeormInvoice((tx as QueryRunner).manager, schema, id);
      },
      // A QueryRunner with no transaction started.
      outside: dataSource.createQueryRunner(),
      close: () => dataSource.destroy(),
    };
  },
};

/** Prisma 7 with the pg driver adapter, its client generated at test time (../prisma/client.ts). */
const prisma: DataLayer = {
  name: 'prisma',
  async open(url, schema) {
    const { prisma: client, close } = await openPrisma(url, schema);
    return {
      transaction: (work) => client.$transaction((tx) => work(tx)),
      async insertInvoice(tx, id) {
        await (tx as PrismaTransactionClient).invoice.create({ data: { id, status: 'paid' } });
      },
      outside: client,
      close,
    };
  },
};

export const DATA_LAYERS: DataLayer[] = [
  rawPg,
  postgresJs,
  drizzleNodePostgres,
  drizzlePostgresJsLayer,
  kysely,
  knexLayer,
  typeorm,
  typeormQueryRunner,
  prisma,
];
