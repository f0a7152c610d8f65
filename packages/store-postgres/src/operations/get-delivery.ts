import type { AttemptRecord, DeliveryDetail } from '@keyhook/core/store';
import {
  ATTEMPT_COLUMNS,
  DELIVERY_COLUMNS,
  type DeliveryRow,
  EVENT_COLUMNS,
  EVENT_PREFIX,
  joinedEvent,
  qualified,
  toDeliveryRecord,
} from '../delivery-row.js';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';

const statements = (t: Tables) => ({
  // One statement, one snapshot: the delivery, its event and its attempts agree. The attempts come as
  // one json array rather than one row each, so a large payload is not repeated per attempt.
  detail: `SELECT ${qualified('d', DELIVERY_COLUMNS)}, ${qualified('e', EVENT_COLUMNS, EVENT_PREFIX)},
        (SELECT coalesce(json_agg(a ORDER BY a.attempt), '[]'::json)
         FROM (SELECT ${ATTEMPT_COLUMNS} FROM ${t.attempts} WHERE delivery_id = d.id) AS a) AS attempts_log
      FROM ${t.deliveries} AS d
      JOIN ${t.events} AS e ON e.tenant_id = d.tenant_id AND e.id = d.event_id
      WHERE d.tenant_id = $1 AND d.webhook_id = $2 AND d.id = $3`,
});

/**
 * An attempt as the detail reads it: through `json_agg`, so `started_at` arrives as the ISO
 * text Postgres writes for a timestamptz (with its offset), not as a Date.
 */
interface AttemptRow {
  delivery_id: string;
  tenant_id: string;
  attempt: number;
  started_at: Date | string;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
  response_body: string | null;
}

/** One row of the detail statement: the delivery, its event, and its attempts oldest first. */
type DetailRow = DeliveryRow & Record<string, unknown> & { attempts_log: AttemptRow[] };

function toAttemptRecord(row: AttemptRow): AttemptRecord {
  return {
    deliveryId: row.delivery_id,
    tenantId: row.tenant_id,
    attempt: row.attempt,
    startedAt: new Date(row.started_at),
    durationMs: row.duration_ms,
    statusCode: row.status_code,
    error: row.error,
    responseBody: row.response_body,
  };
}

export async function getDelivery(
  ctx: StoreContext,
  tenantId: string,
  webhookId: string,
  deliveryId: string,
): Promise<DeliveryDetail | null> {
  const result = await ctx.query<DetailRow>(ctx.sql(statements).detail, [tenantId, webhookId, deliveryId]);
  const row = result.rows[0];
  if (!row) return null;
  return {
    delivery: toDeliveryRecord(row),
    event: joinedEvent(row),
    attempts: row.attempts_log.map(toAttemptRecord),
  };
}
