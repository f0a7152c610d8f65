import type {
  ApiKeyChanges,
  ApiKeyRecord,
  AttemptCompletion,
  AttemptCompletionOutcome,
  DeliveryDetail,
  DeliveryListPage,
  DeliveryRecord,
  DeliveryState,
  EventRecord,
  IdempotencyClaimOutcome,
  IdempotencyCompletion,
  IdempotencyRecord,
  LeasedDelivery,
  LeaseRequest,
  ListPage,
  PublishLease,
  PublishOutcome,
  PurgeOutcome,
  QueueDepth,
  RequeueOutcome,
  RotateOutcome,
  Store,
  WebhookDisabledReason,
  WebhookRecord,
  WebhookStatus,
  WebhookStatusOutcome,
  WebhookSubscription,
  WebhookSubscriptionOutcome,
} from '@keyhook/core/store';
import { consoleLogger, type Logger, leasedSubscribers, newDeliveryRecord } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { GroupCommit } from './group-commit.js';
import { applyMigrations, loadMigrations } from './migrate.js';
import { openDatabase, openFailure } from './open.js';
import {
  type ApiKeyRow,
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
  type IdempotencyRow,
  placeholdersFor,
  toAttemptRecord,
  toDeliveryRecord,
  toEventRecord,
  toIdempotencyRecord,
  toIdempotencyRow,
  toLeasedDelivery,
  toRecord,
  toRow,
  toWebhookRecord,
  toWebhookRow,
  type WebhookRow,
} from './row.js';
import { type MigrationsMode, migrationsMode, refuseIfPending } from './run-migrations.js';
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
  /**
   * `'apply'` (default): pending migrations run as the store opens. `'refuse'`: opening fails,
   * writing nothing, while any is pending; apply them ahead with `migrate()` or
   * `npx keyhook migrate` (a long rebuild then holds the write lock in a release step, not at start).
   */
  migrations?: MigrationsMode;
  /** Where each migration's start and end (with its duration) are logged, at `info`. Default: console. */
  logger?: Logger;
};

export const DEFAULT_CHANGE_CHECK_INTERVAL_MS = 1;

const COLUMNS =
  'id, tenant_id, key_lookup, name, scopes, key_hash, status, expires_at, created_at, last_used_at, revoked_at, rate_limit, rate_limit_window';

// The only uniqueness constraints on keyhook_api_keys are key_lookup and id.
const UNIQUE_VIOLATIONS = new Set(['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY']);

const WEBHOOK_COLUMNS =
  'id, tenant_id, url, events, twin_key, status, disabled_reason, secret_sealed, previous_secret_sealed, previous_secret_expires_at, created_at, updated_at';

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

/** Named parameters of a key update; `set_*` is 1 for each field the call changes. */
interface KeyUpdateParams {
  tenant_id: string;
  id: string;
  set_name: number;
  name: string | null;
  set_limit: number;
  rate_limit: number | null;
  rate_limit_window: number | null;
}

/** Named parameters of a delivery listing; `status` null lists every status. */
interface ListDeliveriesParams {
  tenantId: string;
  webhookId: string;
  status: DeliveryState | null;
  limit: number;
}

/** What an attempt makes of its delivery: the columns completeAttempt writes besides the counters. */
interface AttemptOutcomeParams {
  id: string;
  status: DeliveryState;
  due_at: number | null;
  held_since: number | null;
  last_attempt_at: number;
  at: number;
}

/** The delivery's new queue position after a requeue: pending and due, or held. */
interface RequeueParams {
  id: string;
  status: 'pending' | 'held';
  due_at: number | null;
  held_since: number | null;
  at: number;
}

/** One batch of bulk recovery: which failed deliveries, and where they go (requeue's columns). */
interface RecoverParams {
  tenant_id: string;
  webhook_id: string;
  since: number;
  until: number;
  limit: number;
  failed_before: number;
  status: 'pending' | 'held';
  due_at: number | null;
  held_since: number | null;
  at: number;
}

function prepareStatements(db: Database.Database) {
  return {
    insert: db.prepare<[ApiKeyRow]>(
      `INSERT INTO keyhook_api_keys (${COLUMNS}) VALUES (@id, @tenant_id, @key_lookup, @name, @scopes,
        @key_hash, @status, @expires_at, @created_at, @last_used_at, @revoked_at, @rate_limit, @rate_limit_window)`,
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
    // `set_name`/`set_limit` say which fields the call changes: a field left out keeps its value.
    update: db.prepare<[KeyUpdateParams], ApiKeyRow>(
      `UPDATE keyhook_api_keys
        SET name = CASE WHEN @set_name THEN @name ELSE name END,
            rate_limit = CASE WHEN @set_limit THEN @rate_limit ELSE rate_limit END,
            rate_limit_window = CASE WHEN @set_limit THEN @rate_limit_window ELSE rate_limit_window END
        WHERE tenant_id = @tenant_id AND id = @id RETURNING ${COLUMNS}`,
    ),
    touch: db.prepare<[number, string, number]>(
      `UPDATE keyhook_api_keys SET last_used_at = ?
        WHERE id = ? AND (last_used_at IS NULL OR last_used_at <= ?)`,
    ),
    insertWebhook: db.prepare<[WebhookRow]>(
      `INSERT INTO keyhook_webhooks (${WEBHOOK_COLUMNS}) VALUES (@id, @tenant_id, @url, @events, @twin_key,
        @status, @disabled_reason, @secret_sealed, @previous_secret_sealed, @previous_secret_expires_at,
        @created_at, @updated_at)`,
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
    updateWebhookSubscription: db.prepare<
      [string, string, string, number, string, string, string],
      WebhookRow
    >(
      `UPDATE keyhook_webhooks SET url = ?, events = ?, twin_key = ?, updated_at = ?
        WHERE tenant_id = ? AND id = ? AND twin_key = ? RETURNING ${WEBHOOK_COLUMNS}`,
    ),
    // One statement: the right-hand sides read the row as it was, so with an expiry the previous
    // secret is the sealed value this replaces, exactly as stored; without one, both are cleared.
    rotateWebhookSecret: db.prepare<
      {
        secret_sealed: string;
        previous_expires_at: number | null;
        updated_at: number;
        tenant_id: string;
        id: string;
      },
      WebhookRow
    >(
      `UPDATE keyhook_webhooks SET secret_sealed = @secret_sealed,
          previous_secret_sealed = CASE WHEN @previous_expires_at IS NULL THEN NULL ELSE secret_sealed END,
          previous_secret_expires_at = @previous_expires_at, updated_at = @updated_at
        WHERE tenant_id = @tenant_id AND id = @id RETURNING ${WEBHOOK_COLUMNS}`,
    ),
    deleteWebhook: db.prepare<[string, string]>(
      'DELETE FROM keyhook_webhooks WHERE tenant_id = ? AND id = ?',
    ),
    // deleteWebhook's own cleanup: the foreign keys cascade only on connections with foreign_keys on.
    deleteWebhookAttempts: db.prepare<[string]>(
      `DELETE FROM keyhook_attempts
        WHERE delivery_id IN (SELECT id FROM keyhook_deliveries WHERE webhook_id = ?)`,
    ),
    deleteWebhookDeliveries: db.prepare<[string]>('DELETE FROM keyhook_deliveries WHERE webhook_id = ?'),
    // A disabled endpoint's queue waits: nothing pending or scheduled stays leasable.
    holdDeliveries: db.prepare<[number, number, string]>(
      `UPDATE keyhook_deliveries SET status = 'held', due_at = NULL, held_since = ?, updated_at = ?
        WHERE webhook_id = ? AND status IN ('pending', 'retry_scheduled')`,
    ),
    releaseDeliveries: db.prepare<[number, number, string]>(
      `UPDATE keyhook_deliveries SET status = 'pending', due_at = ?, held_since = NULL, updated_at = ?
        WHERE webhook_id = ? AND status = 'held'`,
    ),
    // Most successes follow successes: a count already at 0 is left unwritten.
    resetFailures: db.prepare<[string]>(
      'UPDATE keyhook_webhooks SET consecutive_failures = 0 WHERE id = ? AND consecutive_failures <> 0',
    ),
    countFailure: db.prepare<[string], { failures: number; status: WebhookStatus }>(
      `UPDATE keyhook_webhooks SET consecutive_failures = consecutive_failures + 1
        WHERE id = ? RETURNING consecutive_failures AS failures, status`,
    ),
    disableForFailures: db.prepare<[number, string], WebhookRow>(
      `UPDATE keyhook_webhooks SET status = 'disabled', disabled_reason = 'failures', updated_at = ?
        WHERE id = ? AND status = 'active' RETURNING ${WEBHOOK_COLUMNS}`,
    ),
    webhookStatus: db
      .prepare<[string], WebhookStatus>('SELECT status FROM keyhook_webhooks WHERE id = ?')
      .pluck(),
    // DO NOTHING: an event id the tenant already has writes nothing, and changes says so.
    insertEvent: db.prepare<unknown[]>(
      `INSERT INTO keyhook_events (${EVENT_COLUMNS}) VALUES (${placeholdersFor(EVENT_COLUMNS)})
        ON CONFLICT (tenant_id, id) DO NOTHING`,
    ),
    eventById: db.prepare<[string, string], EventRow>(
      `SELECT ${EVENT_COLUMNS} FROM keyhook_events WHERE tenant_id = ? AND id = ?`,
    ),
    // The tenant's webhooks whose event set (a JSON array) holds the type, active or not; whole
    // rows only when the publish leases a delivery (the attempt needs its URL and secret).
    subscribers: db.prepare<[string, string], Pick<WebhookRow, 'id' | 'status'>>(
      `SELECT id, status FROM keyhook_webhooks
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
    // otherwise); a due time means pending, retry_scheduled or in_flight (the table's checks).
    dueDeliveries: db.prepare<[number, number], DueRow>(
      `SELECT d.id, d.attempts, d.last_attempt_at, d.created_at,
          e.tenant_id AS event_tenant_id, e.id AS event_id, e.type AS event_type,
          e.payload AS event_payload, e.created_at AS event_created_at,
          e.trace_context AS event_trace_context,
          w.id AS webhook_id, w.tenant_id AS webhook_tenant_id, w.url AS webhook_url,
          w.events AS webhook_events, w.twin_key AS webhook_twin_key, w.status AS webhook_status,
          w.disabled_reason AS webhook_disabled_reason, w.secret_sealed AS webhook_secret_sealed,
          w.previous_secret_sealed AS webhook_previous_secret_sealed,
          w.previous_secret_expires_at AS webhook_previous_secret_expires_at,
          w.created_at AS webhook_created_at, w.updated_at AS webhook_updated_at
        FROM keyhook_deliveries AS d INDEXED BY keyhook_deliveries_due
          CROSS JOIN keyhook_webhooks AS w ON w.id = d.webhook_id
          CROSS JOIN keyhook_events AS e ON e.tenant_id = d.tenant_id AND e.id = d.event_id
        WHERE d.due_at <= ? AND w.status = 'active'
        ORDER BY d.due_at, d.id
        LIMIT ?`,
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
    finishLeased: db.prepare<
      [
        status: 'succeeded' | 'failed',
        lastAttemptAt: number,
        at: number,
        id: string,
        tenantId: string,
        leaseId: string,
      ],
      DeliveryRow
    >(
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
    expireHeld: db.prepare<[number, number]>(
      `UPDATE keyhook_deliveries SET status = 'failed', held_since = NULL, updated_at = ?
        WHERE status = 'held' AND held_since <= ?`,
    ),
    // The queue-depth gauge, on each collection: both counts read their partial index alone (the
    // due index carries the status, migration 0009), never a finished row.
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
    // Filtering on status row by row keeps the walk on (webhook_id, id), in the listing's order.
    listDeliveriesFirst: db.prepare<[ListDeliveriesParams], DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM keyhook_deliveries
        WHERE webhook_id = @webhookId AND tenant_id = @tenantId AND (@status IS NULL OR status = @status)
        ORDER BY id DESC LIMIT @limit`,
    ),
    listDeliveriesBefore: db.prepare<[ListDeliveriesParams & { before: string }], DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM keyhook_deliveries
        WHERE webhook_id = @webhookId AND tenant_id = @tenantId AND (@status IS NULL OR status = @status)
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
    holdsSealedValues: db
      .prepare<[], number>(
        `SELECT EXISTS (SELECT 1 FROM keyhook_webhooks)
           OR EXISTS (SELECT 1 FROM keyhook_idempotency_keys WHERE response_sealed IS NOT NULL)`,
      )
      .pluck(),
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
  /**
   * The endpoint's consecutive-failure count after an attempt (reset, +1 or unchanged); the +1
   * that reaches `autoDisableAfter` on an active endpoint disables it and holds its queue.
   */
  const countEndpointFailures = (
    webhookId: string,
    completion: AttemptCompletion,
    at: number,
  ): { disabledWebhook: WebhookRecord | null } => {
    if (completion.endpointFailures === 'reset') statements.resetFailures.run(webhookId);
    if (completion.endpointFailures !== 'increment') return { disabledWebhook: null };
    const counted = statements.countFailure.get(webhookId)!;
    if (counted.status !== 'active' || counted.failures < completion.autoDisableAfter) {
      return { disabledWebhook: null };
    }
    const disabledWebhook = toWebhookRecord(statements.disableForFailures.get(at, webhookId)!);
    statements.holdDeliveries.run(at, at, webhookId);
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
    const subscribers: readonly Pick<WebhookRow, 'id' | 'status'>[] = (
      lease ? statements.subscriberRows : statements.subscribers
    ).all(event.tenantId, event.type);
    const toLease = leasedSubscribers(subscribers, lease);
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
    return statements.dueDeliveries.all(now, request.limit).map((due) => {
      statements.lease.run(request.leaseId, leaseEnd, now, due.id);
      return toLeasedDelivery(due, request.leaseId, leaseEnd, now, webhooks);
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
    const held = (counted.disabledWebhook ? 'disabled' : holder.webhook_status) === 'disabled';
    const row = statements.recordAttempt.get({
      id: deliveryId,
      status: held ? 'held' : 'retry_scheduled',
      due_at: held ? null : (completion.dueAt?.getTime() ?? null),
      held_since: held ? at : null,
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
        if (!updated) {
          // Nothing matched: the webhook already has this status (returned as it is, its deliveries
          // untouched), or there is none.
          const current = statements.webhookById.get(tenantId, id);
          return current
            ? { outcome: 'updated', webhook: toWebhookRecord(current) }
            : { outcome: 'not_found' };
        }
        // Its deliveries follow under the same lock (docs/decisions.md §10.2): a publish or a lease
        // on another connection sees the status and the queue change together.
        if (status === 'disabled') {
          statements.holdDeliveries.run(at, at, id);
        } else {
          statements.releaseDeliveries.run(at, at, id);
          statements.resetFailures.run(id);
        }
        return { outcome: 'updated', webhook: toWebhookRecord(updated) };
      },
    ),
    // The webhook, its deliveries and their attempts go together. The foreign keys would cascade,
    // but only where foreign_keys is on; a caller's own connection may have it off.
    deleteWebhook: db.transaction((tenantId: string, id: string): boolean => {
      if (statements.deleteWebhook.run(tenantId, id).changes === 0) return false;
      // Webhook ids are unique across tenants: once the tenant's webhook went, these rows are all its own.
      statements.deleteWebhookAttempts.run(id);
      statements.deleteWebhookDeliveries.run(id);
      return true;
    }),
    // The delivery path's operations, each in a savepoint of the caller's transaction (publishSync).
    publishEvent: db.transaction(delivery.publishEvent),
    requeueDelivery: db.transaction(
      (
        tenantId: string,
        webhookId: string,
        deliveryId: string,
        from: readonly DeliveryState[],
        at: number,
      ): RequeueOutcome => {
        const current = statements.deliveryById.get(tenantId, webhookId, deliveryId);
        if (!current) return { outcome: 'not_found' };
        if (!from.includes(current.status)) {
          return { outcome: 'wrong_state', delivery: toDeliveryRecord(current) };
        }
        // Read under the lock setWebhookStatus takes: a disable cannot slip in before the write.
        const held = statements.webhookStatus.get(webhookId) === 'disabled';
        const row = statements.requeue.get({
          id: deliveryId,
          status: held ? 'held' : 'pending',
          due_at: held ? null : at,
          held_since: held ? at : null,
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
        const webhook = statements.webhookById.get(tenantId, webhookId);
        if (!webhook) return 0;
        const held = webhook.status === 'disabled';
        return statements.recoverFailed.run({
          tenant_id: tenantId,
          webhook_id: webhookId,
          since,
          until,
          limit,
          failed_before: failedBefore,
          status: held ? 'held' : 'pending',
          due_at: held ? null : at,
          held_since: held ? at : null,
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
 * interleaves inside a process, and across processes SQLite's write lock serialises them. The
 * delivery path's writes share one commit per turn of the event loop (group-commit.ts).
 */
export class SqliteStore implements Store {
  /** False only for an in-memory database (`:memory:`, or a host's connection to one). */
  readonly persistent: boolean;
  private readonly db: Database.Database;
  private readonly ownsDatabase: boolean;
  private readonly statements: ReturnType<typeof prepareStatements>;
  private readonly transactions: ReturnType<typeof prepareTransactions>;
  private readonly group: GroupCommit;
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
      this.statements = prepareStatements(this.db);
      this.transactions = prepareTransactions(this.db, this.statements);
      this.group = new GroupCommit(this.db, translateDriverError);
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

  async updateApiKey(tenantId: string, id: string, changes: ApiKeyChanges): Promise<ApiKeyRecord | null> {
    return this.run(() => {
      const limit = changes.rateLimit;
      // Synchronous, so no other call of this store runs between the read and the write.
      const before = limit === undefined ? undefined : this.statements.byId.get(tenantId, id);
      const row = this.statements.update.get({
        tenant_id: tenantId,
        id,
        set_name: changes.name === undefined ? 0 : 1,
        name: changes.name ?? null,
        set_limit: limit === undefined ? 0 : 1,
        rate_limit: limit?.limit ?? null,
        rate_limit_window: limit?.window ?? null,
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

  async updateWebhookSubscription(
    tenantId: string,
    id: string,
    subscription: WebhookSubscription,
    at: Date,
  ): Promise<WebhookSubscriptionOutcome> {
    return this.run(() => {
      let row: WebhookRow | undefined;
      try {
        row = this.statements.updateWebhookSubscription.get(
          subscription.url,
          JSON.stringify(subscription.events),
          subscription.twinKey,
          at.getTime(),
          tenantId,
          id,
          subscription.from,
        );
      } catch (error) {
        // The active-twin index refused it: nothing was written.
        if (isActiveTwinViolation(error)) return { outcome: 'active_twin' };
        throw error;
      }
      if (row) return { outcome: 'updated', webhook: toWebhookRecord(row) };
      return this.statements.webhookById.get(tenantId, id) ? { outcome: 'stale' } : { outcome: 'not_found' };
    });
  }

  async rotateWebhookSecret(
    tenantId: string,
    id: string,
    secretSealed: string,
    at: Date,
    previousExpiresAt: Date | null,
  ): Promise<WebhookRecord | null> {
    return this.run(() => {
      const row = this.statements.rotateWebhookSecret.get({
        secret_sealed: secretSealed,
        previous_expires_at: previousExpiresAt === null ? null : previousExpiresAt.getTime(),
        updated_at: at.getTime(),
        tenant_id: tenantId,
        id,
      });
      return row ? toWebhookRecord(row) : null;
    });
  }

  async deleteWebhook(tenantId: string, id: string): Promise<boolean> {
    return this.run(() => this.transactions.deleteWebhook.immediate(tenantId, id));
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
    return this.grouped(() => this.transactions.delivery.publishEvent(event, newDeliveryId, lease));
  }

  /**
   * Joins a transaction of yours when it runs on this store's own connection (`database`):
   * the event and its deliveries are written before this returns, in a savepoint of your
   * transaction, and commit or roll back with it. For a transactional outbox on SQLite.
   */
  publishEventSync(event: EventRecord, newDeliveryId: () => string, transaction: unknown): PublishOutcome {
    if (transaction !== this.db || !this.db.inTransaction) {
      throw new TypeError(
        'keyhook: the SQLite store joins only a transaction open on its own connection: ' +
          'createSqliteStore({ database: db }), then db.transaction(() => { … publishSync(…, { transaction: db }) … })',
      );
    }
    return this.run(() => this.transactions.publishEvent(event, newDeliveryId, undefined));
  }

  async leaseDeliveries(request: LeaseRequest): Promise<LeasedDelivery[]> {
    return this.grouped(() => this.transactions.delivery.leaseDeliveries(request));
  }

  async completeAttempt(completion: AttemptCompletion): Promise<AttemptCompletionOutcome> {
    return this.grouped(() => this.transactions.delivery.completeAttempt(completion));
  }

  async countQueuedDeliveries(now: Date): Promise<QueueDepth> {
    const row = this.run(() => this.statements.countQueued.get({ now: now.getTime() })!);
    return { due: row.due, scheduled: row.scheduled, inFlight: row.in_flight, held: row.held };
  }

  async expireHeldDeliveries(heldBefore: Date, at: Date): Promise<number> {
    return this.run(() => this.statements.expireHeld.run(at.getTime(), heldBefore.getTime()).changes);
  }

  /** One batch under the write lock; processes sharing the file take turns at it. */
  async purgeFinishedDeliveries(finishedBefore: Date, limit: number): Promise<PurgeOutcome> {
    return this.run(() => this.transactions.purgeFinished.immediate(finishedBefore.getTime(), limit));
  }

  async listDeliveries(
    tenantId: string,
    webhookId: string,
    page: DeliveryListPage,
  ): Promise<DeliveryRecord[]> {
    return this.run(() => {
      const params = { tenantId, webhookId, status: page.status ?? null, limit: page.limit };
      const rows =
        page.before === undefined
          ? this.statements.listDeliveriesFirst.all(params)
          : this.statements.listDeliveriesBefore.all({ ...params, before: page.before });
      return rows.map(toDeliveryRecord);
    });
  }

  async getDelivery(tenantId: string, webhookId: string, deliveryId: string): Promise<DeliveryDetail | null> {
    return this.run(() => this.transactions.getDelivery(tenantId, webhookId, deliveryId));
  }

  async requeueDelivery(
    tenantId: string,
    webhookId: string,
    deliveryId: string,
    from: readonly DeliveryState[],
    at: Date,
  ): Promise<RequeueOutcome> {
    return this.run(() =>
      this.transactions.requeueDelivery.immediate(tenantId, webhookId, deliveryId, from, at.getTime()),
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
      this.transactions.recoverFailed.immediate(
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

  async holdsSealedValues(): Promise<boolean> {
    return this.run(() => this.statements.holdsSealedValues.get() === 1);
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

/**
 * Opens a SQLite store: the file is created and migrated when needed, or, with
 * `migrations: 'refuse'`, refused while a migration is pending.
 */
export function createSqliteStore(options: SqliteStoreOptions): SqliteStore {
  return new SqliteStore(options);
}
