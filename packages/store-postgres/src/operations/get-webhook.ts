import type { WebhookRecord } from '@keyhook/core/store';
import { sharedStatements } from '../shared-statements.js';
import type { StoreContext } from '../store-context.js';
import { oneWebhook, type WebhookRow } from '../webhook-row.js';

export async function getWebhook(
  ctx: StoreContext,
  tenantId: string,
  id: string,
): Promise<WebhookRecord | null> {
  return oneWebhook(await ctx.query<WebhookRow>(ctx.sql(sharedStatements).webhook, [tenantId, id]));
}
