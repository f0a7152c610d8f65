import {
  ATTEMPT_COLUMNS,
  DELIVERY_COLUMNS,
  EVENT_COLUMNS,
  EVENT_PREFIX,
  qualified,
  WEBHOOK_PREFIX,
} from './delivery-row.js';
import { quoteSchema } from './schema-name.js';
import { WEBHOOK_COLUMNS } from './webhook-row.js';

/**
 * The NOTIFY channel of delivery wake-ups; the payload is the schema, so stores on other schemas
 * of one database ignore it (src/change-feed.ts listens on its one connection for both channels).
 */
export const DELIVERY_CHANNEL = 'keyhook_deliveries';

/** The savepoint publishEvent runs under inside a caller's transaction. */
export const PUBLISH_SAVEPOINT = 'keyhook_publish';

/** Every statement the store runs on the event, delivery and attempt tables, built once per schema. */
export interface DeliveryStatements {
  insertEventAndSubscribers: string;
  insertDeliveriesAndNotify: string;
  getEvent: string;
  notify: string;
  lease: string;
  deliveryWebhook: string;
  lockWebhook: string;
  shareWebhook: string;
  complete: string;
  completeSucceeded: string;
  completeSucceededBatch: string;
  insertAttempt: string;
  setFailures: string;
  disableForFailures: string;
  hold: string;
  release: string;
  expireHeld: string;
  purgeLock: string;
  purgeDeliveries: string;
  purgeEvents: string;
  vacuumPurged: string;
  list: string;
  detail: string;
  lockDelivery: string;
  requeue: string;
}

export function deliveryStatements(schema: string): DeliveryStatements {
  const events = `${quoteSchema(schema)}.keyhook_events`;
  const deliveries = `${quoteSchema(schema)}.keyhook_deliveries`;
  const attempts = `${quoteSchema(schema)}.keyhook_delivery_attempts`;
  const webhooks = `${quoteSchema(schema)}.keyhook_webhooks`;
  const returning = qualified('d', DELIVERY_COLUMNS);
  // The webhook columns `due` read from the locked row, under their prefixed names.
  const leasedWebhook = WEBHOOK_COLUMNS.split(', ')
    .map((column) => `due.${WEBHOOK_PREFIX}${column}`)
    .join(', ');

  // Multi-row state changes lock their rows in id order first (a MATERIALIZED CTE, so the lock is
  // taken before the UPDATE reads the rows). Two of them over overlapping rows (an expiry and a
  // release of the same held deliveries) then queue behind each other instead of deadlocking. FOR
  // UPDATE re-checks the WHERE on a row's latest committed version, so a row another transaction
  // moved out of the state meanwhile is left alone.
  const transition = (where: string, set: string) => `WITH locked AS MATERIALIZED (
        SELECT id FROM ${deliveries} WHERE ${where} ORDER BY id FOR UPDATE
      )
      UPDATE ${deliveries} AS d SET ${set}
      FROM locked WHERE d.id = locked.id
      RETURNING ${returning}`;

  return {
    // publishEvent's first round trip: the event and, when it is new, its subscribers.
    // - The primary key decides between concurrent publishes of one id: the second waits for the
    //   first to commit and then writes nothing (or, if the first rolled back, writes after all).
    //   `inserted` is false for an id already published, and then no webhook is read.
    // - FOR SHARE is the lock setWebhookStatus's UPDATE conflicts with: a status change either
    //   commits before this read (and FOR SHARE sees the new status) or waits for the publish to
    //   commit (and then holds or releases the deliveries it wrote). Id order, so two publishes
    //   lock alike.
    // - A new event with no subscriber is one row of NULL webhook columns. Nothing comes back from
    //   the insert: the store knows the row it wrote.
    insertEventAndSubscribers: `WITH inserted AS (
        INSERT INTO ${events} (${EVENT_COLUMNS}) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (tenant_id, id) DO NOTHING
        RETURNING 1
      )
      SELECT EXISTS (SELECT 1 FROM inserted) AS inserted, w.*
      FROM (SELECT 1) AS one
      LEFT JOIN LATERAL (
        SELECT ${WEBHOOK_COLUMNS} FROM ${webhooks}
        WHERE EXISTS (SELECT 1 FROM inserted) AND tenant_id = $1 AND $3::text = ANY (events)
        ORDER BY id
        FOR SHARE
      ) AS w ON true`,

    // A new statement after the insert found a conflict, so its snapshot holds the committed winner.
    getEvent: `SELECT ${EVENT_COLUMNS} FROM ${events} WHERE tenant_id = $1 AND id = $2`,

    // publishEvent's second round trip: one INSERT for every subscriber (parallel arrays of id,
    // webhook and status), and the wake-up when $10 says a delivery is pending. Pending ones are
    // due when the event was created; held ones are held since then; in_flight ones (leased in the
    // publish, for a worker of the publishing process) are due when their lease $8 ($9) runs out.
    // Nothing comes back but the count: the rows are the store's own records.
    insertDeliveriesAndNotify: `WITH written AS (
        INSERT INTO ${deliveries} (${DELIVERY_COLUMNS})
        SELECT n.id, $1, n.webhook_id, $2, $3, n.status, 0,
          CASE n.status WHEN 'pending' THEN $4::timestamptz WHEN 'in_flight' THEN $9::timestamptz END,
          CASE WHEN n.status = 'in_flight' THEN $8::text END,
          CASE WHEN n.status = 'held' THEN $4::timestamptz END,
          NULL, $4, $4
        FROM unnest($5::text[], $6::text[], $7::text[]) AS n(id, webhook_id, status)
        RETURNING 1
      )
      SELECT count(*) AS written,
        (SELECT pg_notify($11, $12) WHERE $10::boolean) AS notified
      FROM written`,

    // Sent inside the writing transaction: the server delivers it at commit, and never on rollback.
    notify: 'SELECT pg_notify($1, $2)',

    // One statement. `due` locks the oldest due deliveries of active endpoints, skipping rows another
    // lease holds (FOR UPDATE OF d SKIP LOCKED), and share-locks their webhooks, skipping one whose
    // row a setWebhookStatus (or a completion counting a failure) holds: a delivery is never leased
    // while its endpoint is being disabled. A row changed after the snapshot is re-checked on its
    // latest version, and the webhook columns come from that locked version. LIMIT counts only rows
    // that were locked. The RETURNING carries the old due time, so the answer keeps the lease order.
    lease: `WITH due AS MATERIALIZED (
        SELECT d.id, d.due_at AS was_due, ${qualified('w', WEBHOOK_COLUMNS, WEBHOOK_PREFIX)}
        FROM ${deliveries} AS d
        JOIN ${webhooks} AS w ON w.id = d.webhook_id
        WHERE d.status IN ('pending', 'retry_scheduled', 'in_flight')
          AND d.due_at <= $1::timestamptz
          AND w.status = 'active'
        ORDER BY d.due_at, d.id
        LIMIT $2
        FOR UPDATE OF d SKIP LOCKED
        FOR SHARE OF w SKIP LOCKED
      ),
      leased AS (
        UPDATE ${deliveries} AS d
        SET status = 'in_flight', lease_id = $3, due_at = $4::timestamptz, updated_at = $1::timestamptz
        FROM due WHERE d.id = due.id
        RETURNING ${returning}
      )
      SELECT leased.*, ${leasedWebhook}, ${qualified('e', EVENT_COLUMNS, EVENT_PREFIX)}
      FROM leased
      JOIN due ON due.id = leased.id
      JOIN ${events} AS e ON e.tenant_id = leased.tenant_id AND e.id = leased.event_id
      ORDER BY due.was_due, leased.id`,

    // Unlocked: only to learn which webhook to lock first (its id never changes), and whether its failure
    // count looks like it will change (which decides the lock; re-checked once locked).
    deliveryWebhook: `SELECT d.webhook_id, w.consecutive_failures
      FROM ${deliveries} AS d JOIN ${webhooks} AS w ON w.id = d.webhook_id
      WHERE d.id = $1 AND d.tenant_id = $2 AND d.status = 'in_flight' AND d.lease_id = $3`,

    // A completion locks the webhook before the delivery, as setWebhookStatus, requeue and delete do, so
    // none of them can wait on each other in a cycle. FOR NO KEY UPDATE when it will write the failure
    // count; otherwise FOR SHARE, which orders it against a disable just as well but, unlike the
    // exclusive lock, does not make concurrent leases skip the endpoint's other deliveries.
    lockWebhook: `SELECT ${WEBHOOK_COLUMNS}, consecutive_failures FROM ${webhooks} WHERE id = $1
      FOR NO KEY UPDATE`,
    shareWebhook: `SELECT ${WEBHOOK_COLUMNS}, consecutive_failures FROM ${webhooks} WHERE id = $1
      FOR SHARE`,

    // Only while this lease still holds the delivery; the row lock re-checks it on the latest version.
    complete: `UPDATE ${deliveries}
      SET status = $4, due_at = $5, held_since = $6, lease_id = NULL, attempts = attempts + 1,
          last_attempt_at = $7, updated_at = $8
      WHERE id = $1 AND tenant_id = $2 AND status = 'in_flight' AND lease_id = $3
      RETURNING ${DELIVERY_COLUMNS}`,

    insertAttempt: `INSERT INTO ${attempts} (${ATTEMPT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,

    // completeAttempt's common case in one round trip: a success on an endpoint whose failure
    // count is 0 writes nothing on the webhook, so it needs only the share lock (taken first, as
    // in the transaction: webhook, then delivery), the delivery's update and the attempt log.
    // A count other than 0 on the locked row writes nothing here (failures > 0 comes back) and
    // the caller takes the transaction, which resets it. No row in `w`: the lease was lost.
    // $1–$8 the attempt as toAttemptParams binds it (delivery, tenant, attempt number, started,
    // duration, status code, error, response body), $9 the lease, $10 finished at.
    completeSucceeded: `WITH w AS MATERIALIZED (
        SELECT w.consecutive_failures FROM ${webhooks} AS w
        JOIN ${deliveries} AS d ON d.webhook_id = w.id
        WHERE d.id = $1 AND d.tenant_id = $2 AND d.status = 'in_flight' AND d.lease_id = $9
        FOR SHARE OF w
      ),
      done AS (
        UPDATE ${deliveries}
        SET status = 'succeeded', due_at = NULL, held_since = NULL, lease_id = NULL,
            attempts = attempts + 1, last_attempt_at = $4, updated_at = $10
        WHERE id = $1 AND tenant_id = $2 AND status = 'in_flight' AND lease_id = $9
          AND (SELECT consecutive_failures FROM w) = 0
        RETURNING ${DELIVERY_COLUMNS}
      ),
      logged AS (
        INSERT INTO ${attempts} (${ATTEMPT_COLUMNS})
        SELECT id, tenant_id, $3, $4, $5, $6, $7, $8 FROM done
      )
      SELECT (SELECT consecutive_failures FROM w) AS failures, done.*
      FROM (SELECT 1) AS one LEFT JOIN done ON true`,

    // completeSucceeded for many deliveries in one statement (the store's group commit), as
    // parallel arrays in its parameter order. The webhooks are share-locked in id order before
    // any delivery is written, so two batches, or a batch and a completion that counts a failure,
    // take their locks in one order. One row per input, in input order: failures NULL for a lost
    // lease; done.id NULL when nothing was written.
    completeSucceededBatch: `WITH input AS (
        SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::timestamptz[], $5::int[],
          $6::int[], $7::text[], $8::text[], $9::text[], $10::timestamptz[])
          WITH ORDINALITY AS i(id, tenant_id, attempt, started_at, duration_ms, status_code, error,
            response_body, lease_id, at, position)
      ),
      w AS MATERIALIZED (
        SELECT i.id AS delivery_id, w.consecutive_failures
        FROM input AS i
        JOIN ${deliveries} AS d ON d.id = i.id AND d.tenant_id = i.tenant_id
          AND d.status = 'in_flight' AND d.lease_id = i.lease_id
        JOIN ${webhooks} AS w ON w.id = d.webhook_id
        ORDER BY w.id
        FOR SHARE OF w
      ),
      done AS (
        UPDATE ${deliveries} AS d
        SET status = 'succeeded', due_at = NULL, held_since = NULL, lease_id = NULL,
            attempts = d.attempts + 1, last_attempt_at = i.started_at, updated_at = i.at
        FROM input AS i JOIN w ON w.delivery_id = i.id AND w.consecutive_failures = 0
        WHERE d.id = i.id AND d.tenant_id = i.tenant_id AND d.status = 'in_flight' AND d.lease_id = i.lease_id
        RETURNING ${returning}
      ),
      logged AS (
        INSERT INTO ${attempts} (${ATTEMPT_COLUMNS})
        SELECT i.id, i.tenant_id, i.attempt, i.started_at, i.duration_ms, i.status_code, i.error, i.response_body
        FROM done JOIN input AS i ON i.id = done.id
      )
      SELECT w.consecutive_failures AS failures, done.*
      FROM input AS i
      LEFT JOIN w ON w.delivery_id = i.id
      LEFT JOIN done ON done.id = i.id
      ORDER BY i.position`,

    setFailures: `UPDATE ${webhooks} SET consecutive_failures = $2 WHERE id = $1`,

    disableForFailures: `UPDATE ${webhooks}
      SET consecutive_failures = $2, status = 'disabled', disabled_reason = 'failures', updated_at = $3
      WHERE id = $1
      RETURNING ${WEBHOOK_COLUMNS}`,

    // Run after the webhook's row is updated (locked) in the same transaction: see `insertEventAndSubscribers`.
    hold: transition(
      `webhook_id = $1 AND status IN ('pending', 'retry_scheduled')`,
      `status = 'held', due_at = NULL, held_since = $2, updated_at = $2`,
    ),

    release: transition(
      `webhook_id = $1 AND status = 'held'`,
      `status = 'pending', due_at = $2, held_since = NULL, updated_at = $2`,
    ),

    expireHeld: transition(
      `status = 'held' AND held_since <= $1`,
      `status = 'failed', held_since = NULL, updated_at = $2`,
    ),

    // A missing filter is a NULL parameter; pg sends unnamed statements, planned with their values,
    // so the index on (webhook_id, id) serves each variant.
    list: `SELECT ${DELIVERY_COLUMNS} FROM ${deliveries}
      WHERE tenant_id = $1 AND webhook_id = $2
        AND ($4::text IS NULL OR status = $4)
        AND ($5::text IS NULL OR id < $5)
      ORDER BY id DESC LIMIT $3`,

    // One statement, one snapshot: the delivery, its event and its attempts agree. The attempts come as
    // one json array rather than one row each, so a large payload is not repeated per attempt.
    detail: `SELECT ${returning}, ${qualified('e', EVENT_COLUMNS, EVENT_PREFIX)},
        (SELECT coalesce(json_agg(a ORDER BY a.attempt), '[]'::json)
         FROM (SELECT ${ATTEMPT_COLUMNS} FROM ${attempts} WHERE delivery_id = d.id) AS a) AS attempts_log
      FROM ${deliveries} AS d
      JOIN ${events} AS e ON e.tenant_id = d.tenant_id AND e.id = d.event_id
      WHERE d.tenant_id = $1 AND d.webhook_id = $2 AND d.id = $3`,

    lockDelivery: `SELECT ${DELIVERY_COLUMNS} FROM ${deliveries}
      WHERE tenant_id = $1 AND webhook_id = $2 AND id = $3
      FOR UPDATE`,

    // Retention, one batch per transaction. Only the holder of this transaction-scoped lock
    // purges; another instance gets false and skips its round instead of queueing behind it.
    purgeLock: 'SELECT pg_try_advisory_xact_lock($1::bigint) AS held',
    // Oldest first on keyhook_deliveries_finished_idx (0005); SKIP LOCKED passes over a row an
    // admin retry holds, so the purge never waits on one. Attempts go by ON DELETE CASCADE.
    purgeDeliveries: `DELETE FROM ${deliveries} WHERE id IN (
        SELECT id FROM ${deliveries} WHERE status IN ('succeeded', 'failed') AND updated_at <= $1
        ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    // Events old enough that no delivery refers to any more, found on keyhook_events_created_at_idx
    // and checked on keyhook_deliveries_event_idx (0005).
    purgeEvents: `DELETE FROM ${events} WHERE (tenant_id, id) IN (
        SELECT tenant_id, id FROM ${events} AS e WHERE created_at <= $1
          AND NOT EXISTS (SELECT 1 FROM ${deliveries} AS d WHERE d.tenant_id = e.tenant_id AND d.event_id = e.id)
        ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,

    vacuumPurged: `VACUUM (SKIP_LOCKED) ${attempts}, ${deliveries}, ${events}`,

    requeue: `UPDATE ${deliveries}
      SET status = $2, due_at = $3, held_since = $4, lease_id = NULL, updated_at = $5
      WHERE id = $1
      RETURNING ${DELIVERY_COLUMNS}`,
  };
}
