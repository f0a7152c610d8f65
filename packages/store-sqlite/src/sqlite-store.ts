import type {
  ApiKeyChanges,
  ApiKeyRecord,
  AttemptCompletion,
  AttemptCompletionOutcome,
  AttemptCounts,
  CompleteStore,
  DeliveryDetail,
  DeliveryListPage,
  DeliveryRecord,
  DeliveryStatus,
  EventRecord,
  FeedPage,
  FeedQuery,
  IdempotencyClaimOutcome,
  IdempotencyCompletion,
  IdempotencyRecord,
  LeasedDelivery,
  LeaseRequest,
  ListPage,
  PortalExchangeOutcome,
  PortalSessionRecord,
  PublishLease,
  PublishOutcome,
  PurgeOutcome,
  QueueDepth,
  RequeueOutcome,
  RotateOutcome,
  Store,
  TestEventOutcome,
  WebhookDisabledReason,
  WebhookRecord,
  WebhookStatus,
  WebhookStatusOutcome,
  WebhookSubscription,
  WebhookSubscriptionOutcome,
} from '@keyhook/core/store';
import { consoleLogger, DELIVERY_RULES } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { openDatabase, openFailure } from './connection.js';
import { toDeliveryRecord } from './delivery-row.js';
import {
  type DeliveryStatements,
  type DeliveryTransactions,
  deliveryStatements,
  deliveryTransactions,
} from './delivery-statements.js';
import { feedReader } from './feed-statements.js';
import { GroupCommit } from './group-commit.js';
import { joinedLibrary } from './host-transaction.js';
import {
  type IdempotencyStatements,
  type IdempotencyTransactions,
  idempotencyStatements,
  idempotencyTransactions,
} from './idempotency-statements.js';
import { type ApiKeyRow, toRecord, toRow } from './key-row.js';
import { type KeyStatements, keyStatements, UNIQUE_VIOLATIONS } from './key-statements.js';
import { migrationsMode, refuseIfPending } from './migrate.js';
import { applyMigrations, loadMigrations } from './migration-driver.js';
import type { SqliteStoreOptions } from './options.js';
import { toPortalSessionRecord } from './portal-row.js';
import {
  type PortalStatements,
  type PortalTransactions,
  portalStatements,
  portalTransactions,
} from './portal-statements.js';
import { translateDriverError, unavailable } from './unavailable.js';
import { toWebhookRecord, toWebhookRow } from './webhook-row.js';
import {
  type WebhookStatements,
  type WebhookTransactions,
  webhookStatements,
  webhookTransactions,
} from './webhook-statements.js';

export const DEFAULT_CHANGE_CHECK_INTERVAL_MS = 1;

/** The store's own statements, on no one concern's table: the health check and the change check. */
function storeStatements(db: Database.Database) {
  return {
    // Reads a real table, so a file that has gone bad fails here and /healthz says so.
    ping: db.prepare<[], { ok: number }>('SELECT count(*) AS ok FROM keyhook_migrations'),
    // Changes whenever another connection commits to the file; never for this connection's own writes.
    dataVersion: db.prepare<[], number>('PRAGMA data_version').pluck(),
  };
}

/**
 * keyhook's Store on SQLite through better-sqlite3. better-sqlite3 is synchronous, so each
 * method runs its statement (or its immediate transaction) to the end before it yields: nothing
 * interleaves inside a process, and across processes SQLite's write lock serialises them. The
 * delivery path's writes share one commit per turn of the event loop (group-commit.ts).
 */
export class SqliteStore implements CompleteStore {
  /** False only for an in-memory database (`:memory:`, or a host's connection to one). */
  readonly persistent: boolean;
  private readonly db: Database.Database;
  private readonly ownsDatabase: boolean;
  private readonly keySql: KeyStatements;
  private readonly webhookSql: WebhookStatements;
  private readonly deliverySql: DeliveryStatements;
  private readonly idempotencySql: IdempotencyStatements;
  private readonly portalSql: PortalStatements;
  private readonly statements: ReturnType<typeof storeStatements>;
  /**
   * The methods that are more than one statement. Each runs under `BEGIN IMMEDIATE`: the write lock
   * is taken first, so no other connection commits between the statements, and nothing waits to
   * upgrade a read lock (which SQLite would answer with SQLITE_BUSY at once).
   */
  private readonly webhookTransactions: WebhookTransactions;
  private readonly deliveryTransactions: DeliveryTransactions;
  private readonly idempotencyTransactions: IdempotencyTransactions;
  private readonly portalTransactions: PortalTransactions;
  private readonly group: GroupCommit;
  private readonly readFeed: (tenantId: string, query: FeedQuery) => FeedPage;
  private closed = false;
  private readonly changeCheckIntervalMs: number;
  private localChanges = 0;
  private dataVersion = 0;
  private lastChangeCheckAt = Number.NEGATIVE_INFINITY;

  /** Opens (or adopts) the database and applies (or refuses) pending migrations before it returns. */
  constructor(options: SqliteStoreOptions) {
    this.changeCheckIntervalMs = options.changeCheckIntervalMs ?? DEFAULT_CHANGE_CHECK_INTERVAL_MS;
    const mode = migrationsMode(options.migrations);
    // Before the file is opened for writing: a refused open must not create it or switch it to WAL.
    if (mode === 'refuse') refuseIfPending(options);
    if ('database' in options) {
      this.db = options.database;
      this.ownsDatabase = false;
    } else {
      this.db = openDatabase(options.filename, options.busyTimeoutMs);
      this.ownsDatabase = true;
    }
    this.persistent = !this.db.memory;
    try {
      if (mode === 'apply') applyMigrations(this.db, loadMigrations(), options.logger ?? consoleLogger);
      this.keySql = keyStatements(this.db);
      this.webhookSql = webhookStatements(this.db);
      this.deliverySql = deliveryStatements(this.db);
      this.idempotencySql = idempotencyStatements(this.db);
      this.portalSql = portalStatements(this.db);
      this.statements = storeStatements(this.db);
      this.readFeed = feedReader(this.db);
      this.webhookTransactions = webhookTransactions(
        this.db,
        this.webhookSql,
        this.deliverySql,
        this.idempotencySql,
      );
      this.deliveryTransactions = deliveryTransactions(this.db, this.deliverySql, this.webhookSql);
      this.idempotencyTransactions = idempotencyTransactions(this.db, this.idempotencySql);
      this.portalTransactions = portalTransactions(this.db, this.portalSql);
      this.group = new GroupCommit(this.db, translateDriverError);
    } catch (error) {
      if (this.ownsDatabase) this.db.close();
      throw openFailure(this.db.name, 'migrate', error);
    }
  }

  async insertApiKey(record: ApiKeyRecord): Promise<'inserted' | 'duplicate_lookup'> {
    return this.run(() => {
      try {
        this.keySql.insert.run(toRow(record));
        return 'inserted';
      } catch (error) {
        if (UNIQUE_VIOLATIONS.has((error as { code?: string }).code ?? '')) return 'duplicate_lookup';
        throw error;
      }
    });
  }

  async findApiKeyByCredential(keyLookup: string, keyHash: string): Promise<ApiKeyRecord | null> {
    return this.run(() => this.toRecordOrNull(this.keySql.byCredential.get(keyLookup, keyHash)));
  }

  async getApiKey(tenantId: string, id: string): Promise<ApiKeyRecord | null> {
    return this.run(() => this.toRecordOrNull(this.keySql.byId.get(tenantId, id)));
  }

  async listApiKeys(tenantId: string, page: ListPage): Promise<ApiKeyRecord[]> {
    return this.run(() => {
      const rows =
        page.before === undefined
          ? this.keySql.listFirst.all(tenantId, page.limit)
          : this.keySql.listBefore.all(tenantId, page.before, page.limit);
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
      const rotated = this.keySql.rotate.get(newHash, tenantId, id, expectedHash);
      if (rotated) {
        this.localChanges++;
        return { outcome: 'rotated', key: toRecord(rotated) };
      }
      // The compare-and-set wrote nothing; this read only reports why.
      const current = this.keySql.byId.get(tenantId, id);
      return current ? { outcome: 'stale', key: toRecord(current) } : { outcome: 'not_found' };
    });
  }

  async revokeApiKey(tenantId: string, id: string, at: Date): Promise<ApiKeyRecord | null> {
    return this.run(() => {
      const revoked = this.keySql.revoke.get(at.getTime(), tenantId, id);
      if (revoked) {
        this.localChanges++;
        return toRecord(revoked);
      }
      // Already revoked (a key never returns to active, so this read cannot be stale) or absent.
      return this.toRecordOrNull(this.keySql.byId.get(tenantId, id));
    });
  }

  async updateApiKey(tenantId: string, id: string, changes: ApiKeyChanges): Promise<ApiKeyRecord | null> {
    return this.run(() => {
      const limit = changes.rateLimit;
      // Synchronous, so no other call of this store runs between the read and the write.
      const before = limit === undefined ? undefined : this.keySql.byId.get(tenantId, id);
      const row = this.keySql.update.get({
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
        this.localChanges++;
      }
      return this.toRecordOrNull(row);
    });
  }

  async touchApiKey(id: string, at: Date, minIntervalMs: number): Promise<boolean> {
    return this.run(() => this.keySql.touch.run(at.getTime(), id, at.getTime() - minIntervalMs).changes > 0);
  }

  async insertWebhook(
    record: WebhookRecord,
    completion?: IdempotencyCompletion,
  ): Promise<'inserted' | 'active_twin' | 'claim_lost'> {
    return this.run(() => this.webhookTransactions.insertWebhook.immediate(toWebhookRow(record), completion));
  }

  async getWebhook(tenantId: string, id: string): Promise<WebhookRecord | null> {
    return this.run(() => {
      const row = this.webhookSql.webhookById.get(tenantId, id);
      return row ? toWebhookRecord(row) : null;
    });
  }

  async listWebhooks(tenantId: string, page: ListPage): Promise<WebhookRecord[]> {
    return this.run(() => {
      const rows =
        page.before === undefined
          ? this.webhookSql.listWebhooksFirst.all(tenantId, page.limit)
          : this.webhookSql.listWebhooksBefore.all(tenantId, page.before, page.limit);
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
      this.webhookTransactions.setWebhookStatus.immediate(tenantId, id, status, disabledReason, at.getTime()),
    );
  }

  async updateWebhookSubscription(
    tenantId: string,
    id: string,
    subscription: WebhookSubscription,
    at: Date,
  ): Promise<WebhookSubscriptionOutcome> {
    return this.run(() =>
      this.webhookTransactions.updateWebhookSubscription.immediate(tenantId, id, subscription, at.getTime()),
    );
  }

  async rotateWebhookSecret(
    tenantId: string,
    id: string,
    secretSealed: string,
    publicKey: string | null,
    at: Date,
    previousExpiresAt: Date | null,
  ): Promise<WebhookRecord | null> {
    return this.run(() => {
      const row = this.webhookSql.rotateWebhookSecret.get({
        secret_sealed: secretSealed,
        public_key: publicKey,
        previous_expires_at: previousExpiresAt === null ? null : previousExpiresAt.getTime(),
        updated_at: at.getTime(),
        tenant_id: tenantId,
        id,
      });
      return row ? toWebhookRecord(row) : null;
    });
  }

  async deleteWebhook(tenantId: string, id: string): Promise<boolean> {
    return this.run(() => this.webhookTransactions.deleteWebhook.immediate(tenantId, id));
  }

  /**
   * SQLite cannot join a caller's transaction: a transaction belongs to one connection, and the
   * store's statements are prepared on its own. Given one, this throws a TypeError rather than
   * write outside it; for a transactional outbox, the Postgres store can join one.
   */
  async publishEvent(
    event: EventRecord,
    newDeliveryId: () => string,
    transaction?: unknown,
    lease?: PublishLease,
  ): Promise<PublishOutcome> {
    this.run(() => {
      if (transaction !== undefined) {
        throw new TypeError(
          'keyhook: the SQLite store cannot join a transaction; call publishEvent without one ' +
            '(or use @keyhook/store-postgres to publish inside your own transaction)',
        );
      }
    });
    return this.grouped(() => this.deliveryTransactions.delivery.publishEvent(event, newDeliveryId, lease));
  }

  /**
   * Joins a transaction of yours when it runs on this store's own connection (`database`): the
   * connection itself, or a Drizzle, Kysely or Knex transaction on it (host-transaction.ts).
   * The event and its deliveries are written before this returns, in a savepoint of your
   * transaction, and commit or roll back with it. For a transactional outbox on SQLite.
   */
  publishEventSync(event: EventRecord, newDeliveryId: () => string, transaction: unknown): PublishOutcome {
    joinedLibrary(transaction, this.db); // a TypeError for anything else, before anything is written
    return this.run(() => this.deliveryTransactions.publishEvent(event, newDeliveryId, undefined));
  }

  /** One immediate transaction: the write lock first, as publishEvent's group takes it. */
  async publishTestEvent(
    event: EventRecord,
    webhookId: string,
    deliveryId: string,
  ): Promise<TestEventOutcome> {
    return this.run(() => this.deliveryTransactions.publishTestEvent.immediate(event, webhookId, deliveryId));
  }

  async leaseDeliveries(request: LeaseRequest): Promise<LeasedDelivery[]> {
    return this.grouped(() => this.deliveryTransactions.delivery.leaseDeliveries(request));
  }

  async completeAttempt(completion: AttemptCompletion): Promise<AttemptCompletionOutcome> {
    return this.grouped(() => this.deliveryTransactions.delivery.completeAttempt(completion));
  }

  /**
   * One deferred transaction of reads (feed-statements.ts). On a connection shared with the host
   * (`database`), it waits for a host transaction open across an await to end, as the group
   * commit does: read inside it, the feed would show events that may still roll back.
   */
  async listFeedEvents(tenantId: string, query: FeedQuery): Promise<FeedPage> {
    while (this.db.inTransaction && !this.closed) await new Promise((resolve) => setImmediate(resolve));
    return this.run(() => this.readFeed(tenantId, query));
  }

  async countQueuedDeliveries(now: Date): Promise<QueueDepth> {
    const row = this.run(() => this.deliverySql.countQueued.get({ now: now.getTime() })!);
    return { due: row.due, scheduled: row.scheduled, inFlight: row.in_flight, held: row.held };
  }

  async expireHeldDeliveries(heldBefore: Date, at: Date): Promise<number> {
    return this.run(() => this.deliverySql.expireHeld.run(at.getTime(), heldBefore.getTime()).changes);
  }

  /** One batch under the write lock; processes sharing the file take turns at it. */
  async purgeFinishedDeliveries(finishedBefore: Date, limit: number): Promise<PurgeOutcome> {
    return this.run(() => this.deliveryTransactions.purgeFinished.immediate(finishedBefore.getTime(), limit));
  }

  async listDeliveries(
    tenantId: string,
    webhookId: string,
    page: DeliveryListPage,
  ): Promise<DeliveryRecord[]> {
    return this.run(() => {
      const params = {
        tenantId,
        webhookId,
        status: page.status ?? null,
        eventType: page.eventType ?? null,
        eventId: page.eventId ?? null,
        createdFrom: page.createdFrom?.getTime() ?? null,
        createdBefore: page.createdBefore?.getTime() ?? null,
        limit: page.limit,
      };
      const rows =
        page.before === undefined
          ? this.deliverySql.listDeliveriesFirst.all(params)
          : this.deliverySql.listDeliveriesBefore.all({ ...params, before: page.before });
      return rows.map(toDeliveryRecord);
    });
  }

  async getDelivery(tenantId: string, webhookId: string, deliveryId: string): Promise<DeliveryDetail | null> {
    return this.run(() => this.deliveryTransactions.getDelivery(tenantId, webhookId, deliveryId));
  }

  async requeueDelivery(
    tenantId: string,
    webhookId: string,
    deliveryId: string,
    from: readonly DeliveryStatus[],
    at: Date,
  ): Promise<RequeueOutcome> {
    return this.run(() =>
      this.deliveryTransactions.requeueDelivery.immediate(
        tenantId,
        webhookId,
        deliveryId,
        from,
        at.getTime(),
      ),
    );
  }

  /**
   * One batch under the write lock, as requeueDelivery queues one; a batch reads only the
   * entries it queues, on keyhook_deliveries_failed (migration 0008). Core wakes its own workers
   * after a recovery, as after a requeue; other processes' workers find the work by polling.
   */
  async recoverFailedDeliveries(
    tenantId: string,
    webhookId: string,
    since: Date,
    until: Date,
    at: Date,
    limit: number,
    failedBefore: Date,
  ): Promise<number> {
    return this.run(() =>
      this.deliveryTransactions.recoverFailed.immediate(
        tenantId,
        webhookId,
        since.getTime(),
        until.getTime(),
        at.getTime(),
        limit,
        failedBefore.getTime(),
      ),
    );
  }

  /**
   * A no-op: SQLite has no signal that crosses connections or processes (its update hook sees
   * this connection's own writes only), so workers in other processes learn of new work by
   * polling. Core wakes its own workers after its own publishes and requeues.
   */
  watchDeliveries(_listener: () => void): () => void {
    return () => {};
  }

  /** One statement, over the index of migration 0011 (see portalStatements). */
  async countRecentAttempts(tenantId: string, since: Date): Promise<AttemptCounts[]> {
    const { min, max } = DELIVERY_RULES.success;
    return this.run(() =>
      this.portalSql.countRecentAttempts.all(min, max, min, max, tenantId, since.getTime()),
    );
  }

  /** The purge and the insert in one transaction under the write lock. */
  async insertPortalSession(record: PortalSessionRecord, purgeBefore: Date): Promise<void> {
    this.run(() => this.portalTransactions.insertSession.immediate(record, purgeBefore.getTime()));
  }

  /** The update and, when it wrote nothing, the read that says why, in one transaction under the write lock. */
  async exchangePortalLink(linkHash: string, sessionHash: string, now: Date): Promise<PortalExchangeOutcome> {
    return this.run(() =>
      this.portalTransactions.exchangeLink.immediate(linkHash, sessionHash, now.getTime()),
    );
  }

  async findPortalSession(sessionHash: string): Promise<PortalSessionRecord | null> {
    return this.run(() => {
      const row = this.portalSql.sessionByHash.get(sessionHash);
      return row ? toPortalSessionRecord(row) : null;
    });
  }

  async revokePortalSessions(tenantId: string, id: string | undefined, at: Date): Promise<number> {
    return this.run(() =>
      id === undefined
        ? this.portalSql.revokeTenantSessions.run(at.getTime(), tenantId).changes
        : this.portalSql.revokeSession.run(at.getTime(), tenantId, id).changes,
    );
  }

  async claimIdempotencyKey(record: IdempotencyRecord, now: Date): Promise<IdempotencyClaimOutcome> {
    return this.run(() => this.idempotencyTransactions.claimIdempotencyKey.immediate(record, now.getTime()));
  }

  async completeIdempotencyKey(completion: IdempotencyCompletion): Promise<boolean> {
    const { responseSealed, tenantId, key, claimId } = completion;
    return this.run(
      () => this.idempotencySql.completeIdempotency.run(responseSealed, tenantId, key, claimId).changes > 0,
    );
  }

  async releaseIdempotencyKey(tenantId: string, key: string, claimId: string): Promise<void> {
    this.run(() => this.idempotencySql.releaseIdempotency.run(tenantId, key, claimId));
  }

  async purgeIdempotencyKeys(now: Date): Promise<number> {
    return this.run(() => this.idempotencySql.purgeIdempotency.run(now.getTime()).changes);
  }

  async holdsSealedValues(): Promise<boolean> {
    return this.run(() => this.idempotencySql.holdsSealedValues.get() === 1);
  }

  /** This store's own revokes and rotations at once; other connections' within the check interval. */
  keyChangeVersion(): number | null {
    if (this.closed) return null;
    // A monotonic clock read (40 ns), not a timer: a timer cost more to arm and fire than the
    // PRAGMA it spared, and never fires for a caller that does not let the event loop turn.
    const now = performance.now();
    if (now - this.lastChangeCheckAt >= this.changeCheckIntervalMs) {
      try {
        this.dataVersion = this.statements.dataVersion.get()!;
      } catch {
        return null; // the file cannot be read: cache nothing, and ask again on the next call
      }
      this.lastChangeCheckAt = now;
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

  /**
   * The delivery path's writes: `action` joins the group that commits after this turn of the
   * event loop, atomic on its own (group-commit.ts).
   */
  private grouped<T>(action: () => T): Promise<T> {
    if (this.closed) return Promise.reject(unavailable('The SQLite store is closed.'));
    return this.group.run(() => {
      if (this.closed) throw unavailable('The SQLite store is closed.');
      return action();
    });
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
