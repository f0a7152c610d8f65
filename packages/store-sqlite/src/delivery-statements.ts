import type {
  AttemptCompletion,
  AttemptCompletionOutcome,
  DeliveryDetail,
  DeliveryStatus,
  EventRecord,
  LeasedDelivery,
  LeaseRequest,
  PublishLease,
  PublishOutcome,
  PurgeOutcome,
  RequeueOutcome,
  TestEventOutcome,
  WebhookDisabledReason,
  WebhookRecord,
  WebhookStatus,
} from '@keyhook/core/store';
import {
  autoDisables,
  claimsTwinKey,
  DELIVERY_RULES,
  ENDPOINT_RATE_RULE,
  leasedSubscribers,
  newDeliveryRecord,
  paceEndpoint,
  type QueuePlace,
  queuedOn,
  type RateSlots,
  rateWaitOf,
} from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import {
  ATTEMPT_COLUMNS,
  type AttemptRow,
  attemptValues,
  DELIVERY_COLUMNS,
  type DeliveryRow,
  type DueRow,
  deliveryValues,
  EVENT_COLUMNS,
  type EventRow,
  eventValues,
  placeholdersFor,
  toAttemptRecord,
  toDeliveryRecord,
  toEventRecord,
  toLeasedDelivery,
} from './delivery-row.js';
import { toMillis } from './timestamps.js';
import { toWebhookRecord, WEBHOOK_COLUMNS, type WebhookRow } from './webhook-row.js';
import type { WebhookStatements } from './webhook-statements.js';

const { hold } = DELIVERY_RULES;

/** An endpoint's rate slot pointers as stored (migration 0013). */
interface RateSlotsRow {
  nextAt: number | null;
  queueAt: number | null;
}

/** Named parameters of a delivery listing; `status` null lists every status. */
interface ListDeliveriesParams {
  tenantId: string;
  webhookId: string;
  status: DeliveryStatus | null;
  eventType: string | null;
  eventId: string | null;
  /** Epoch ms. */
  createdFrom: number | null;
  createdBefore: number | null;
  limit: number;
}

/** What an attempt makes of its delivery: the columns completeAttempt writes besides the counters. */
interface AttemptOutcomeParams {
  id: string;
  status: DeliveryStatus;
  due_at: number | null;
  held_since: number | null;
  last_attempt_at: number;
  at: number;
}

/** Where a queued delivery waits (core's queuedOn), as its columns. */
interface PlaceParams {
  status: DeliveryStatus;
  due_at: number | null;
  held_since: number | null;
}

const placeParams = (place: QueuePlace): PlaceParams => ({
  status: place.status,
  due_at: toMillis(place.dueAt),
  held_since: toMillis(place.heldSince),
});

/** The delivery's new queue position after a requeue: pending and due, or held. */
interface RequeueParams extends PlaceParams {
  id: string;
  at: number;
}

/** One batch of bulk recovery: which failed deliveries, and where they go (requeue's columns). */
interface RecoverParams extends PlaceParams {
  tenant_id: string;
  webhook_id: string;
  since: number;
  until: number;
  limit: number;
  failed_before: number;
  at: number;
}

/** An auto-disable's named parameters: the status and reason core's rules give it, and the claim that status makes. */
interface DisableParams {
  id: string;
  status: WebhookStatus;
  reason: WebhookDisabledReason;
  claims_twin_key: number;
  at: number;
}

/** A success or a permanent failure recorded under its lease, bound by position. */
type FinishLeasedParams = [
  status: 'succeeded' | 'failed',
  lastAttemptAt: number,
  at: number,
  id: string,
  tenantId: string,
  leaseId: string,
];

/**
 * Every statement the store runs on keyhook_events, keyhook_deliveries and keyhook_attempts, and
 * on the webhook columns the delivery path keeps (status, consecutive_failures), prepared once
 * on the store's connection.
 */
export interface DeliveryStatements {
  holdDeliveries: Database.Statement<[DeliveryStatus, number, number, string]>;
  releaseDeliveries: Database.Statement<[number, number, string, DeliveryStatus]>;
  resetFailures: Database.Statement<[string]>;
  countFailure: Database.Statement<[string], { failures: number; status: WebhookStatus }>;
  disableForFailures: Database.Statement<[DisableParams], WebhookRow>;
  webhookStatus: Database.Statement<[string], WebhookStatus>;
  insertEvent: Database.Statement<unknown[]>;
  insertTestEvent: Database.Statement<unknown[]>;
  eventById: Database.Statement<[string, string], EventRow>;
  subscribers: Database.Statement<[string, string], Pick<WebhookRow, 'id' | 'status' | 'rate_per_second'>>;
  rateSlots: Database.Statement<[string], RateSlotsRow>;
  advanceRate: Database.Statement<[number | null, number | null, string]>;
  deferDelivery: Database.Statement<[number, number, string]>;
  dueOfEndpoint: Database.Statement<[number, string, number], string>;
  waitingAt: Database.Statement<[number, string], number>;
  subscriberRows: Database.Statement<[string, string], WebhookRow>;
  insertDelivery: Database.Statement<unknown[]>;
  dueDeliveries: Database.Statement<[number, WebhookStatus, number], DueRow>;
  dueDeliveriesSkipping: Database.Statement<[number, WebhookStatus, string, number], DueRow>;
  endLease: Database.Statement<[number, string, number, number]>;
  endLeaseOf: Database.Statement<[number, string, string, number]>;
  lease: Database.Statement<[string, number, number, string]>;
  leaseHolder: Database.Statement<
    [string, string, string],
    { webhook_id: string; webhook_status: WebhookStatus }
  >;
  insertAttempt: Database.Statement<unknown[]>;
  finishLeased: Database.Statement<FinishLeasedParams, DeliveryRow>;
  recordAttempt: Database.Statement<[AttemptOutcomeParams], DeliveryRow>;
  expireHeld: Database.Statement<[number, number]>;
  countQueued: Database.Statement<
    [{ now: number }],
    { due: number; scheduled: number; in_flight: number; held: number }
  >;
  listDeliveriesFirst: Database.Statement<[ListDeliveriesParams], DeliveryRow>;
  listDeliveriesBefore: Database.Statement<[ListDeliveriesParams & { before: string }], DeliveryRow>;
  deliveryById: Database.Statement<[string, string, string], DeliveryRow>;
  attemptsOf: Database.Statement<[string], AttemptRow>;
  requeue: Database.Statement<[RequeueParams], DeliveryRow>;
  recoverFailed: Database.Statement<[RecoverParams]>;
  finishedBefore: Database.Statement<[number, number], string>;
  deleteAttemptsIn: Database.Statement<[string]>;
  deleteDeliveriesIn: Database.Statement<[string]>;
  eventsWithoutDeliveries: Database.Statement<[number, number], { tenant_id: string; id: string }>;
  deleteEvent: Database.Statement<[string, string]>;
}

export function deliveryStatements(db: Database.Database): DeliveryStatements {
  return {
    // A disabled endpoint's queue waits: nothing pending or scheduled stays leasable. The held
    // state is core's (DELIVERY_RULES.hold), bound, as everywhere the store writes or releases it.
    holdDeliveries: db.prepare<[DeliveryStatus, number, number, string]>(
      `UPDATE keyhook_deliveries SET status = ?, due_at = NULL, held_since = ?, updated_at = ?
        WHERE webhook_id = ? AND status IN ('pending', 'retry_scheduled')`,
    ),
    releaseDeliveries: db.prepare<[number, number, string, DeliveryStatus]>(
      `UPDATE keyhook_deliveries SET status = 'pending', due_at = ?, held_since = NULL, updated_at = ?
        WHERE webhook_id = ? AND status = ?`,
    ),
    // Most successes follow successes: a count already at 0 is left unwritten.
    resetFailures: db.prepare<[string]>(
      'UPDATE keyhook_webhooks SET consecutive_failures = 0 WHERE id = ? AND consecutive_failures <> 0',
    ),
    countFailure: db.prepare<[string], { failures: number; status: WebhookStatus }>(
      `UPDATE keyhook_webhooks SET consecutive_failures = consecutive_failures + 1
        WHERE id = ? RETURNING consecutive_failures AS failures, status`,
    ),
    // The status, the reason and the twin claim are core's (DELIVERY_RULES, the completion's rule,
    // claimsTwinKey); whether to disable was decided by core's autoDisables on countFailure's row.
    disableForFailures: db.prepare<[DisableParams], WebhookRow>(
      `UPDATE keyhook_webhooks SET status = @status, disabled_reason = @reason,
          twin_claim = CASE WHEN @claims_twin_key THEN twin_key END, updated_at = @at,
          disabled_at = CASE WHEN @reason IS NULL THEN NULL ELSE @at END
        WHERE id = @id AND status <> @status RETURNING ${WEBHOOK_COLUMNS}`,
    ),
    webhookStatus: db
      .prepare<[string], WebhookStatus>('SELECT status FROM keyhook_webhooks WHERE id = ?')
      .pluck(),
    // DO NOTHING: an event id the tenant already has writes nothing, and changes says so. The
    // event takes the next place in the events feed under the write lock it commits under
    // (migration 0014, docs/decisions.md §8.17), read from the last entry of keyhook_events_feed_seq.
    insertEvent: db.prepare<unknown[]>(
      `INSERT INTO keyhook_events (${EVENT_COLUMNS}, feed_seq)
        VALUES (${placeholdersFor(EVENT_COLUMNS)}, (SELECT coalesce(max(feed_seq), 0) + 1 FROM keyhook_events))
        ON CONFLICT (tenant_id, id) DO NOTHING`,
    ),
    // A test event takes no place in the feed (docs/decisions.md §8.17).
    insertTestEvent: db.prepare<unknown[]>(
      `INSERT INTO keyhook_events (${EVENT_COLUMNS}) VALUES (${placeholdersFor(EVENT_COLUMNS)})
        ON CONFLICT (tenant_id, id) DO NOTHING`,
    ),
    eventById: db.prepare<[string, string], EventRow>(
      `SELECT ${EVENT_COLUMNS} FROM keyhook_events WHERE tenant_id = ? AND id = ?`,
    ),
    // The tenant's webhooks whose event set (a JSON array) holds the type, active or not; whole
    // rows only when the publish leases a delivery (the attempt needs its URL and secret).
    subscribers: db.prepare<[string, string], Pick<WebhookRow, 'id' | 'status' | 'rate_per_second'>>(
      `SELECT id, status, rate_per_second FROM keyhook_webhooks
        WHERE tenant_id = ? AND EXISTS (SELECT 1 FROM json_each(keyhook_webhooks.events) WHERE value = ?)
        ORDER BY id`,
    ),
    subscriberRows: db.prepare<[string, string], WebhookRow>(
      `SELECT ${WEBHOOK_COLUMNS} FROM keyhook_webhooks
        WHERE tenant_id = ? AND EXISTS (SELECT 1 FROM json_each(keyhook_webhooks.events) WHERE value = ?)
        ORDER BY id`,
    ),
    insertDelivery: db.prepare<unknown[]>(
      `INSERT INTO keyhook_deliveries (${DELIVERY_COLUMNS}) VALUES (${placeholdersFor(DELIVERY_COLUMNS)})`,
    ),
    // The plan is pinned, whatever statistics ANALYZE gathers later: INDEXED BY and CROSS JOIN keep
    // the deliveries outermost, walked in order through keyhook_deliveries_due up to the limit, never
    // a scan from the active webhooks and a sort. `due_at <= ?` implies the partial index's
    // `due_at IS NOT NULL`, which is what lets SQLite use it (INDEXED BY would fail at prepare
    // otherwise); a due time means pending, retry_scheduled or in_flight (the table's checks). The
    // endpoint's status that holds its deliveries is core's (DELIVERY_RULES.hold), bound.
    dueDeliveries: db.prepare<[number, WebhookStatus, number], DueRow>(dueDeliveriesSql(false)),
    // The same, leaving the endpoints the worker's cap skips (a JSON array of webhook ids): a
    // statement of its own, so the usual claim does not pay for an empty list.
    dueDeliveriesSkipping: db.prepare<[number, WebhookStatus, string, number], DueRow>(
      dueDeliveriesSql(true),
    ),
    // A lease given up ends now, as if it had run out: the deliveries it still holds are due at once.
    // Only live leases are touched, through the due index (a live lease ends within leaseMs).
    endLease: db.prepare<[number, string, number, number]>(
      `UPDATE keyhook_deliveries INDEXED BY keyhook_deliveries_due SET due_at = ?
        WHERE lease_id = ? AND status = 'in_flight' AND due_at > ? AND due_at <= ?`,
    ),
    endLeaseOf: db.prepare<[number, string, string, number]>(
      `UPDATE keyhook_deliveries SET due_at = ?
        WHERE id = ? AND lease_id = ? AND status = 'in_flight' AND due_at > ?`,
    ),
    // docs/decisions.md §8.18: a limited endpoint's slot pointers, read and written under the
    // lease's write lock, so every connection's claims share one pace.
    rateSlots: db.prepare<[string], RateSlotsRow>(
      'SELECT rate_next_at AS nextAt, rate_queue_at AS queueAt FROM keyhook_webhooks WHERE id = ?',
    ),
    advanceRate: db.prepare<[number | null, number | null, string]>(
      'UPDATE keyhook_webhooks SET rate_next_at = ?, rate_queue_at = ? WHERE id = ?',
    ),
    // An endpoint's due deliveries, in the claim's order, by the due index (a due time means a
    // queued or in-flight delivery, as in dueDeliveries): those the claim gives slots beyond its limit.
    dueOfEndpoint: db
      .prepare<[number, string, number], string>(
        `SELECT d.id FROM keyhook_deliveries AS d INDEXED BY keyhook_deliveries_due
          WHERE d.due_at <= ? AND d.webhook_id = ? ORDER BY d.due_at, d.id LIMIT ?`,
      )
      .pluck(),
    // Whether a delivery of the endpoint already waits for the slot due then (paceEndpoint's
    // slotTaken), by the due index: queued rows with that due time, one webhook's among them.
    waitingAt: db
      .prepare<[number, string], number>(
        `SELECT 1 FROM keyhook_deliveries AS d INDEXED BY keyhook_deliveries_due
          WHERE d.due_at = ? AND d.webhook_id = ? AND (d.status = 'pending' OR d.status = 'retry_scheduled')
          LIMIT 1`,
      )
      .pluck(),
    // Not leased: due again at its slot, status and attempts as they were.
    deferDelivery: db.prepare<[number, number, string]>(
      'UPDATE keyhook_deliveries SET due_at = ?, updated_at = ? WHERE id = ?',
    ),
    // Read under the same write lock: the leased record is the due row with these columns set.
    lease: db.prepare<[string, number, number, string]>(
      `UPDATE keyhook_deliveries SET status = 'in_flight', lease_id = ?, due_at = ?, updated_at = ?
        WHERE id = ?`,
    ),
    // Only the lease that holds the delivery may record; a delivery gone with its webhook matches nothing.
    leaseHolder: db.prepare<[string, string, string], { webhook_id: string; webhook_status: WebhookStatus }>(
      `SELECT d.webhook_id, w.status AS webhook_status
        FROM keyhook_deliveries AS d JOIN keyhook_webhooks AS w ON w.id = d.webhook_id
        WHERE d.id = ? AND d.tenant_id = ? AND d.status = 'in_flight' AND d.lease_id = ?`,
    ),
    insertAttempt: db.prepare<unknown[]>(
      `INSERT INTO keyhook_attempts (${ATTEMPT_COLUMNS}) VALUES (${placeholdersFor(ATTEMPT_COLUMNS)})`,
    ),
    // A success or a permanent failure: the delivery's end, written only while the lease holds it.
    // Bound by position, as the inserts above: this runs once per delivery.
    finishLeased: db.prepare<FinishLeasedParams, DeliveryRow>(
      `UPDATE keyhook_deliveries SET status = ?, due_at = NULL, lease_id = NULL,
          attempts = attempts + 1, last_attempt_at = ?, updated_at = ?
        WHERE id = ? AND tenant_id = ? AND status = 'in_flight' AND lease_id = ?
        RETURNING ${DELIVERY_COLUMNS}`,
    ),
    recordAttempt: db.prepare<[AttemptOutcomeParams], DeliveryRow>(
      `UPDATE keyhook_deliveries SET status = @status, due_at = @due_at, lease_id = NULL,
          held_since = @held_since, attempts = attempts + 1, last_attempt_at = @last_attempt_at,
          updated_at = @at
        WHERE id = @id RETURNING ${DELIVERY_COLUMNS}`,
    ),
    // Schema, not rule: `status = 'held'` is the partial index keyhook_deliveries_held's predicate
    // (0003) word for word, which SQLite needs to use it; a bound state could not be (docs/decisions.md §10.4).
    expireHeld: db.prepare<[number, number]>(
      `UPDATE keyhook_deliveries SET status = 'failed', held_since = NULL, updated_at = ?
        WHERE status = 'held' AND held_since <= ?`,
    ),
    // The queue-depth gauge, on each collection: both counts read their partial index alone (the
    // due index carries the status, migration 0009), never a finished row; the held count names
    // keyhook_deliveries_held's predicate, as expireHeld does.
    countQueued: db.prepare<
      [{ now: number }],
      { due: number; scheduled: number; in_flight: number; held: number }
    >(
      `SELECT
          count(*) FILTER (WHERE status <> 'in_flight' AND due_at <= @now) AS due,
          count(*) FILTER (WHERE status <> 'in_flight' AND due_at > @now) AS scheduled,
          count(*) FILTER (WHERE status = 'in_flight') AS in_flight,
          (SELECT count(*) FROM keyhook_deliveries INDEXED BY keyhook_deliveries_held
            WHERE status = 'held') AS held
        FROM keyhook_deliveries INDEXED BY keyhook_deliveries_due WHERE due_at IS NOT NULL`,
    ),
    // Filtering row by row (state, event type and id, creation time) keeps the walk on (webhook_id, id),
    // in the listing's order.
    listDeliveriesFirst: db.prepare<[ListDeliveriesParams], DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM keyhook_deliveries
        WHERE webhook_id = @webhookId AND tenant_id = @tenantId AND (@status IS NULL OR status = @status)
          AND (@eventType IS NULL OR event_type = @eventType) AND (@eventId IS NULL OR event_id = @eventId)
          AND (@createdFrom IS NULL OR created_at >= @createdFrom)
          AND (@createdBefore IS NULL OR created_at < @createdBefore)
        ORDER BY id DESC LIMIT @limit`,
    ),
    listDeliveriesBefore: db.prepare<[ListDeliveriesParams & { before: string }], DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM keyhook_deliveries
        WHERE webhook_id = @webhookId AND tenant_id = @tenantId AND (@status IS NULL OR status = @status)
          AND (@eventType IS NULL OR event_type = @eventType) AND (@eventId IS NULL OR event_id = @eventId)
          AND (@createdFrom IS NULL OR created_at >= @createdFrom)
          AND (@createdBefore IS NULL OR created_at < @createdBefore)
          AND id < @before
        ORDER BY id DESC LIMIT @limit`,
    ),
    deliveryById: db.prepare<[string, string, string], DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM keyhook_deliveries WHERE tenant_id = ? AND webhook_id = ? AND id = ?`,
    ),
    attemptsOf: db.prepare<[string], AttemptRow>(
      `SELECT ${ATTEMPT_COLUMNS} FROM keyhook_attempts WHERE delivery_id = ? ORDER BY attempt`,
    ),
    requeue: db.prepare<[RequeueParams], DeliveryRow>(
      `UPDATE keyhook_deliveries SET status = @status, due_at = @due_at, held_since = @held_since,
          lease_id = NULL, updated_at = @at
        WHERE id = @id RETURNING ${DELIVERY_COLUMNS}`,
    ),
    // Bulk recovery, one batch: the oldest `limit` failed deliveries of the webhook created in
    // [since, until), as requeue writes one. Pinned to keyhook_deliveries_failed (0008), walked in
    // (created_at, id) order up to the limit; `status = 'failed'` is that partial index's
    // condition word for word, which is what lets SQLite use it. The table is WITHOUT ROWID, so
    // the batch is chosen by id in a subquery (UPDATE … LIMIT is a compile-time option).
    recoverFailed: db.prepare<[RecoverParams]>(
      `UPDATE keyhook_deliveries SET status = @status, due_at = @due_at, held_since = @held_since,
          lease_id = NULL, updated_at = @at
        WHERE id IN (
          SELECT id FROM keyhook_deliveries INDEXED BY keyhook_deliveries_failed
          WHERE webhook_id = @webhook_id AND status = 'failed' AND tenant_id = @tenant_id
            AND created_at >= @since AND created_at < @until AND updated_at < @failed_before
          ORDER BY created_at, id LIMIT @limit)`,
    ),
    // Retention. Finished is spelled as the index keyhook_deliveries_finished (0005) spells it:
    // no due time and not held, which the table's checks tie to succeeded and failed.
    finishedBefore: db
      .prepare<[number, number], string>(
        `SELECT id FROM keyhook_deliveries WHERE due_at IS NULL AND held_since IS NULL AND updated_at <= ?
        ORDER BY updated_at LIMIT ?`,
      )
      .pluck(),
    deleteAttemptsIn: db.prepare<[string]>(
      'DELETE FROM keyhook_attempts WHERE delivery_id IN (SELECT value FROM json_each(?))',
    ),
    deleteDeliveriesIn: db.prepare<[string]>(
      'DELETE FROM keyhook_deliveries WHERE id IN (SELECT value FROM json_each(?))',
    ),
    // Events old enough that no delivery refers to any more (keyhook_deliveries_event, 0005).
    eventsWithoutDeliveries: db.prepare<[number, number], { tenant_id: string; id: string }>(
      `SELECT tenant_id, id FROM keyhook_events AS e WHERE created_at <= ? AND NOT EXISTS
          (SELECT 1 FROM keyhook_deliveries AS d WHERE d.tenant_id = e.tenant_id AND d.event_id = e.id)
        ORDER BY created_at LIMIT ?`,
    ),
    deleteEvent: db.prepare<[string, string]>('DELETE FROM keyhook_events WHERE tenant_id = ? AND id = ?'),
  };
}

/**
 * The delivery methods that are more than one statement: the delivery path's writes, run in
 * group commits, and the rest as transactions (see SqliteStore's transactions).
 */
export interface DeliveryTransactions {
  /** The delivery path's writes, as plain functions: the store runs them in group commits. */
  delivery: {
    publishEvent: (
      event: EventRecord,
      newDeliveryId: () => string,
      lease: PublishLease | undefined,
    ) => PublishOutcome;
    leaseDeliveries: (request: LeaseRequest) => LeasedDelivery[];
    completeAttempt: (completion: AttemptCompletion) => AttemptCompletionOutcome;
  };
  /** publishEvent in a savepoint of the caller's transaction (publishSync). */
  publishEvent: Database.Transaction<DeliveryTransactions['delivery']['publishEvent']>;
  requeueDelivery: Database.Transaction<
    (
      tenantId: string,
      webhookId: string,
      deliveryId: string,
      from: readonly DeliveryStatus[],
      at: number,
    ) => RequeueOutcome
  >;
  recoverFailed: Database.Transaction<
    (
      tenantId: string,
      webhookId: string,
      since: number,
      until: number,
      at: number,
      limit: number,
      failedBefore: number,
    ) => number
  >;
  purgeFinished: Database.Transaction<(finishedBefore: number, limit: number) => PurgeOutcome>;
  publishTestEvent: Database.Transaction<
    (event: EventRecord, webhookId: string, deliveryId: string) => TestEventOutcome
  >;
  getDelivery: Database.Transaction<
    (tenantId: string, webhookId: string, deliveryId: string) => DeliveryDetail | null
  >;
}

export function deliveryTransactions(
  db: Database.Database,
  statements: DeliveryStatements,
  webhookSql: WebhookStatements,
): DeliveryTransactions {
  /**
   * The endpoint's consecutive-failure count after an attempt (reset, +1 or unchanged); a +1 that
   * core's autoDisables says disables the endpoint disables it and holds its queue.
   */
  const countEndpointFailures = (
    webhookId: string,
    completion: AttemptCompletion,
    at: number,
  ): { disabledWebhook: WebhookRecord | null } => {
    if (completion.endpointFailures === 'reset') statements.resetFailures.run(webhookId);
    if (completion.endpointFailures !== 'increment') return { disabledWebhook: null };
    const counted = statements.countFailure.get(webhookId)!;
    if (!autoDisables(counted.failures, counted.status, completion.autoDisable)) {
      return { disabledWebhook: null };
    }
    const disabled = statements.disableForFailures.get({
      id: webhookId,
      status: hold.endpointStatus,
      reason: completion.autoDisable.reason,
      claims_twin_key: claimsTwinKey(hold.endpointStatus) ? 1 : 0,
      at,
    })!;
    const disabledWebhook = toWebhookRecord(disabled);
    statements.holdDeliveries.run(hold.state, at, at, webhookId);
    return { disabledWebhook };
  };

  // The delivery path's writes, as plain functions: the store runs them in group commits
  // (group-commit.ts), which make each one atomic, and publishSync wraps publishEvent in a
  // savepoint of the caller's transaction.

  // The subscriber set is read under the write lock that setWebhookStatus also takes, so no
  // delivery is written pending for an endpoint that another connection just disabled.
  const publishEvent = (
    event: EventRecord,
    newDeliveryId: () => string,
    lease: PublishLease | undefined,
  ): PublishOutcome => {
    if (statements.insertEvent.run(eventValues(event)).changes === 0) {
      const stored = statements.eventById.get(event.tenantId, event.id)!;
      return { outcome: 'duplicate', event: toEventRecord(stored) };
    }
    const subscribers: readonly Pick<WebhookRow, 'id' | 'status' | 'rate_per_second'>[] = (
      lease ? statements.subscriberRows : statements.subscribers
    ).all(event.tenantId, event.type);
    const candidates = subscribers.map((webhook) => ({
      webhook,
      status: webhook.status,
      rateLimit: webhook.rate_per_second === null ? null : { perSecond: webhook.rate_per_second },
    }));
    const toLease = new Set([...leasedSubscribers(candidates, lease)].map(({ webhook }) => webhook));
    const leased: LeasedDelivery[] = [];
    const deliveries = subscribers.map((webhook) => {
      const forLease = toLease.has(webhook) ? lease : undefined;
      const delivery = newDeliveryRecord(event, webhook, newDeliveryId(), forLease);
      statements.insertDelivery.run(deliveryValues(delivery));
      if (forLease) leased.push({ delivery, event, webhook: toWebhookRecord(webhook as WebhookRow) });
      return delivery;
    });
    return { outcome: 'published', event, deliveries, leased };
  };
  // The read and the claim share the write lock: another connection's lease waits for this one
  // to commit, and then finds these deliveries in flight with a live lease.
  const leaseDeliveries = (request: LeaseRequest): LeasedDelivery[] => {
    const now = request.now.getTime();
    const leaseEnd = now + request.leaseMs;
    // One record per webhook: under this transaction's lock its row is the same for every delivery.
    const webhooks = new Map<string, WebhookRecord>();
    const rule = request.rate ?? ENDPOINT_RATE_RULE;
    for (const ended of request.endLeases ?? []) {
      if (ended.deliveryId === undefined) statements.endLease.run(now, ended.leaseId, now, leaseEnd);
      else statements.endLeaseOf.run(now, ended.deliveryId, ended.leaseId, now);
    }
    const skip = request.skipEndpoints ?? [];
    const due =
      skip.length === 0
        ? statements.dueDeliveries.all(now, hold.endpointStatus, request.limit)
        : statements.dueDeliveriesSkipping.all(now, hold.endpointStatus, JSON.stringify(skip), request.limit);
    // docs/decisions.md §8.18: each limited endpoint's due deliveries, in due order, paced at once,
    // its slots read and written under this claim's write lock.
    const limited = new Map<string, DueRow[]>();
    for (const row of due) {
      if (row.webhook_rate_per_second !== null)
        limited.set(row.webhook_id, [...(limited.get(row.webhook_id) ?? []), row]);
    }
    const met = new Set(due.map((row) => row.id));
    const refused = new Set<string>();
    const nextSlots: number[] = [];
    for (const [webhookId, rows] of limited) {
      const slots: RateSlots = { ...statements.rateSlots.get(webhookId)! };
      const limit = { perSecond: rows[0]!.webhook_rate_per_second! };
      // Up to `spread` more of its due deliveries, beyond the limit, are given their slots too.
      const ids = rows.map((row) => row.id);
      for (const id of statements.dueOfEndpoint.all(now, webhookId, met.size + rule.spread)) {
        if (ids.length - rows.length >= rule.spread) break;
        if (!met.has(id)) ids.push(id);
      }
      const waitingAt = (dueAt: number) => statements.waitingAt.get(dueAt, webhookId) !== undefined;
      paceEndpoint(slots, limit, now, rule, ids.length, waitingAt).forEach((decision, i) => {
        if (decision.lease) return;
        refused.add(ids[i]!);
        statements.deferDelivery.run(decision.dueAt, now, ids[i]!);
      });
      statements.advanceRate.run(slots.nextAt, slots.queueAt, webhookId);
      nextSlots.push(slots.nextAt ?? now);
    }
    if (limited.size > 0) request.onRateWait?.(rateWaitOf(refused.size, nextSlots));
    return due
      .filter((row) => !refused.has(row.id))
      .map((row) => {
        statements.lease.run(request.leaseId, leaseEnd, now, row.id);
        return toLeasedDelivery(row, request.leaseId, leaseEnd, now, webhooks);
      });
  };
  const completeAttempt = (completion: AttemptCompletion): AttemptCompletionOutcome => {
    const { tenantId, deliveryId, leaseId } = completion;
    const at = completion.at.getTime();
    const lastAttemptAt = completion.attempt.startedAt.getTime();
    if (completion.status !== 'retry_scheduled') {
      // Whatever the endpoint's status, a success or a permanent failure ends the delivery: the
      // lease check and the write are one statement, and the hold a disable makes (pending and
      // retry_scheduled only) cannot reach a delivery that has ended.
      const row = statements.finishLeased.get(
        completion.status,
        lastAttemptAt,
        at,
        deliveryId,
        tenantId,
        leaseId,
      );
      if (!row) return { outcome: 'lease_lost' };
      statements.insertAttempt.run(attemptValues(completion.attempt, deliveryId));
      const { disabledWebhook } = countEndpointFailures(row.webhook_id, completion, at);
      return { outcome: 'recorded', delivery: toDeliveryRecord(row), disabledWebhook };
    }
    const holder = statements.leaseHolder.get(deliveryId, tenantId, leaseId);
    if (!holder) return { outcome: 'lease_lost' };
    statements.insertAttempt.run(attemptValues(completion.attempt, deliveryId));
    // The endpoint's count first: when it disables the endpoint, the hold (pending and
    // retry_scheduled only) skips this delivery, still in flight, and the retry written after it
    // is held instead. The memory store reaches the same rows the other way round.
    const counted = countEndpointFailures(holder.webhook_id, completion, at);
    // A retry of an endpoint that is disabled by now waits with the rest of its queue.
    const endpointStatus = counted.disabledWebhook?.status ?? holder.webhook_status;
    const place = queuedOn(endpointStatus, 'retry_scheduled', completion.dueAt, completion.at);
    const row = statements.recordAttempt.get({
      id: deliveryId,
      ...placeParams(place),
      last_attempt_at: lastAttemptAt,
      at,
    })!;
    return {
      outcome: 'recorded',
      delivery: toDeliveryRecord(row),
      disabledWebhook: counted.disabledWebhook,
    };
  };
  const delivery = { publishEvent, leaseDeliveries, completeAttempt };

  return {
    delivery,
    // The delivery path's operations, each in a savepoint of the caller's transaction (publishSync).
    publishEvent: db.transaction(delivery.publishEvent),
    requeueDelivery: db.transaction(
      (
        tenantId: string,
        webhookId: string,
        deliveryId: string,
        from: readonly DeliveryStatus[],
        at: number,
      ): RequeueOutcome => {
        const current = statements.deliveryById.get(tenantId, webhookId, deliveryId);
        if (!current) return { outcome: 'not_found' };
        if (!from.includes(current.status)) {
          return { outcome: 'wrong_state', delivery: toDeliveryRecord(current) };
        }
        // Read under the lock setWebhookStatus takes: a disable cannot slip in before the write.
        const endpointStatus = statements.webhookStatus.get(webhookId)!;
        const when = new Date(at);
        const row = statements.requeue.get({
          id: deliveryId,
          ...placeParams(queuedOn(endpointStatus, 'pending', when, when)),
          at,
        })!;
        return { outcome: 'queued', delivery: toDeliveryRecord(row) };
      },
    ),
    // One batch of bulk recovery. The webhook is read under the lock setWebhookStatus takes, so
    // a disable cannot slip in between the read and the write (as in requeueDelivery), and it is
    // read with the tenant: another tenant's webhook id queues nothing.
    recoverFailed: db.transaction(
      (
        tenantId: string,
        webhookId: string,
        since: number,
        until: number,
        at: number,
        limit: number,
        failedBefore: number,
      ): number => {
        const webhook = webhookSql.webhookById.get(tenantId, webhookId);
        if (!webhook) return 0;
        const when = new Date(at);
        return statements.recoverFailed.run({
          tenant_id: tenantId,
          webhook_id: webhookId,
          since,
          until,
          limit,
          failed_before: failedBefore,
          ...placeParams(queuedOn(webhook.status, 'pending', when, when)),
          at,
        }).changes;
      },
    ),
    // One batch of retention. Attempts are deleted by hand, as in deleteWebhook: the foreign
    // key cascades only where foreign_keys is on.
    purgeFinished: db.transaction((finishedBefore: number, limit: number): PurgeOutcome => {
      const ids = statements.finishedBefore.all(finishedBefore, limit);
      if (ids.length > 0) {
        const list = JSON.stringify(ids);
        statements.deleteAttemptsIn.run(list);
        statements.deleteDeliveriesIn.run(list);
      }
      const events = statements.eventsWithoutDeliveries.all(finishedBefore, limit);
      for (const event of events) statements.deleteEvent.run(event.tenant_id, event.id);
      return { deliveries: ids.length, events: events.length, skipped: false };
    }),
    // A test event to one webhook (docs/decisions.md §8.16), run under the write lock publishEvent's
    // group takes (BEGIN IMMEDIATE), which setWebhookStatus takes too: the status read here is the
    // one the delivery is written for. Read with the tenant: another tenant's id writes nothing.
    publishTestEvent: db.transaction(
      (event: EventRecord, webhookId: string, deliveryId: string): TestEventOutcome => {
        const webhook = webhookSql.webhookById.get(event.tenantId, webhookId);
        if (!webhook) return { outcome: 'not_found' };
        // The id is freshly minted by core: a conflict is a fault, not a replay to answer.
        if (statements.insertTestEvent.run(eventValues(event)).changes === 0) {
          throw new Error(`keyhook: test event ${event.id} already exists`);
        }
        const delivery = newDeliveryRecord(event, webhook, deliveryId);
        statements.insertDelivery.run(deliveryValues(delivery));
        return { outcome: 'published', event, delivery };
      },
    ),
    // Reads only: run as a plain (deferred) transaction, one WAL snapshot for the three reads,
    // without the write lock, so a writer elsewhere never makes the detail unavailable.
    getDelivery: db.transaction((tenantId: string, webhookId: string, deliveryId: string) => {
      const delivery = statements.deliveryById.get(tenantId, webhookId, deliveryId);
      if (!delivery) return null;
      const event = statements.eventById.get(delivery.tenant_id, delivery.event_id)!;
      return {
        delivery: toDeliveryRecord(delivery),
        event: toEventRecord(event),
        attempts: statements.attemptsOf.all(deliveryId).map(toAttemptRecord),
      } satisfies DeliveryDetail;
    }),
  };
}

/**
 * The claim's read (DeliveryStatements.dueDeliveries): `skipping` leaves the endpoints of a JSON
 * array bound before the limit.
 */
function dueDeliveriesSql(skipping: boolean): string {
  return `SELECT d.id, d.attempts, d.last_attempt_at, d.created_at,
          e.tenant_id AS event_tenant_id, e.id AS event_id, e.type AS event_type,
          e.payload AS event_payload, e.created_at AS event_created_at,
          e.trace_context AS event_trace_context,
          w.id AS webhook_id, w.tenant_id AS webhook_tenant_id, w.url AS webhook_url,
          w.events AS webhook_events, w.twin_key AS webhook_twin_key, w.status AS webhook_status,
          w.disabled_reason AS webhook_disabled_reason, w.secret_sealed AS webhook_secret_sealed,
          w.previous_secret_sealed AS webhook_previous_secret_sealed,
          w.previous_secret_expires_at AS webhook_previous_secret_expires_at,
          w.signature_scheme AS webhook_signature_scheme, w.rate_per_second AS webhook_rate_per_second,
          w.public_key AS webhook_public_key, w.disabled_at AS webhook_disabled_at, w.description AS webhook_description, w.created_at AS webhook_created_at, w.updated_at AS webhook_updated_at
        FROM keyhook_deliveries AS d INDEXED BY keyhook_deliveries_due
          CROSS JOIN keyhook_webhooks AS w ON w.id = d.webhook_id
          CROSS JOIN keyhook_events AS e ON e.tenant_id = d.tenant_id AND e.id = d.event_id
        WHERE d.due_at <= ? AND w.status <> ?${skipping ? '\n          AND d.webhook_id NOT IN (SELECT value FROM json_each(?))' : ''}
        ORDER BY d.due_at, d.id
        LIMIT ?`;
}
