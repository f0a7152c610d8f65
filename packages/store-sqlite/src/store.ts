import type { ApiKeyRecord, ListPage, RotateOutcome, Store } from '@keyhook/core';
import type Database from 'better-sqlite3';
import { migrate } from './migrate.js';
import { openDatabase, openFailure } from './open.js';
import { type ApiKeyRow, toRecord, toRow } from './row.js';
import { translateDriverError, unavailable } from './unavailable.js';

export type SqliteStoreOptions = (
  | {
      /** Path of the database file; created, with its schema, when missing. */
      filename: string;
      /** How long a statement waits for another process's write lock before `unavailable`. Default 5000. */
      busyTimeoutMs?: number;
    }
  | {
      /** A connection you opened. You own it: `close()` leaves it open. */
      database: Database.Database;
    }
) & {
  /**
   * How often, at most, to ask SQLite whether another connection changed the file (PRAGMA
   * data_version costs about as much as a key read). Changes through this store are seen at
   * once; another process's revoke is seen within this bound. Default 1 ms; 0 asks every time.
   */
  changeCheckIntervalMs?: number;
};

export const DEFAULT_CHANGE_CHECK_INTERVAL_MS = 1;

// About 0.1 ms of back-to-back cached verifications.
const CHANGE_CHECK_EVERY_CALLS = 256;

const COLUMNS =
  'id, tenant_id, key_lookup, name, scopes, key_hash, status, expires_at, created_at, last_used_at, revoked_at';

// The only uniqueness constraints on keyhook_api_keys are key_lookup and id.
const UNIQUE_VIOLATIONS = new Set(['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY']);

function prepareStatements(db: Database.Database) {
  return {
    insert: db.prepare<[ApiKeyRow]>(
      `INSERT INTO keyhook_api_keys (${COLUMNS}) VALUES (@id, @tenant_id, @key_lookup, @name, @scopes,
        @key_hash, @status, @expires_at, @created_at, @last_used_at, @revoked_at)`,
    ),
    // INDEXED BY: the (key_lookup, key_hash) index answers a miss for an unknown id and for a wrong
    // secret alike; the unique key_lookup index alone would read the row for the wrong secret only.
    byCredential: db.prepare<[string, string], ApiKeyRow>(
      `SELECT ${COLUMNS} FROM keyhook_api_keys INDEXED BY keyhook_api_keys_credential
        WHERE key_lookup = ? AND key_hash = ?`,
    ),
    byId: db.prepare<[string, string], ApiKeyRow>(
      `SELECT ${COLUMNS} FROM keyhook_api_keys WHERE tenant_id = ? AND id = ?`,
    ),
    listFirst: db.prepare<[string, number], ApiKeyRow>(
      `SELECT ${COLUMNS} FROM keyhook_api_keys WHERE tenant_id = ? ORDER BY id DESC LIMIT ?`,
    ),
    listBefore: db.prepare<[string, string, number], ApiKeyRow>(
      `SELECT ${COLUMNS} FROM keyhook_api_keys WHERE tenant_id = ? AND id < ? ORDER BY id DESC LIMIT ?`,
    ),
    rotate: db.prepare<[string, string, string, string], ApiKeyRow>(
      `UPDATE keyhook_api_keys SET key_hash = ?
        WHERE tenant_id = ? AND id = ? AND status = 'active' AND key_hash = ? RETURNING ${COLUMNS}`,
    ),
    revoke: db.prepare<[number, string, string], ApiKeyRow>(
      `UPDATE keyhook_api_keys SET status = 'revoked', revoked_at = ?
        WHERE tenant_id = ? AND id = ? AND status = 'active' RETURNING ${COLUMNS}`,
    ),
    touch: db.prepare<[number, string, number]>(
      `UPDATE keyhook_api_keys SET last_used_at = ?
        WHERE id = ? AND (last_used_at IS NULL OR last_used_at <= ?)`,
    ),
    // Reads a real table, so a file that has gone bad fails here and /healthz says so.
    ping: db.prepare<[], { ok: number }>('SELECT count(*) AS ok FROM keyhook_migrations'),
    // Changes whenever another connection commits to the file; never for this connection's own writes.
    dataVersion: db.prepare<[], number>('PRAGMA data_version').pluck(),
  };
}

/**
 * keyhook's Store on SQLite through better-sqlite3. better-sqlite3 is synchronous, so each
 * method runs its statement to the end before it yields: nothing interleaves inside a process,
 * and across processes SQLite's write lock serialises the single statements.
 */
export class SqliteStore implements Store {
  private readonly db: Database.Database;
  private readonly ownsDatabase: boolean;
  private readonly statements: ReturnType<typeof prepareStatements>;
  private closed = false;
  private readonly changeCheckIntervalMs: number;
  private localChanges = 0;
  private dataVersion = 0;
  private changeCheckDue = true;
  private callsSinceCheck = 0;

  /** Opens (or adopts) the database and applies pending migrations before it returns. */
  constructor(options: SqliteStoreOptions) {
    this.changeCheckIntervalMs = options.changeCheckIntervalMs ?? DEFAULT_CHANGE_CHECK_INTERVAL_MS;
    if ('database' in options) {
      this.db = options.database;
      this.ownsDatabase = false;
    } else {
      this.db = openDatabase(options.filename, options.busyTimeoutMs);
      this.ownsDatabase = true;
    }
    try {
      migrate(this.db);
      this.statements = prepareStatements(this.db);
    } catch (error) {
      if (this.ownsDatabase) this.db.close();
      throw openFailure(this.db.name, 'migrate', error);
    }
  }

  async insertApiKey(record: ApiKeyRecord): Promise<'inserted' | 'duplicate_lookup'> {
    return this.run(() => {
      try {
        this.statements.insert.run(toRow(record));
        return 'inserted';
      } catch (error) {
        if (UNIQUE_VIOLATIONS.has((error as { code?: string }).code ?? '')) return 'duplicate_lookup';
        throw error;
      }
    });
  }

  async findApiKeyByCredential(keyLookup: string, keyHash: string): Promise<ApiKeyRecord | null> {
    return this.run(() => this.toRecordOrNull(this.statements.byCredential.get(keyLookup, keyHash)));
  }

  async getApiKey(tenantId: string, id: string): Promise<ApiKeyRecord | null> {
    return this.run(() => this.toRecordOrNull(this.statements.byId.get(tenantId, id)));
  }

  async listApiKeys(tenantId: string, page: ListPage): Promise<ApiKeyRecord[]> {
    return this.run(() => {
      const rows =
        page.before === undefined
          ? this.statements.listFirst.all(tenantId, page.limit)
          : this.statements.listBefore.all(tenantId, page.before, page.limit);
      return rows.map(toRecord);
    });
  }

  async rotateApiKey(
    tenantId: string,
    id: string,
    expectedHash: string,
    newHash: string,
  ): Promise<RotateOutcome> {
    return this.run((): RotateOutcome => {
      const rotated = this.statements.rotate.get(newHash, tenantId, id, expectedHash);
      if (rotated) {
        this.localChanges++;
        return { outcome: 'rotated', key: toRecord(rotated) };
      }
      // The compare-and-set wrote nothing; this read only reports why.
      const current = this.statements.byId.get(tenantId, id);
      return current ? { outcome: 'stale', key: toRecord(current) } : { outcome: 'not_found' };
    });
  }

  async revokeApiKey(tenantId: string, id: string, at: Date): Promise<ApiKeyRecord | null> {
    return this.run(() => {
      const revoked = this.statements.revoke.get(at.getTime(), tenantId, id);
      if (revoked) {
        this.localChanges++;
        return toRecord(revoked);
      }
      // Already revoked (a key never returns to active, so this read cannot be stale) or absent.
      return this.toRecordOrNull(this.statements.byId.get(tenantId, id));
    });
  }

  async touchApiKey(id: string, at: Date, minIntervalMs: number): Promise<boolean> {
    return this.run(
      () => this.statements.touch.run(at.getTime(), id, at.getTime() - minIntervalMs).changes > 0,
    );
  }

  /** This store's own revokes and rotations at once; other connections' within the check interval. */
  keyChangeVersion(): number | null {
    if (this.closed) return null;
    // The timer marks a check due; the count covers callers that never let the event loop turn.
    if (this.changeCheckDue || ++this.callsSinceCheck >= CHANGE_CHECK_EVERY_CALLS) {
      this.callsSinceCheck = 0;
      try {
        this.dataVersion = this.statements.dataVersion.get()!;
      } catch {
        return null; // the file cannot be read: cache nothing, and let the next read say why
      }
      // A timer, not a clock read per call, marks the next check as due: the hot path reads a flag.
      if (this.changeCheckIntervalMs > 0) {
        this.changeCheckDue = false;
        setTimeout(() => {
          this.changeCheckDue = true;
        }, this.changeCheckIntervalMs).unref();
      }
    }
    return this.dataVersion + this.localChanges;
  }

  async ping(): Promise<void> {
    this.run(() => this.statements.ping.get());
  }

  /** Closes the connection if the store opened it; a passed-in `database` stays open. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.ownsDatabase) this.db.close();
  }

  private toRecordOrNull(row: ApiKeyRow | undefined): ApiKeyRecord | null {
    return row ? toRecord(row) : null;
  }

  private run<T>(action: () => T): T {
    if (this.closed) throw unavailable('The SQLite store is closed.');
    try {
      return action();
    } catch (error) {
      throw translateDriverError(error);
    }
  }
}

/** Opens a SQLite store: the file is created and migrated when needed. */
export function createSqliteStore(options: SqliteStoreOptions): SqliteStore {
  return new SqliteStore(options);
}
