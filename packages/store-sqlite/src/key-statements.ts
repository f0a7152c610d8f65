import type Database from 'better-sqlite3';
import { type ApiKeyRow, KEY_COLUMNS } from './key-row.js';

// The only uniqueness constraints on keyhook_api_keys are key_lookup and id.
export const UNIQUE_VIOLATIONS = new Set(['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY']);

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

/** Every statement the store runs on keyhook_api_keys, prepared once on the store's connection. */
export interface KeyStatements {
  insert: Database.Statement<[ApiKeyRow]>;
  byCredential: Database.Statement<[string, string], ApiKeyRow>;
  byId: Database.Statement<[string, string], ApiKeyRow>;
  listFirst: Database.Statement<[string, number], ApiKeyRow>;
  listBefore: Database.Statement<[string, string, number], ApiKeyRow>;
  rotate: Database.Statement<[string, string, string, string], ApiKeyRow>;
  revoke: Database.Statement<[number, string, string], ApiKeyRow>;
  update: Database.Statement<[KeyUpdateParams], ApiKeyRow>;
  touch: Database.Statement<[number, string, number]>;
}

export function keyStatements(db: Database.Database): KeyStatements {
  return {
    insert: db.prepare<[ApiKeyRow]>(
      `INSERT INTO keyhook_api_keys (${KEY_COLUMNS}) VALUES (@id, @tenant_id, @key_lookup, @name, @scopes,
        @key_hash, @status, @expires_at, @created_at, @last_used_at, @revoked_at, @rate_limit, @rate_limit_window,
        @rate_limit_by_host)`,
    ),
    // INDEXED BY: the (key_lookup, key_hash) index answers a miss for an unknown id and for a wrong
    // secret alike; the unique key_lookup index alone would read the row for the wrong secret only.
    byCredential: db.prepare<[string, string], ApiKeyRow>(
      `SELECT ${KEY_COLUMNS} FROM keyhook_api_keys INDEXED BY keyhook_api_keys_credential
        WHERE key_lookup = ? AND key_hash = ?`,
    ),
    byId: db.prepare<[string, string], ApiKeyRow>(
      `SELECT ${KEY_COLUMNS} FROM keyhook_api_keys WHERE tenant_id = ? AND id = ?`,
    ),
    listFirst: db.prepare<[string, number], ApiKeyRow>(
      `SELECT ${KEY_COLUMNS} FROM keyhook_api_keys WHERE tenant_id = ? ORDER BY id DESC LIMIT ?`,
    ),
    listBefore: db.prepare<[string, string, number], ApiKeyRow>(
      `SELECT ${KEY_COLUMNS} FROM keyhook_api_keys WHERE tenant_id = ? AND id < ? ORDER BY id DESC LIMIT ?`,
    ),
    rotate: db.prepare<[string, string, string, string], ApiKeyRow>(
      `UPDATE keyhook_api_keys SET key_hash = ?
        WHERE tenant_id = ? AND id = ? AND status = 'active' AND key_hash = ? RETURNING ${KEY_COLUMNS}`,
    ),
    revoke: db.prepare<[number, string, string], ApiKeyRow>(
      `UPDATE keyhook_api_keys SET status = 'revoked', revoked_at = ?
        WHERE tenant_id = ? AND id = ? AND status = 'active' RETURNING ${KEY_COLUMNS}`,
    ),
    // `set_name`/`set_limit` say which fields the call changes: a field left out keeps its value.
    update: db.prepare<[KeyUpdateParams], ApiKeyRow>(
      `UPDATE keyhook_api_keys
        SET name = CASE WHEN @set_name THEN @name ELSE name END,
            rate_limit = CASE WHEN @set_limit THEN @rate_limit ELSE rate_limit END,
            rate_limit_window = CASE WHEN @set_limit THEN @rate_limit_window ELSE rate_limit_window END,
            rate_limit_by_host = CASE WHEN @set_limit THEN @rate_limit_by_host ELSE rate_limit_by_host END
        WHERE tenant_id = @tenant_id AND id = @id RETURNING ${KEY_COLUMNS}`,
    ),
    touch: db.prepare<[number, string, number]>(
      `UPDATE keyhook_api_keys SET last_used_at = ?
        WHERE id = ? AND (last_used_at IS NULL OR last_used_at <= ?)`,
    ),
  };
}
