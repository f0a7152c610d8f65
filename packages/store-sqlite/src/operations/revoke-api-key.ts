import type { ApiKeyRecord } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { type ApiKeyRow, KEY_COLUMNS, toRecord } from '../key-row.js';
import { apiKeyById } from '../shared-statements.js';
import type { LocalKeyChanges } from './key-change-version.js';

/** The write, the read of the key it left unchanged, and the count of key changes it moves. */
export interface RevokeApiKeyStatements {
  revoke: Database.Statement<[number, string, string], ApiKeyRow>;
  byId: Database.Statement<[string, string], ApiKeyRow>;
  changes: LocalKeyChanges;
}

export function prepareRevokeApiKey(db: Database.Database, changes: LocalKeyChanges): RevokeApiKeyStatements {
  return {
    revoke: db.prepare(
      `UPDATE keyhook_api_keys SET status = 'revoked', revoked_at = ?
        WHERE tenant_id = ? AND id = ? AND status = 'active' RETURNING ${KEY_COLUMNS}`,
    ),
    byId: apiKeyById(db),
    changes,
  };
}

/** One conditional update; a revoke moves keyChangeVersion. */
export function revokeApiKey(
  sql: RevokeApiKeyStatements,
  tenantId: string,
  id: string,
  at: Date,
): ApiKeyRecord | null {
  const revoked = sql.revoke.get(at.getTime(), tenantId, id);
  if (revoked) {
    sql.changes.local++;
    return toRecord(revoked);
  }
  // Already revoked (a key never returns to active, so this read cannot be stale) or absent.
  const current = sql.byId.get(tenantId, id);
  return current ? toRecord(current) : null;
}
