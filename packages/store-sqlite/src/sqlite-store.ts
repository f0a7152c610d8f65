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
  TestEventOutcome,
  WebhookDisabledReason,
  WebhookRecord,
  WebhookStatus,
  WebhookStatusOutcome,
  WebhookSubscription,
  WebhookSubscriptionOutcome,
} from '@keyhook/core/store';
import { consoleLogger } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { CheckpointThread } from './checkpoint-thread.js';
import { openDatabase, openFailure } from './connection.js';
import { GroupCommit } from './group-commit.js';
import { joinedLibrary } from './host-transaction.js';
import { migrationsMode, refuseIfPending } from './migrate.js';
import { applyMigrations, loadMigrations } from './migration-driver.js';
import { claimIdempotencyKey, prepareClaimIdempotencyKey } from './operations/claim-idempotency-key.js';
import { completeAttempt, prepareCompleteAttempt } from './operations/complete-attempt.js';
import {
  completeIdempotencyKey,
  prepareCompleteIdempotencyKey,
} from './operations/complete-idempotency-key.js';
import { countQueuedDeliveries, prepareCountQueuedDeliveries } from './operations/count-queued-deliveries.js';
import { countRecentAttempts, prepareCountRecentAttempts } from './operations/count-recent-attempts.js';
import { deleteWebhook, prepareDeleteWebhook } from './operations/delete-webhook.js';
import { exchangePortalLink, prepareExchangePortalLink } from './operations/exchange-portal-link.js';
import { expireHeldDeliveries, prepareExpireHeldDeliveries } from './operations/expire-held-deliveries.js';
import {
  findApiKeyByCredential,
  prepareFindApiKeyByCredential,
} from './operations/find-api-key-by-credential.js';
import { findPortalSession, prepareFindPortalSession } from './operations/find-portal-session.js';
import { getApiKey, prepareGetApiKey } from './operations/get-api-key.js';
import { getDelivery, prepareGetDelivery } from './operations/get-delivery.js';
import { getWebhook, prepareGetWebhook } from './operations/get-webhook.js';
import { insertApiKey, prepareInsertApiKey } from './operations/insert-api-key.js';
import { insertPortalSession, prepareInsertPortalSession } from './operations/insert-portal-session.js';
import { insertWebhook, prepareInsertWebhook } from './operations/insert-webhook.js';
import { keyChangeVersion, prepareKeyChangeVersion } from './operations/key-change-version.js';
import { leaseDeliveries, prepareLeaseDeliveries } from './operations/lease-deliveries.js';
import { listApiKeys, prepareListApiKeys } from './operations/list-api-keys.js';
import { listDeliveries, prepareListDeliveries } from './operations/list-deliveries.js';
import { listFeedEvents, prepareListFeedEvents } from './operations/list-feed-events.js';
import { listWebhooks, prepareListWebhooks } from './operations/list-webhooks.js';
import {
  preparePublishEvent,
  publishEvent,
  publishEventSync,
  refuseTransaction,
} from './operations/publish-event.js';
import { preparePublishTestEvent, publishTestEvent } from './operations/publish-test-event.js';
import {
  preparePurgeFinishedDeliveries,
  purgeFinishedDeliveries,
} from './operations/purge-finished-deliveries.js';
import { preparePurgeIdempotencyKeys, purgeIdempotencyKeys } from './operations/purge-idempotency-keys.js';
import {
  prepareRecoverFailedDeliveries,
  recoverFailedDeliveries,
} from './operations/recover-failed-deliveries.js';
import { prepareReleaseIdempotencyKey, releaseIdempotencyKey } from './operations/release-idempotency-key.js';
import { prepareRequeueDelivery, requeueDelivery } from './operations/requeue-delivery.js';
import { prepareRevokeApiKey, revokeApiKey } from './operations/revoke-api-key.js';
import { prepareRevokePortalSessions, revokePortalSessions } from './operations/revoke-portal-sessions.js';
import { prepareRotateApiKey, rotateApiKey } from './operations/rotate-api-key.js';
import { prepareRotateWebhookSecret, rotateWebhookSecret } from './operations/rotate-webhook-secret.js';
import { prepareSetWebhookStatus, setWebhookStatus } from './operations/set-webhook-status.js';
import { prepareTouchApiKey, touchApiKey } from './operations/touch-api-key.js';
import { prepareUpdateApiKey, updateApiKey } from './operations/update-api-key.js';
import {
  prepareUpdateWebhookSubscription,
  updateWebhookSubscription,
} from './operations/update-webhook-subscription.js';
import { watchDeliveries } from './operations/watch-deliveries.js';
import type { SqliteStoreOptions } from './options.js';
import { translateDriverError, unavailable } from './unavailable.js';

export const DEFAULT_CHANGE_CHECK_INTERVAL_MS = 1;

/**
 * Every operation's statements and transactions (operations/, one module per Store method),
 * prepared once on the store's connection; and the connection's own: the health check and the
 * sealed-values check.
 */
function prepareOperations(db: Database.Database, changeCheckIntervalMs: number) {
  const keyChanges = prepareKeyChangeVersion(db, changeCheckIntervalMs);
  return {
    // Reads a real table, so a file that has gone bad fails here and /healthz says so.
    ping: db.prepare<[], { ok: number }>('SELECT count(*) AS ok FROM keyhook_migrations'),
    holdsSealedValues: db
      .prepare<[], number>(
        `SELECT EXISTS (SELECT 1 FROM keyhook_webhooks)
           OR EXISTS (SELECT 1 FROM keyhook_idempotency_keys WHERE response_sealed IS NOT NULL)`,
      )
      .pluck(),
    keyChangeVersion: keyChanges,
    insertApiKey: prepareInsertApiKey(db),
    findApiKeyByCredential: prepareFindApiKeyByCredential(db),
    getApiKey: prepareGetApiKey(db),
    listApiKeys: prepareListApiKeys(db),
    rotateApiKey: prepareRotateApiKey(db, keyChanges),
    revokeApiKey: prepareRevokeApiKey(db, keyChanges),
    updateApiKey: prepareUpdateApiKey(db, keyChanges),
    touchApiKey: prepareTouchApiKey(db),
    insertWebhook: prepareInsertWebhook(db),
    getWebhook: prepareGetWebhook(db),
    listWebhooks: prepareListWebhooks(db),
    setWebhookStatus: prepareSetWebhookStatus(db),
    updateWebhookSubscription: prepareUpdateWebhookSubscription(db),
    rotateWebhookSecret: prepareRotateWebhookSecret(db),
    deleteWebhook: prepareDeleteWebhook(db),
    publishEvent: preparePublishEvent(db),
    publishTestEvent: preparePublishTestEvent(db),
    leaseDeliveries: prepareLeaseDeliveries(db),
    completeAttempt: prepareCompleteAttempt(db),
    countQueuedDeliveries: prepareCountQueuedDeliveries(db),
    listDeliveries: prepareListDeliveries(db),
    getDelivery: prepareGetDelivery(db),
    requeueDelivery: prepareRequeueDelivery(db),
    recoverFailedDeliveries: prepareRecoverFailedDeliveries(db),
    countRecentAttempts: prepareCountRecentAttempts(db),
    expireHeldDeliveries: prepareExpireHeldDeliveries(db),
    purgeFinishedDeliveries: preparePurgeFinishedDeliveries(db),
    purgeIdempotencyKeys: preparePurgeIdempotencyKeys(db),
    claimIdempotencyKey: prepareClaimIdempotencyKey(db),
    completeIdempotencyKey: prepareCompleteIdempotencyKey(db),
    releaseIdempotencyKey: prepareReleaseIdempotencyKey(db),
    listFeedEvents: prepareListFeedEvents(db),
    insertPortalSession: prepareInsertPortalSession(db),
    exchangePortalLink: prepareExchangePortalLink(db),
    findPortalSession: prepareFindPortalSession(db),
    revokePortalSessions: prepareRevokePortalSessions(db),
  };
}

/**
 * keyhook's Store on SQLite through better-sqlite3. better-sqlite3 is synchronous, so each
 * method runs its statement (or its immediate transaction) to the end before it yields: nothing
 * interleaves inside a process, and across processes SQLite's write lock serialises them. The
 * delivery path's writes share one commit per turn of the event loop (group-commit.ts). Each
 * method runs one operation of operations/. The other writes of more than one statement run under
 * `BEGIN IMMEDIATE`: the write lock is taken first, so no other connection commits between the
 * statements, and nothing waits to upgrade a read lock (which SQLite would answer with
 * SQLITE_BUSY at once).
 */
export class SqliteStore implements CompleteStore {
  /** False only for an in-memory database (`:memory:`, or a host's connection to one). */
  readonly persistent: boolean;
  private readonly db: Database.Database;
  private readonly ownsDatabase: boolean;
  private readonly prepared: ReturnType<typeof prepareOperations>;
  private readonly group: GroupCommit;
  /** WAL checkpoints off the event loop, on a file this store opened (checkpoint-thread.ts). */
  private readonly checkpoints: CheckpointThread | undefined;
  private closed = false;

  /** Opens (or adopts) the database and applies (or refuses) pending migrations before it returns. */
  constructor(options: SqliteStoreOptions) {
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
      this.prepared = prepareOperations(
        this.db,
        options.changeCheckIntervalMs ?? DEFAULT_CHANGE_CHECK_INTERVAL_MS,
      );
      this.checkpoints =
        this.ownsDatabase && this.persistent
          ? new CheckpointThread(this.db, options.logger ?? consoleLogger)
          : undefined;
      const checkpoints = this.checkpoints;
      this.group = new GroupCommit(
        this.db,
        translateDriverError,
        checkpoints && (() => checkpoints.committed()),
      );
    } catch (error) {
      if (this.ownsDatabase) this.db.close();
      throw openFailure(this.db.name, 'migrate', error);
    }
  }

  async insertApiKey(record: ApiKeyRecord): Promise<'inserted' | 'duplicate_lookup'> {
    return this.run(() => insertApiKey(this.prepared.insertApiKey, record));
  }

  async findApiKeyByCredential(keyLookup: string, keyHash: string): Promise<ApiKeyRecord | null> {
    return this.read(() => findApiKeyByCredential(this.prepared.findApiKeyByCredential, keyLookup, keyHash));
  }

  async getApiKey(tenantId: string, id: string): Promise<ApiKeyRecord | null> {
    return this.read(() => getApiKey(this.prepared.getApiKey, tenantId, id));
  }

  async listApiKeys(tenantId: string, page: ListPage): Promise<ApiKeyRecord[]> {
    return this.read(() => listApiKeys(this.prepared.listApiKeys, tenantId, page));
  }

  async rotateApiKey(
    tenantId: string,
    id: string,
    expectedHash: string,
    newHash: string,
  ): Promise<RotateOutcome> {
    return this.run(() => rotateApiKey(this.prepared.rotateApiKey, tenantId, id, expectedHash, newHash));
  }

  async revokeApiKey(tenantId: string, id: string, at: Date): Promise<ApiKeyRecord | null> {
    return this.run(() => revokeApiKey(this.prepared.revokeApiKey, tenantId, id, at));
  }

  async updateApiKey(tenantId: string, id: string, changes: ApiKeyChanges): Promise<ApiKeyRecord | null> {
    return this.run(() => updateApiKey(this.prepared.updateApiKey, tenantId, id, changes));
  }

  async touchApiKey(id: string, at: Date, minIntervalMs: number): Promise<boolean> {
    return this.run(() => touchApiKey(this.prepared.touchApiKey, id, at, minIntervalMs));
  }

  async insertWebhook(
    record: WebhookRecord,
    completion?: IdempotencyCompletion,
  ): Promise<'inserted' | 'active_twin' | 'claim_lost'> {
    return this.run(() => insertWebhook(this.prepared.insertWebhook, record, completion));
  }

  async getWebhook(tenantId: string, id: string): Promise<WebhookRecord | null> {
    return this.read(() => getWebhook(this.prepared.getWebhook, tenantId, id));
  }

  async listWebhooks(tenantId: string, page: ListPage): Promise<WebhookRecord[]> {
    return this.read(() => listWebhooks(this.prepared.listWebhooks, tenantId, page));
  }

  async setWebhookStatus(
    tenantId: string,
    id: string,
    status: WebhookStatus,
    disabledReason: WebhookDisabledReason | null,
    at: Date,
  ): Promise<WebhookStatusOutcome> {
    return this.run(() =>
      setWebhookStatus(this.prepared.setWebhookStatus, tenantId, id, status, disabledReason, at),
    );
  }

  async updateWebhookSubscription(
    tenantId: string,
    id: string,
    subscription: WebhookSubscription,
    at: Date,
  ): Promise<WebhookSubscriptionOutcome> {
    return this.run(() =>
      updateWebhookSubscription(this.prepared.updateWebhookSubscription, tenantId, id, subscription, at),
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
    return this.run(() =>
      rotateWebhookSecret(
        this.prepared.rotateWebhookSecret,
        tenantId,
        id,
        secretSealed,
        publicKey,
        at,
        previousExpiresAt,
      ),
    );
  }

  async deleteWebhook(tenantId: string, id: string): Promise<boolean> {
    return this.run(() => deleteWebhook(this.prepared.deleteWebhook, tenantId, id));
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
    refuseTransaction(transaction);
    return this.grouped(() => publishEvent(this.prepared.publishEvent, event, newDeliveryId, lease));
  }

  /**
   * Joins a transaction of yours when it runs on this store's own connection (`database`): the
   * connection itself, or a Drizzle, Kysely or Knex transaction on it (host-transaction.ts).
   * The event and its deliveries are written before this returns, in a savepoint of your
   * transaction, and commit or roll back with it. For a transactional outbox on SQLite.
   */
  publishEventSync(event: EventRecord, newDeliveryId: () => string, transaction: unknown): PublishOutcome {
    joinedLibrary(transaction, this.db); // a TypeError for anything else, before anything is written
    return this.run(() => publishEventSync(this.prepared.publishEvent, event, newDeliveryId));
  }

  /** One immediate transaction: the write lock first, as publishEvent's group takes it. */
  async publishTestEvent(
    event: EventRecord,
    webhookId: string,
    deliveryId: string,
  ): Promise<TestEventOutcome> {
    return this.run(() => publishTestEvent(this.prepared.publishTestEvent, event, webhookId, deliveryId));
  }

  async leaseDeliveries(request: LeaseRequest): Promise<LeasedDelivery[]> {
    return this.grouped(() => leaseDeliveries(this.prepared.leaseDeliveries, request));
  }

  async completeAttempt(completion: AttemptCompletion): Promise<AttemptCompletionOutcome> {
    return this.grouped(() => completeAttempt(this.prepared.completeAttempt, completion));
  }

  /**
   * One deferred transaction of reads (operations/list-feed-events.ts). On a connection shared
   * with the host (`database`), it waits for a host transaction open across an await to end, as
   * the group commit does: read inside it, the feed would show events that may still roll back.
   */
  async listFeedEvents(tenantId: string, query: FeedQuery): Promise<FeedPage> {
    while (this.db.inTransaction && !this.closed) await new Promise((resolve) => setImmediate(resolve));
    return this.read(() => listFeedEvents(this.prepared.listFeedEvents, tenantId, query));
  }

  async countQueuedDeliveries(now: Date): Promise<QueueDepth> {
    return this.read(() => countQueuedDeliveries(this.prepared.countQueuedDeliveries, now));
  }

  async expireHeldDeliveries(heldBefore: Date, at: Date): Promise<number> {
    return this.run(() => expireHeldDeliveries(this.prepared.expireHeldDeliveries, heldBefore, at));
  }

  /** One batch under the write lock; processes sharing the file take turns at it. */
  async purgeFinishedDeliveries(finishedBefore: Date, limit: number): Promise<PurgeOutcome> {
    return this.run(() =>
      purgeFinishedDeliveries(this.prepared.purgeFinishedDeliveries, finishedBefore, limit),
    );
  }

  async listDeliveries(
    tenantId: string,
    webhookId: string,
    page: DeliveryListPage,
  ): Promise<DeliveryRecord[]> {
    return this.read(() => listDeliveries(this.prepared.listDeliveries, tenantId, webhookId, page));
  }

  async getDelivery(tenantId: string, webhookId: string, deliveryId: string): Promise<DeliveryDetail | null> {
    return this.read(() => getDelivery(this.prepared.getDelivery, tenantId, webhookId, deliveryId));
  }

  async requeueDelivery(
    tenantId: string,
    webhookId: string,
    deliveryId: string,
    from: readonly DeliveryStatus[],
    at: Date,
  ): Promise<RequeueOutcome> {
    return this.run(() =>
      requeueDelivery(this.prepared.requeueDelivery, tenantId, webhookId, deliveryId, from, at),
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
      recoverFailedDeliveries(
        this.prepared.recoverFailedDeliveries,
        tenantId,
        webhookId,
        since,
        until,
        at,
        limit,
        failedBefore,
      ),
    );
  }

  /** A no-op: no signal crosses SQLite connections, so other processes' workers poll (operations/watch-deliveries.ts). */
  watchDeliveries(_listener: () => void): () => void {
    return watchDeliveries(_listener);
  }

  /** One statement, over the index of migration 0011 (operations/count-recent-attempts.ts). */
  async countRecentAttempts(tenantId: string, since: Date): Promise<AttemptCounts[]> {
    return this.read(() => countRecentAttempts(this.prepared.countRecentAttempts, tenantId, since));
  }

  /** The purge and the insert in one transaction under the write lock. */
  async insertPortalSession(record: PortalSessionRecord, purgeBefore: Date): Promise<void> {
    this.run(() => insertPortalSession(this.prepared.insertPortalSession, record, purgeBefore));
  }

  /** The update and, when it wrote nothing, the read that says why, in one transaction under the write lock. */
  async exchangePortalLink(linkHash: string, sessionHash: string, now: Date): Promise<PortalExchangeOutcome> {
    return this.run(() => exchangePortalLink(this.prepared.exchangePortalLink, linkHash, sessionHash, now));
  }

  async findPortalSession(sessionHash: string): Promise<PortalSessionRecord | null> {
    return this.read(() => findPortalSession(this.prepared.findPortalSession, sessionHash));
  }

  async revokePortalSessions(tenantId: string, id: string | undefined, at: Date): Promise<number> {
    return this.run(() => revokePortalSessions(this.prepared.revokePortalSessions, tenantId, id, at));
  }

  async claimIdempotencyKey(record: IdempotencyRecord, now: Date): Promise<IdempotencyClaimOutcome> {
    return this.run(() => claimIdempotencyKey(this.prepared.claimIdempotencyKey, record, now));
  }

  async completeIdempotencyKey(completion: IdempotencyCompletion): Promise<boolean> {
    return this.run(() => completeIdempotencyKey(this.prepared.completeIdempotencyKey, completion));
  }

  async releaseIdempotencyKey(tenantId: string, key: string, claimId: string): Promise<void> {
    this.run(() => releaseIdempotencyKey(this.prepared.releaseIdempotencyKey, tenantId, key, claimId));
  }

  async purgeIdempotencyKeys(now: Date): Promise<number> {
    return this.run(() => purgeIdempotencyKeys(this.prepared.purgeIdempotencyKeys, now));
  }

  async holdsSealedValues(): Promise<boolean> {
    return this.read(() => this.prepared.holdsSealedValues.get() === 1);
  }

  /** This store's own revokes and rotations at once; other connections' within the check interval. */
  keyChangeVersion(): number | null {
    return this.closed ? null : keyChangeVersion(this.prepared.keyChangeVersion);
  }

  async ping(): Promise<void> {
    this.read(() => this.prepared.ping.get());
  }

  /** Closes the connection if the store opened it; a passed-in `database` stays open. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.checkpoints?.stop();
    if (this.ownsDatabase) this.db.close();
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

  /** A write outside the group commits: afterwards, the checkpoint thread is told if it wrote. */
  private run<T>(action: () => T): T {
    try {
      return this.read(action);
    } finally {
      this.checkpoints?.ranStatement();
    }
  }

  /** A read: statements that write nothing, so the checkpoint thread has nothing to hear of. */
  private read<T>(action: () => T): T {
    if (this.closed) throw unavailable('The SQLite store is closed.');
    try {
      return action();
    } catch (error) {
      throw translateDriverError(error);
    }
  }
}
