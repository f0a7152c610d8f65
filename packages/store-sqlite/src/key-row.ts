import type { ApiKeyRecord, ApiKeyStatus } from '@keyhook/core/store';
import { toDate, toMillis } from './timestamps.js';

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
  rate_limit_by_host: number;
}

export const KEY_COLUMNS =
  'id, tenant_id, key_lookup, name, scopes, key_hash, status, expires_at, created_at, last_used_at, revoked_at, rate_limit, rate_limit_window, rate_limit_by_host';

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
    rate_limit_by_host: record.rateLimitByHost ? 1 : 0,
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
    rateLimitByHost: row.rate_limit_by_host === 1,
  };
}
