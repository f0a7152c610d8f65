import type { ApiKeyRecord } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { type ApiKeyRow, KEY_COLUMNS, toRecord } from '../key-row.js';

export function prepareFindApiKeyByCredential(
  db: Database.Database,
): Database.Statement<[string, string], ApiKeyRow> {
  // INDEXED BY: the (key_lookup, key_hash) index answers a miss for an unknown id and for a wrong
  // secret alike; the unique key_lookup index alone would read the row for the wrong secret only.
  return db.prepare(
    `SELECT ${KEY_COLUMNS} FROM keyhook_api_keys INDEXED BY keyhook_api_keys_credential
        WHERE key_lookup = ? AND key_hash = ?`,
  );
}

export function findApiKeyByCredential(
  byCredential: ReturnType<typeof prepareFindApiKeyByCredential>,
  keyLookup: string,
  keyHash: string,
): ApiKeyRecord | null {
  const row = byCredential.get(keyLookup, keyHash);
  return row ? toRecord(row) : null;
}
