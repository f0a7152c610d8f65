import type { IdempotencyRecord } from '@keyhook/core/store';

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

export const IDEMPOTENCY_COLUMNS =
  'tenant_id, key, fingerprint, claim_id, state, response_sealed, created_at, locked_until, expires_at';

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
