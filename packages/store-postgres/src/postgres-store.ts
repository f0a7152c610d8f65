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
import type pg from 'pg';
import type { KeyChangeFeed } from './change-feed.js';
import { type IdempotencyRow, toClaimParams, toIdempotencyRecord } from './idempotency-row.js';
import { type IdempotencyStatements, idempotencyStatements } from './idempotency-statements.js';
import { type KeyRow, toKeyParams, toKeyRecord } from './key-row.js';
import { type KeyStatements, keyStatements } from './key-statements.js';
import { assertSchemaName } from './schema-name.js';
import { toStoreError, unavailable } from './unavailable.js';
import { toWebhookParams, toWebhookRecord, type WebhookRow } from './webhook-row.js';
import { ACTIVE_TWIN_INDEX, type WebhookStatements, webhookStatements } from './webhook-statements.js';

/** How often a method decides again when the row changed between its deciding write and its report read. */
const RACE_ATTEMPTS = 5;

export interface PostgresStoreParts {
  pool: pg.Pool;
  /** A schema that `migrate` has brought up to date. */
  schema: string;
  /** Whether `close()` ends the pool: true when the store created it. */
  ownsPool: boolean;
  /** Started, listening on one of the pool's connections. */
  feed: KeyChangeFeed;
}

/**
 * keyhook's Store on PostgreSQL. Each method is one statement, atomic in the database, so
 * any number of app instances can share one schema. Open it with `createPostgresStore`,
 * which also applies the migrations; the constructor assumes they ran.
 */
export class PostgresStore implements Store {
  readonly schema: string;
  private readonly pool: pg.Pool;
  private readonly ownsPool: boolean;
  private readonly sql: KeyStatements;
  private readonly webhookSql: WebhookStatements;
  private readonly idempotencySql: IdempotencyStatements;
  private readonly feed: KeyChangeFeed;
  private closed = false;
  private localChanges = 0;

  constructor(parts: PostgresStoreParts) {
    this.feed = parts.feed;
    this.schema = assertSchemaName(parts.schema);
    this.pool = parts.pool;
    this.ownsPool = parts.ownsPool;
    this.sql = keyStatements(this.schema);
    this.webhookSql = webhookStatements(this.schema);
    this.idempotencySql = idempotencyStatements(this.schema);
  }

  async insertApiKey(record: ApiKeyRecord): Promise<'inserted' | 'duplicate_lookup'> {
    const result = await this.query(this.sql.insert, toKeyParams(record));
    return result.rowCount === 1 ? 'inserted' : 'duplicate_lookup';
  }

  async findApiKeyByCredential(keyLookup: string, keyHash: string): Promise<ApiKeyRecord | null> {
    return this.one(await this.query<KeyRow>(this.sql.findByCredential, [keyLookup, keyHash]));
  }

  async getApiKey(tenantId: string, id: string): Promise<ApiKeyRecord | null> {
    return this.one(await this.query<KeyRow>(this.sql.get, [tenantId, id]));
  }

  async listApiKeys(tenantId: string, page: ListPage): Promise<ApiKeyRecord[]> {
    const result =
      page.before === undefined
        ? await this.query<KeyRow>(this.sql.list, [tenantId, page.limit])
        : await this.query<KeyRow>(this.sql.listBefore, [tenantId, page.limit, page.before]);
    return result.rows.map(toKeyRecord);
  }

  async rotateApiKey(
    tenantId: string,
    id: string,
    expectedHash: string,
    newHash: string,
  ): Promise<RotateOutcome> {
    const rotated = await this.announced(
      id,
      async () => this.one(await this.query<KeyRow>(this.sql.rotate, [tenantId, id, expectedHash, newHash])),
      (key) => key !== null,
    );
    if (rotated) return { outcome: 'rotated', key: rotated };
    // The write is already decided; this read, a new statement with a new snapshot, only reports the winner's row.
    const current = await this.getApiKey(tenantId, id);
    return current ? { outcome: 'stale', key: current } : { outcome: 'not_found' };
  }

  async revokeApiKey(tenantId: string, id: string, at: Date): Promise<ApiKeyRecord | null> {
    return this.announced(
      id,
      async () => this.one(await this.query<KeyRow>(this.sql.revoke, [tenantId, id, at])),
      // This call revoked it (rather than finding it revoked) when the stamp is its own.
      (key) => key?.revokedAt?.getTime() === at.getTime(),
    );
  }

  async touchApiKey(id: string, at: Date, minIntervalMs: number): Promise<boolean> {
    const result = await this.query(this.sql.touch, [id, at, minIntervalMs]);
    return result.rowCount === 1;
  }

  async insertWebhook(
    record: WebhookRecord,
    completion?: IdempotencyCompletion,
  ): Promise<'inserted' | 'active_twin' | 'claim_lost'> {
    if (!completion) {
      const result = await this.query(this.webhookSql.insert, toWebhookParams(record));
      return result.rowCount === 1 ? 'inserted' : 'active_twin';
    }
    const result = await this.query<{ held: number; inserted: number }>(this.webhookSql.insertCompleting, [
      ...toWebhookParams(record),
      completion.tenantId,
      completion.key,
      completion.claimId,
      completion.responseSealed,
    ]);
    const counts = result.rows[0];
    if (!counts || counts.held === 0) return 'claim_lost';
    return counts.inserted === 0 ? 'active_twin' : 'inserted';
  }

  async getWebhook(tenantId: string, id: string): Promise<WebhookRecord | null> {
    return this.oneWebhook(await this.query<WebhookRow>(this.webhookSql.get, [tenantId, id]));
  }

  async listWebhooks(tenantId: string, page: ListPage): Promise<WebhookRecord[]> {
    const result =
      page.before === undefined
        ? await this.query<WebhookRow>(this.webhookSql.list, [tenantId, page.limit])
        : await this.query<WebhookRow>(this.webhookSql.listBefore, [tenantId, page.limit, page.before]);
    return result.rows.map(toWebhookRecord);
  }

  async setWebhookStatus(
    tenantId: string,
    id: string,
    status: WebhookStatus,
    disabledReason: WebhookDisabledReason | null,
    at: Date,
  ): Promise<WebhookStatusOutcome> {
    for (let attempt = 0; ; attempt++) {
      let updated: WebhookRecord | null;
      try {
        updated = this.oneWebhook(
          await this.query<WebhookRow>(this.webhookSql.setStatus, [tenantId, id, status, disabledReason, at]),
        );
      } catch (error) {
        if (isActiveTwinViolation(error)) return { outcome: 'active_twin' };
        throw error;
      }
      if (updated) return { outcome: 'updated', webhook: updated };
      // Nothing written: the webhook is missing or already has this status. A new statement reports which.
      const current = await this.getWebhook(tenantId, id);
      if (!current) return { outcome: 'not_found' };
      // Changed again between the two statements: decide anew rather than report a status not asked for.
      if (current.status === status) return { outcome: 'updated', webhook: current };
      if (attempt + 1 >= RACE_ATTEMPTS)
        throw unavailable('The webhook changed status too often to be set; retry.');
    }
  }

  async rotateWebhookSecret(
    tenantId: string,
    id: string,
    secretSealed: string,
    at: Date,
  ): Promise<WebhookRecord | null> {
    return this.oneWebhook(
      await this.query<WebhookRow>(this.webhookSql.rotateSecret, [tenantId, id, secretSealed, at]),
    );
  }

  async deleteWebhook(tenantId: string, id: string): Promise<boolean> {
    const result = await this.query(this.webhookSql.delete, [tenantId, id]);
    return result.rowCount === 1;
  }

  async claimIdempotencyKey(record: IdempotencyRecord, now: Date): Promise<IdempotencyClaimOutcome> {
    for (let attempt = 0; attempt < RACE_ATTEMPTS; attempt++) {
      const claimed = await this.query<{ claim_id: string }>(this.idempotencySql.claim, [
        ...toClaimParams(record),
        now,
      ]);
      if (claimed.rows[0]?.claim_id === record.claimId) return { outcome: 'claimed' };
      // Held: this read, a new statement with a new snapshot, only reports the holder's record as it now is.
      const existing = await this.query<IdempotencyRow>(this.idempotencySql.get, [
        record.tenantId,
        record.key,
      ]);
      const row = existing.rows[0];
      // Released, purged or lapsed since the claim statement: the key may be free, so claim again.
      if (row && holds(row, now)) return { outcome: 'exists', record: toIdempotencyRecord(row) };
    }
    throw unavailable('The Idempotency-Key changed hands too often to be claimed; retry.');
  }

  async completeIdempotencyKey(completion: IdempotencyCompletion): Promise<boolean> {
    const result = await this.query(this.idempotencySql.complete, [
      completion.tenantId,
      completion.key,
      completion.claimId,
      completion.responseSealed,
    ]);
    return result.rowCount === 1;
  }

  async releaseIdempotencyKey(tenantId: string, key: string, claimId: string): Promise<void> {
    await this.query(this.idempotencySql.release, [tenantId, key, claimId]);
  }

  async purgeIdempotencyKeys(now: Date): Promise<number> {
    const result = await this.query(this.idempotencySql.purge, [now]);
    return result.rowCount ?? 0;
  }

  /**
   * Moves at once for this store's own revokes and rotations, and for every other instance's
   * when their NOTIFY arrives; null while the listener is reconnecting.
   */
  keyChangeVersion(): number | null {
    const feed = this.closed ? null : this.feed.version();
    return feed === null ? null : feed + this.localChanges;
  }

  async ping(): Promise<void> {
    await this.query('SELECT 1', []);
  }

  /** Marks the store closed; ends the pool only when the store created it. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.feed.stop();
    if (this.ownsPool) await this.pool.end();
  }

  private async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values: unknown[],
  ): Promise<pg.QueryResult<R>> {
    if (this.closed) throw unavailable('The store is closed.');
    try {
      return await this.pool.query<R>(text, values);
    } catch (error) {
      throw toStoreError(error);
    }
  }

  /**
   * Runs a change to key `id` and, when it changed something, answers only after this
   * instance's listener heard the NOTIFY: the server sends it to every instance at commit, so
   * by the time a client can react to the answer, the other instances have it too.
   */
  private async announced<T>(
    id: string,
    change: () => Promise<T>,
    changed: (result: T) => boolean,
  ): Promise<T> {
    const expectation = this.feed.expect(id);
    try {
      const result = await change();
      if (!changed(result)) {
        expectation.cancel();
        return result;
      }
      this.localChanges++;
      await expectation.seen;
      return result;
    } catch (error) {
      expectation.cancel();
      throw error;
    }
  }

  private one(result: pg.QueryResult<KeyRow>): ApiKeyRecord | null {
    const row = result.rows[0];
    return row ? toKeyRecord(row) : null;
  }

  private oneWebhook(result: pg.QueryResult<WebhookRow>): WebhookRecord | null {
    const row = result.rows[0];
    return row ? toWebhookRecord(row) : null;
  }
}

/** A unique violation of the active-twin index, and not of any other constraint. */
function isActiveTwinViolation(error: unknown): boolean {
  const { code, constraint } = (error ?? {}) as { code?: unknown; constraint?: unknown };
  return code === '23505' && constraint === ACTIVE_TWIN_INDEX;
}

/** The claim statement's own rule for a record that still holds its key at `now`. */
function holds(row: IdempotencyRow, now: Date): boolean {
  if (row.expires_at.getTime() <= now.getTime()) return false;
  return row.state === 'completed' || row.locked_until.getTime() > now.getTime();
}
