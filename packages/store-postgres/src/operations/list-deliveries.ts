import type { DeliveryListPage, DeliveryRecord } from '@keyhook/core/store';
import { DELIVERY_COLUMNS, type DeliveryRow, toDeliveryRecord } from '../delivery-row.js';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';

const statements = (t: Tables) => ({
  // A missing filter is a NULL parameter; pg sends unnamed statements, planned with their values,
  // so the index on (webhook_id, id) serves each variant.
  list: `SELECT ${DELIVERY_COLUMNS} FROM ${t.deliveries}
      WHERE tenant_id = $1 AND webhook_id = $2
        AND ($4::text IS NULL OR status = $4)
        AND ($5::text IS NULL OR id < $5)
        AND ($6::text IS NULL OR event_type = $6) AND ($7::text IS NULL OR event_id = $7)
        AND ($8::timestamptz IS NULL OR created_at >= $8) AND ($9::timestamptz IS NULL OR created_at < $9)
      ORDER BY id DESC LIMIT $3`,
});

export async function listDeliveries(
  ctx: StoreContext,
  tenantId: string,
  webhookId: string,
  page: DeliveryListPage,
): Promise<DeliveryRecord[]> {
  const result = await ctx.query<DeliveryRow>(ctx.sql(statements).list, [
    tenantId,
    webhookId,
    page.limit,
    page.status ?? null,
    page.before ?? null,
    page.eventType ?? null,
    page.eventId ?? null,
    page.createdFrom ?? null,
    page.createdBefore ?? null,
  ]);
  return result.rows.map(toDeliveryRecord);
}
