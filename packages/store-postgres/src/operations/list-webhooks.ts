import type { ListPage, WebhookRecord } from '@keyhook/core/store';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';
import { toWebhookRecord, WEBHOOK_COLUMNS, type WebhookRow } from '../webhook-row.js';

const statements = (t: Tables) => ({
  list: `SELECT ${WEBHOOK_COLUMNS} FROM ${t.webhooks}
      WHERE tenant_id = $1 ORDER BY id DESC LIMIT $2`,

  listBefore: `SELECT ${WEBHOOK_COLUMNS} FROM ${t.webhooks}
      WHERE tenant_id = $1 AND id < $3 ORDER BY id DESC LIMIT $2`,
});

export async function listWebhooks(
  ctx: StoreContext,
  tenantId: string,
  page: ListPage,
): Promise<WebhookRecord[]> {
  const sql = ctx.sql(statements);
  const result =
    page.before === undefined
      ? await ctx.query<WebhookRow>(sql.list, [tenantId, page.limit])
      : await ctx.query<WebhookRow>(sql.listBefore, [tenantId, page.limit, page.before]);
  return result.rows.map(toWebhookRecord);
}
