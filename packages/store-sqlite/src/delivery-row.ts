import type {
  AttemptRecord,
  DeliveryRecord,
  DeliveryStatus,
  EventRecord,
  QueuePlace,
} from '@keyhook/core/store';
import { toDate, toMillis } from './timestamps.js';

/** A row of `keyhook_events`. `payload` is the wire body as given: never parsed, never re-encoded. */
export interface EventRow {
  tenant_id: string;
  id: string;
  type: string;
  payload: string;
  created_at: number;
  trace_context: string | null;
}

export const EVENT_COLUMNS = 'tenant_id, id, type, payload, created_at, trace_context';

/**
 * An event's values in EVENT_COLUMNS order, for an INSERT with `?` placeholders. The delivery
 * path's inserts bind by position: binding by name costs a property lookup per column per row.
 */
export function eventValues(record: EventRecord): unknown[] {
  return [
    record.tenantId,
    record.id,
    record.type,
    record.payload,
    record.createdAt.getTime(),
    record.traceContext,
  ];
}

export function toEventRecord(row: EventRow): EventRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    type: row.type,
    payload: row.payload,
    createdAt: new Date(row.created_at),
    traceContext: row.trace_context,
  };
}

/** A row of `keyhook_deliveries`. */
export interface DeliveryRow {
  id: string;
  tenant_id: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempts: number;
  due_at: number | null;
  lease_id: string | null;
  held_since: number | null;
  last_attempt_at: number | null;
  created_at: number;
  updated_at: number;
}

export const DELIVERY_COLUMNS =
  'id, tenant_id, webhook_id, event_id, event_type, status, attempts, due_at, lease_id, held_since, last_attempt_at, created_at, updated_at';

/** A delivery's values in DELIVERY_COLUMNS order (see eventValues). */
export function deliveryValues(record: DeliveryRecord): unknown[] {
  return [
    record.id,
    record.tenantId,
    record.webhookId,
    record.eventId,
    record.eventType,
    record.status,
    record.attempts,
    toMillis(record.dueAt),
    record.leaseId,
    toMillis(record.heldSince),
    toMillis(record.lastAttemptAt),
    record.createdAt.getTime(),
    record.updatedAt.getTime(),
  ];
}

/** Where a queued delivery waits (core's queuedOn), as its columns. */
export interface PlaceParams {
  status: DeliveryStatus;
  due_at: number | null;
  held_since: number | null;
}

export const placeParams = (place: QueuePlace): PlaceParams => ({
  status: place.status,
  due_at: toMillis(place.dueAt),
  held_since: toMillis(place.heldSince),
});

export function toDeliveryRecord(row: DeliveryRow): DeliveryRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    webhookId: row.webhook_id,
    eventId: row.event_id,
    eventType: row.event_type,
    status: row.status,
    attempts: row.attempts,
    dueAt: toDate(row.due_at),
    leaseId: row.lease_id,
    heldSince: toDate(row.held_since),
    lastAttemptAt: toDate(row.last_attempt_at),
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

/** A row of `keyhook_attempts`. */
export interface AttemptRow {
  delivery_id: string;
  attempt: number;
  tenant_id: string;
  started_at: number;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
  response_body: string | null;
}

export const ATTEMPT_COLUMNS =
  'delivery_id, attempt, tenant_id, started_at, duration_ms, status_code, error, response_body';

/** An attempt's values in ATTEMPT_COLUMNS order (see eventValues). */
export function attemptValues(record: AttemptRecord, deliveryId: string): unknown[] {
  return [
    deliveryId,
    record.attempt,
    record.tenantId,
    record.startedAt.getTime(),
    record.durationMs,
    record.statusCode,
    record.error,
    record.responseBody,
  ];
}

/** One positional placeholder per column of a column list: `?, ?, …`. */
export function placeholdersFor(columns: string): string {
  return columns
    .split(',')
    .map(() => '?')
    .join(', ');
}

export function toAttemptRecord(row: AttemptRow): AttemptRecord {
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
