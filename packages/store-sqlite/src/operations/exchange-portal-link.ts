import { type PortalExchangeOutcome, portalLinkRefusal } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { PORTAL_SESSION_COLUMNS, type PortalSessionRow, toPortalSessionRecord } from '../portal-row.js';

/**
 * The link's one exchange: the write lock makes the check and the write one step, so of
 * concurrent exchanges (any connection, any process) the first writes and the rest match nothing.
 */
export const EXCHANGE_LINK_SQL = `UPDATE keyhook_portal_sessions SET session_hash = ?, exchanged_at = ?
        WHERE link_hash = ? AND exchanged_at IS NULL AND revoked_at IS NULL AND expires_at > ?
        RETURNING ${PORTAL_SESSION_COLUMNS}`;

/** The session as it is, when the exchange wrote nothing: what says why. */
export const SESSION_BY_LINK_SQL = `SELECT ${PORTAL_SESSION_COLUMNS} FROM keyhook_portal_sessions WHERE link_hash = ?`;

/** The update and, when it wrote nothing, the read that says why, in one transaction. */
export function prepareExchangePortalLink(
  db: Database.Database,
): Database.Transaction<(linkHash: string, sessionHash: string, now: number) => PortalExchangeOutcome> {
  const exchange = db.prepare<[string, number, string, number], PortalSessionRow>(EXCHANGE_LINK_SQL);
  const byLink = db.prepare<[string], PortalSessionRow>(SESSION_BY_LINK_SQL);
  return db.transaction((linkHash, sessionHash, now) => {
    const row = exchange.get(sessionHash, now, linkHash, now);
    if (row) return { outcome: 'exchanged', session: toPortalSessionRecord(row) };
    // The update wrote nothing; this read, under the same lock, only says why.
    const current = byLink.get(linkHash);
    const reason = portalLinkRefusal(current ? toPortalSessionRecord(current) : null, new Date(now));
    if (reason === null) throw new Error('keyhook: a portal link that could be exchanged was not');
    return { outcome: 'refused', reason };
  });
}

/** Under BEGIN IMMEDIATE: the write lock first. */
export function exchangePortalLink(
  transaction: ReturnType<typeof prepareExchangePortalLink>,
  linkHash: string,
  sessionHash: string,
  now: Date,
): PortalExchangeOutcome {
  return transaction.immediate(linkHash, sessionHash, now.getTime());
}
