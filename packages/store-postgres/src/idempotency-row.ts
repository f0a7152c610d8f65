import type { IdempotencyRecord } from '@keyhook/core/store';

/** The keyhook_idempotency_keys columns, in the order `toClaimParams` binds them. */
export const IDEMPOTENCY_COLUMNS =
  'tenant_id, key, fingerprint, claim_id, state, response_sealed, created_at, locked_until, expires_at';

/** A row as pg returns it with its default parsers: timestamptz → Date. */
export interface IdempotencyRow {
  tenant_id: string;
  key: string;
  fingerprint: string;
  claim_id: string;
  state: IdempotencyRecord['state'];
  response_sealed: string | null;
  created_at: Date;
  locked_until: Date;
  expires_at: Date;
}

export function toIdempotencyRecord(row: IdempotencyRow): IdempotencyRecord {
  return {
    tenantId: row.tenant_id,
    key: row.key,
    fingerprint: row.fingerprint,
    claimId: row.claim_id,
    state: row.state,
    responseSealed: row.response_sealed,
    createdAt: row.created_at,
    lockedUntil: row.locked_until,
    expiresAt: row.expires_at,
  };
}

/** A claim is always written in progress and without a response, whatever the record says. */
export function toClaimParams(record: IdempotencyRecord): unknown[] {
  return [
    record.tenantId,
    record.key,
    record.fingerprint,
    record.claimId,
    'in_progress',
    null,
    record.createdAt,
    record.lockedUntil,
    record.expiresAt,
  ];
}
