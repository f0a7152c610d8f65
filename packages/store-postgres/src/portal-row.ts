import type { PortalSessionRecord } from '@keyhook/core/store';

/** The keyhook_portal_sessions columns, in the order `toPortalSessionParams` binds them. */
export const PORTAL_SESSION_COLUMNS =
  'id, tenant_id, link_hash, session_hash, permissions, scopes, created_at, expires_at, exchanged_at, revoked_at';

/** A row as pg returns it with the store's parsers: timestamptz → Date, text[] → string[]. */
export interface PortalSessionRow {
  id: string;
  tenant_id: string;
  link_hash: string;
  session_hash: string | null;
  permissions: string[];
  scopes: string[] | null;
  created_at: Date;
  expires_at: Date;
  exchanged_at: Date | null;
  revoked_at: Date | null;
}

export function toPortalSessionParams(record: PortalSessionRecord): unknown[] {
  return [
    record.id,
    record.tenantId,
    record.linkHash,
    record.sessionHash,
    record.permissions,
    record.scopes,
    record.createdAt,
    record.expiresAt,
    record.exchangedAt,
    record.revokedAt,
  ];
}

export function toPortalSessionRecord(row: PortalSessionRow): PortalSessionRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    linkHash: row.link_hash,
    sessionHash: row.session_hash,
    permissions: [...row.permissions],
    scopes: row.scopes === null ? null : [...row.scopes],
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    exchangedAt: row.exchanged_at,
    revokedAt: row.revoked_at,
  };
}
