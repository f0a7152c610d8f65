/**
 * Publishing inside a host's own transaction, whatever its data layer: the same cases for pg,
 * postgres.js, Drizzle (node-postgres and postgres-js), Kysely, Knex, TypeORM (its transaction's
 * EntityManager, and a QueryRunner of the host's) and Prisma, each with the real library on the
 * real database. A host's invoice and its `invoice.paid` commit together or not at all; a failed publish leaves the transaction usable; anything not inside a transaction,
 * or on another database, is refused with a TypeError and writes nothing; a host process killed
 * after its commit loses nothing.
 */

import { fileURLToPath } from 'node:url';
import { createKeyhook, type Keyhook, silentLogger } from '@keyhook/core';
import { POSTGRES_TEST_URL, postgresAvailable, uniqueSchemaName } from '@keyhook/testing/postgres';
import {
  killHostProcessAt,
  TEST_ADMIN_SECRET,
  TEST_ENCRYPTION_KEY,
  TestReceiver,
  waitUntil,
} from '@keyhook/testing/support';
import { verify } from '@keyhook/webhook-verify';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PostgresStore } from '../src/index.js';
import { DATA_LAYERS, type DataLayer, invoicesTable, type OpenLayer } from './host-layers.js';

const available = await postgresAvailable();
const admin = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 2 });
/** A second database on the same server, without keyhook's schema: "a transaction on another database". */
const OTHER_DATABASE = `keyhook_other_${process.pid}`;
const otherUrl = () => {
  const url = new URL(POSTGRES_TEST_URL);
  url.pathname = `/${OTHER_DATABASE}`;
  return url.toString();
};

const vitestConfig = fileURLToPath(new URL('../vitest.config.ts', import.meta.url));
const publishAndDie = fileURLToPath(new URL('./fixtures/publish-and-die.ts', import.meta.url));

/** test/fixtures/publish-and-die.ts on `schema` through `layer`, killed once it has committed. */
const commitThenKill = (layer: string, schema: string) =>
  killHostProcessAt(
    publishAndDie,
    vitestConfig,
    { KEYHOOK_TEST_LAYER: layer, KEYHOOK_TEST_SCHEMA: schema },
    'committed',
  );

const EVENTS = { 'invoice.paid': { description: 'An invoice was paid.' } } as const;

interface World {
  schema: string;
  store: PostgresStore;
  keyhook: Keyhook<string, typeof EVENTS>;
  receiver: TestReceiver;
  secret: string;
  layer: OpenLayer;
  /** Rows of `table` in the store's schema (where `where` holds), read on another connection. */
  count(table: string, where?: string): Promise<number>;
  close(): Promise<void>;
}

/** A store on a fresh schema with the host's invoices table, a keyhook with its worker, one endpoint, and the layer. */
async function world(dataLayer: DataLayer, { worker = true } = {}): Promise<World> {
  const schema = uniqueSchemaName('layer');
  const store = await createPostgresStore({
    connectionString: POSTGRES_TEST_URL,
    schema,
    poolSize: 4,
    logger: silentLogger,
  });
  await admin.query(invoicesTable(schema));
  const keyhook = createKeyhook({
    store,
    adminSession: { secret: TEST_ADMIN_SECRET },
    encryptionKey: TEST_ENCRYPTION_KEY,
    logger: silentLogger,
    mode: 'development',
    eventCatalog: EVENTS,
  });
  const receiver = await TestReceiver.start();
  const { secret } = await keyhook.webhooks.create('acme', {
    url: receiver.url('/hooks'),
    events: ['invoice.paid'],
  });
  if (worker) keyhook.createWorker({ pollIntervalMs: 20 }).start();
  const layer = await dataLayer.open(POSTGRES_TEST_URL, schema);
  return {
    schema,
    store,
    keyhook,
    receiver,
    secret,
    layer,
    async count(table, where = 'true') {
      const { rows } = await admin.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM "${schema}".${table} WHERE ${where}`,
      );
      return rows[0]!.n;
    },
    async close() {
      await layer.close();
      await keyhook.close();
      await receiver.close();
      await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
    },
  };
}

/** The host's payment: its invoice and `invoice.paid`, in one transaction of the layer. */
async function payInvoice(w: World, tx: unknown, invoiceId: string) {
  await w.layer.insertInvoice(tx, invoiceId);
  return w.keyhook.events.publish(
    { tenantId: 'acme', type: 'invoice.paid', data: { invoiceId }, id: `evt_${invoiceId}` },
    { transaction: tx },
  );
}

/** Every event committed has been delivered, and recorded as delivered, exactly once; each verifies. */
async function deliveredOnce(w: World, eventIds: string[]) {
  await waitUntil(
    async () => (await w.count('keyhook_deliveries', `status = 'succeeded'`)) === eventIds.length,
    10_000,
    () => `${w.receiver.requests.length} of ${eventIds.length} delivered`,
  );
  const received = w.receiver.requests.map((request) => verify(request.body, request.headers, w.secret).id);
  expect(received.sort()).toEqual([...eventIds].sort());
}

describe.runIf(available)('publishing inside a data layer’s transaction', () => {
  beforeAll(async () => {
    await admin.query(`CREATE DATABASE ${OTHER_DATABASE}`);
  });
  afterAll(async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${OTHER_DATABASE} WITH (FORCE)`);
    await admin.end();
  });

  describe.each(DATA_LAYERS.map((layer) => [layer.name, layer] as const))('%s', (_name, dataLayer) => {
    it('commits with the host’s write: delivered once, after the commit, and it verifies', async () => {
      const w = await world(dataLayer);
      try {
        const published = await w.layer.transaction(async (tx) => {
          const result = await payInvoice(w, tx, 'inv_1');
          // Inside the transaction: nothing visible to another connection yet.
          expect(await w.count('keyhook_events')).toBe(0);
          return result;
        });
        expect(published.replayed).toBe(false);
        expect(published.deliveries).toHaveLength(1);
        expect(published.deliveries[0]!.createdAt).toBeInstanceOf(Date);
        expect(await w.count('invoices')).toBe(1);
        await deliveredOnce(w, ['evt_inv_1']);
      } finally {
        await w.close();
      }
    });

    it('rolls back with the host’s transaction: nothing written, nothing delivered', async () => {
      const w = await world(dataLayer);
      try {
        await expect(
          w.layer.transaction(async (tx) => {
            await payInvoice(w, tx, 'inv_rolled_back');
            throw new Error('the host changed its mind');
          }),
        ).rejects.toThrow('the host changed its mind');
        expect(await w.count('invoices')).toBe(0);
        expect(await w.count('keyhook_events')).toBe(0);
        expect(await w.count('keyhook_deliveries')).toBe(0);
        // A later commit is the only delivery.
        await w.layer.transaction((tx) => payInvoice(w, tx, 'inv_after'));
        await deliveredOnce(w, ['evt_inv_after']);
      } finally {
        await w.close();
      }
    });

    it('a publish that fails leaves the host’s transaction usable: its next write and publish commit', async () => {
      const w = await world(dataLayer);
      try {
        await w.keyhook.webhooks.create('acme', { url: w.receiver.url('/second'), events: ['invoice.paid'] });
        // A publish committed first: a layer's later publishes may take another route (Prisma's
        // one call, src/publish-function.ts), and the failure below goes through that one.
        await w.layer.transaction((tx) => payInvoice(w, tx, 'inv_0'));
        await w.layer.transaction(async (tx) => {
          await w.layer.insertInvoice(tx, 'inv_1');
          // Refused by keyhook before any statement: a type the catalog does not declare.
          await expect(
            w.keyhook.events.publish(
              // @ts-expect-error: not in the catalog
              { tenantId: 'acme', type: 'invoice.unknown', data: {} },
              { transaction: tx },
            ),
          ).rejects.toMatchObject({ code: 'validation_failed' });
          // Refused by the database inside the publish's savepoint: two subscribers, one delivery id.
          const event = {
            id: 'evt_failed',
            tenantId: 'acme',
            type: 'invoice.paid',
            payload: '{}',
            createdAt: new Date(),
            traceContext: null,
          };
          await expect(w.store.publishEvent(event, () => 'dlv_same', tx)).rejects.toThrow();
          await payInvoice(w, tx, 'inv_2');
        });
        expect(await w.count('invoices')).toBe(3);
        const { rows } = await admin.query(`SELECT id FROM "${w.schema}".keyhook_events ORDER BY id`);
        expect(rows).toEqual([{ id: 'evt_inv_0' }, { id: 'evt_inv_2' }]);
      } finally {
        await w.close();
      }
    });

    it('refuses the library’s object outside a transaction, and a finished one, with a TypeError naming what it takes', async () => {
      const w = await world(dataLayer);
      try {
        const publish = (transaction: unknown) =>
          w.keyhook.events.publish(
            { tenantId: 'acme', type: 'invoice.paid', data: { invoiceId: 'x' } },
            { transaction },
          );
        await expect(publish(w.layer.outside)).rejects.toThrow(TypeError);
        await expect(publish(w.layer.outside)).rejects.toThrow(/Drizzle.*Kysely.*knex.*Prisma.*TypeORM/s);
        let finished: unknown;
        await w.layer.transaction(async (tx) => {
          finished = tx;
        });
        await expect(publish(finished)).rejects.toThrow(TypeError);
        expect(await w.count('keyhook_events')).toBe(0);
      } finally {
        await w.close();
      }
    });

    it('refuses a transaction on another database, writing nothing', async () => {
      const w = await world(dataLayer);
      // The host's table there too, in a schema of the same name: only keyhook's tables are missing.
      const other = new pg.Client({ connectionString: otherUrl() });
      await other.connect();
      await other.query(`CREATE SCHEMA "${w.schema}"`);
      await other.query(invoicesTable(w.schema));
      await other.end();
      const elsewhere = await dataLayer.open(otherUrl(), w.schema);
      try {
        await expect(elsewhere.transaction((tx) => payInvoice(w, tx, 'inv_elsewhere'))).rejects.toThrow(
          /another database|without the store's schema/,
        );
        expect(await w.count('keyhook_events')).toBe(0);
      } finally {
        await elsewhere.close();
        await w.close();
      }
    });

    it('the host process killed after its commit: a worker started afterwards delivers the event once', async () => {
      const w = await world(dataLayer, { worker: false });
      try {
        await commitThenKill(dataLayer.name, w.schema);
        expect(await w.count('invoices')).toBe(1);
        expect(await w.count('keyhook_deliveries', `status = 'pending'`)).toBe(1);
        w.keyhook.createWorker({ pollIntervalMs: 20 }).start();
        await deliveredOnce(w, ['evt_inv_killed']);
      } finally {
        await w.close();
      }
    });

    it('8 concurrent transactions, each publishing: each commits with its write, each delivered once', async () => {
      const w = await world(dataLayer);
      try {
        const ids = Array.from({ length: 8 }, (_, i) => `inv_${i}`);
        await Promise.all(ids.map((id) => w.layer.transaction((tx) => payInvoice(w, tx, id))));
        expect(await w.count('invoices')).toBe(8);
        await deliveredOnce(
          w,
          ids.map((id) => `evt_${id}`),
        );
      } finally {
        await w.close();
      }
    });
  });
});
