import type { PortalSessionRecord } from '@keyhook/core/store';
import { PORTAL_SESSION_COLUMNS, toPortalSessionParams } from '../portal-row.js';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';

const statements = (t: Tables) => ({
  // The purge (every tenant's, through the expires_at index) and the insert in one statement,
  // so one round trip; the DELETE does not see the row the INSERT writes.
  insertSession: `WITH purged AS (DELETE FROM ${t.portalSessions} WHERE expires_at < $11)
      INSERT INTO ${t.portalSessions} (${PORTAL_SESSION_COLUMNS})
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
});

/** The purge and the insert by one statement. */
export async function insertPortalSession(
  ctx: StoreContext,
  record: PortalSessionRecord,
  purgeBefore: Date,
): Promise<void> {
  await ctx.query(ctx.sql(statements).insertSession, [...toPortalSessionParams(record), purgeBefore]);
}
