import type {
  ApiKeyRecord,
  ApiKeyStatus,
  EventType,
  IdempotencyRecord,
  Scope,
  WebhookDisabledReason,
  WebhookRecord,
  WebhookStatus,
} from '@keyhook/core';

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
  };
}

export function toRecord(row: ApiKeyRow): ApiKeyRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    keyLookup: row.key_lookup,
    name: row.name,
    scopes: JSON.parse(row.scopes) as Scope[],
    keyHash: row.key_hash,
    status: row.status,
    expiresAt: toDate(row.expires_at),
    createdAt: new Date(row.created_at),
    lastUsedAt: toDate(row.last_used_at),
    revokedAt: toDate(row.revoked_at),
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
    created_at: record.createdAt.getTime(),
    updated_at: record.updatedAt.getTime(),
  };
}

export function toWebhookRecord(row: WebhookRow): WebhookRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    url: row.url,
    events: JSON.parse(row.events) as EventType[],
    twinKey: row.twin_key,
    status: row.status,
    disabledReason: row.disabled_reason,
    secretSealed: row.secret_sealed,
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
