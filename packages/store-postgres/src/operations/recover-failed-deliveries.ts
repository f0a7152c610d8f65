import { queuedOn } from '@keyhook/core/store';
import { notifyDeliveries, sharedStatements } from '../shared-statements.js';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';
import { oneWebhook, type WebhookRow } from '../webhook-row.js';

export const statements = (t: Tables) => ({
  // Bulk recovery, one batch: the oldest $5 failed deliveries of webhook $1 (tenant $2) created
  // in [$3, $4), queued as requeueDelivery queues one ($6 status, $7 due, $8 held since, $9 at).
  // Read in order on keyhook_deliveries_failed_idx (0009), which holds failed deliveries only
  // (`status = 'failed'` is its predicate, which is what lets the planner use it): a batch reads
  // the entries it queues and stops. SKIP LOCKED passes over a row another recovery or an admin
  // retry holds, so concurrent recoveries neither wait nor deadlock on each other, and each row
  // is locked and re-checked on its latest version, so one another transaction queued meanwhile
  // is no longer failed and is left alone (and not counted against the limit). The chosen ids
  // come back as one array, so the write finds each by primary key: joined with the subquery,
  // on a table of 30,000 deliveries, the write was planned as a scan of all of them.
  recoverFailed: `UPDATE ${t.deliveries}
      SET status = $6, due_at = $7, held_since = $8, lease_id = NULL, updated_at = $9
      WHERE id = ANY (ARRAY(
        SELECT id FROM ${t.deliveries}
        WHERE webhook_id = $1 AND status = 'failed' AND tenant_id = $2
          AND created_at >= $3 AND created_at < $4 AND updated_at < $10
        ORDER BY created_at, id
        LIMIT $5
        FOR UPDATE SKIP LOCKED))`,
});

/**
 * One batch in one transaction, as requeueDelivery queues one: the webhook is share-locked
 * first (a concurrent disable either came first and this holds the batch, or waits and holds
 * it itself), then the batch is chosen, locked and written in one statement; a NOTIFY when it
 * queued anything due now, so other instances' workers wake.
 */
export async function recoverFailedDeliveries(
  ctx: StoreContext,
  tenantId: string,
  webhookId: string,
  since: Date,
  until: Date,
  at: Date,
  limit: number,
  failedBefore: Date,
): Promise<number> {
  return ctx.transaction(async (client): Promise<number> => {
    const webhook = oneWebhook(
      await ctx.run<WebhookRow>(client, ctx.sql(sharedStatements).webhookForShare, [tenantId, webhookId]),
    );
    if (!webhook) return 0;
    const place = queuedOn(webhook.status, 'pending', at, at);
    const recovered = await ctx.run(client, ctx.sql(statements).recoverFailed, [
      webhookId,
      tenantId,
      since,
      until,
      limit,
      place.status,
      place.dueAt,
      place.heldSince,
      at,
      failedBefore,
    ]);
    const count = recovered.rowCount ?? 0;
    if (count > 0 && place.dueAt) await notifyDeliveries(ctx, client);
    return count;
  });
}
