import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';

const statements = (t: Tables) => ({
  // A concurrent revoke holding the row lock makes this re-check revoked_at on the new row and skip it.
  revokeSession: `UPDATE ${t.portalSessions} SET revoked_at = $3
      WHERE tenant_id = $1 AND id = $2 AND revoked_at IS NULL`,

  revokeTenantSessions: `UPDATE ${t.portalSessions} SET revoked_at = $2 WHERE tenant_id = $1 AND revoked_at IS NULL`,
});

export async function revokePortalSessions(
  ctx: StoreContext,
  tenantId: string,
  id: string | undefined,
  at: Date,
): Promise<number> {
  const sql = ctx.sql(statements);
  const result =
    id === undefined
      ? await ctx.query(sql.revokeTenantSessions, [tenantId, at])
      : await ctx.query(sql.revokeSession, [tenantId, id, at]);
  return result.rowCount ?? 0;
}
