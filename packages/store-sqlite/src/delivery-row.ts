import type {
  AttemptRecord,
  DeliveryRecord,
  DeliveryStatus,
  EventRecord,
  LeasedDelivery,
  SignatureScheme,
  WebhookDisabledReason,
  WebhookRecord,
  WebhookStatus,
} from '@keyhook/core/store';
import { toDate, toMillis } from './timestamps.js';
import { toWebhookRecord } from './webhook-row.js';

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

/**
 * One row of the leasing query: the delivery's id, its event and its webhook, read in one
 * statement. Event and webhook columns carry an `event_` / `webhook_` prefix.
 */
export interface DueRow {
  id: string;
  attempts: number;
  last_attempt_at: number | null;
  created_at: number;
  event_tenant_id: string;
  event_id: string;
  event_type: string;
  event_payload: string;
  event_created_at: number;
  event_trace_context: string | null;
  webhook_id: string;
  webhook_tenant_id: string;
  webhook_url: string;
  webhook_events: string;
  webhook_twin_key: string;
  webhook_status: WebhookStatus;
  webhook_disabled_reason: WebhookDisabledReason | null;
  webhook_secret_sealed: string;
  webhook_previous_secret_sealed: string | null;
  webhook_previous_secret_expires_at: number | null;
  webhook_signature_scheme: SignatureScheme;
  webhook_rate_per_second: number | null;
  webhook_public_key: string | null;
  webhook_disabled_at: number | null;
  webhook_description: string | null;
  webhook_created_at: number;
  webhook_updated_at: number;
}

/**
 * The due delivery as the lease wrote it, with the event and webhook read beside it. `webhooks`
 * holds the records already made in this lease, by id.
 */
export function toLeasedDelivery(
  due: DueRow,
  leaseId: string,
  leaseEnd: number,
  now: number,
  webhooks: Map<string, WebhookRecord>,
): LeasedDelivery {
  let webhook = webhooks.get(due.webhook_id);
  if (webhook === undefined) {
    webhook = toWebhookRecord({
      id: due.webhook_id,
      tenant_id: due.webhook_tenant_id,
      url: due.webhook_url,
      events: due.webhook_events,
      twin_key: due.webhook_twin_key,
      status: due.webhook_status,
      disabled_reason: due.webhook_disabled_reason,
      secret_sealed: due.webhook_secret_sealed,
      previous_secret_sealed: due.webhook_previous_secret_sealed,
      previous_secret_expires_at: due.webhook_previous_secret_expires_at,
      signature_scheme: due.webhook_signature_scheme,
      rate_per_second: due.webhook_rate_per_second,
      public_key: due.webhook_public_key,
      disabled_at: due.webhook_disabled_at,
      description: due.webhook_description,
      created_at: due.webhook_created_at,
      updated_at: due.webhook_updated_at,
    });
    webhooks.set(due.webhook_id, webhook);
  }
  return {
    delivery: toDeliveryRecord({
      id: due.id,
      tenant_id: due.event_tenant_id,
      webhook_id: due.webhook_id,
      event_id: due.event_id,
      event_type: due.event_type,
      status: 'in_flight',
      attempts: due.attempts,
      due_at: leaseEnd,
      lease_id: leaseId,
      held_since: null,
      last_attempt_at: due.last_attempt_at,
      created_at: due.created_at,
      updated_at: now,
    }),
    event: toEventRecord({
      tenant_id: due.event_tenant_id,
      id: due.event_id,
      type: due.event_type,
      payload: due.event_payload,
      created_at: due.event_created_at,
      trace_context: due.event_trace_context,
    }),
    webhook,
  };
}
