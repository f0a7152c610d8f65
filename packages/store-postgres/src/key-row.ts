import type { ApiKeyRecord, ApiKeyStatus } from '@keyhook/core/store';
import type { StatementResult } from './host-transaction.js';

/** The api_keys columns, in the order `toKeyParams` binds them. */
export const KEY_COLUMNS =
  'id, tenant_id, key_lookup, name, scopes, key_hash, status, expires_at, created_at, last_used_at, revoked_at, rate_limit, rate_limit_window, rate_limit_by_host';

/** A row as pg returns it with its default parsers: timestamptz → Date, text[] → string[]. */
export interface KeyRow {
  id: string;
  tenant_id: string;
  key_lookup: string;
  name: string;
  scopes: string[];
  key_hash: string;
  status: ApiKeyStatus;
  expires_at: Date | null;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
  rate_limit: number | null;
  rate_limit_window: number | null;
  rate_limit_by_host: boolean;
}

export function toKeyRecord(row: KeyRow): ApiKeyRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    keyLookup: row.key_lookup,
    name: row.name,
    scopes: [...row.scopes],
    keyHash: row.key_hash,
    status: row.status,
    expiresAt: row.expires_at,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
    rateLimit:
      row.rate_limit === null || row.rate_limit_window === null
        ? null
        : { limit: row.rate_limit, window: row.rate_limit_window },
    rateLimitByHost: row.rate_limit_by_host,
  };
}

/** A statement's first row as a key, or null when it returned none. */
export function oneKey(result: StatementResult<KeyRow>): ApiKeyRecord | null {
  const row = result.rows[0];
  return row ? toKeyRecord(row) : null;
}

export function toKeyParams(key: ApiKeyRecord): unknown[] {
  return [
    key.id,
    key.tenantId,
    key.keyLookup,
    key.name,
    key.scopes,
    key.keyHash,
    key.status,
    key.expiresAt,
    key.createdAt,
    key.lastUsedAt,
    key.revokedAt,
    key.rateLimit?.limit ?? null,
    key.rateLimit?.window ?? null,
    key.rateLimitByHost,
  ];
}
