import type { ApiKeyRecord, ApiKeyStatus } from '@keyhook/core/store';

/** The api_keys columns, in the order `toKeyParams` binds them. */
export const KEY_COLUMNS =
  'id, tenant_id, key_lookup, name, scopes, key_hash, status, expires_at, created_at, last_used_at, revoked_at';

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
  };
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
  ];
}
