import type { PortalSessionRecord } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { PORTAL_SESSION_COLUMNS, type PortalSessionRow, toPortalSessionRecord } from '../portal-row.js';

export function prepareFindPortalSession(
  db: Database.Database,
): Database.Statement<[string], PortalSessionRow> {
  return db.prepare(`SELECT ${PORTAL_SESSION_COLUMNS} FROM keyhook_portal_sessions WHERE session_hash = ?`);
}

export function findPortalSession(
  bySessionHash: ReturnType<typeof prepareFindPortalSession>,
  sessionHash: string,
): PortalSessionRecord | null {
  const row = bySessionHash.get(sessionHash);
  return row ? toPortalSessionRecord(row) : null;
}
