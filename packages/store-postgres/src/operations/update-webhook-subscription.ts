import type { WebhookRecord, WebhookSubscription, WebhookSubscriptionOutcome } from '@keyhook/core/store';
import { isActiveTwinViolation, notifyDeliveries, sharedStatements } from '../shared-statements.js';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';
import { oneWebhook, WEBHOOK_COLUMNS, type WebhookRow } from '../webhook-row.js';
import { getWebhook } from './get-webhook.js';

const statements = (t: Tables) => ({
  // A webhook that claims its twin key claims the new one instead (the claim is carried over, not
  // decided); one moved onto a key another webhook claims fails on the twin-claim index, as an insert would.
  // A NULL scheme ($8) keeps the stored one, in this statement (no read-then-write); the rate
  // changes only when $9 says the change names one ($10, NULL for none).
  updateSubscription: `UPDATE ${t.webhooks} SET url = $3, events = $4, twin_key = $5,
        twin_claim = CASE WHEN twin_claim IS NULL THEN NULL ELSE $5 END, updated_at = $6,
        signature_scheme = coalesce($8::text, signature_scheme),
        rate_per_second = CASE WHEN $9::boolean THEN $10::float8 ELSE rate_per_second END,
        description = CASE WHEN $11::boolean THEN $12::text ELSE description END
      WHERE tenant_id = $1 AND id = $2 AND twin_key = $7
      RETURNING ${WEBHOOK_COLUMNS}`,
});

export async function updateWebhookSubscription(
  ctx: StoreContext,
  tenantId: string,
  id: string,
  subscription: WebhookSubscription,
  at: Date,
): Promise<WebhookSubscriptionOutcome> {
  const sql = ctx.sql(statements);
  const params = [
    tenantId,
    id,
    subscription.url,
    subscription.events,
    subscription.twinKey,
    at,
    subscription.from,
    subscription.signatureScheme ?? null,
    subscription.deliveryRate !== undefined,
    subscription.deliveryRate?.perSecond ?? null,
    subscription.description !== undefined,
    subscription.description ?? null,
  ];
  let webhook: WebhookRecord | null;
  try {
    webhook =
      subscription.deliveryRate === undefined
        ? oneWebhook(await ctx.query<WebhookRow>(sql.updateSubscription, params))
        : await ctx.transaction(async (client) => {
            // The webhook row first, then its slots and what they made wait (docs/decisions.md §8.18).
            const updated = oneWebhook(await ctx.run<WebhookRow>(client, sql.updateSubscription, params));
            if (!updated) return null;
            await ctx.allowBulk(client);
            const reset = await ctx.run<{ moved: number }>(
              client,
              ctx.sql(sharedStatements).resetRate,
              [id, at],
              true,
            );
            if (reset.rows[0]!.moved > 0) await notifyDeliveries(ctx, client);
            return updated;
          });
  } catch (error) {
    if (isActiveTwinViolation(error)) return { outcome: 'active_twin' };
    throw error;
  }
  if (webhook) return { outcome: 'updated', webhook };
  return (await getWebhook(ctx, tenantId, id)) ? { outcome: 'stale' } : { outcome: 'not_found' };
}
