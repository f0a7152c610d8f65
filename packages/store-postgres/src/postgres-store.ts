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
  EndedLease,
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
import {
  autoDisables,
  claimsTwinKey,
  consoleLogger,
  DELIVERY_RULES,
  ENDPOINT_RATE_RULE,
  holdsDeliveries,
  type Logger,
  newDeliveryRecord,
  portalLinkRefusal,
  queuedOn,
} from '@keyhook/core/store';
import type pg from 'pg';
import { DEFAULT_STATEMENT_TIMEOUT_MS, StatementBounds } from './bounds.js';
import type { KeyChangeFeed } from './change-feed.js';
import { checkOut, withTransaction } from './checkout.js';
import {
  type DeliveryRow,
  type DetailRow,
  type EventRow,
  joinedEvent,
  joinedWebhook,
  type LeaseRow,
  toAttemptParams,
  toAttemptRecord,
  toDeliveryParams,
  toDeliveryRecord,
  toEventParams,
  toEventRecord,
} from './delivery-row.js';
import {
  DELIVERY_CHANNEL,
  type DeliveryStatements,
  deliveryStatements,
  PUBLISH_SAVEPOINT,
} from './delivery-statements.js';
import { type FeedStatements, feedQuery, feedStatements, toFeedPage } from './feed-statements.js';
import { Batcher } from './group-commit.js';
import {
  joinTransaction,
  type Queryable,
  refused,
  type StatementResult,
  sqlStateOf,
} from './host-transaction.js';
import { type IdempotencyRow, toClaimParams, toIdempotencyRecord } from './idempotency-row.js';
import { type IdempotencyStatements, idempotencyStatements } from './idempotency-statements.js';
import { type KeyRow, toKeyParams, toKeyRecord } from './key-row.js';
import { type KeyStatements, keyStatements } from './key-statements.js';
import { type PortalSessionRow, toPortalSessionParams, toPortalSessionRecord } from './portal-row.js';
import { type PortalStatements, portalStatements } from './portal-statements.js';
import { PreparedStatements } from './prepared.js';
import { PublishFunction } from './publish-function.js';
import { assertSchemaName, purgeLockKey } from './schema-name.js';
import { toStoreError, unavailable } from './unavailable.js';
import { toWebhookParams, toWebhookRecord, type WebhookRow } from './webhook-row.js';
import { ACTIVE_TWIN_INDEX, type WebhookStatements, webhookStatements } from './webhook-statements.js';

/** The rate summary the lease statement's rows carry (docs/decisions.md §8.18). */
interface RateSummaryRow {
  rate_deferred: number;
  /** Milliseconds since the epoch; null when the claim met no limited endpoint. */
  rate_next_slot: number | null;
  rate_next_slots: number[] | null;
}

const { hold } = DELIVERY_RULES;

/** A claim's rows as leased deliveries; a row without a delivery (the claim's summary) is none. */
function leasedRows(rows: readonly LeaseRow[]): LeasedDelivery[] {
  return rows
    .filter((row) => row.id !== null)
    .map((row) => ({
      delivery: toDeliveryRecord(row),
      event: joinedEvent(row),
      webhook: joinedWebhook(row),
    }));
}

/** How often a method decides again when the row changed between its deciding write and its report read. */
const RACE_ATTEMPTS = 5;

/** completeOn's answer when it must run again holding the webhook's exclusive lock. */
const RETRY_EXCLUSIVE = Symbol('retry with the exclusive lock');

/** Rows a store purges between two VACUUMs of the purged tables (see vacuumPurged). */
const VACUUM_AFTER_PURGED_ROWS = 10_000;

/** Tenant-and-type subscriber counts a store remembers to size its publishes' delivery ids. */
const SUBSCRIBER_HINTS = 10_000;

/** Publishes and successes written by one statement at most. */
const WRITE_BATCH = 64;

type SuccessOutcome = AttemptCompletionOutcome | typeof RETRY_EXCLUSIVE;
type SuccessRow = DeliveryRow & { failures: number | null };

/** One publish as the batch of publishes takes it. */
interface PublishCall {
  event: EventRecord;
  newDeliveryId: () => string;
  lease?: PublishLease | undefined;
}

/** One row of deliverySql.publish: an event's verdict, and one delivery it wrote (NULLs when none). */
type PublishRow = DeliveryRow &
  Record<string, unknown> & { position: string; fits: boolean; subscribers: string; inserted: boolean };

/** A row of deliverySql.publishAndSucceed: a publish row, or (`success` true) a success row. */
type PublishOrSuccessRow = PublishRow & { success?: boolean; failures: number | null };

/** What waits for the store's next write statement: a publish or a success to record. */
type WriteCall = { kind: 'publish'; call: PublishCall } | { kind: 'success'; completion: AttemptCompletion };

const hintKey = (event: EventRecord) => `${event.tenantId}\u0000${event.type}`;

/** A new event's outcome from its rows of deliverySql.publish. */
function publishedOutcome(event: EventRecord, rows: readonly PublishRow[]): PublishOutcome {
  // The row as written: the insert sent exactly these values.
  const published: EventRecord = { ...event, createdAt: new Date(event.createdAt) };
  const deliveries: DeliveryRecord[] = [];
  const leased: LeasedDelivery[] = [];
  for (const row of rows) {
    if (row.id === null) continue;
    const delivery = toDeliveryRecord(row);
    deliveries.push(delivery);
    if (delivery.status === 'in_flight')
      leased.push({ delivery, event: published, webhook: joinedWebhook(row) });
  }
  return { outcome: 'published', event: published, deliveries, leased };
}

/** One row of completeSucceeded(Batch): recorded, lost, or left to the transaction (a count to reset). */
function successOutcome(row: SuccessRow): SuccessOutcome {
  if (row.failures === null) return { outcome: 'lease_lost' };
  if (row.id === null) return row.failures === 0 ? { outcome: 'lease_lost' } : RETRY_EXCLUSIVE;
  const { failures: _, ...delivery } = row;
  return { outcome: 'recorded', delivery: toDeliveryRecord(delivery), disabledWebhook: null };
}

/** The JSON input of deliverySql.completeSucceededBatch (SUCCESS_INPUT's fields), in call order. */
function successInput(completions: readonly AttemptCompletion[]): string {
  return JSON.stringify(
    completions.map((c, k) => ({
      position: k + 1,
      id: c.deliveryId,
      tenant_id: c.tenantId,
      attempt: c.attempt.attempt,
      started_at: c.attempt.startedAt,
      duration_ms: c.attempt.durationMs,
      status_code: c.attempt.statusCode,
      error: c.attempt.error,
      response_body: c.attempt.responseBody,
      lease_id: c.leaseId,
      at: c.at,
    })),
  );
}

/** SQLSTATE 25P01, no_active_sql_transaction: what SAVEPOINT answers outside BEGIN … COMMIT. */
const NO_ACTIVE_TRANSACTION = '25P01';
/** SQLSTATEs 3F000 and 42P01: the caller's connection has no store schema (another database). */
const INVALID_SCHEMA_NAME = '3F000';
const UNDEFINED_TABLE = '42P01';

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

/**
 * keyhook's Store on PostgreSQL. Each method is one statement or one transaction, atomic in the
 * database, so any number of app instances can share one schema. Open it with
 * `createPostgresStore`, which also applies the migrations; the constructor assumes they ran.
 */
export class PostgresStore implements CompleteStore {
  readonly persistent = true;
  readonly schema: string;
  private readonly purgeLock: string;
  private purgedSinceVacuum = 0;
  /**
   * Whether this store's last pacing claim met an endpoint with a rate: its next claim is then
   * the pacing claim alone, since a limited endpoint's backlog comes due at every slot and the
   * plain claim first would add a round trip to each (docs/decisions.md §8.18).
   */
  private pacing = false;
  /**
   * Publishes and successes wait here while one statement of them is in flight, and go together
   * next: in one statement of their kind, or of both (deliverySql.publishAndSucceed). A publish
   * waits only behind other publishes: with none in flight or waiting, it goes at once beside a
   * statement of successes (docs/decisions.md §8.19).
   */
  private readonly writes = new Batcher<WriteCall, PublishOutcome | SuccessOutcome>(
    (calls) => this.writeBatch(calls),
    (call) => this.writeOne(call),
    WRITE_BATCH,
    (call) =>
      call.kind === 'publish'
        ? `p\u0000${call.call.event.tenantId}\u0000${call.call.event.id}`
        : `s\u0000${call.completion.deliveryId}`,
    (call) => call.kind === 'publish',
  );
  private readonly pool: pg.Pool;
  private readonly ownsPool: boolean;
  private readonly sql: KeyStatements;
  private readonly webhookSql: WebhookStatements;
  private readonly idempotencySql: IdempotencyStatements;
  private readonly deliverySql: DeliveryStatements;
  private readonly portalSql: PortalStatements;
  private readonly feedSql: FeedStatements;
  private readonly prepared: PreparedStatements;
  private readonly bounds: StatementBounds;
  private readonly feed: KeyChangeFeed;
  private readonly publishFunction: PublishFunction;
  private readonly logger: Logger;
  private closed = false;
  private localChanges = 0;
  private readonly subscriberHints = new Map<string, number>();

  constructor(parts: PostgresStoreParts) {
    this.feed = parts.feed;
    this.logger = parts.logger ?? consoleLogger;
    this.schema = assertSchemaName(parts.schema);
    this.purgeLock = purgeLockKey(this.schema);
    this.pool = parts.pool;
    this.ownsPool = parts.ownsPool;
    this.bounds = new StatementBounds(
      parts.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS,
      parts.ownsPool,
    );
    this.sql = keyStatements(this.schema);
    this.webhookSql = webhookStatements(this.schema);
    this.idempotencySql = idempotencyStatements(this.schema);
    this.deliverySql = deliveryStatements(this.schema);
    this.portalSql = portalStatements(this.schema);
    this.feedSql = feedStatements(this.schema);
    this.publishFunction = new PublishFunction(
      this.pool,
      this.schema,
      this.deliverySql.publishOneText,
      this.logger,
    );
    const d = this.deliverySql;
    // What runs for every delivery, every key verification and every request of a portal
    // session (its lookup, as an API request's key); the rest is admin traffic. Not the lease:
    // which plan serves it best depends on how many deliveries wait, so it is planned with its
    // values each time rather than kept as one generic plan made on a smaller table.
    this.prepared = new PreparedStatements(
      [
        d.publish,
        d.publishOne,
        d.getEvent,
        d.completeSucceeded,
        d.completeSucceededBatch,
        d.publishAndSucceed,
        d.deliveryWebhook,
        d.shareWebhook,
        d.lockWebhook,
        d.complete,
        d.insertAttempt,
        d.setFailures,
        d.leaseUnlimited,
        this.sql.findByCredential,
        this.sql.touch,
        this.portalSql.sessionByHash,
      ],
      parts.preparedStatements ?? true,
      this.bounds,
    );
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

  async updateApiKey(tenantId: string, id: string, changes: ApiKeyChanges): Promise<ApiKeyRecord | null> {
    const limit = changes.rateLimit;
    const params = [
      tenantId,
      id,
      changes.name !== undefined,
      changes.name ?? null,
      limit !== undefined,
      limit?.limit ?? null,
      limit?.window ?? null,
      changes.rateLimitByHost === true,
    ];
    let limitChanged = false;
    const update = async () => {
      const result = await this.query<KeyRow & { limit_changed: boolean }>(this.sql.update, params);
      limitChanged = result.rows[0]?.limit_changed === true;
      return this.one(result);
    };
    // Migration 0007's trigger announces a changed limit; a new name, or the same limit, is not announced.
    return this.announced(id, update, () => limitChanged);
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
        updated = await this.transaction(async (client) => {
          // The webhook row first: its lock orders this against publishEvent's FOR SHARE (see there).
          const webhook = this.oneWebhook(
            await this.run<WebhookRow>(client, this.webhookSql.setStatus, [
              tenantId,
              id,
              status,
              disabledReason,
              at,
              claimsTwinKey(status),
              holdsDeliveries(status),
            ]),
          );
          if (!webhook) return null;
          await this.allowBulk(client);
          if (holdsDeliveries(status)) {
            await this.run(client, this.deliverySql.hold, [id, at, hold.state], true);
          } else {
            await this.run(client, this.deliverySql.release, [id, at, hold.state], true);
            // The slots given to the held deliveries were given up (docs/decisions.md §8.18).
            await this.run(client, this.deliverySql.resetRate, [id, at], true);
            // Released deliveries are due now, and so is an expired lease the disable kept from leasing.
            await this.notifyDeliveries(client);
          }
          return webhook;
        });
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

  async updateWebhookSubscription(
    tenantId: string,
    id: string,
    subscription: WebhookSubscription,
    at: Date,
  ): Promise<WebhookSubscriptionOutcome> {
    const params = [
      tenantId,
      id,
      subscription.url,
      subscription.events,
      subscription.twinKey,
      at,
      subscription.from,
      subscription.signatureScheme ?? null,
      subscription.rateLimit !== undefined,
      subscription.rateLimit?.perSecond ?? null,
      subscription.description !== undefined,
      subscription.description ?? null,
    ];
    let webhook: WebhookRecord | null;
    try {
      webhook =
        subscription.rateLimit === undefined
          ? this.oneWebhook(await this.query<WebhookRow>(this.webhookSql.updateSubscription, params))
          : await this.transaction(async (client) => {
              // The webhook row first, then its slots and what they made wait (docs/decisions.md §8.18).
              const updated = this.oneWebhook(
                await this.run<WebhookRow>(client, this.webhookSql.updateSubscription, params),
              );
              if (!updated) return null;
              await this.allowBulk(client);
              const reset = await this.run<{ moved: number }>(
                client,
                this.deliverySql.resetRate,
                [id, at],
                true,
              );
              if (reset.rows[0]!.moved > 0) await this.notifyDeliveries(client);
              return updated;
            });
    } catch (error) {
      if (isActiveTwinViolation(error)) return { outcome: 'active_twin' };
      throw error;
    }
    if (webhook) return { outcome: 'updated', webhook };
    return (await this.getWebhook(tenantId, id)) ? { outcome: 'stale' } : { outcome: 'not_found' };
  }

  async rotateWebhookSecret(
    tenantId: string,
    id: string,
    secretSealed: string,
    publicKey: string | null,
    at: Date,
    previousExpiresAt: Date | null,
  ): Promise<WebhookRecord | null> {
    return this.oneWebhook(
      await this.query<WebhookRow>(this.webhookSql.rotateSecret, [
        tenantId,
        id,
        secretSealed,
        at,
        previousExpiresAt,
        publicKey,
      ]),
    );
  }

  async deleteWebhook(tenantId: string, id: string): Promise<boolean> {
    // Its deliveries and their attempts go with it: as long as the endpoint's history is.
    const result = await this.transaction(async (client) => {
      await this.allowBulk(client);
      return this.run(client, this.webhookSql.delete, [tenantId, id], true);
    });
    return result.rowCount === 1;
  }

  /**
   * The event, its subscribers under FOR SHARE, their deliveries and the NOTIFY, by one
   * statement (see publishOn): on its own, one round trip and one commit; with `transaction`, in
   * the caller's transaction under a savepoint, so a failure here rolls back only this publish
   * and leaves the caller's transaction usable.
   */
  async publishEvent(
    event: EventRecord,
    newDeliveryId: () => string,
    transaction?: unknown,
    lease?: PublishLease,
  ): Promise<PublishOutcome> {
    if (transaction === undefined) {
      this.assertOpen();
      try {
        return (await this.writes.submit({
          kind: 'publish',
          call: { event, newDeliveryId, lease },
        })) as PublishOutcome;
      } catch (error) {
        throw toStoreError(error);
      }
    }
    let joined = joinTransaction(transaction);
    this.assertOpen();
    try {
      joined = await this.publishFunction.route(joined);
      const [[outcome]] = await joined.inSavepoint(PUBLISH_SAVEPOINT, (client) =>
        this.publishOn(client, [{ event, newDeliveryId }]),
      );
      return outcome!;
    } catch (error) {
      const state = sqlStateOf(error);
      if (state === NO_ACTIVE_TRANSACTION)
        throw refused(
          `is a ${joined.library} connection outside a transaction (or one whose transaction has ended)`,
        );
      if (state === INVALID_SCHEMA_NAME || state === UNDEFINED_TABLE)
        throw refused(`reaches a database without the store's schema "${this.schema}" (${state})`);
      throw toStoreError(error);
    }
  }

  /**
   * A test event to one webhook (docs/decisions.md §8.16), in one transaction: the webhook is
   * read with its tenant under FOR SHARE, the lock publishEvent's subscriber read takes, so a
   * concurrent disable either committed first (the delivery is held) or waits for this commit
   * and then holds it itself; then the event and its delivery, and a NOTIFY when it is due now.
   */
  async publishTestEvent(
    event: EventRecord,
    webhookId: string,
    deliveryId: string,
  ): Promise<TestEventOutcome> {
    return this.transaction(async (client): Promise<TestEventOutcome> => {
      const webhook = this.oneWebhook(
        await this.run<WebhookRow>(client, `${this.webhookSql.get} FOR SHARE`, [event.tenantId, webhookId]),
      );
      if (!webhook) return { outcome: 'not_found' };
      const delivery = newDeliveryRecord(event, webhook, deliveryId);
      await this.run(client, this.deliverySql.insertTestEvent, [
        ...toEventParams(event),
        ...toDeliveryParams(delivery),
      ]);
      if (delivery.dueAt) await this.notifyDeliveries(client);
      return { outcome: 'published', event: { ...event, createdAt: new Date(event.createdAt) }, delivery };
    });
  }

  /** Postgres has no synchronous queries: publish with `{ transaction: client }` instead. */
  publishEventSync(_event: EventRecord, _newDeliveryId: () => string, _transaction: unknown): PublishOutcome {
    throw new TypeError(
      'keyhook: the Postgres store cannot publish synchronously; await events.publish(input, { transaction: client })',
    );
  }

  async leaseDeliveries(request: LeaseRequest): Promise<LeasedDelivery[]> {
    const leaseEnds = new Date(request.now.getTime() + request.leaseMs);
    if (request.endLeases?.length) await this.endLeases(request.now, leaseEnds, request.endLeases);
    // The endpoints the worker's cap leaves go as one more parameter, to a claim of their own.
    const skip = request.skipEndpoints?.length ? [request.skipEndpoints] : [];
    let leased: LeasedDelivery[] = [];
    if (!this.pacing) {
      // Most claims meet no endpoint with a rate: the plain claim leases those and says whether
      // it met any that has one (deliverySql.leaseUnlimited).
      const plain = await this.query<LeaseRow & { limited_met: number }>(
        skip.length ? this.deliverySql.leaseUnlimitedSkipping : this.deliverySql.leaseUnlimited,
        [request.now, request.limit, request.leaseId, leaseEnds, hold.endpointStatus, ...skip],
      );
      leased = leasedRows(plain.rows);
      if (!plain.rows[0]?.limited_met) return leased;
    }
    const rule = request.rate ?? ENDPOINT_RATE_RULE;
    const result = await this.query<LeaseRow & RateSummaryRow>(
      skip.length ? this.deliverySql.leaseSkipping : this.deliverySql.lease,
      [
        request.now,
        request.limit - leased.length,
        request.leaseId,
        leaseEnds,
        hold.endpointStatus,
        request.now.getTime(),
        rule.early,
        rule.late,
        rule.spread,
        ...skip,
      ],
    );
    // One row at least: the rate summary, with no delivery when nothing was leased.
    const summary = result.rows[0];
    // A slot given out (a delivery leased or made to wait) means a limited endpoint with work.
    this.pacing = summary !== undefined && summary.rate_next_slot !== null;
    if (summary && summary.rate_next_slot !== null) {
      request.onRateWait?.({
        deferred: summary.rate_deferred,
        nextSlotAt: new Date(summary.rate_next_slot),
        nextSlots: (summary.rate_next_slots ?? []).map((at) => new Date(at)),
      });
    }
    return [...leased, ...leasedRows(result.rows)];
  }

  /** LeaseRequest.endLeases, in one statement before the claim (deliverySql.endLeases). */
  private async endLeases(now: Date, latestEnd: Date, ended: readonly EndedLease[]): Promise<void> {
    const whole = ended.filter((lease) => lease.deliveryId === undefined).map((lease) => lease.leaseId);
    const single = ended.filter((lease) => lease.deliveryId !== undefined);
    await this.query(this.deliverySql.endLeases, [
      now,
      latestEnd,
      whole,
      single.map((lease) => lease.deliveryId),
      single.map((lease) => lease.leaseId),
    ]);
  }

  /**
   * Locks the webhook, then the delivery (only while the lease holds it), then writes the
   * delivery, the attempt log, the failure count, and on an auto-disable the webhook and its
   * held deliveries, in one transaction. Webhook before delivery is the order every writer of
   * both keeps, so none of them waits on another in a cycle.
   */
  async completeAttempt(completion: AttemptCompletion): Promise<AttemptCompletionOutcome> {
    if (completion.status === 'succeeded') {
      const fast = (await this.writes.submit({ kind: 'success', completion })) as SuccessOutcome;
      if (fast !== RETRY_EXCLUSIVE) return fast;
    }
    const first = await this.transaction((client) => this.completeOn(client, completion, false));
    if (first !== RETRY_EXCLUSIVE) return first;
    // The count moved between the unlocked read and the share lock: once more, locked to write.
    const second = await this.transaction((client) => this.completeOn(client, completion, true));
    if (second === RETRY_EXCLUSIVE) throw new Error('keyhook: an exclusive completion asked for a retry');
    return second;
  }

  /**
   * A success as one statement (deliverySql.completeSucceeded), which is most completions. It
   * answers RETRY_EXCLUSIVE when the endpoint's failure count is not 0: resetting it is the
   * transaction's work.
   */
  private async completeSucceeded(completion: AttemptCompletion): Promise<SuccessOutcome> {
    const result = await this.query<SuccessRow>(this.deliverySql.completeSucceeded, [
      ...toAttemptParams(completion.deliveryId, completion.attempt),
      completion.leaseId,
      completion.at,
    ]);
    return successOutcome(result.rows[0]!);
  }

  /** Many successes in one statement (deliverySql.completeSucceededBatch): the group commit. */
  private async completeSucceededBatch(completions: AttemptCompletion[]): Promise<SuccessOutcome[]> {
    const result = await this.query<SuccessRow>(this.deliverySql.completeSucceededBatch, [
      successInput(completions),
    ]);
    return result.rows.map(successOutcome);
  }

  /** A batch of the writes queue: its publishes and its successes, each kind in one statement or both in one. */
  private async writeBatch(calls: WriteCall[]): Promise<(PublishOutcome | SuccessOutcome)[]> {
    const publishes: PublishCall[] = [];
    const completions: AttemptCompletion[] = [];
    for (const call of calls) {
      if (call.kind === 'publish') publishes.push(call.call);
      else completions.push(call.completion);
    }
    let published: PublishOutcome[] = [];
    let succeeded: SuccessOutcome[] = [];
    if (publishes.length === 0) succeeded = await this.completeSucceededBatch(completions);
    else [published, succeeded] = await this.publishOn(this.pool, publishes, completions);
    let p = 0;
    let k = 0;
    return calls.map((call) => (call.kind === 'publish' ? published[p++]! : succeeded[k++]!));
  }

  private async writeOne(call: WriteCall): Promise<PublishOutcome | SuccessOutcome> {
    if (call.kind === 'success') return this.completeSucceeded(call.completion);
    const [[outcome]] = await this.publishOn(this.pool, [call.call]);
    return outcome!;
  }

  async countQueuedDeliveries(now: Date): Promise<QueueDepth> {
    const result = await this.query<{ due: number; scheduled: number; in_flight: number; held: number }>(
      this.deliverySql.countQueued,
      [now],
    );
    const row = result.rows[0]!;
    return { due: row.due, scheduled: row.scheduled, inFlight: row.in_flight, held: row.held };
  }

  async expireHeldDeliveries(heldBefore: Date, at: Date): Promise<number> {
    const result = await this.transaction(async (client) => {
      await this.allowBulk(client);
      return this.run(client, this.deliverySql.expireHeld, [heldBefore, at], true);
    });
    return result.rowCount ?? 0;
  }

  /** One batch in one transaction, by the instance that holds the schema's purge lock. */
  async purgeFinishedDeliveries(finishedBefore: Date, limit: number): Promise<PurgeOutcome> {
    const outcome = await this.transaction(async (client): Promise<PurgeOutcome> => {
      const lock = await this.run<{ held: boolean }>(client, this.deliverySql.purgeLock, [this.purgeLock]);
      if (!lock.rows[0]?.held) return { deliveries: 0, events: 0, skipped: true };
      const deliveries = await this.run(client, this.deliverySql.purgeDeliveries, [finishedBefore, limit]);
      const events = await this.run(client, this.deliverySql.purgeEvents, [finishedBefore, limit]);
      return { deliveries: deliveries.rowCount ?? 0, events: events.rowCount ?? 0, skipped: false };
    });
    this.purgedSinceVacuum += outcome.deliveries + outcome.events;
    if (this.purgedSinceVacuum >= VACUUM_AFTER_PURGED_ROWS) {
      this.purgedSinceVacuum = 0;
      await this.vacuumPurged();
    }
    return outcome;
  }

  /**
   * Deleted rows take room until a VACUUM marks it free, and autovacuum looks at a table once a
   * minute at most: under a steady purge the tables would grow between its visits. So the
   * instance that purged VACUUMs the three tables itself every VACUUM_AFTER_PURGED_ROWS rows.
   * A plain VACUUM blocks neither reads nor writes, SKIP_LOCKED never waits for a table another
   * session locked, and a role that does not own the tables only gets a warning and leaves the
   * work to autovacuum.
   */
  private async vacuumPurged(): Promise<void> {
    try {
      // VACUUM runs outside a transaction, so its bulk bound is the session's until it is done.
      const ms = this.bounds.bulkServerMs();
      if (ms === null) await this.pool.query(this.prepared.config(this.deliverySql.vacuumPurged, [], true));
      else {
        const client = await checkOut(this.pool);
        let reset = false;
        try {
          await client.query(`SET statement_timeout = ${ms}`);
          await client.query(this.prepared.config(this.deliverySql.vacuumPurged, [], true));
          await client.query('RESET statement_timeout');
          reset = true;
        } finally {
          // One whose setting could not be put back is not pooled again.
          client.release(!reset);
        }
      }
    } catch (error) {
      this.logger.warn({ err: (error as Error).message }, 'keyhook: could not vacuum after a purge');
    }
  }

  async listDeliveries(
    tenantId: string,
    webhookId: string,
    page: DeliveryListPage,
  ): Promise<DeliveryRecord[]> {
    const result = await this.query<DeliveryRow>(this.deliverySql.list, [
      tenantId,
      webhookId,
      page.limit,
      page.status ?? null,
      page.before ?? null,
      page.eventType ?? null,
      page.eventId ?? null,
      page.createdFrom ?? null,
      page.createdBefore ?? null,
    ]);
    return result.rows.map(toDeliveryRecord);
  }

  async getDelivery(tenantId: string, webhookId: string, deliveryId: string): Promise<DeliveryDetail | null> {
    const result = await this.query<DetailRow>(this.deliverySql.detail, [tenantId, webhookId, deliveryId]);
    const row = result.rows[0];
    if (!row) return null;
    return {
      delivery: toDeliveryRecord(row),
      event: joinedEvent(row),
      attempts: row.attempts_log.map(toAttemptRecord),
    };
  }

  /**
   * Share-locks the webhook (a concurrent disable then either came first and this holds the
   * delivery, or waits and holds it itself), locks the delivery, decides on its locked status,
   * and writes; a NOTIFY when it is due now.
   */
  async requeueDelivery(
    tenantId: string,
    webhookId: string,
    deliveryId: string,
    from: readonly DeliveryStatus[],
    at: Date,
  ): Promise<RequeueOutcome> {
    return this.transaction(async (client): Promise<RequeueOutcome> => {
      const webhook = this.oneWebhook(
        await this.run<WebhookRow>(client, `${this.webhookSql.get} FOR SHARE`, [tenantId, webhookId]),
      );
      if (!webhook) return { outcome: 'not_found' };
      const locked = await this.run<DeliveryRow>(client, this.deliverySql.lockDelivery, [
        tenantId,
        webhookId,
        deliveryId,
      ]);
      const row = locked.rows[0];
      if (!row) return { outcome: 'not_found' };
      if (!from.includes(row.status)) return { outcome: 'wrong_state', delivery: toDeliveryRecord(row) };
      const place = queuedOn(webhook.status, 'pending', at, at);
      const requeued = await this.run<DeliveryRow>(client, this.deliverySql.requeue, [
        deliveryId,
        place.status,
        place.dueAt,
        place.heldSince,
        at,
      ]);
      if (place.dueAt) await this.notifyDeliveries(client);
      return { outcome: 'queued', delivery: toDeliveryRecord(requeued.rows[0]!) };
    });
  }

  /**
   * One batch in one transaction, as requeueDelivery queues one: the webhook is share-locked
   * first (a concurrent disable either came first and this holds the batch, or waits and holds
   * it itself), then the batch is chosen, locked and written in one statement; a NOTIFY when it
   * queued anything due now, so other instances' workers wake.
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
    return this.transaction(async (client): Promise<number> => {
      const webhook = this.oneWebhook(
        await this.run<WebhookRow>(client, `${this.webhookSql.get} FOR SHARE`, [tenantId, webhookId]),
      );
      if (!webhook) return 0;
      const place = queuedOn(webhook.status, 'pending', at, at);
      const recovered = await this.run(client, this.deliverySql.recoverFailed, [
        webhookId,
        tenantId,
        since,
        until,
        limit,
        place.status,
        place.dueAt,
        place.heldSince,
        at,
        failedBefore,
      ]);
      const count = recovered.rowCount ?? 0;
      if (count > 0 && place.dueAt) await this.notifyDeliveries(client);
      return count;
    });
  }

  /**
   * Hears the NOTIFY that publishEvent, publishTestEvent, requeueDelivery,
   * recoverFailedDeliveries and an enabling setWebhookStatus send inside their transactions (so
   * only committed work), from any instance on this schema, on the store's one LISTEN connection, which the first call opens.
   * Also called once that connection is listening, and after each reconnect: a notification
   * sent meanwhile is lost.
   */
  watchDeliveries(listener: () => void): () => void {
    if (this.closed) return () => {};
    return this.feed.watchDeliveries(listener);
  }

  /** One statement, one snapshot, on the indexes of migration 0015 (feed-statements.ts). */
  async listFeedEvents(tenantId: string, query: FeedQuery): Promise<FeedPage> {
    const { text, values } = feedQuery(this.feedSql, tenantId, query);
    return toFeedPage(query, (await this.query(text, values)).rows);
  }

  /** One statement, over the index of migration 0012 (see portalStatements). */
  async countRecentAttempts(tenantId: string, since: Date): Promise<AttemptCounts[]> {
    const { min, max } = DELIVERY_RULES.success;
    const result = await this.query<AttemptCounts>(this.portalSql.countRecentAttempts, [
      tenantId,
      since,
      min,
      max,
    ]);
    return result.rows;
  }

  /** The purge and the insert by one statement. */
  async insertPortalSession(record: PortalSessionRecord, purgeBefore: Date): Promise<void> {
    await this.query(this.portalSql.insertSession, [...toPortalSessionParams(record), purgeBefore]);
  }

  /**
   * One guarded UPDATE decides (see portalStatements); when it wrote nothing, a new statement,
   * with a new snapshot, reads the row only to say why. Exchanged and revoked are never undone,
   * so a row that reads as exchangeable was inserted between the two: the exchange runs again.
   */
  async exchangePortalLink(linkHash: string, sessionHash: string, now: Date): Promise<PortalExchangeOutcome> {
    for (let attempt = 0; attempt < RACE_ATTEMPTS; attempt++) {
      const exchanged = await this.query<PortalSessionRow>(this.portalSql.exchangeLink, [
        linkHash,
        sessionHash,
        now,
      ]);
      const row = exchanged.rows[0];
      if (row) return { outcome: 'exchanged', session: toPortalSessionRecord(row) };
      const current = await this.query<PortalSessionRow>(this.portalSql.sessionByLink, [linkHash]);
      const found = current.rows[0];
      const reason = portalLinkRefusal(found ? toPortalSessionRecord(found) : null, now);
      if (reason !== null) return { outcome: 'refused', reason };
    }
    throw unavailable('The portal link changed too often to be exchanged; retry.');
  }

  async findPortalSession(sessionHash: string): Promise<PortalSessionRecord | null> {
    const result = await this.query<PortalSessionRow>(this.portalSql.sessionByHash, [sessionHash]);
    const row = result.rows[0];
    return row ? toPortalSessionRecord(row) : null;
  }

  async revokePortalSessions(tenantId: string, id: string | undefined, at: Date): Promise<number> {
    const result =
      id === undefined
        ? await this.query(this.portalSql.revokeTenantSessions, [tenantId, at])
        : await this.query(this.portalSql.revokeSession, [tenantId, id, at]);
    return result.rowCount ?? 0;
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

  async holdsSealedValues(): Promise<boolean> {
    const result = await this.query<{ sealed: boolean }>(this.idempotencySql.holdsSealedValues, []);
    return result.rows[0]?.sealed === true;
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
      return await this.pool.query<R>(this.prepared.config(text, values));
    } catch (error) {
      throw toStoreError(error);
    }
  }

  /**
   * Runs `work` in one READ COMMITTED transaction on one pool client (explicitly, so a pool whose
   * default isolation is stricter does not change what a re-read after a lock wait sees). Any
   * error rolls back, and goes out through the unavailable mapping.
   */
  private async transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    this.assertOpen();
    try {
      return await withTransaction(this.pool, work, { begin: 'BEGIN ISOLATION LEVEL READ COMMITTED' });
    } catch (error) {
      throw toStoreError(error);
    }
  }

  /** A statement on a transaction's (or a caller's) client, named when it is a prepared one. */
  private run<R extends pg.QueryResultRow = pg.QueryResultRow>(
    client: Queryable,
    text: string,
    values: unknown[],
    bulk = false,
  ): Promise<StatementResult<R>> {
    return client.query<R>(this.prepared.config(text, values, bulk));
  }

  /**
   * The rest of this transaction (on the store's pool) may take the bulk bound (src/bounds.ts):
   * its next statements' work grows with a queue or an endpoint's history.
   */
  private async allowBulk(client: Queryable): Promise<void> {
    const ms = this.bounds.bulkServerMs();
    if (ms !== null) await client.query(`SET LOCAL statement_timeout = ${ms}`);
  }

  private assertOpen(): void {
    if (this.closed) throw unavailable('The store is closed.');
  }

  /**
   * Events and their deliveries by one statement (deliverySql.publish), on the pool (its own
   * transaction) or on a caller's client inside their transaction. The statement writes nothing
   * of an event it is given fewer delivery ids for than the event has subscribers; that event is
   * sent again with as many as it counted. A count remembered per tenant and type sizes the
   * first try.
   */
  /**
   * Publishes `calls` (deliverySql.publish), sending an event again with more delivery ids when
   * it has more subscribers than its hint gave it ids. `completions`, when there are any, ride
   * along with the first statement (deliverySql.publishAndSucceed); their outcomes come second.
   */
  private async publishOn(
    client: Queryable,
    calls: readonly PublishCall[],
    completions: readonly AttemptCompletion[] = [],
  ): Promise<[PublishOutcome[], SuccessOutcome[]]> {
    const outcomes: PublishOutcome[] = new Array(calls.length);
    let succeeded: SuccessOutcome[] = [];
    const replays: number[] = [];
    let pending = calls.map((call, index) => ({
      call,
      index,
      ids: this.subscriberHints.get(hintKey(call.event)) ?? 1,
    }));
    let riding = completions.length > 0;
    while (pending.length > 0) {
      const ids: string[] = [];
      const firstIds: number[] = [];
      for (const { call, ids: count } of pending) {
        firstIds.push(ids.length + 1);
        for (let i = 0; i < count; i++) ids.push(call.newDeliveryId());
      }
      let rowsOf: PublishRow[][];
      if (pending.length === 1 && !riding) {
        // One event alone: its columns bound one by one (deliverySql.publishOne).
        const { event, lease } = pending[0]!.call;
        const statement =
          client.readsVoid === false ? this.deliverySql.publishOneText : this.deliverySql.publishOne;
        const result = await this.run<PublishRow>(client, statement, [
          event.tenantId,
          event.id,
          event.type,
          event.payload,
          event.createdAt,
          event.traceContext ?? null,
          lease?.leaseId ?? null,
          lease?.limit ?? null,
          lease ? new Date(event.createdAt.getTime() + lease.leaseMs) : null,
          ids,
          DELIVERY_CHANNEL,
          this.schema,
          hold.endpointStatus,
          hold.state,
        ]);
        rowsOf = [result.rows];
      } else {
        const input = pending.map(({ call: { event, lease }, ids: count }, k) => ({
          position: k + 1,
          tenant_id: event.tenantId,
          id: event.id,
          type: event.type,
          payload: event.payload,
          created_at: event.createdAt,
          trace_context: event.traceContext,
          lease_id: lease?.leaseId ?? null,
          lease_limit: lease?.limit ?? null,
          lease_ends: lease ? new Date(event.createdAt.getTime() + lease.leaseMs) : null,
          first_id: firstIds[k],
          ids: count,
        }));
        const params = [
          JSON.stringify(input),
          ids,
          DELIVERY_CHANNEL,
          this.schema,
          hold.endpointStatus,
          hold.state,
        ];
        let rows: PublishOrSuccessRow[];
        if (riding) {
          riding = false;
          params.push(successInput(completions));
          rows = (await this.run<PublishOrSuccessRow>(client, this.deliverySql.publishAndSucceed, params))
            .rows;
          const first = rows.findIndex((row) => row.success);
          succeeded = rows.slice(first).map(successOutcome);
          rows = rows.slice(0, first);
        } else {
          rows = (await this.run<PublishOrSuccessRow>(client, this.deliverySql.publish, params)).rows;
        }
        rowsOf = pending.map(() => []);
        for (const row of rows) rowsOf[Number(row.position) - 1]!.push(row);
      }
      const again: typeof pending = [];
      for (const [k, entry] of pending.entries()) {
        const rows = rowsOf[k]!;
        const head = rows[0]!;
        const subscribers = Number(head.subscribers);
        this.rememberSubscribers(hintKey(entry.call.event), subscribers);
        if (!head.fits) again.push({ ...entry, ids: subscribers });
        else if (!head.inserted) replays.push(entry.index);
        else outcomes[entry.index] = publishedOutcome(entry.call.event, rows);
      }
      pending = again;
    }
    for (const index of replays) outcomes[index] = await this.replayed(client, calls[index]!.event);
    return [outcomes, succeeded];
  }

  /** A publish whose event id was there already answers with the event as first published. */
  private async replayed(client: Queryable, event: EventRecord): Promise<PublishOutcome> {
    const stored = await this.run<EventRow>(client, this.deliverySql.getEvent, [event.tenantId, event.id]);
    const existing = stored.rows[0];
    // Unreachable under READ COMMITTED (the conflict waited for the winner's commit); a stricter caller
    // transaction gets a serialization failure from the insert instead. Still: never answer without it.
    if (!existing) throw unavailable('The event was published concurrently; retry.');
    return { outcome: 'duplicate', event: toEventRecord(existing) };
  }

  /** Sizes a tenant and type's next publish; a bounded map, emptied when full. */
  private rememberSubscribers(key: string, count: number): void {
    if (this.subscriberHints.get(key) === count) return;
    if (this.subscriberHints.size >= SUBSCRIBER_HINTS) this.subscriberHints.clear();
    this.subscriberHints.set(key, count);
  }

  /**
   * One try of completeAttempt. It takes the webhook's exclusive row lock only when it will
   * write the failure count (an increment, or a reset of a count that is not 0), judged from an
   * unlocked read; when the share-locked row shows the judgement was wrong (a failure was
   * counted in between), it writes nothing and asks to be run again with `exclusive`, rather
   * than upgrade its share lock, which two completions could deadlock on.
   */
  private async completeOn(
    client: Queryable,
    completion: AttemptCompletion,
    exclusive: boolean,
  ): Promise<AttemptCompletionOutcome | typeof RETRY_EXCLUSIVE> {
    const lost: AttemptCompletionOutcome = { outcome: 'lease_lost' };
    const { tenantId, deliveryId, leaseId, at, endpointFailures } = completion;
    const holder = await this.run<{ webhook_id: string; consecutive_failures: number }>(
      client,
      this.deliverySql.deliveryWebhook,
      [deliveryId, tenantId, leaseId],
    );
    const seen = holder.rows[0];
    if (!seen) return lost;
    const writesCount = (failures: number) =>
      endpointFailures === 'increment' || (endpointFailures === 'reset' && failures !== 0);
    const lockExclusive = exclusive || writesCount(seen.consecutive_failures);
    const locked = await this.run<WebhookRow & { consecutive_failures: number }>(
      client,
      lockExclusive ? this.deliverySql.lockWebhook : this.deliverySql.shareWebhook,
      [seen.webhook_id],
    );
    const webhook = locked.rows[0];
    if (!webhook) return lost; // deleted meanwhile, and its deliveries with it
    if (!lockExclusive && writesCount(webhook.consecutive_failures)) return RETRY_EXCLUSIVE;
    // A retry of an endpoint disabled by now waits, held, for it to be enabled again (core's queuedOn).
    const place =
      completion.status === 'retry_scheduled'
        ? queuedOn(webhook.status, completion.status, completion.dueAt, at)
        : { status: completion.status, dueAt: null, heldSince: null };
    const completed = await this.run<DeliveryRow>(client, this.deliverySql.complete, [
      deliveryId,
      tenantId,
      leaseId,
      place.status,
      place.dueAt,
      place.heldSince,
      completion.attempt.startedAt,
      at,
    ]);
    const row = completed.rows[0];
    // The lease ran out and was taken between the first read and the lock.
    if (!row) return lost;
    let delivery = toDeliveryRecord(row);
    await this.run(client, this.deliverySql.insertAttempt, toAttemptParams(deliveryId, completion.attempt));

    let disabledWebhook: WebhookRecord | null = null;
    if (endpointFailures === 'reset' && webhook.consecutive_failures !== 0) {
      await this.run(client, this.deliverySql.setFailures, [webhook.id, 0]);
    } else if (endpointFailures === 'increment') {
      const count = webhook.consecutive_failures + 1;
      if (autoDisables(count, webhook.status, completion.autoDisable)) {
        disabledWebhook = this.oneWebhook(
          await this.run<WebhookRow>(client, this.deliverySql.disableForFailures, [
            webhook.id,
            count,
            at,
            hold.endpointStatus,
            completion.autoDisable.reason,
            claimsTwinKey(hold.endpointStatus),
          ]),
        );
        // Held with the rest, this delivery too should it have just been scheduled for a retry.
        await this.allowBulk(client);
        const heldRows = await this.run<DeliveryRow>(
          client,
          this.deliverySql.hold,
          [webhook.id, at, hold.state],
          true,
        );
        const self = heldRows.rows.find((heldRow) => heldRow.id === deliveryId);
        if (self) delivery = toDeliveryRecord(self);
      } else {
        await this.run(client, this.deliverySql.setFailures, [webhook.id, count]);
      }
    }
    return { outcome: 'recorded', delivery, disabledWebhook };
  }

  /** Queues the wake-up inside the caller's transaction: the server sends it at commit only. */
  private async notifyDeliveries(client: Queryable): Promise<void> {
    await this.run(client, this.deliverySql.notify, [DELIVERY_CHANNEL, this.schema]);
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

  private oneWebhook(result: StatementResult<WebhookRow>): WebhookRecord | null {
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
