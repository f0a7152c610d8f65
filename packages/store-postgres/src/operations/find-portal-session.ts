import type { PortalSessionRecord } from '@keyhook/core/store';
import { PORTAL_SESSION_COLUMNS, type PortalSessionRow, toPortalSessionRecord } from '../portal-row.js';
import type { Prepare, Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';

const statements = (t: Tables, prepare: Prepare) => ({
  // Prepared: it runs on every request of a portal session (its lookup, as an API request's key).
  sessionByHash: prepare(`SELECT ${PORTAL_SESSION_COLUMNS} FROM ${t.portalSessions} WHERE session_hash = $1`),
});

export async function findPortalSession(
  ctx: StoreContext,
  sessionHash: string,
): Promise<PortalSessionRecord | null> {
  const result = await ctx.query<PortalSessionRow>(ctx.sql(statements).sessionByHash, [sessionHash]);
  const row = result.rows[0];
  return row ? toPortalSessionRecord(row) : null;
}
