import type { AttemptRecord, DeliveryRecord, DeliveryStatus, EventRecord } from '@keyhook/core/store';

/** The keyhook_events columns, in the order the publish statement binds them. */
export const EVENT_COLUMNS = 'tenant_id, id, type, payload, created_at, trace_context';

/** The keyhook_deliveries columns, as `toDeliveryRecord` reads them. */
export const DELIVERY_COLUMNS =
  'id, tenant_id, webhook_id, event_id, event_type, status, attempts, due_at, lease_id, held_since, last_attempt_at, created_at, updated_at';

/** The keyhook_delivery_attempts columns, in the order `toAttemptParams` binds them. */
export const ATTEMPT_COLUMNS =
  'delivery_id, tenant_id, attempt, started_at, duration_ms, status_code, error, response_body';

/**
 * `alias.column AS <prefix>column, …`: the three tables share column names (id, tenant_id,
 * created_at), so a statement that joins them names each side apart, and `unprefixed` reads it back.
 */
export function qualified(alias: string, columns: string, prefix = ''): string {
  return columns
    .split(', ')
    .map((column) => `${alias}.${column} AS ${prefix}${column}`)
    .join(', ');
}

/** Each column list and prefix `unprefixed` met (the modules' constants: a handful), as [column, prefixed name] pairs. */
const renamings = new Map<string, Map<string, (readonly [string, string])[]>>();

/** The columns a `qualified(…, prefix)` list put in the row, under their own names again. */
export function unprefixed<R>(row: Record<string, unknown>, columns: string, prefix: string): R {
  let byPrefix = renamings.get(columns);
  if (byPrefix === undefined) {
    byPrefix = new Map();
    renamings.set(columns, byPrefix);
  }
  let pairs = byPrefix.get(prefix);
  if (pairs === undefined) {
    pairs = columns.split(', ').map((column) => [column, `${prefix}${column}`] as const);
    byPrefix.set(prefix, pairs);
  }
  const out: Record<string, unknown> = {};
  for (const [column, prefixed] of pairs) out[column] = row[prefixed];
  return out as R;
}

/** A row as pg returns it with its default parsers: timestamptz → Date. */
export interface EventRow {
  tenant_id: string;
  id: string;
  type: string;
  payload: string;
  created_at: Date;
  trace_context: string | null;
}

export interface DeliveryRow {
  id: string;
  tenant_id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempts: number;
  due_at: Date | null;
  lease_id: string | null;
  held_since: Date | null;
  last_attempt_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** The prefixes of the joined parts of a lease or detail row. */
export const EVENT_PREFIX = 'e_';
export const WEBHOOK_PREFIX = 'w_';

export function toEventRecord(row: EventRow): EventRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    type: row.type,
    payload: row.payload,
    createdAt: row.created_at,
    traceContext: row.trace_context,
  };
}

export function toDeliveryRecord(row: DeliveryRow): DeliveryRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    webhookId: row.webhook_id,
    eventId: row.event_id,
    eventType: row.event_type,
    status: row.status,
    attempts: row.attempts,
    dueAt: row.due_at,
    leaseId: row.lease_id,
    heldSince: row.held_since,
    lastAttemptAt: row.last_attempt_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** An event's values in EVENT_COLUMNS order. */
export function toEventParams(event: EventRecord): unknown[] {
  return [event.tenantId, event.id, event.type, event.payload, event.createdAt, event.traceContext];
}

/** A delivery's values in DELIVERY_COLUMNS order. */
export function toDeliveryParams(delivery: DeliveryRecord): unknown[] {
  return [
    delivery.id,
    delivery.tenantId,
    delivery.webhookId,
    delivery.eventId,
    delivery.eventType,
    delivery.status,
    delivery.attempts,
    delivery.dueAt,
    delivery.leaseId,
    delivery.heldSince,
    delivery.lastAttemptAt,
    delivery.createdAt,
    delivery.updatedAt,
  ];
}

/** The attempt log row of a completion: it belongs to the delivery the lease holds. */
export function toAttemptParams(deliveryId: string, attempt: AttemptRecord): unknown[] {
  return [
    deliveryId,
    attempt.tenantId,
    attempt.attempt,
    attempt.startedAt,
    attempt.durationMs,
    attempt.statusCode,
    attempt.error,
    attempt.responseBody,
  ];
}

/** The event joined into a lease or detail row under EVENT_PREFIX. */
export function joinedEvent(row: Record<string, unknown>): EventRecord {
  return toEventRecord(unprefixed<EventRow>(row, EVENT_COLUMNS, EVENT_PREFIX));
}
