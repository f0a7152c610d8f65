import type { PortalSessionRecord } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { PORTAL_SESSION_COLUMNS, type PortalSessionRow, toPortalSessionRow } from '../portal-row.js';

/** Every tenant's expired sessions, through the expires_at index. */
export const PURGE_SESSIONS_SQL = 'DELETE FROM keyhook_portal_sessions WHERE expires_at < ?';

/** The purge and the insert, in one transaction. */
export function prepareInsertPortalSession(
  db: Database.Database,
): Database.Transaction<(record: PortalSessionRecord, purgeBefore: number) => void> {
  const insert = db.prepare<[PortalSessionRow]>(
    `INSERT INTO keyhook_portal_sessions (${PORTAL_SESSION_COLUMNS}) VALUES (@id, @tenant_id, @link_hash,
        @session_hash, @permissions, @scopes, @created_at, @expires_at, @exchanged_at, @revoked_at)`,
  );
  const purge = db.prepare<[number]>(PURGE_SESSIONS_SQL);
  return db.transaction((record, purgeBefore) => {
    purge.run(purgeBefore);
    insert.run(toPortalSessionRow(record));
  });
}

/** Under BEGIN IMMEDIATE: the write lock first. */
export function insertPortalSession(
  transaction: ReturnType<typeof prepareInsertPortalSession>,
  record: PortalSessionRecord,
  purgeBefore: Date,
): void {
  transaction.immediate(record, purgeBefore.getTime());
}
