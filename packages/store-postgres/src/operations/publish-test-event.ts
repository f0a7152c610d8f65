import type { EventRecord, TestEventOutcome } from '@keyhook/core/store';
import { newDeliveryRecord } from '@keyhook/core/store';
import { DELIVERY_COLUMNS, EVENT_COLUMNS, toDeliveryParams, toEventParams } from '../delivery-row.js';
import { notifyDeliveries, sharedStatements } from '../shared-statements.js';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';
import { oneWebhook, type WebhookRow } from '../webhook-row.js';

const statements = (t: Tables) => ({
  // A test event and its one delivery, the delivery's columns from core's newDeliveryRecord.
  // One statement, under the webhook's share lock (below; docs/decisions.md §20.6). No
  // feed place (feed_seq NULL, docs/decisions.md §8.17). $1–$6 are the event's columns, $7–$19 the delivery's.
  insertTestEvent: `WITH event AS (
        INSERT INTO ${t.events} (${EVENT_COLUMNS}, feed_seq) VALUES ($1, $2, $3, $4, $5, $6, NULL)
      )
      INSERT INTO ${t.deliveries} (${DELIVERY_COLUMNS})
      VALUES ($7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
});

/**
 * A test event to one webhook (docs/decisions.md §8.16), in one transaction: the webhook is
 * read with its tenant under FOR SHARE, the lock publishEvent's subscriber read takes, so a
 * concurrent disable either committed first (the delivery is held) or waits for this commit
 * and then holds it itself; then the event and its delivery, and a NOTIFY when it is due now.
 */
export async function publishTestEvent(
  ctx: StoreContext,
  event: EventRecord,
  webhookId: string,
  deliveryId: string,
): Promise<TestEventOutcome> {
  return ctx.transaction(async (client): Promise<TestEventOutcome> => {
    const webhook = oneWebhook(
      await ctx.run<WebhookRow>(client, ctx.sql(sharedStatements).webhookForShare, [
        event.tenantId,
        webhookId,
      ]),
    );
    if (!webhook) return { outcome: 'not_found' };
    const delivery = newDeliveryRecord(event, webhook, deliveryId);
    await ctx.run(client, ctx.sql(statements).insertTestEvent, [
      ...toEventParams(event),
      ...toDeliveryParams(delivery),
    ]);
    if (delivery.dueAt) await notifyDeliveries(ctx, client);
    return { outcome: 'published', event: { ...event, createdAt: new Date(event.createdAt) }, delivery };
  });
}
