import { silentLogger } from '@keyhook/core';
import { newId } from '@keyhook/core/http';
import { ENDPOINT_RATE_RULE } from '@keyhook/core/store';
import { webhookRecord } from '@keyhook/store-conformance';
import { POSTGRES_TEST_URL, postgresAvailable } from '@keyhook/testing/postgres';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PostgresStore } from '../src/index.js';
import { deliveryId, eventRecord, Schemas } from './delivery-helpers.js';

const available = await postgresAvailable();
const admin = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 2 });
const schemas = new Schemas(admin);

/** Claims each instance makes, one after another, all instances at once. */
const CLAIMS = 250;
const INSTANCES = 4;

(available ? describe : describe.skip)('paced claims from several instances at once', () => {
  afterAll(async () => {
    await schemas.dropAll();
    await admin.end();
  });

  it('every delivery a claim leases is in its answer, whatever another instance committed meanwhile', async () => {
    const schema = schemas.fresh('pacerace');
    const open = () =>
      createPostgresStore({ connectionString: POSTGRES_TEST_URL, schema, poolSize: 4, logger: silentLogger });
    const stores: PostgresStore[] = [];
    for (let i = 0; i < INSTANCES; i++) stores.push(await open());
    try {
      // Two limited endpoints with a backlog due now: claims give slots to what they cannot lease,
      // and each instance's claim may commit between another's reads of the same endpoint.
      for (const perSecond of [1000, 20]) {
        await stores[0]!.insertWebhook(
          webhookRecord({ tenantId: 'tenant_a', events: ['run.completed'], deliveryRate: { perSecond } }),
        );
      }
      const start = Date.now() - 2000;
      for (let i = 0; i < 1500; i++)
        await stores[0]!.publishEvent(eventRecord({ createdAt: new Date(start + i) }), deliveryId);

      const unanswered: string[] = [];
      let leased = 0;
      await Promise.all(
        stores.map(async (store) => {
          for (let i = 0; i < CLAIMS; i++) {
            const leaseId = newId('dlv');
            const answer = await store.leaseDeliveries({
              now: new Date(),
              limit: 8,
              leaseMs: 30_000,
              leaseId,
              rate: ENDPOINT_RATE_RULE,
            });
            leased += answer.length;
            const { rows } = await admin.query<{ id: string }>(
              `SELECT id FROM "${schema}".keyhook_deliveries WHERE lease_id = $1`,
              [leaseId],
            );
            const answered = new Set(answer.map((delivery) => delivery.delivery.id));
            for (const { id } of rows) if (!answered.has(id)) unanswered.push(id);
          }
        }),
      );
      expect(leased).toBeGreaterThan(0);
      expect(unanswered).toEqual([]);
    } finally {
      for (const store of stores) await store.close();
    }
  });
});
