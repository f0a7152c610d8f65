import type Database from 'better-sqlite3';

/** One session of the tenant, or every one. */
export interface RevokePortalSessionsStatements {
  one: Database.Statement<[number, string, string]>;
  everyOfTenant: Database.Statement<[number, string]>;
}

export function prepareRevokePortalSessions(db: Database.Database): RevokePortalSessionsStatements {
  return {
    one: db.prepare(
      `UPDATE keyhook_portal_sessions SET revoked_at = ?
        WHERE tenant_id = ? AND id = ? AND revoked_at IS NULL`,
    ),
    everyOfTenant: db.prepare(
      'UPDATE keyhook_portal_sessions SET revoked_at = ? WHERE tenant_id = ? AND revoked_at IS NULL',
    ),
  };
}

export function revokePortalSessions(
  sql: RevokePortalSessionsStatements,
  tenantId: string,
  id: string | undefined,
  at: Date,
): number {
  return id === undefined
    ? sql.everyOfTenant.run(at.getTime(), tenantId).changes
    : sql.one.run(at.getTime(), tenantId, id).changes;
}
