import type { WebhookRecord } from '@keyhook/core/store';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';
import { oneWebhook, WEBHOOK_COLUMNS, type WebhookRow } from '../webhook-row.js';

const statements = (t: Tables) => ({
  // One statement: the right-hand sides read the row as it was, so with an expiry ($5) the previous
  // secret is the sealed value this replaces, exactly as stored; without one, both are cleared.
  rotateSecret: `UPDATE ${t.webhooks} SET secret_sealed = $3, updated_at = $4, public_key = $6,
        previous_secret_sealed = CASE WHEN $5::timestamptz IS NULL THEN NULL ELSE secret_sealed END,
        previous_secret_expires_at = $5::timestamptz
      WHERE tenant_id = $1 AND id = $2
      RETURNING ${WEBHOOK_COLUMNS}`,
});

export async function rotateWebhookSecret(
  ctx: StoreContext,
  tenantId: string,
  id: string,
  secretSealed: string,
  publicKey: string | null,
  at: Date,
  previousExpiresAt: Date | null,
): Promise<WebhookRecord | null> {
  return oneWebhook(
    await ctx.query<WebhookRow>(ctx.sql(statements).rotateSecret, [
      tenantId,
      id,
      secretSealed,
      at,
      previousExpiresAt,
      publicKey,
    ]),
  );
}
