import type { DeliveryStatus, RequeueOutcome } from '@keyhook/core/store';
import { queuedOn } from '@keyhook/core/store';
import { DELIVERY_COLUMNS, type DeliveryRow, toDeliveryRecord } from '../delivery-row.js';
import { notifyDeliveries, sharedStatements } from '../shared-statements.js';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';
import { oneWebhook, type WebhookRow } from '../webhook-row.js';

const statements = (t: Tables) => ({
  lockDelivery: `SELECT ${DELIVERY_COLUMNS} FROM ${t.deliveries}
      WHERE tenant_id = $1 AND webhook_id = $2 AND id = $3
      FOR UPDATE`,

  requeue: `UPDATE ${t.deliveries}
      SET status = $2, due_at = $3, held_since = $4, lease_id = NULL, updated_at = $5
      WHERE id = $1
      RETURNING ${DELIVERY_COLUMNS}`,
});

/**
 * Share-locks the webhook (a concurrent disable then either came first and this holds the
 * delivery, or waits and holds it itself), locks the delivery, decides on its locked status,
 * and writes; a NOTIFY when it is due now.
 */
export async function requeueDelivery(
  ctx: StoreContext,
  tenantId: string,
  webhookId: string,
  deliveryId: string,
  from: readonly DeliveryStatus[],
  at: Date,
): Promise<RequeueOutcome> {
  const sql = ctx.sql(statements);
  return ctx.transaction(async (client): Promise<RequeueOutcome> => {
    const webhook = oneWebhook(
      await ctx.run<WebhookRow>(client, ctx.sql(sharedStatements).webhookForShare, [tenantId, webhookId]),
    );
    if (!webhook) return { outcome: 'not_found' };
    const locked = await ctx.run<DeliveryRow>(client, sql.lockDelivery, [tenantId, webhookId, deliveryId]);
    const row = locked.rows[0];
    if (!row) return { outcome: 'not_found' };
    if (!from.includes(row.status)) return { outcome: 'wrong_state', delivery: toDeliveryRecord(row) };
    const place = queuedOn(webhook.status, 'pending', at, at);
    const requeued = await ctx.run<DeliveryRow>(client, sql.requeue, [
      deliveryId,
      place.status,
      place.dueAt,
      place.heldSince,
      at,
    ]);
    if (place.dueAt) await notifyDeliveries(ctx, client);
    return { outcome: 'queued', delivery: toDeliveryRecord(requeued.rows[0]!) };
  });
}
