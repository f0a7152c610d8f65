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
  Logger,
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
import type pg from 'pg';
import type { KeyChangeFeed } from './change-feed.js';
import { claimIdempotencyKey } from './operations/claim-idempotency-key.js';
import { completeAttempt } from './operations/complete-attempt.js';
import { completeIdempotencyKey } from './operations/complete-idempotency-key.js';
import { countQueuedDeliveries } from './operations/count-queued-deliveries.js';
import { countRecentAttempts } from './operations/count-recent-attempts.js';
import { deleteWebhook } from './operations/delete-webhook.js';
import { exchangePortalLink } from './operations/exchange-portal-link.js';
import { expireHeldDeliveries } from './operations/expire-held-deliveries.js';
import { findApiKeyByCredential } from './operations/find-api-key-by-credential.js';
import { findPortalSession } from './operations/find-portal-session.js';
import { getApiKey } from './operations/get-api-key.js';
import { getDelivery } from './operations/get-delivery.js';
import { getWebhook } from './operations/get-webhook.js';
import { insertApiKey } from './operations/insert-api-key.js';
import { insertPortalSession } from './operations/insert-portal-session.js';
import { insertWebhook } from './operations/insert-webhook.js';
import { keyChangeVersion } from './operations/key-change-version.js';
import { leaseDeliveries } from './operations/lease-deliveries.js';
import { listApiKeys } from './operations/list-api-keys.js';
import { listDeliveries } from './operations/list-deliveries.js';
import { listFeedEvents } from './operations/list-feed-events.js';
import { listWebhooks } from './operations/list-webhooks.js';
import { publishEvent } from './operations/publish-event.js';
import { publishTestEvent } from './operations/publish-test-event.js';
import { purgeFinishedDeliveries } from './operations/purge-finished-deliveries.js';
import { purgeIdempotencyKeys } from './operations/purge-idempotency-keys.js';
import { recoverFailedDeliveries } from './operations/recover-failed-deliveries.js';
import { releaseIdempotencyKey } from './operations/release-idempotency-key.js';
import { requeueDelivery } from './operations/requeue-delivery.js';
import { revokeApiKey } from './operations/revoke-api-key.js';
import { revokePortalSessions } from './operations/revoke-portal-sessions.js';
import { rotateApiKey } from './operations/rotate-api-key.js';
import { rotateWebhookSecret } from './operations/rotate-webhook-secret.js';
import { setWebhookStatus } from './operations/set-webhook-status.js';
import { touchApiKey } from './operations/touch-api-key.js';
import { updateApiKey } from './operations/update-api-key.js';
import { updateWebhookSubscription } from './operations/update-webhook-subscription.js';
import { watchDeliveries } from './operations/watch-deliveries.js';
import type { Tables } from './statements.js';
import { StoreContext } from './store-context.js';

export interface PostgresStoreParts {
  pool: pg.Pool;
  /** A schema that `migrate` has brought up to date. */
  schema: string;
  /** Whether `close()` ends the pool: true when the store created it. */
  ownsPool: boolean;
  /** Started, listening on one of the pool's connections. */
  feed: KeyChangeFeed;
  /** Where the store's own housekeeping warns. Default: core's consoleLogger. */
  logger?: Logger;
  /** Send the hot statements as named (prepared) statements (see src/prepared.ts). Default true. */
  preparedStatements?: boolean;
  /** The statement bound (src/bounds.ts), in ms; 0 for none. Default DEFAULT_STATEMENT_TIMEOUT_MS. */
  statementTimeoutMs?: number | undefined;
}

const connectionStatements = (t: Tables) => ({
  // Sealed values live in two tables: the webhooks' signing secrets and the completed answers.
  holdsSealedValues: `SELECT EXISTS (SELECT 1 FROM ${t.webhooks})
      OR EXISTS (SELECT 1 FROM ${t.idempotencyKeys} WHERE response_sealed IS NOT NULL) AS sealed`,
});

/**
 * keyhook's Store on PostgreSQL. Each method is one statement or one transaction, atomic in the
 * database, so any number of app instances can share one schema. Open it with
 * `createPostgresStore`, which also applies the migrations; the constructor assumes they ran.
 *
 * Each store method is an operation of its own, in src/operations/ (its statements, the code
 * that runs them, its rows); the store holds what they share (src/store-context.ts).
 */
export class PostgresStore implements CompleteStore {
  readonly persistent = true;
  readonly schema: string;
  private readonly ctx: StoreContext;
  private readonly pool: pg.Pool;
  private readonly ownsPool: boolean;

  constructor(parts: PostgresStoreParts) {
    this.ctx = new StoreContext(parts);
    this.schema = this.ctx.schema;
    this.pool = parts.pool;
    this.ownsPool = parts.ownsPool;
  }

  insertApiKey(record: ApiKeyRecord): Promise<'inserted' | 'duplicate_lookup'> {
    return insertApiKey(this.ctx, record);
  }

  findApiKeyByCredential(keyLookup: string, keyHash: string): Promise<ApiKeyRecord | null> {
    return findApiKeyByCredential(this.ctx, keyLookup, keyHash);
  }

  getApiKey(tenantId: string, id: string): Promise<ApiKeyRecord | null> {
    return getApiKey(this.ctx, tenantId, id);
  }

  listApiKeys(tenantId: string, page: ListPage): Promise<ApiKeyRecord[]> {
    return listApiKeys(this.ctx, tenantId, page);
  }

  rotateApiKey(tenantId: string, id: string, expectedHash: string, newHash: string): Promise<RotateOutcome> {
    return rotateApiKey(this.ctx, tenantId, id, expectedHash, newHash);
  }

  revokeApiKey(tenantId: string, id: string, at: Date): Promise<ApiKeyRecord | null> {
    return revokeApiKey(this.ctx, tenantId, id, at);
  }

  updateApiKey(tenantId: string, id: string, changes: ApiKeyChanges): Promise<ApiKeyRecord | null> {
    return updateApiKey(this.ctx, tenantId, id, changes);
  }

  touchApiKey(id: string, at: Date, minIntervalMs: number): Promise<boolean> {
    return touchApiKey(this.ctx, id, at, minIntervalMs);
  }

  /**
   * Moves at once for this store's own revokes and rotations, and for every other instance's
   * when their NOTIFY arrives; null while the listener is reconnecting.
   */
  keyChangeVersion(): number | null {
    return keyChangeVersion(this.ctx);
  }

  insertWebhook(
    record: WebhookRecord,
    completion?: IdempotencyCompletion,
  ): Promise<'inserted' | 'active_twin' | 'claim_lost'> {
    return insertWebhook(this.ctx, record, completion);
  }

  getWebhook(tenantId: string, id: string): Promise<WebhookRecord | null> {
    return getWebhook(this.ctx, tenantId, id);
  }

  listWebhooks(tenantId: string, page: ListPage): Promise<WebhookRecord[]> {
    return listWebhooks(this.ctx, tenantId, page);
  }

  setWebhookStatus(
    tenantId: string,
    id: string,
    status: WebhookStatus,
    disabledReason: WebhookDisabledReason | null,
    at: Date,
  ): Promise<WebhookStatusOutcome> {
    return setWebhookStatus(this.ctx, tenantId, id, status, disabledReason, at);
  }

  updateWebhookSubscription(
    tenantId: string,
    id: string,
    subscription: WebhookSubscription,
    at: Date,
  ): Promise<WebhookSubscriptionOutcome> {
    return updateWebhookSubscription(this.ctx, tenantId, id, subscription, at);
  }

  rotateWebhookSecret(
    tenantId: string,
    id: string,
    secretSealed: string,
    publicKey: string | null,
    at: Date,
    previousExpiresAt: Date | null,
  ): Promise<WebhookRecord | null> {
    return rotateWebhookSecret(this.ctx, tenantId, id, secretSealed, publicKey, at, previousExpiresAt);
  }

  deleteWebhook(tenantId: string, id: string): Promise<boolean> {
    return deleteWebhook(this.ctx, tenantId, id);
  }

  /**
   * The event, its subscribers under FOR SHARE, their deliveries and the NOTIFY, by one
   * statement: on its own, one round trip and one commit; with `transaction`, in the caller's
   * transaction under a savepoint, so a failure here rolls back only this publish and leaves the
   * caller's transaction usable.
   */
  publishEvent(
    event: EventRecord,
    newDeliveryId: () => string,
    transaction?: unknown,
    lease?: PublishLease,
  ): Promise<PublishOutcome> {
    return publishEvent(this.ctx, event, newDeliveryId, transaction, lease);
  }

  /** Postgres has no synchronous queries: publish with `{ transaction: client }` instead. */
  publishEventSync(_event: EventRecord, _newDeliveryId: () => string, _transaction: unknown): PublishOutcome {
    throw new TypeError(
      'keyhook: the Postgres store cannot publish synchronously; await events.publish(input, { transaction: client })',
    );
  }

  /**
   * A test event to one webhook (docs/decisions.md §8.16), in one transaction, read under the
   * lock publishEvent's subscriber read takes; a NOTIFY when its delivery is due now.
   */
  publishTestEvent(event: EventRecord, webhookId: string, deliveryId: string): Promise<TestEventOutcome> {
    return publishTestEvent(this.ctx, event, webhookId, deliveryId);
  }

  leaseDeliveries(request: LeaseRequest): Promise<LeasedDelivery[]> {
    return leaseDeliveries(this.ctx, request);
  }

  /**
   * Locks the webhook, then the delivery (only while the lease holds it), then writes the
   * delivery, the attempt log, the failure count, and on an auto-disable the webhook and its
   * held deliveries, in one transaction; a success on an endpoint without failures, in one statement.
   */
  completeAttempt(completion: AttemptCompletion): Promise<AttemptCompletionOutcome> {
    return completeAttempt(this.ctx, completion);
  }

  countQueuedDeliveries(now: Date): Promise<QueueDepth> {
    return countQueuedDeliveries(this.ctx, now);
  }

  listDeliveries(tenantId: string, webhookId: string, page: DeliveryListPage): Promise<DeliveryRecord[]> {
    return listDeliveries(this.ctx, tenantId, webhookId, page);
  }

  getDelivery(tenantId: string, webhookId: string, deliveryId: string): Promise<DeliveryDetail | null> {
    return getDelivery(this.ctx, tenantId, webhookId, deliveryId);
  }

  /**
   * Share-locks the webhook (a concurrent disable then either came first and this holds the
   * delivery, or waits and holds it itself), locks the delivery, decides on its locked status,
   * and writes; a NOTIFY when it is due now.
   */
  requeueDelivery(
    tenantId: string,
    webhookId: string,
    deliveryId: string,
    from: readonly DeliveryStatus[],
    at: Date,
  ): Promise<RequeueOutcome> {
    return requeueDelivery(this.ctx, tenantId, webhookId, deliveryId, from, at);
  }

  /**
   * One batch in one transaction, as requeueDelivery queues one, the webhook share-locked first;
   * a NOTIFY when it queued anything due now, so other instances' workers wake.
   */
  recoverFailedDeliveries(
    tenantId: string,
    webhookId: string,
    since: Date,
    until: Date,
    at: Date,
    limit: number,
    failedBefore: Date,
  ): Promise<number> {
    return recoverFailedDeliveries(this.ctx, tenantId, webhookId, since, until, at, limit, failedBefore);
  }

  /**
   * Hears the NOTIFY that the writes which make deliveries due send inside their transactions
   * (so only committed work), from any instance on this schema, on the store's one LISTEN
   * connection, which the first call opens.
   */
  watchDeliveries(listener: () => void): () => void {
    return watchDeliveries(this.ctx, listener);
  }

  /** One statement, over the index of migration 0012. */
  countRecentAttempts(tenantId: string, since: Date): Promise<AttemptCounts[]> {
    return countRecentAttempts(this.ctx, tenantId, since);
  }

  expireHeldDeliveries(heldBefore: Date, at: Date): Promise<number> {
    return expireHeldDeliveries(this.ctx, heldBefore, at);
  }

  /** One batch in one transaction, by the instance that holds the schema's purge lock. */
  purgeFinishedDeliveries(finishedBefore: Date, limit: number): Promise<PurgeOutcome> {
    return purgeFinishedDeliveries(this.ctx, finishedBefore, limit);
  }

  purgeIdempotencyKeys(now: Date): Promise<number> {
    return purgeIdempotencyKeys(this.ctx, now);
  }

  claimIdempotencyKey(record: IdempotencyRecord, now: Date): Promise<IdempotencyClaimOutcome> {
    return claimIdempotencyKey(this.ctx, record, now);
  }

  completeIdempotencyKey(completion: IdempotencyCompletion): Promise<boolean> {
    return completeIdempotencyKey(this.ctx, completion);
  }

  releaseIdempotencyKey(tenantId: string, key: string, claimId: string): Promise<void> {
    return releaseIdempotencyKey(this.ctx, tenantId, key, claimId);
  }

  /** One statement, one snapshot, on the indexes of migration 0015. */
  listFeedEvents(tenantId: string, query: FeedQuery): Promise<FeedPage> {
    return listFeedEvents(this.ctx, tenantId, query);
  }

  /** The purge and the insert by one statement. */
  insertPortalSession(record: PortalSessionRecord, purgeBefore: Date): Promise<void> {
    return insertPortalSession(this.ctx, record, purgeBefore);
  }

  /**
   * One guarded UPDATE decides; when it wrote nothing, a new statement reads the row only to
   * say why.
   */
  exchangePortalLink(linkHash: string, sessionHash: string, now: Date): Promise<PortalExchangeOutcome> {
    return exchangePortalLink(this.ctx, linkHash, sessionHash, now);
  }

  findPortalSession(sessionHash: string): Promise<PortalSessionRecord | null> {
    return findPortalSession(this.ctx, sessionHash);
  }

  revokePortalSessions(tenantId: string, id: string | undefined, at: Date): Promise<number> {
    return revokePortalSessions(this.ctx, tenantId, id, at);
  }

  async holdsSealedValues(): Promise<boolean> {
    const result = await this.ctx.query<{ sealed: boolean }>(
      this.ctx.sql(connectionStatements).holdsSealedValues,
      [],
    );
    return result.rows[0]?.sealed === true;
  }

  async ping(): Promise<void> {
    await this.ctx.query('SELECT 1', []);
  }

  /** Marks the store closed; ends the pool only when the store created it. */
  async close(): Promise<void> {
    if (this.ctx.closed) return;
    this.ctx.closed = true;
    await this.ctx.feed.stop();
    if (this.ownsPool) await this.pool.end();
  }
}
