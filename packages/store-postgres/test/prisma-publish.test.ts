/**
 * Prisma's one-call publish (src/publish-function.ts): what a Prisma client sends, first through
 * the savepoint and then as one call, and the call's exception block standing in for the
 * savepoint. test/data-layers.test.ts runs the cases every data layer shares.
 */
import { silentLogger } from '@keyhook/core';
import { webhookRecord } from '@keyhook/store-conformance';
import { POSTGRES_TEST_URL, postgresAvailable, uniqueSchemaName } from '@keyhook/testing/postgres';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PostgresStore } from '../src/index.js';
import { deliveryId, eventRecord } from './delivery-helpers.js';
import { invoicesTable } from './host-layers.js';
import { openPrisma, type PrismaClientLike } from './prisma/client.js';

const available = await postgresAvailable();
const admin = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 2 });
const schemas: string[] = [];

interface World {
  schema: string;
  store: PostgresStore;
  prisma: PrismaClientLike;
  /** The statements Prisma sent since the last call. */
  sent(): string[];
  close(): Promise<void>;
}

async function world(): Promise<World> {
  const schema = uniqueSchemaName('prismafn');
  schemas.push(schema);
  const store = await createPostgresStore({
    connectionString: POSTGRES_TEST_URL,
    schema,
    logger: silentLogger,
  });
  await admin.query(invoicesTable(schema));
  await store.insertWebhook(webhookRecord({ tenantId: 'tenant_a', events: ['run.completed'] }));
  let statements: string[] = [];
  const { prisma, close } = await openPrisma(POSTGRES_TEST_URL, schema, {
    onQuery: (text) => statements.push(text),
  });
  return {
    schema,
    store,
    prisma,
    sent() {
      const out = statements;
      statements = [];
      return out;
    },
    async close() {
      await close();
      await store.close();
    },
  };
}

(available ? describe : describe.skip)('publishing through Prisma in one call', () => {
  afterAll(async () => {
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  });

  it('the first publish of a client goes through a savepoint; later ones are one call, no savepoint', async () => {
    const w = await world();
    try {
      const publish = () =>
        w.prisma.$transaction((tx) => w.store.publishEvent(eventRecord(), deliveryId, tx));
      expect(await publish()).toMatchObject({ outcome: 'published', deliveries: [{ status: 'pending' }] });
      const firstSent = w.sent();
      expect(firstSent.some((text) => text.startsWith('SAVEPOINT'))).toBe(true);

      for (let i = 0; i < 3; i++) {
        const outcome = await publish();
        if (outcome.outcome !== 'published') throw new Error(`published, not ${outcome.outcome}`);
        expect(outcome.deliveries).toHaveLength(1);
        const [delivery] = outcome.deliveries;
        // What the call returns is what the store reads back: every field, each of its type.
        expect(delivery).toEqual(
          (await w.store.getDelivery('tenant_a', delivery!.webhookId, delivery!.id))?.delivery,
        );
        const sent = w.sent().filter((text) => !/^(BEGIN|COMMIT)/i.test(text));
        expect(sent).toHaveLength(1);
        expect(sent[0]).toMatch(new RegExp(`^SELECT r FROM "${w.schema}"\\.keyhook_publish_[0-9a-f]+\\(`));
      }
      const { rows } = await admin.query(`SELECT count(*)::int AS n FROM "${w.schema}".keyhook_deliveries`);
      expect(rows[0].n).toBe(4);
    } finally {
      await w.close();
    }
  });

  it('a publish that fails inside the call rolls back only itself: the transaction’s writes before and after commit', async () => {
    const w = await world();
    try {
      await w.prisma.$transaction((tx) => w.store.publishEvent(eventRecord(), deliveryId, tx));
      // A second subscriber and one delivery id for both: the statement fails on the deliveries' key.
      await w.store.insertWebhook(
        webhookRecord({ tenantId: 'tenant_a', url: 'https://example.com/second', events: ['run.completed'] }),
      );
      w.sent();
      const failed = eventRecord();
      const after = eventRecord();
      await w.prisma.$transaction(async (tx) => {
        await tx.invoice.create({ data: { id: 'inv_before', status: 'paid' } });
        await expect(w.store.publishEvent(failed, () => 'dlv_same', tx)).rejects.toMatchObject({
          code: '23505',
        });
        await tx.invoice.create({ data: { id: 'inv_after', status: 'paid' } });
        await w.store.publishEvent(after, deliveryId, tx);
      });
      expect(w.sent().some((text) => /SAVEPOINT/i.test(text))).toBe(false);
      const invoices = await admin.query(`SELECT id FROM "${w.schema}".invoices ORDER BY id`);
      expect(invoices.rows.map((row: { id: string }) => row.id)).toEqual(['inv_after', 'inv_before']);
      const events = await admin.query(`SELECT id FROM "${w.schema}".keyhook_events WHERE id = ANY ($1)`, [
        [failed.id, after.id],
      ]);
      expect(events.rows.map((row: { id: string }) => row.id)).toEqual([after.id]);
    } finally {
      await w.close();
    }
  });
});
