import type {
  ApiKeyRecord,
  IdempotencyClaimOutcome,
  IdempotencyCompletion,
  IdempotencyRecord,
  ListPage,
  RotateOutcome,
  Store,
  WebhookDisabledReason,
  WebhookRecord,
  WebhookStatus,
  WebhookStatusOutcome,
} from '@keyhook/core';
import type Database from 'better-sqlite3';
import { migrate } from './migrate.js';
import { openDatabase, openFailure } from './open.js';
import {
  type ApiKeyRow,
  type IdempotencyRow,
  toIdempotencyRecord,
  toIdempotencyRow,
  toRecord,
  toRow,
  toWebhookRecord,
  toWebhookRow,
  type WebhookRow,
} from './row.js';
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

const WEBHOOK_COLUMNS =
  'id, tenant_id, url, events, twin_key, status, disabled_reason, secret_sealed, created_at, updated_at';

const IDEMPOTENCY_COLUMNS =
  'tenant_id, key, fingerprint, claim_id, state, response_sealed, created_at, locked_until, expires_at';

/** The partial unique index keyhook_webhooks_active_twin refused a second active twin; a clashing id is a bug. */
function isActiveTwinViolation(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return (
    code === 'SQLITE_CONSTRAINT_UNIQUE' &&
    typeof message === 'string' &&
    message.includes('keyhook_webhooks.tenant_id, keyhook_webhooks.twin_key')
  );
}

/** Named parameters of the claim upsert; it writes state and response itself (in progress, none). */
type ClaimParams = IdempotencyRow & { now: number };

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
    insertWebhook: db.prepare<[WebhookRow]>(
      `INSERT INTO keyhook_webhooks (${WEBHOOK_COLUMNS}) VALUES (@id, @tenant_id, @url, @events, @twin_key,
        @status, @disabled_reason, @secret_sealed, @created_at, @updated_at)`,
    ),
    webhookById: db.prepare<[string, string], WebhookRow>(
      `SELECT ${WEBHOOK_COLUMNS} FROM keyhook_webhooks WHERE tenant_id = ? AND id = ?`,
    ),
    listWebhooksFirst: db.prepare<[string, number], WebhookRow>(
      `SELECT ${WEBHOOK_COLUMNS} FROM keyhook_webhooks WHERE tenant_id = ? ORDER BY id DESC LIMIT ?`,
    ),
    listWebhooksBefore: db.prepare<[string, string, number], WebhookRow>(
      `SELECT ${WEBHOOK_COLUMNS} FROM keyhook_webhooks WHERE tenant_id = ? AND id < ? ORDER BY id DESC LIMIT ?`,
    ),
    // `status <> ?`: setting the status a webhook already has matches no row and writes nothing.
    setWebhookStatus: db.prepare<
      [WebhookStatus, WebhookDisabledReason | null, number, string, string, WebhookStatus],
      WebhookRow
    >(
      `UPDATE keyhook_webhooks SET status = ?, disabled_reason = ?, updated_at = ?
        WHERE tenant_id = ? AND id = ? AND status <> ? RETURNING ${WEBHOOK_COLUMNS}`,
    ),
    rotateWebhookSecret: db.prepare<[string, number, string, string], WebhookRow>(
      `UPDATE keyhook_webhooks SET secret_sealed = ?, updated_at = ?
        WHERE tenant_id = ? AND id = ? RETURNING ${WEBHOOK_COLUMNS}`,
    ),
    deleteWebhook: db.prepare<[string, string]>(
      'DELETE FROM keyhook_webhooks WHERE tenant_id = ? AND id = ?',
    ),
    // The first writer wins: the insert, or taking the place of an expired or abandoned record, is
    // one statement, so SQLite's write lock decides between connections and processes.
    claimIdempotency: db
      .prepare<[ClaimParams], string>(
        `INSERT INTO keyhook_idempotency_keys (${IDEMPOTENCY_COLUMNS})
          VALUES (@tenant_id, @key, @fingerprint, @claim_id, 'in_progress', NULL,
            @created_at, @locked_until, @expires_at)
          ON CONFLICT (tenant_id, key) DO UPDATE SET fingerprint = excluded.fingerprint,
            claim_id = excluded.claim_id, state = 'in_progress', response_sealed = NULL,
            created_at = excluded.created_at, locked_until = excluded.locked_until,
            expires_at = excluded.expires_at
          WHERE keyhook_idempotency_keys.expires_at <= @now
            OR (keyhook_idempotency_keys.state = 'in_progress' AND keyhook_idempotency_keys.locked_until <= @now)
          RETURNING claim_id`,
      )
      .pluck(),
    idempotencyByKey: db.prepare<[string, string], IdempotencyRow>(
      `SELECT ${IDEMPOTENCY_COLUMNS} FROM keyhook_idempotency_keys WHERE tenant_id = ? AND key = ?`,
    ),
    idempotencyHeld: db
      .prepare<[string, string, string], number>(
        `SELECT 1 FROM keyhook_idempotency_keys
        WHERE tenant_id = ? AND key = ? AND claim_id = ? AND state = 'in_progress'`,
      )
      .pluck(),
    completeIdempotency: db.prepare<[string, string, string, string]>(
      `UPDATE keyhook_idempotency_keys SET state = 'completed', response_sealed = ?
        WHERE tenant_id = ? AND key = ? AND claim_id = ? AND state = 'in_progress'`,
    ),
    releaseIdempotency: db.prepare<[string, string, string]>(
      `DELETE FROM keyhook_idempotency_keys
        WHERE tenant_id = ? AND key = ? AND claim_id = ? AND state = 'in_progress'`,
    ),
    purgeIdempotency: db.prepare<[number]>('DELETE FROM keyhook_idempotency_keys WHERE expires_at <= ?'),
    // Reads a real table, so a file that has gone bad fails here and /healthz says so.
    ping: db.prepare<[], { ok: number }>('SELECT count(*) AS ok FROM keyhook_migrations'),
    // Changes whenever another connection commits to the file; never for this connection's own writes.
    dataVersion: db.prepare<[], number>('PRAGMA data_version').pluck(),
  };
}

/**
 * The methods that are more than one statement. Each runs under `BEGIN IMMEDIATE`: the write lock
 * is taken first, so no other connection commits between the statements, and nothing waits to
 * upgrade a read lock (which SQLite would answer with SQLITE_BUSY at once).
 */
function prepareTransactions(db: Database.Database, statements: ReturnType<typeof prepareStatements>) {
  return {
    // The webhook and its Idempotency-Key completion commit together or not at all.
    insertWebhook: db.transaction(
      (
        row: WebhookRow,
        completion: IdempotencyCompletion | undefined,
      ): 'inserted' | 'active_twin' | 'claim_lost' => {
        // Under BEGIN IMMEDIATE no other connection can take the key over between this read and the insert.
        if (completion) {
          const { tenantId, key, claimId } = completion;
          if (!statements.idempotencyHeld.get(tenantId, key, claimId)) return 'claim_lost';
        }
        try {
          statements.insertWebhook.run(row);
        } catch (error) {
          // The failed INSERT undid only itself, and nothing else was written yet.
          if (isActiveTwinViolation(error)) return 'active_twin';
          throw error;
        }
        if (completion) {
          const { responseSealed, tenantId, key, claimId } = completion;
          statements.completeIdempotency.run(responseSealed, tenantId, key, claimId);
        }
        return 'inserted';
      },
    ),
    setWebhookStatus: db.transaction(
      (
        tenantId: string,
        id: string,
        status: WebhookStatus,
        disabledReason: WebhookDisabledReason | null,
        at: number,
      ): WebhookStatusOutcome => {
        let updated: WebhookRow | undefined;
        try {
          updated = statements.setWebhookStatus.get(status, disabledReason, at, tenantId, id, status);
        } catch (error) {
          if (isActiveTwinViolation(error)) return { outcome: 'active_twin' };
          throw error;
        }
        if (updated) return { outcome: 'updated', webhook: toWebhookRecord(updated) };
        // Nothing matched: the webhook already has this status (returned as it is), or there is none.
        const current = statements.webhookById.get(tenantId, id);
        return current ? { outcome: 'updated', webhook: toWebhookRecord(current) } : { outcome: 'not_found' };
      },
    ),
    claimIdempotencyKey: db.transaction((record: IdempotencyRecord, now: number): IdempotencyClaimOutcome => {
      const holder = statements.claimIdempotency.get({ ...toIdempotencyRow(record), now });
      if (holder === record.claimId) return { outcome: 'claimed' };
      // The upsert wrote nothing, so a record holds the key; read under the same lock, it is the one that won.
      const existing = statements.idempotencyByKey.get(record.tenantId, record.key)!;
      return { outcome: 'exists', record: toIdempotencyRecord(existing) };
    }),
  };
}

/**
 * keyhook's Store on SQLite through better-sqlite3. better-sqlite3 is synchronous, so each
 * method runs its statement (or its immediate transaction) to the end before it yields: nothing
 * interleaves inside a process, and across processes SQLite's write lock serialises them.
 */
export class SqliteStore implements Store {
  private readonly db: Database.Database;
  private readonly ownsDatabase: boolean;
  private readonly statements: ReturnType<typeof prepareStatements>;
  private readonly transactions: ReturnType<typeof prepareTransactions>;
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
      this.transactions = prepareTransactions(this.db, this.statements);
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

  async insertWebhook(
    record: WebhookRecord,
    completion?: IdempotencyCompletion,
  ): Promise<'inserted' | 'active_twin' | 'claim_lost'> {
    return this.run(() => this.transactions.insertWebhook.immediate(toWebhookRow(record), completion));
  }

  async getWebhook(tenantId: string, id: string): Promise<WebhookRecord | null> {
    return this.run(() => {
      const row = this.statements.webhookById.get(tenantId, id);
      return row ? toWebhookRecord(row) : null;
    });
  }

  async listWebhooks(tenantId: string, page: ListPage): Promise<WebhookRecord[]> {
    return this.run(() => {
      const rows =
        page.before === undefined
          ? this.statements.listWebhooksFirst.all(tenantId, page.limit)
          : this.statements.listWebhooksBefore.all(tenantId, page.before, page.limit);
      return rows.map(toWebhookRecord);
    });
  }

  async setWebhookStatus(
    tenantId: string,
    id: string,
    status: WebhookStatus,
    disabledReason: WebhookDisabledReason | null,
    at: Date,
  ): Promise<WebhookStatusOutcome> {
    return this.run(() =>
      this.transactions.setWebhookStatus.immediate(tenantId, id, status, disabledReason, at.getTime()),
    );
  }

  async rotateWebhookSecret(
    tenantId: string,
    id: string,
    secretSealed: string,
    at: Date,
  ): Promise<WebhookRecord | null> {
    return this.run(() => {
      const row = this.statements.rotateWebhookSecret.get(secretSealed, at.getTime(), tenantId, id);
      return row ? toWebhookRecord(row) : null;
    });
  }

  async deleteWebhook(tenantId: string, id: string): Promise<boolean> {
    return this.run(() => this.statements.deleteWebhook.run(tenantId, id).changes > 0);
  }

  async claimIdempotencyKey(record: IdempotencyRecord, now: Date): Promise<IdempotencyClaimOutcome> {
    return this.run(() => this.transactions.claimIdempotencyKey.immediate(record, now.getTime()));
  }

  async completeIdempotencyKey(completion: IdempotencyCompletion): Promise<boolean> {
    const { responseSealed, tenantId, key, claimId } = completion;
    return this.run(
      () => this.statements.completeIdempotency.run(responseSealed, tenantId, key, claimId).changes > 0,
    );
  }

  async releaseIdempotencyKey(tenantId: string, key: string, claimId: string): Promise<void> {
    this.run(() => this.statements.releaseIdempotency.run(tenantId, key, claimId));
  }

  async purgeIdempotencyKeys(now: Date): Promise<number> {
    return this.run(() => this.statements.purgeIdempotency.run(now.getTime()).changes);
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
