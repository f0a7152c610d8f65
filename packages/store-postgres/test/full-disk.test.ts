import { silentLogger } from '@keyhook/core';
import { T0, webhookRecord } from '@keyhook/store-conformance';
import { POSTGRES_TEST_URL, postgresAvailable, uniqueSchemaName } from '@keyhook/testing/postgres';
import { checkPostgresIndexes, fillingPublisher, smallTablespace } from '@keyhook/testing/support';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PostgresStore } from '../src/index.js';

/**
 * The store's tables and indexes in a tablespace on a real filesystem that fills up (an 8 MiB
 * tmpfs): Postgres answers 53100 (disk full), the store `unavailable`, and the same store writes
 * again once space is freed (docs/decisions.md §20.3). The WAL stays in the server's data
 * directory, which does not fill.
 */
const available = await postgresAvailable();
const admin = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 2 });
const tablespace = available ? await smallTablespace('pg_full', 8, (sql) => admin.query(sql)) : null;
/** Publishes sent at once: the store batches them into few statements. */
const GROUP = 16;
/** A payload of a few KiB, so the space left is taken in a few dozen groups. */
const PAD_BYTES = 3000;

describe.skipIf(tablespace === null)('a full disk under the Postgres store', () => {
  const schema = uniqueSchemaName('full_disk');
  let store: PostgresStore;
  const webhook = webhookRecord({ events: ['run.completed'] });
  const { accepted, refused, causes, publishGroup } = fillingPublisher(
    { publishEvent: (event, deliveryId) => store.publishEvent(event, deliveryId) },
    webhook.tenantId,
    { group: GROUP, padBytes: PAD_BYTES, createdAt: T0 },
  );

  afterAll(async () => {
    await store?.close();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
    await tablespace?.remove();
    await admin.end();
  });

  const eventIds = async () =>
    (await admin.query(`SELECT id FROM "${schema}".keyhook_events ORDER BY id`)).rows.map((row) => row.id);

  it('publishes are refused with unavailable (53100) once the tablespace is full; nothing half-written', async () => {
    // Every table and index the migrations create lands in the tablespace.
    const pool = new pg.Pool({ connectionString: POSTGRES_TEST_URL, options: tablespace!.options, max: 4 });
    store = await createPostgresStore({ pool, schema, logger: silentLogger });
    const elsewhere = await admin.query(
      `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relkind IN ('r', 'i', 't') AND c.reltablespace = 0`,
      [schema],
    );
    expect(elsewhere.rows).toEqual([]);
    await store.insertWebhook(webhook);
    tablespace!.disk.fill(256 * 1024);
    let wholeRefusals = 0;
    for (let round = 0; round < 500 && wholeRefusals < 3; round++) {
      wholeRefusals = (await publishGroup()) === GROUP ? wholeRefusals + 1 : 0;
    }
    expect(wholeRefusals).toBe(3);
    expect(accepted.length).toBeGreaterThan(0);
    expect([...causes]).toEqual(['53100']);
    expect(await eventIds()).toEqual([...accepted].sort());
    const deliveries = await admin.query(
      `SELECT event_id FROM "${schema}".keyhook_deliveries ORDER BY event_id`,
    );
    expect(deliveries.rows.map((row) => row.event_id)).toEqual([...accepted].sort());
  });

  it('while full, reads answer', async () => {
    expect(await store.listDeliveries(webhook.tenantId, webhook.id, { limit: 5 })).toHaveLength(5);
    expect(await store.getWebhook(webhook.tenantId, webhook.id)).toEqual(
      expect.objectContaining({ id: webhook.id }),
    );
    await store.ping();
  });

  it('once space is freed the same store writes again; each accepted delivery is leased once; every index checks', async () => {
    tablespace!.disk.unfill();
    const before = accepted.length;
    expect(await publishGroup()).toBe(0);
    expect(accepted.length).toBe(before + GROUP);
    const leased: string[] = [];
    let got = 0;
    do {
      const batch = await store.leaseDeliveries({
        now: new Date(Date.now() + 60_000),
        limit: 100,
        leaseMs: 600_000,
        leaseId: `lease-${leased.length}`,
      });
      got = batch.length;
      leased.push(...batch.map((d) => d.delivery.eventId));
    } while (got > 0);
    expect(leased.sort()).toEqual([...accepted].sort());
    expect(refused.length).toBeGreaterThan(0);
    expect(await eventIds()).toEqual([...accepted].sort());
    expect(await checkPostgresIndexes((sql, values) => admin.query(sql, values), schema)).toBeGreaterThan(5);
  });
});
