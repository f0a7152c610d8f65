import { isKeyhookError, silentLogger } from '@keyhook/core';
import { T0, webhookRecord } from '@keyhook/testing/fixtures';
import { POSTGRES_TEST_URL, postgresAvailable } from '@keyhook/testing/postgres';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PostgresStore } from '../src/index.js';
import { deliveryId, eventRecord, Schemas, settle, watching } from './delivery-helpers.js';
import { TcpProxy } from './tcp-proxy.js';

const available = await postgresAvailable();

const target = {
  host: new URL(POSTGRES_TEST_URL).hostname,
  port: Number(new URL(POSTGRES_TEST_URL).port || 5432),
};

const admin = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 2 });
const schemas = new Schemas(admin);

/** A webhook of tenant_a on run.completed, and one event published to it. */
async function oneDelivery(store: PostgresStore) {
  const webhook = webhookRecord({ events: ['run.completed'] });
  await store.insertWebhook(webhook);
  const outcome = await store.publishEvent(eventRecord(), deliveryId);
  if (outcome.outcome !== 'published') throw new Error('expected a new event');
  return { webhook, delivery: outcome.deliveries[0]! };
}

(available ? describe : describe.skip)('PostgresStore deliveries', () => {
  afterAll(async () => {
    await schemas.dropAll();
    await admin.end();
  });

  describe('the lease and the webhook lock', () => {
    it('skips, without waiting, the deliveries of an endpoint another transaction is disabling', async () => {
      const store = await schemas.open('leaseskip');
      const disabler = await admin.connect();
      try {
        const { webhook, delivery } = await oneDelivery(store);
        await disabler.query('BEGIN');
        await disabler.query(
          `UPDATE "${store.schema}".keyhook_webhooks SET status = 'disabled', disabled_reason = 'manual' WHERE id = $1`,
          [webhook.id],
        );
        const started = performance.now();
        const request = { now: T0, limit: 10, leaseMs: 30_000, leaseId: 'l1' };
        expect(await store.leaseDeliveries(request)).toEqual([]);
        expect(performance.now() - started).toBeLessThan(1000);
        // The disable did not happen after all: the delivery is leased, with the webhook as it is.
        await disabler.query('ROLLBACK');
        const leased = await store.leaseDeliveries(request);
        expect(leased.map((l) => [l.delivery.id, l.webhook.status])).toEqual([[delivery.id, 'active']]);
      } finally {
        await disabler.query('ROLLBACK');
        disabler.release();
        await store.close();
      }
    });

    it('a success waiting on a failure counted meanwhile still resets the count (retried under the exclusive lock)', async () => {
      const store = await schemas.open('resetrace');
      const counter = await admin.connect();
      const failures = async () => {
        const { rows } = await admin.query(
          `SELECT consecutive_failures AS n FROM "${store.schema}".keyhook_webhooks`,
        );
        return rows[0].n;
      };
      try {
        const { delivery } = await oneDelivery(store);
        const [leased] = await store.leaseDeliveries({ now: T0, limit: 1, leaseMs: 30_000, leaseId: 'l1' });
        expect(leased!.delivery.id).toBe(delivery.id);
        // A failure of another delivery, counted but not committed: the success reads a count of 0.
        await counter.query('BEGIN');
        await counter.query(
          `UPDATE "${store.schema}".keyhook_webhooks SET consecutive_failures = consecutive_failures + 1`,
        );
        const success = store.completeAttempt({
          tenantId: 'tenant_a',
          deliveryId: delivery.id,
          leaseId: 'l1',
          attempt: {
            deliveryId: delivery.id,
            tenantId: 'tenant_a',
            attempt: 1,
            startedAt: T0,
            durationMs: 5,
            statusCode: 200,
            error: null,
            responseBody: 'ok',
          },
          status: 'succeeded',
          dueAt: null,
          endpointFailures: 'reset',
          autoDisableAfter: 5,
          at: T0,
        });
        await expect.poll(() => schemas.lockWaiters(store.schema), { timeout: 5000 }).toBe(1);
        await counter.query('COMMIT');
        expect(await success).toMatchObject({ outcome: 'recorded', delivery: { status: 'succeeded' } });
        expect(await failures()).toBe(0);
        const detail = await store.getDelivery('tenant_a', leased!.webhook.id, delivery.id);
        expect(detail!.attempts).toHaveLength(1);
      } finally {
        await counter.query('ROLLBACK');
        counter.release();
        await store.close();
      }
    });
  });

  describe('delivery wake-ups (LISTEN/NOTIFY)', () => {
    it('another instance hears publish, requeue and re-enable; another schema hears nothing', async () => {
      const store = await schemas.open('wake');
      const peer = await schemas.peerOf(store);
      const elsewhere = await schemas.open('wakeother');
      try {
        const webhook = webhookRecord({ events: ['run.completed'] });
        await store.insertWebhook(webhook);
        const listener = await watching(peer);
        const stranger = await watching(elsewhere);

        const published = await store.publishEvent(eventRecord(), deliveryId);
        await expect.poll(listener.calls, { timeout: 2000, interval: 2 }).toBe(1);
        if (published.outcome !== 'published') throw new Error('expected a new event');

        const [leased] = await store.leaseDeliveries({ now: T0, limit: 1, leaseMs: 30_000, leaseId: 'l1' });
        await store.completeAttempt({
          tenantId: 'tenant_a',
          deliveryId: leased!.delivery.id,
          leaseId: 'l1',
          attempt: {
            deliveryId: leased!.delivery.id,
            tenantId: 'tenant_a',
            attempt: 1,
            startedAt: T0,
            durationMs: 3,
            statusCode: 410,
            error: 'HTTP 410',
            responseBody: '',
          },
          status: 'failed',
          dueAt: null,
          endpointFailures: 'increment',
          autoDisableAfter: 5,
          at: T0,
        });
        await store.requeueDelivery('tenant_a', webhook.id, leased!.delivery.id, ['failed'], T0);
        await expect.poll(listener.calls, { timeout: 2000, interval: 2 }).toBe(2);

        await store.setWebhookStatus('tenant_a', webhook.id, 'disabled', 'manual', T0);
        await store.setWebhookStatus('tenant_a', webhook.id, 'active', null, T0);
        await expect.poll(listener.calls, { timeout: 2000, interval: 2 }).toBe(3);

        // A held delivery is not due: publishing to a disabled endpoint wakes no one.
        await store.setWebhookStatus('tenant_a', webhook.id, 'disabled', 'manual', T0);
        await store.publishEvent(eventRecord(), deliveryId);
        await settle(200);
        expect(listener.calls()).toBe(3);
        expect(stranger.calls()).toBe(0);

        listener.stop();
        await store.setWebhookStatus('tenant_a', webhook.id, 'active', null, T0);
        await settle(200);
        expect(listener.calls()).toBe(3);
        stranger.stop();
      } finally {
        await peer.close();
        await elsewhere.close();
        await store.close();
      }
    });

    it('listening for deliveries does not turn on the verified-key cache', async () => {
      const store = await schemas.open('wakekeys');
      try {
        const listener = await watching(store);
        expect(store.keyChangeVersion()).toBeNull();
        listener.stop();
      } finally {
        await store.close();
      }
    });

    it('after its LISTEN connection drops and comes back, the listener is called (work may have been missed)', async () => {
      const proxy = await TcpProxy.start(target);
      const schema = schemas.fresh('wakedrop');
      const store = await createPostgresStore({
        connectionString: `postgres://postgres@127.0.0.1:${proxy.port}/test`,
        schema,
        poolSize: 2,
        logger: silentLogger,
      });
      const publisher = await createPostgresStore({
        connectionString: POSTGRES_TEST_URL,
        schema,
        poolSize: 2,
      });
      try {
        const webhook = webhookRecord({ events: ['run.completed'] });
        await publisher.insertWebhook(webhook);
        const listener = await watching(store);
        proxy.dropConnections();
        await expect.poll(listener.calls, { timeout: 10_000, interval: 10 }).toBe(1);
        // Listening again: another instance's publish is heard.
        await publisher.publishEvent(eventRecord(), deliveryId);
        await expect.poll(listener.calls, { timeout: 2000, interval: 2 }).toBe(2);
        listener.stop();
      } finally {
        await publisher.close();
        await store.close();
        await proxy.cut();
      }
    });

    it('every delivery method answers `unavailable` once the store is closed; watching is a no-op', async () => {
      const store = await schemas.open('dlvx');
      await store.close();
      const attempts = [
        () => store.publishEvent(eventRecord(), deliveryId),
        () => store.leaseDeliveries({ now: T0, limit: 1, leaseMs: 1000, leaseId: 'l' }),
        () => store.expireHeldDeliveries(T0, T0),
        () => store.listDeliveries('tenant_a', 'wh_x', { limit: 1 }),
        () => store.getDelivery('tenant_a', 'wh_x', 'dlv_x'),
        () => store.requeueDelivery('tenant_a', 'wh_x', 'dlv_x', ['failed'], T0),
      ];
      for (const attempt of attempts) {
        const error = await attempt().then(
          () => null,
          (caught: unknown) => caught,
        );
        expect(isKeyhookError(error) && error.code, String(error)).toBe('unavailable');
      }
      let called = false;
      store.watchDeliveries(() => {
        called = true;
      })();
      expect(called).toBe(false);
    });
  });
});
