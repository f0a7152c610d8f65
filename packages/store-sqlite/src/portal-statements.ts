import {
  type AttemptCounts,
  type PortalExchangeOutcome,
  type PortalSessionRecord,
  portalLinkRefusal,
} from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import {
  PORTAL_SESSION_COLUMNS,
  type PortalSessionRow,
  toPortalSessionRecord,
  toPortalSessionRow,
} from './portal-row.js';

/** A row of the recent-attempt count, as countRecentAttempts returns it. */
type AttemptCountRow = AttemptCounts;

/**
 * Every statement the store runs for the portal, prepared once on the store's connection: its
 * sessions (keyhook_portal_sessions, migration 0011) and its webhooks' recent attempt counts.
 */
export interface PortalStatements {
  insertSession: Database.Statement<[PortalSessionRow]>;
  purgeSessions: Database.Statement<[number]>;
  exchangeLink: Database.Statement<[string, number, string, number], PortalSessionRow>;
  sessionByLink: Database.Statement<[string], PortalSessionRow>;
  sessionByHash: Database.Statement<[string], PortalSessionRow>;
  revokeSession: Database.Statement<[number, string, string]>;
  revokeTenantSessions: Database.Statement<[number, string]>;
  countRecentAttempts: Database.Statement<[number, number, number, number, string, number], AttemptCountRow>;
}

export function portalStatements(db: Database.Database): PortalStatements {
  return {
    insertSession: db.prepare<[PortalSessionRow]>(
      `INSERT INTO keyhook_portal_sessions (${PORTAL_SESSION_COLUMNS}) VALUES (@id, @tenant_id, @link_hash,
        @session_hash, @permissions, @scopes, @created_at, @expires_at, @exchanged_at, @revoked_at)`,
    ),
    // Every tenant's, through the expires_at index.
    purgeSessions: db.prepare<[number]>('DELETE FROM keyhook_portal_sessions WHERE expires_at < ?'),
    // The link's one exchange: the write lock makes the check and the write one step, so of
    // concurrent exchanges (any connection, any process) the first writes and the rest match nothing.
    exchangeLink: db.prepare<[string, number, string, number], PortalSessionRow>(
      `UPDATE keyhook_portal_sessions SET session_hash = ?, exchanged_at = ?
        WHERE link_hash = ? AND exchanged_at IS NULL AND revoked_at IS NULL AND expires_at > ?
        RETURNING ${PORTAL_SESSION_COLUMNS}`,
    ),
    sessionByLink: db.prepare<[string], PortalSessionRow>(
      `SELECT ${PORTAL_SESSION_COLUMNS} FROM keyhook_portal_sessions WHERE link_hash = ?`,
    ),
    sessionByHash: db.prepare<[string], PortalSessionRow>(
      `SELECT ${PORTAL_SESSION_COLUMNS} FROM keyhook_portal_sessions WHERE session_hash = ?`,
    ),
    revokeSession: db.prepare<[number, string, string]>(
      `UPDATE keyhook_portal_sessions SET revoked_at = ?
        WHERE tenant_id = ? AND id = ? AND revoked_at IS NULL`,
    ),
    revokeTenantSessions: db.prepare<[number, string]>(
      'UPDATE keyhook_portal_sessions SET revoked_at = ? WHERE tenant_id = ? AND revoked_at IS NULL',
    ),
    // The tenant's attempts in the window, from the index of migration 0011 (it holds the status
    // code), each joined to its delivery by primary key for the webhook: the window's rows, never
    // another tenant's. Success is core's DELIVERY_RULES.success, bound here; everything else, no
    // answer included, is a failure. INDEXED BY and CROSS JOIN make that the only plan.
    countRecentAttempts: db.prepare<[number, number, number, number, string, number], AttemptCountRow>(
      `SELECT d.webhook_id AS webhookId,
          count(*) FILTER (WHERE a.status_code BETWEEN ? AND ?) AS succeeded,
          count(*) - count(*) FILTER (WHERE a.status_code BETWEEN ? AND ?) AS failed
        FROM keyhook_attempts AS a INDEXED BY keyhook_attempts_tenant_started
        CROSS JOIN keyhook_deliveries AS d ON d.id = a.delivery_id AND d.tenant_id = a.tenant_id
        WHERE a.tenant_id = ? AND a.started_at >= ?
        GROUP BY d.webhook_id
        ORDER BY d.webhook_id`,
    ),
  };
}

/** The portal methods that are more than one statement (see SqliteStore's transactions). */
export interface PortalTransactions {
  insertSession: Database.Transaction<(record: PortalSessionRecord, purgeBefore: number) => void>;
  exchangeLink: Database.Transaction<
    (linkHash: string, sessionHash: string, now: number) => PortalExchangeOutcome
  >;
}

export function portalTransactions(db: Database.Database, statements: PortalStatements): PortalTransactions {
  return {
    insertSession: db.transaction((record: PortalSessionRecord, purgeBefore: number) => {
      statements.purgeSessions.run(purgeBefore);
      statements.insertSession.run(toPortalSessionRow(record));
    }),
    exchangeLink: db.transaction(
      (linkHash: string, sessionHash: string, now: number): PortalExchangeOutcome => {
        const row = statements.exchangeLink.get(sessionHash, now, linkHash, now);
        if (row) return { outcome: 'exchanged', session: toPortalSessionRecord(row) };
        // The update wrote nothing; this read, under the same lock, only says why.
        const current = statements.sessionByLink.get(linkHash);
        const reason = portalLinkRefusal(current ? toPortalSessionRecord(current) : null, new Date(now));
        if (reason === null) throw new Error('keyhook: a portal link that could be exchanged was not');
        return { outcome: 'refused', reason };
      },
    ),
  };
}
