import { T0, webhookRecord } from '@keyhook/store-conformance';
import { POSTGRES_TEST_URL, postgresAvailable } from '@keyhook/testing/postgres';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { checkOut } from '../src/checkout.js';
import type { PostgresStore } from '../src/index.js';
import { deliveryId, eventRecord, recordPoolQueries, Schemas, success } from './delivery-helpers.js';

const available = await postgresAvailable();

const admin = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 2 });
const schemas = new Schemas(admin);

/**
 * A success statement that stays in flight: a leased delivery whose row `locker` holds, and its
 * success recorded, waiting on that lock. `settled()` says whether the success has answered.
 */
async function successInFlight(store: PostgresStore, locker: pg.PoolClient) {
  await store.insertWebhook(webhookRecord({ events: ['run.completed'] }));
  await store.publishEvent(eventRecord(), deliveryId);
  const [leased] = await store.leaseDeliveries({ now: T0, limit: 1, leaseMs: 60_000, leaseId: 'l1' });
  await locker.query('BEGIN');
  await locker.query(`SELECT 1 FROM "${store.schema}".keyhook_deliveries WHERE id = $1 FOR UPDATE`, [
    leased!.delivery.id,
  ]);
  let settled = false;
  const recorded = store.completeAttempt(success(leased!.delivery, 'l1')).finally(() => {
    settled = true;
  });
  await expect.poll(() => schemas.lockWaiters(store.schema), { timeout: 5000 }).toBe(1);
  return { recorded, settled: () => settled };
}

/** The publish statements among `sent` (alone, in a batch, or with successes). */
const publishStatements = (sent: { text: string }[]) =>
  sent.filter((q) => q.text.includes('INSERT INTO') && q.text.includes('keyhook_events')).length;

(available ? describe : describe.skip)('PostgresStore: a publish does not wait behind successes', () => {
  afterAll(async () => {
    await schemas.dropAll();
    await admin.end();
  });

  it('a publish goes at once beside a success statement in flight, and its event is stored when it answers', async () => {
    const store = await schemas.open('lone_publish');
    const locker = await checkOut(admin);
    try {
      const inFlight = await successInFlight(store, locker);
      let published = false;
      const publish = store.publishEvent(eventRecord(), deliveryId).finally(() => {
        published = true;
      });
      await expect.poll(() => published, { timeout: 5000 }).toBe(true);
      expect(await publish).toMatchObject({ outcome: 'published', deliveries: [{ status: 'pending' }] });
      // Committed when it answered, while the success still waits on its lock.
      expect(await schemas.count(store.schema, 'keyhook_events')).toBe(2);
      expect(await schemas.count(store.schema, 'keyhook_deliveries')).toBe(2);
      expect(inFlight.settled()).toBe(false);
      expect(await schemas.lockWaiters(store.schema)).toBe(1);
      await locker.query('COMMIT');
      expect(await inFlight.recorded).toMatchObject({
        outcome: 'recorded',
        delivery: { status: 'succeeded' },
      });
    } finally {
      await locker.query('ROLLBACK');
      locker.release();
      await store.close();
    }
  });

  it('publishes that arrive together beside a success in flight still wait for one another and go as one statement', async () => {
    const store = await schemas.open('lone_publish_batch');
    const locker = await checkOut(admin);
    let recording: ReturnType<typeof recordPoolQueries> | undefined;
    try {
      const inFlight = await successInFlight(store, locker);
      recording = recordPoolQueries();
      let answered = 0;
      const publishes = Array.from({ length: 10 }, () =>
        store.publishEvent(eventRecord(), deliveryId).finally(() => {
          answered++;
        }),
      );
      await expect.poll(() => answered, { timeout: 5000 }).toBe(10);
      recording.stop();
      const outcomes = await Promise.all(publishes);
      expect(outcomes.map((o) => o.outcome)).toEqual(Array(10).fill('published'));
      // The first went at once; the nine that came meanwhile waited for it only, and went together.
      expect(publishStatements(recording.sent)).toBe(2);
      expect(inFlight.settled()).toBe(false);
      expect(await schemas.count(store.schema, 'keyhook_events')).toBe(11);
      await locker.query('COMMIT');
      expect(await inFlight.recorded).toMatchObject({ outcome: 'recorded' });
    } finally {
      recording?.stop();
      await locker.query('ROLLBACK');
      locker.release();
      await store.close();
    }
  });
});
