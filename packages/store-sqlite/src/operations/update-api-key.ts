import type { ApiKeyChanges, ApiKeyRecord } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { type ApiKeyRow, KEY_COLUMNS, toRecord } from '../key-row.js';
import { apiKeyById } from '../shared-statements.js';
import type { LocalKeyChanges } from './key-change-version.js';

/** Named parameters of a key update; `set_*` is 1 for each field the call changes. */
interface KeyUpdateParams {
  tenant_id: string;
  id: string;
  set_name: number;
  name: string | null;
  set_limit: number;
  rate_limit: number | null;
  rate_limit_window: number | null;
  rate_limit_by_host: number;
}

/** The write, the read of the key it left unchanged, and the count of key changes it moves. */
export interface UpdateApiKeyStatements {
  update: Database.Statement<[KeyUpdateParams], ApiKeyRow>;
  byId: Database.Statement<[string, string], ApiKeyRow>;
  changes: LocalKeyChanges;
}

export function prepareUpdateApiKey(db: Database.Database, changes: LocalKeyChanges): UpdateApiKeyStatements {
  return {
    // `set_name`/`set_limit` say which fields the call changes: a field left out keeps its value.
    update: db.prepare(
      `UPDATE keyhook_api_keys
        SET name = CASE WHEN @set_name THEN @name ELSE name END,
            rate_limit = CASE WHEN @set_limit THEN @rate_limit ELSE rate_limit END,
            rate_limit_window = CASE WHEN @set_limit THEN @rate_limit_window ELSE rate_limit_window END,
            rate_limit_by_host = CASE WHEN @set_limit THEN @rate_limit_by_host ELSE rate_limit_by_host END
        WHERE tenant_id = @tenant_id AND id = @id RETURNING ${KEY_COLUMNS}`,
    ),
    byId: apiKeyById(db),
    changes,
  };
}

/** One update; a changed rate limit moves keyChangeVersion. */
export function updateApiKey(
  sql: UpdateApiKeyStatements,
  tenantId: string,
  id: string,
  changes: ApiKeyChanges,
): ApiKeyRecord | null {
  const limit = changes.rateLimit;
  // Synchronous, so no other call of this store runs between the read and the write.
  const before = limit === undefined ? undefined : sql.byId.get(tenantId, id);
  const row = sql.update.get({
    tenant_id: tenantId,
    id,
    set_name: changes.name === undefined ? 0 : 1,
    name: changes.name ?? null,
    set_limit: limit === undefined ? 0 : 1,
    rate_limit: limit?.limit ?? null,
    rate_limit_window: limit?.window ?? null,
    rate_limit_by_host: changes.rateLimitByHost ? 1 : 0,
  });
  // Only a changed limit moves the version: cached keys carry it.
  if (
    row &&
    before &&
    (before.rate_limit !== row.rate_limit || before.rate_limit_window !== row.rate_limit_window)
  ) {
    sql.changes.local++;
  }
  return row ? toRecord(row) : null;
}
