import type {
  ApiKeyRecord,
  ApiKeyStatus,
  AttemptRecord,
  DeliveryRecord,
  DeliveryState,
  EventRecord,
  IdempotencyRecord,
  LeasedDelivery,
  WebhookDisabledReason,
  WebhookRecord,
  WebhookStatus,
} from '@keyhook/core/store';

/** A row of `keyhook_api_keys` as better-sqlite3 returns it. Timestamps are epoch milliseconds. */
export interface ApiKeyRow {
  id: string;
  tenant_id: string;
  key_lookup: string;
  name: string;
  scopes: string;
  key_hash: string;
  status: ApiKeyStatus;
  expires_at: number | null;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
  rate_limit: number | null;
  rate_limit_window: number | null;
}

const toMillis = (date: Date | null): number | null => (date === null ? null : date.getTime());
const toDate = (millis: number | null): Date | null => (millis === null ? null : new Date(millis));

/** Named parameters for the insert; the names match the columns. */
export function toRow(record: ApiKeyRecord): ApiKeyRow {
  return {
    id: record.id,
    tenant_id: record.tenantId,
    key_lookup: record.keyLookup,
    name: record.name,
    scopes: JSON.stringify(record.scopes),
    key_hash: record.keyHash,
    status: record.status,
    expires_at: toMillis(record.expiresAt),
    created_at: record.createdAt.getTime(),
    last_used_at: toMillis(record.lastUsedAt),
    revoked_at: toMillis(record.revokedAt),
    rate_limit: record.rateLimit?.limit ?? null,
    rate_limit_window: record.rateLimit?.window ?? null,
  };
}

export function toRecord(row: ApiKeyRow): ApiKeyRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    keyLookup: row.key_lookup,
    name: row.name,
    scopes: JSON.parse(row.scopes) as string[],
    keyHash: row.key_hash,
    status: row.status,
    expiresAt: toDate(row.expires_at),
    createdAt: new Date(row.created_at),
    lastUsedAt: toDate(row.last_used_at),
    revokedAt: toDate(row.revoked_at),
    rateLimit:
      row.rate_limit === null || row.rate_limit_window === null
        ? null
        : { limit: row.rate_limit, window: row.rate_limit_window },
  };
}

/** A row of `keyhook_webhooks`. `events` is the JSON text of the array, in the record's order. */
export interface WebhookRow {
  id: string;
  tenant_id: string;
  url: string;
  events: string;
  twin_key: string;
  status: WebhookStatus;
  disabled_reason: WebhookDisabledReason | null;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: number | null;
  created_at: number;
  updated_at: number;
}

export function toWebhookRow(record: WebhookRecord): WebhookRow {
  return {
    id: record.id,
    tenant_id: record.tenantId,
    url: record.url,
    events: JSON.stringify(record.events),
    twin_key: record.twinKey,
    status: record.status,
    disabled_reason: record.disabledReason,
    secret_sealed: record.secretSealed,
    previous_secret_sealed: record.previousSecretSealed,
    previous_secret_expires_at: toMillis(record.previousSecretExpiresAt),
    created_at: record.createdAt.getTime(),
    updated_at: record.updatedAt.getTime(),
  };
}

export function toWebhookRecord(row: WebhookRow): WebhookRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    url: row.url,
    events: JSON.parse(row.events) as string[],
    twinKey: row.twin_key,
    status: row.status,
    disabledReason: row.disabled_reason,
    secretSealed: row.secret_sealed,
    previousSecretSealed: row.previous_secret_sealed,
    previousSecretExpiresAt: toDate(row.previous_secret_expires_at),
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

/** A row of `keyhook_idempotency_keys`. */
export interface IdempotencyRow {
  tenant_id: string;
  key: string;
  fingerprint: string;
  claim_id: string;
  state: IdempotencyRecord['state'];
  response_sealed: string | null;
  created_at: number;
  locked_until: number;
  expires_at: number;
}

export function toIdempotencyRow(record: IdempotencyRecord): IdempotencyRow {
  return {
    tenant_id: record.tenantId,
    key: record.key,
    fingerprint: record.fingerprint,
    claim_id: record.claimId,
    state: record.state,
    response_sealed: record.responseSealed,
    created_at: record.createdAt.getTime(),
    locked_until: record.lockedUntil.getTime(),
    expires_at: record.expiresAt.getTime(),
  };
}

export function toIdempotencyRecord(row: IdempotencyRow): IdempotencyRecord {
  return {
    tenantId: row.tenant_id,
    key: row.key,
    fingerprint: row.fingerprint,
    claimId: row.claim_id,
    state: row.state,
    responseSealed: row.response_sealed,
    createdAt: new Date(row.created_at),
    lockedUntil: new Date(row.locked_until),
    expiresAt: new Date(row.expires_at),
  };
}

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
  status: DeliveryState;
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
