import type { DeliveryListPage, DeliveryRecord, DeliveryStatus } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { DELIVERY_COLUMNS, type DeliveryRow, toDeliveryRecord } from '../delivery-row.js';
import { boundLimit } from '../shared-statements.js';

/** Named parameters of a delivery listing; `status` null lists every status. */
interface ListDeliveriesParams {
  tenantId: string;
  webhookId: string;
  status: DeliveryStatus | null;
  eventType: string | null;
  eventId: string | null;
  /** Epoch ms. */
  createdFrom: number | null;
  createdBefore: number | null;
  limit: number;
}

/** The first page, and a page after the previous one's last id. */
export interface ListDeliveriesStatements {
  first: Database.Statement<[ListDeliveriesParams], DeliveryRow>;
  before: Database.Statement<[ListDeliveriesParams & { before: string }], DeliveryRow>;
}

export function prepareListDeliveries(db: Database.Database): ListDeliveriesStatements {
  // Filtering row by row (state, event type and id, creation time) keeps the walk on (webhook_id, id),
  // in the listing's order.
  const where = `WHERE webhook_id = @webhookId AND tenant_id = @tenantId AND (@status IS NULL OR status = @status)
          AND (@eventType IS NULL OR event_type = @eventType) AND (@eventId IS NULL OR event_id = @eventId)
          AND (@createdFrom IS NULL OR created_at >= @createdFrom)
          AND (@createdBefore IS NULL OR created_at < @createdBefore)`;
  return {
    first: db.prepare(
      `SELECT ${DELIVERY_COLUMNS} FROM keyhook_deliveries
        ${where}
        ORDER BY id DESC LIMIT ${boundLimit('@limit')}`,
    ),
    before: db.prepare(
      `SELECT ${DELIVERY_COLUMNS} FROM keyhook_deliveries
        ${where}
          AND id < @before
        ORDER BY id DESC LIMIT ${boundLimit('@limit')}`,
    ),
  };
}

export function listDeliveries(
  sql: ListDeliveriesStatements,
  tenantId: string,
  webhookId: string,
  page: DeliveryListPage,
): DeliveryRecord[] {
  const params = {
    tenantId,
    webhookId,
    status: page.status ?? null,
    eventType: page.eventType ?? null,
    eventId: page.eventId ?? null,
    createdFrom: page.createdFrom?.getTime() ?? null,
    createdBefore: page.createdBefore?.getTime() ?? null,
    limit: page.limit,
  };
  const rows =
    page.before === undefined ? sql.first.all(params) : sql.before.all({ ...params, before: page.before });
  return rows.map(toDeliveryRecord);
}
