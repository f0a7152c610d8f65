import { T0, webhookRecord } from '@keyhook/store-conformance';
import { POSTGRES_TEST_URL, postgresAvailable } from '@keyhook/testing/postgres';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { checkOut } from '../src/checkout.js';
import { deliveryId, eventRecord, Schemas } from './delivery-helpers.js';

const available = await postgresAvailable();

const admin = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 2 });
/** The caller's own pool: the application's, in which it opens its transactions. */
const app = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 4 });
const schemas = new Schemas(admin);

(available ? describe : describe.skip)('PostgresStore', () => {
  afterAll(async () => {
    await schemas.dropAll();
    await admin.end();
    await app.end();
  });

  describe('publishing inside the caller’s transaction', () => {
    it('commits with the caller: nothing is visible, and no instance is woken, before COMMIT', async () => {
      const store = await schemas.open('txok');
      const peer = await schemas.peerOf(store, { verifiedKeyCache: true });
      const client = await checkOut(app);
      try {
        const webhook = webhookRecord({ events: ['run.completed'] });
        await store.insertWebhook(webhook);
        const listener = await schemas.watch(peer);
        await client.query('BEGIN');
        await client.query(`INSERT INTO "${store.schema}".orders (id) VALUES ('order_1')`);
        const event = eventRecord();
        const outcome = await store.publishEvent(event, deliveryId, client);
        expect(outcome).toMatchObject({
          outcome: 'published',
          event,
          deliveries: [{ webhookId: webhook.id, status: 'pending', dueAt: T0 }],
        });
        // Written on the caller's connection only: another connection sees nothing yet.
        expect(await schemas.count(store.schema, 'keyhook_events')).toBe(0);
        expect(await schemas.count(store.schema, 'keyhook_deliveries')).toBe(0);
        await schemas.caughtUp(peer);
        expect(listener.calls()).toBe(0);
        await client.query('COMMIT');
        await expect.poll(listener.calls, { timeout: 2000, interval: 2 }).toBeGreaterThan(0);
        expect(await schemas.count(store.schema, 'orders')).toBe(1);
        expect(await schemas.count(store.schema, 'keyhook_events')).toBe(1);
        const leased = await peer.leaseDeliveries({ now: T0, limit: 10, leaseMs: 30_000, leaseId: 'l1' });
        expect(leased.map((l) => l.delivery.id)).toEqual([
          outcome.outcome === 'published' ? outcome.deliveries[0]!.id : '',
        ]);
        listener.stop();
      } finally {
        await client.query('ROLLBACK').catch(() => {});
        client.release();
        await peer.close();
        await store.close();
      }
    });

    it('rolls back with the caller: no event, no delivery, no wake-up', async () => {
      const store = await schemas.open('txrb');
      const peer = await schemas.peerOf(store, { verifiedKeyCache: true });
      const client = await checkOut(app);
      try {
        await store.insertWebhook(webhookRecord({ events: ['run.completed'] }));
        const listener = await schemas.watch(peer);
        await client.query('BEGIN');
        await client.query(`INSERT INTO "${store.schema}".orders (id) VALUES ('order_1')`);
        const event = eventRecord();
        expect((await store.publishEvent(event, deliveryId, client)).outcome).toBe('published');
        await client.query('ROLLBACK');
        await schemas.caughtUp(peer);
        expect(listener.calls()).toBe(0);
        for (const table of ['orders', 'keyhook_events', 'keyhook_deliveries']) {
          expect(await schemas.count(store.schema, table)).toBe(0);
        }
        // The id is free again: the event was never published.
        expect((await store.publishEvent(event, deliveryId)).outcome).toBe('published');
        listener.stop();
      } finally {
        client.release();
        await peer.close();
        await store.close();
      }
    });

    it('a publish that fails rolls back to its savepoint: the caller’s transaction stays usable', async () => {
      const store = await schemas.open('txsp');
      const client = await checkOut(app);
      try {
        await store.insertWebhook(webhookRecord({ events: ['run.completed'] }));
        await store.insertWebhook(webhookRecord({ events: ['run.completed'] }));
        await client.query('BEGIN');
        await client.query(`INSERT INTO "${store.schema}".orders (id) VALUES ('order_1')`);
        // Two subscribers, one delivery id: the deliveries' INSERT fails on the primary key, after the
        // event row was already written.
        const failed = eventRecord();
        await expect(store.publishEvent(failed, () => 'dlv_same', client)).rejects.toMatchObject({
          code: '23505',
        });
        // Not aborted: the caller's next statements run, and so does another publish under the same savepoint name.
        await client.query(`INSERT INTO "${store.schema}".orders (id) VALUES ('order_2')`);
        const next = eventRecord();
        const outcome = await store.publishEvent(next, deliveryId, client);
        expect(outcome).toMatchObject({ outcome: 'published', deliveries: [{}, {}] });
        await client.query('COMMIT');
        expect(await schemas.count(store.schema, 'orders')).toBe(2);
        const { rows } = await admin.query(`SELECT id FROM "${store.schema}".keyhook_events`);
        expect(rows).toEqual([{ id: next.id }]);
        expect(await schemas.count(store.schema, 'keyhook_deliveries')).toBe(2);
      } finally {
        await client.query('ROLLBACK').catch(() => {});
        client.release();
        await store.close();
      }
    });

    it('refuses a client outside BEGIN, a pool, and anything else with a TypeError, writing nothing', async () => {
      const store = await schemas.open('txno');
      const client = await checkOut(app);
      try {
        await store.insertWebhook(webhookRecord({ events: ['run.completed'] }));
        await expect(store.publishEvent(eventRecord(), deliveryId, client)).rejects.toThrow(/BEGIN/);
        await expect(store.publishEvent(eventRecord(), deliveryId, client)).rejects.toThrow(TypeError);
        await expect(store.publishEvent(eventRecord(), deliveryId, app)).rejects.toThrow(TypeError);
        for (const notAClient of [null, {}, 'BEGIN', { query: 'SELECT 1' }]) {
          await expect(store.publishEvent(eventRecord(), deliveryId, notAClient)).rejects.toThrow(TypeError);
        }
        expect(await schemas.count(store.schema, 'keyhook_events')).toBe(0);
        // The refused client is left as it was: still usable, still outside a transaction.
        await expect(client.query('SELECT 1 AS one')).resolves.toMatchObject({ rows: [{ one: 1 }] });
      } finally {
        client.release();
        await store.close();
      }
    });

    it('a publish in an open transaction makes a concurrent disable wait, which then holds its delivery', async () => {
      const store = await schemas.open('txhold');
      const client = await checkOut(app);
      try {
        const webhook = webhookRecord({ events: ['run.completed'] });
        await store.insertWebhook(webhook);
        await client.query('BEGIN');
        const outcome = await store.publishEvent(eventRecord(), deliveryId, client);
        expect(outcome).toMatchObject({ deliveries: [{ status: 'pending' }] });
        // The subscriber row is share-locked until the caller commits: the disable waits for it.
        const disable = store.setWebhookStatus('tenant_a', webhook.id, 'disabled', 'manual', T0);
        await expect.poll(() => schemas.lockWaiters(store.schema), { timeout: 5000 }).toBe(1);
        await client.query('COMMIT');
        expect(await disable).toMatchObject({ outcome: 'updated', webhook: { status: 'disabled' } });
        // Never left pending on a disabled endpoint.
        const held = await store.listDeliveries('tenant_a', webhook.id, { limit: 10 });
        expect(held).toMatchObject([{ status: 'held', heldSince: T0, dueAt: null }]);
      } finally {
        await client.query('ROLLBACK').catch(() => {});
        client.release();
        await store.close();
      }
    });
  });
});
