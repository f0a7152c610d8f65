import type { RotateOutcome } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { type ApiKeyRow, KEY_COLUMNS, toRecord } from '../key-row.js';
import { apiKeyById } from '../shared-statements.js';
import type { LocalKeyChanges } from './key-change-version.js';

/** The write, the read of the key it left unchanged, and the count of key changes it moves. */
export interface RotateApiKeyStatements {
  rotate: Database.Statement<[string, string, string, string], ApiKeyRow>;
  byId: Database.Statement<[string, string], ApiKeyRow>;
  changes: LocalKeyChanges;
}

export function prepareRotateApiKey(db: Database.Database, changes: LocalKeyChanges): RotateApiKeyStatements {
  return {
    rotate: db.prepare(
      `UPDATE keyhook_api_keys SET key_hash = ?
        WHERE tenant_id = ? AND id = ? AND status = 'active' AND key_hash = ? RETURNING ${KEY_COLUMNS}`,
    ),
    byId: apiKeyById(db),
    changes,
  };
}

/** The compare-and-set is one statement; a rotation moves keyChangeVersion. */
export function rotateApiKey(
  sql: RotateApiKeyStatements,
  tenantId: string,
  id: string,
  expectedHash: string,
  newHash: string,
): RotateOutcome {
  const rotated = sql.rotate.get(newHash, tenantId, id, expectedHash);
  if (rotated) {
    sql.changes.local++;
    return { outcome: 'rotated', key: toRecord(rotated) };
  }
  // The compare-and-set wrote nothing; this read only reports why.
  const current = sql.byId.get(tenantId, id);
  return current ? { outcome: 'stale', key: toRecord(current) } : { outcome: 'not_found' };
}
