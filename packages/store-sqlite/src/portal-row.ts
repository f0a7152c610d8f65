import type { PortalSessionRecord } from '@keyhook/core/store';
import { toDate, toMillis } from './timestamps.js';

/** A row of `keyhook_portal_sessions`. Lists are JSON text, timestamps epoch milliseconds. */
export interface PortalSessionRow {
  id: string;
  tenant_id: string;
  link_hash: string;
  session_hash: string | null;
  permissions: string;
  scopes: string | null;
  created_at: number;
  expires_at: number;
  exchanged_at: number | null;
  revoked_at: number | null;
}

export const PORTAL_SESSION_COLUMNS =
  'id, tenant_id, link_hash, session_hash, permissions, scopes, created_at, expires_at, exchanged_at, revoked_at';

/** Named parameters for the insert; the names match the columns. */
export function toPortalSessionRow(record: PortalSessionRecord): PortalSessionRow {
  return {
    id: record.id,
    tenant_id: record.tenantId,
    link_hash: record.linkHash,
    session_hash: record.sessionHash,
    permissions: JSON.stringify(record.permissions),
    scopes: record.scopes === null ? null : JSON.stringify(record.scopes),
    created_at: record.createdAt.getTime(),
    expires_at: record.expiresAt.getTime(),
    exchanged_at: toMillis(record.exchangedAt),
    revoked_at: toMillis(record.revokedAt),
  };
}

export function toPortalSessionRecord(row: PortalSessionRow): PortalSessionRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    linkHash: row.link_hash,
    sessionHash: row.session_hash,
    permissions: JSON.parse(row.permissions) as string[],
    scopes: row.scopes === null ? null : (JSON.parse(row.scopes) as string[]),
    createdAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
    exchangedAt: toDate(row.exchanged_at),
    revokedAt: toDate(row.revoked_at),
  };
}
