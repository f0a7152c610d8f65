import type { ApiKeyRecord } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { type ApiKeyRow, KEY_COLUMNS, toRow } from '../key-row.js';

// The only uniqueness constraints on keyhook_api_keys are key_lookup and id.
const UNIQUE_VIOLATIONS = new Set(['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY']);

export function prepareInsertApiKey(db: Database.Database): Database.Statement<[ApiKeyRow]> {
  return db.prepare(
    `INSERT INTO keyhook_api_keys (${KEY_COLUMNS}) VALUES (@id, @tenant_id, @key_lookup, @name, @scopes,
        @key_hash, @status, @expires_at, @created_at, @last_used_at, @revoked_at, @rate_limit, @rate_limit_window,
        @rate_limit_by_host)`,
  );
}

/** One insert: a lookup id another key holds fails on its unique index, and nothing is written. */
export function insertApiKey(
  insert: ReturnType<typeof prepareInsertApiKey>,
  record: ApiKeyRecord,
): 'inserted' | 'duplicate_lookup' {
  try {
    insert.run(toRow(record));
    return 'inserted';
  } catch (error) {
    if (UNIQUE_VIOLATIONS.has((error as { code?: string }).code ?? '')) return 'duplicate_lookup';
    throw error;
  }
}
