import type Database from 'better-sqlite3';

export function prepareReleaseIdempotencyKey(
  db: Database.Database,
): Database.Statement<[string, string, string]> {
  return db.prepare(
    `DELETE FROM keyhook_idempotency_keys
        WHERE tenant_id = ? AND key = ? AND claim_id = ? AND state = 'in_progress'`,
  );
}

export function releaseIdempotencyKey(
  release: ReturnType<typeof prepareReleaseIdempotencyKey>,
  tenantId: string,
  key: string,
  claimId: string,
): void {
  release.run(tenantId, key, claimId);
}
