import type { PortalExchangeOutcome } from '@keyhook/core/store';
import { portalLinkRefusal } from '@keyhook/core/store';
import { PORTAL_SESSION_COLUMNS, type PortalSessionRow, toPortalSessionRecord } from '../portal-row.js';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';
import { RACE_ATTEMPTS, unavailable } from '../unavailable.js';

const statements = (t: Tables) => ({
  // The link's one exchange. Concurrent exchanges wait on the row lock; once the first commits,
  // each of the others re-checks the WHERE on the row as it now is, finds it exchanged, and
  // writes nothing.
  exchangeLink: `UPDATE ${t.portalSessions} SET session_hash = $2, exchanged_at = $3
      WHERE link_hash = $1 AND exchanged_at IS NULL AND revoked_at IS NULL AND expires_at > $3
      RETURNING ${PORTAL_SESSION_COLUMNS}`,

  sessionByLink: `SELECT ${PORTAL_SESSION_COLUMNS} FROM ${t.portalSessions} WHERE link_hash = $1`,
});

/**
 * One guarded UPDATE decides (`exchangeLink`); when it wrote nothing, a new statement, with a
 * new snapshot, reads the row only to say why. Exchanged and revoked are never undone, so a row
 * that reads as exchangeable was inserted between the two: the exchange runs again.
 */
export async function exchangePortalLink(
  ctx: StoreContext,
  linkHash: string,
  sessionHash: string,
  now: Date,
): Promise<PortalExchangeOutcome> {
  const sql = ctx.sql(statements);
  for (let attempt = 0; attempt < RACE_ATTEMPTS; attempt++) {
    const exchanged = await ctx.query<PortalSessionRow>(sql.exchangeLink, [linkHash, sessionHash, now]);
    const row = exchanged.rows[0];
    if (row) return { outcome: 'exchanged', session: toPortalSessionRecord(row) };
    const current = await ctx.query<PortalSessionRow>(sql.sessionByLink, [linkHash]);
    const found = current.rows[0];
    const reason = portalLinkRefusal(found ? toPortalSessionRecord(found) : null, now);
    if (reason !== null) return { outcome: 'refused', reason };
  }
  throw unavailable('The portal link changed too often to be exchanged; retry.');
}
