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

/** One event of a batched publish, as the fields of its object in the statement's JSON input. */
export const PUBLISH_INPUT =
  'position int, tenant_id text, id text, type text, payload text, created_at timestamptz, trace_context text, ' +
  'lease_id text, lease_limit int, lease_ends timestamptz, first_id int, ids int';

/** One success of a batched completion, as the fields of its object in the statement's JSON input. */
export const SUCCESS_INPUT =
  'position int, id text, tenant_id text, attempt int, started_at timestamptz, duration_ms int, ' +
  'status_code int, error text, response_body text, lease_id text, at timestamptz';

/** Every statement the store runs on the event, delivery and attempt tables, built once per schema. */
export interface DeliveryStatements {
  publish: string;
  publishOne: string;
  /** `publishOne` with its NOTIFY's column read as text: for a data layer that cannot read a `void` column (Prisma). */
  publishOneText: string;
  getEvent: string;
  insertTestEvent: string;
  notify: string;
  lease: string;
  leaseUnlimited: string;
  /** `lease` and `leaseUnlimited` with $10 and $6 the endpoints the worker's cap leaves. */
  leaseSkipping: string;
  leaseUnlimitedSkipping: string;
  endLeases: string;
  deliveryWebhook: string;
  lockWebhook: string;
  shareWebhook: string;
  complete: string;
  completeSucceeded: string;
  completeSucceededBatch: string;
  publishAndSucceed: string;
  insertAttempt: string;
  setFailures: string;
  disableForFailures: string;
  hold: string;
  release: string;
  resetRate: string;
  expireHeld: string;
  countQueued: string;
  purgeLock: string;
  purgeDeliveries: string;
  purgeEvents: string;
  vacuumPurged: string;
  list: string;
  detail: string;
  lockDelivery: string;
  requeue: string;
  recoverFailed: string;
}

export function deliveryStatements(schema: string): DeliveryStatements {
  const events = `${quoteSchema(schema)}.keyhook_events`;
  const deliveries = `${quoteSchema(schema)}.keyhook_deliveries`;
  const attempts = `${quoteSchema(schema)}.keyhook_delivery_attempts`;
  const webhooks = `${quoteSchema(schema)}.keyhook_webhooks`;
  const rates = `${quoteSchema(schema)}.keyhook_endpoint_rates`;
  const returning = qualified('d', DELIVERY_COLUMNS);
  // The webhook columns `due` read from the locked row, under their prefixed names.
  const leasedWebhook = WEBHOOK_COLUMNS.split(', ')
    .map((column) => `due.${WEBHOOK_PREFIX}${column}`)
    .join(', ');

  // "The lease still holds the delivery" is `lease_id = <the lease>` alone: the table's CHECK
  // (0004) keeps lease_id set exactly while a delivery is in flight. Without a status test, a
  // lookup by id cannot be answered from the partial index of queued deliveries, which a planner
  // without statistics took for the cheaper path and scanned whole.
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

  // The publish statement's parts (see `publish` below), which publishAndSucceed shares.
  const publishCtes = `input AS MATERIALIZED (
        SELECT * FROM json_to_recordset($1::json) AS i(${PUBLISH_INPUT})
      ),
      subscribers AS MATERIALIZED (
        SELECT ${WEBHOOK_COLUMNS} FROM ${webhooks}
        WHERE tenant_id = ANY (ARRAY(SELECT tenant_id FROM input))
          AND events && ARRAY(SELECT type FROM input)
        ORDER BY id
        FOR SHARE
      ),
      pairs AS MATERIALIZED (
        SELECT i.position, s.id AS webhook_id,
          row_number() OVER (PARTITION BY i.position ORDER BY s.id) AS rank,
          CASE
            WHEN s.status = $5 THEN $6::text
            WHEN i.lease_id IS NOT NULL AND s.rate_per_second IS NULL
              AND count(*) FILTER (WHERE s.status <> $5 AND s.rate_per_second IS NULL)
                OVER (PARTITION BY i.position ORDER BY s.id) <= i.lease_limit THEN 'in_flight'
            ELSE 'pending'
          END AS status
        FROM input AS i
        JOIN subscribers AS s ON s.tenant_id = i.tenant_id AND i.type = ANY (s.events)
      ),
      counted AS MATERIALIZED (
        SELECT i.position, count(p.webhook_id) AS subscribers, count(p.webhook_id) <= i.ids AS fits
        FROM input AS i LEFT JOIN pairs AS p ON p.position = i.position
        GROUP BY i.position, i.ids
      ),
      inserted AS (
        INSERT INTO ${events} (${EVENT_COLUMNS})
        SELECT i.tenant_id, i.id, i.type, i.payload, i.created_at, i.trace_context
        FROM input AS i JOIN counted AS c ON c.position = i.position AND c.fits
        ORDER BY i.position
        ON CONFLICT (tenant_id, id) DO NOTHING
        RETURNING tenant_id, id
      ),
      written AS (
        INSERT INTO ${deliveries} (${DELIVERY_COLUMNS})
        SELECT ($2::text[])[i.first_id + p.rank - 1], i.tenant_id, p.webhook_id, i.id, i.type, p.status, 0,
          CASE p.status WHEN 'pending' THEN i.created_at WHEN 'in_flight' THEN i.lease_ends END,
          CASE WHEN p.status = 'in_flight' THEN i.lease_id END,
          CASE WHEN p.status = $6 THEN i.created_at END,
          NULL, i.created_at, i.created_at
        FROM pairs AS p
        JOIN input AS i ON i.position = p.position
        JOIN inserted AS ins ON ins.tenant_id = i.tenant_id AND ins.id = i.id
        RETURNING ${DELIVERY_COLUMNS}
      )`;
  const publishRows = (
    columns: string,
  ) => `      SELECT ${columns}i.position, c.fits, c.subscribers, ins.id IS NOT NULL AS inserted,
        (SELECT pg_notify($3, $4) WHERE EXISTS (SELECT 1 FROM written WHERE status = 'pending')) AS notified,
        ${qualified('written', DELIVERY_COLUMNS)}, ${qualified('s', WEBHOOK_COLUMNS, WEBHOOK_PREFIX)}
      FROM input AS i
      JOIN counted AS c ON c.position = i.position
      LEFT JOIN inserted AS ins ON ins.tenant_id = i.tenant_id AND ins.id = i.id
      LEFT JOIN written ON written.tenant_id = i.tenant_id AND written.event_id = i.id
      LEFT JOIN subscribers AS s ON s.id = written.webhook_id AND written.status = 'in_flight'
`;

  // The success batch's parts (see `completeSucceededBatch` below), which publishAndSucceed shares.
  // `param` is the JSON array of the successes.
  const successCtes = (param: string) => `completions AS (
        SELECT * FROM json_to_recordset(${param}::json) AS i(${SUCCESS_INPUT})
      ),
      completed_webhooks AS MATERIALIZED (
        SELECT i.id AS delivery_id, w.consecutive_failures
        FROM completions AS i
        CROSS JOIN LATERAL (
          SELECT webhook_id FROM ${deliveries}
          WHERE id = i.id AND tenant_id = i.tenant_id AND lease_id = i.lease_id
          LIMIT 1
        ) AS d
        JOIN ${webhooks} AS w ON w.id = d.webhook_id
        ORDER BY w.id
        FOR SHARE OF w
      ),
      done AS (
        UPDATE ${deliveries} AS d
        SET status = 'succeeded', due_at = NULL, held_since = NULL, lease_id = NULL,
            attempts = d.attempts + 1, last_attempt_at = i.started_at, updated_at = i.at
        FROM completions AS i JOIN completed_webhooks AS w ON w.delivery_id = i.id AND w.consecutive_failures = 0
        WHERE d.id = i.id AND d.tenant_id = i.tenant_id AND d.lease_id = i.lease_id
        RETURNING ${returning}
      ),
      logged AS (
        INSERT INTO ${attempts} (${ATTEMPT_COLUMNS})
        SELECT i.id, i.tenant_id, i.attempt, i.started_at, i.duration_ms, i.status_code, i.error, i.response_body
        FROM done JOIN completions AS i ON i.id = done.id
      )`;
  const successRows = (columns: string) => `      SELECT ${columns}
      FROM completions AS i
      LEFT JOIN completed_webhooks AS w ON w.delivery_id = i.id
      LEFT JOIN done ON done.id = i.id
`;
  // The lease's answer when it leased nothing: its rate summary, NULL in every other column.
  const noLease = [DELIVERY_COLUMNS, WEBHOOK_COLUMNS, EVENT_COLUMNS]
    .flatMap((columns) => columns.split(', '))
    .map(() => 'NULL')
    .join(', ');
  // The claim's head, shared by leaseUnlimited and lease: the due deliveries of endpoints that are
  // not held, oldest due first, locked, with their webhook's columns (see lease for why so).
  // `skip`, when given, is the parameter of the endpoints the worker's cap leaves (LeaseRequest.skipEndpoints).
  const dueClaim = (skip?: string) => `due AS MATERIALIZED (
        SELECT d.id, d.due_at AS was_due, ${qualified('w', WEBHOOK_COLUMNS, WEBHOOK_PREFIX)}
        FROM ${deliveries} AS d
        CROSS JOIN LATERAL (
          SELECT ${WEBHOOK_COLUMNS} FROM ${webhooks}
          WHERE id = d.webhook_id AND status <> $5
          FOR SHARE SKIP LOCKED
        ) AS w
        WHERE d.status IN ('pending', 'retry_scheduled', 'in_flight')
          AND d.due_at <= $1::timestamptz${
            skip === undefined
              ? ''
              : `
          AND d.webhook_id <> ALL (${skip}::text[])`
          }
        ORDER BY d.due_at, d.id
        LIMIT $2
        FOR UPDATE OF d SKIP LOCKED
      ),
`;
  // A success row in publishAndSucceed's answer has no webhook: NULL in each of its columns.
  const noWebhook = WEBHOOK_COLUMNS.split(', ')
    .map(() => 'NULL')
    .join(', ');

  const leaseUnlimitedClaim = (skip?: string) => `WITH ${dueClaim(skip)}      leased AS (
        UPDATE ${deliveries} AS d
        SET status = 'in_flight', lease_id = $3, due_at = $4::timestamptz, updated_at = $1::timestamptz
        FROM due WHERE d.id = due.id AND due.${WEBHOOK_PREFIX}rate_per_second IS NULL
        RETURNING ${returning}
      ),
      met AS (
        SELECT count(*)::int AS limited_met FROM due WHERE ${WEBHOOK_PREFIX}rate_per_second IS NOT NULL
      )
      SELECT (SELECT limited_met FROM met) AS limited_met, due.was_due AS lease_order,
        leased.*, ${leasedWebhook}, ${qualified('e', EVENT_COLUMNS, EVENT_PREFIX)}
      FROM leased
      JOIN due ON due.id = leased.id
      JOIN ${events} AS e ON e.tenant_id = leased.tenant_id AND e.id = leased.event_id
      UNION ALL
      SELECT limited_met, NULL, ${noLease}
      FROM met WHERE NOT EXISTS (SELECT 1 FROM leased)
      ORDER BY lease_order, id`;
  const leaseClaim = (skip?: string) => `WITH ${dueClaim(skip)}      rates AS MATERIALIZED (
        SELECT r.webhook_id, r.next_at, r.queue_at FROM ${rates} AS r
        WHERE r.webhook_id IN (SELECT ${WEBHOOK_PREFIX}id FROM due WHERE ${WEBHOOK_PREFIX}rate_per_second IS NOT NULL)
        ORDER BY r.webhook_id
        FOR UPDATE SKIP LOCKED
      ),
      extra AS MATERIALIZED (
        SELECT x.id, x.was_due, r.webhook_id, NULL::float8 AS rate
        FROM rates AS r
        CROSS JOIN LATERAL (
          SELECT d.id, d.due_at AS was_due FROM ${deliveries} AS d
          WHERE d.webhook_id = r.webhook_id
            AND d.status IN ('pending', 'retry_scheduled', 'in_flight')
            AND d.due_at <= $1::timestamptz
            AND d.id <> ALL (ARRAY(SELECT id FROM due))
          ORDER BY d.due_at, d.id
          LIMIT $9
          FOR UPDATE SKIP LOCKED
        ) AS x
      ),
      met AS MATERIALIZED (
        SELECT m.*, max(m.rate) OVER (PARTITION BY m.webhook_id) AS per_second
        FROM (
          SELECT due.id, due.was_due, due.${WEBHOOK_PREFIX}id AS webhook_id, due.${WEBHOOK_PREFIX}rate_per_second AS rate
          FROM due WHERE due.${WEBHOOK_PREFIX}rate_per_second IS NOT NULL
          UNION ALL
          SELECT id, was_due, webhook_id, rate FROM extra
        ) AS m
      ),
      slotted AS MATERIALIZED (
        SELECT met.id, r.webhook_id, r.next_at, r.queue_at, p.step, p.slot,
          p.slot <= $6::float8 + p.early AS leases,
          row_number() OVER (PARTITION BY r.webhook_id ORDER BY met.was_due, met.id) - 1 AS k,
          count(*) OVER (PARTITION BY r.webhook_id) AS m
        FROM met
        JOIN rates AS r ON r.webhook_id = met.webhook_id
        CROSS JOIN LATERAL (SELECT 1000::float8 / met.per_second AS step) AS i
        CROSS JOIN LATERAL (
          SELECT i.step, $7::float8 * i.step AS early,
            CASE WHEN r.next_at IS NULL THEN $6::float8
              ELSE greatest(r.next_at, $6::float8 - $8::float8 * i.step) END AS slot
        ) AS p
      ),
      stepped AS MATERIALIZED (
        SELECT s.*, s.leases AND s.k = 0 AS leased,
          s.k - CASE WHEN s.leases THEN 1 ELSE 0 END AS r,
          s.m - CASE WHEN s.leases THEN 1 ELSE 0 END AS waiting,
          n.next, greatest(n.next, s.queue_at) + s.step AS base,
          -- Asked once per endpoint (its first row): does a delivery already wait for the next slot?
          CASE WHEN s.k = 0 THEN EXISTS (
            SELECT 1 FROM ${deliveries} AS h
            WHERE h.due_at = 'epoch'::timestamptz + ceil(n.next) * interval '1 millisecond'
              AND h.webhook_id = s.webhook_id AND h.status IN ('pending', 'retry_scheduled')
          ) END AS first_taken
        FROM slotted AS s
        CROSS JOIN LATERAL (SELECT CASE WHEN s.leases THEN s.slot + s.step ELSE s.slot END AS next) AS n
      ),
      paced AS MATERIALIZED (
        -- q numbers the waiting ones after the one that takes the next slot, when one does.
        SELECT w.*, w.r - CASE WHEN w.taken THEN 0 ELSE 1 END AS q,
          w.waiting - CASE WHEN w.taken THEN 0 ELSE 1 END AS queued
        FROM (
          SELECT st.*, bool_or(st.first_taken) OVER (PARTITION BY st.webhook_id) AS taken FROM stepped AS st
        ) AS w
      ),
      deferred AS (
        UPDATE ${deliveries} AS d
        SET due_at = 'epoch'::timestamptz
            + ceil(CASE WHEN p.q < 0 THEN p.next ELSE p.base + p.q * p.step END) * interval '1 millisecond',
          updated_at = $1::timestamptz
        FROM paced AS p WHERE d.id = p.id AND NOT p.leased
      ),
      advanced AS (
        UPDATE ${rates} AS r
        SET next_at = CASE WHEN p.leases THEN p.slot + p.step ELSE r.next_at END,
          queue_at = CASE WHEN p.queued > 0 THEN p.base + (p.queued - 1) * p.step
            WHEN p.waiting > 0 THEN greatest(r.queue_at, p.next) ELSE r.queue_at END
        FROM paced AS p WHERE p.k = 0 AND r.webhook_id = p.webhook_id
        RETURNING r.next_at
      ),
      summary AS (
        SELECT (SELECT count(*) FROM paced WHERE NOT leased)::int AS rate_deferred,
          (SELECT min(next_at) FROM advanced) AS rate_next_slot,
          (SELECT array_agg(next_at) FROM advanced) AS rate_next_slots
      ),
      chosen AS MATERIALIZED (
        SELECT id FROM due WHERE ${WEBHOOK_PREFIX}rate_per_second IS NULL
        UNION ALL
        SELECT id FROM paced WHERE leased
      ),
      leased AS (
        UPDATE ${deliveries} AS d
        SET status = 'in_flight', lease_id = $3, due_at = $4::timestamptz, updated_at = $1::timestamptz
        FROM chosen WHERE d.id = chosen.id
        RETURNING ${returning}
      ),
      -- Each leased row with what its answer carries: a row of due, or one of extra with its
      -- webhook's columns from a row of due (extra's webhooks are due's). A row of extra is leased
      -- when another instance's claim, committing while this one read, made it due before due's
      -- rows; left out of the answer, it would wait for its lease to run out.
      claimed AS (
        SELECT * FROM due
        UNION ALL
        SELECT x.id, x.was_due, w.* FROM extra AS x
        CROSS JOIN LATERAL (
          SELECT ${leasedWebhook} FROM due WHERE due.${WEBHOOK_PREFIX}id = x.webhook_id LIMIT 1
        ) AS w
      )
      SELECT (SELECT rate_deferred FROM summary) AS rate_deferred,
        (SELECT rate_next_slot FROM summary) AS rate_next_slot,
        (SELECT rate_next_slots FROM summary) AS rate_next_slots, due.was_due AS lease_order,
        leased.*, ${leasedWebhook}, ${qualified('e', EVENT_COLUMNS, EVENT_PREFIX)}
      FROM leased
      JOIN claimed AS due ON due.id = leased.id
      JOIN ${events} AS e ON e.tenant_id = leased.tenant_id AND e.id = leased.event_id
      UNION ALL
      SELECT rate_deferred, rate_next_slot, rate_next_slots, NULL, ${noLease}
      FROM summary WHERE NOT EXISTS (SELECT 1 FROM leased)
      ORDER BY lease_order, id`;

  const publishOne = (asText: boolean) => `WITH subscribers AS MATERIALIZED (
        SELECT ${WEBHOOK_COLUMNS} FROM ${webhooks}
        WHERE tenant_id = $1::text AND $3::text = ANY (events)
        ORDER BY id
        FOR SHARE
      ),
      pairs AS MATERIALIZED (
        SELECT s.id AS webhook_id, row_number() OVER (ORDER BY s.id) AS rank,
          CASE
            WHEN s.status = $13 THEN $14::text
            WHEN $7::text IS NOT NULL AND s.rate_per_second IS NULL
              AND count(*) FILTER (WHERE s.status <> $13 AND s.rate_per_second IS NULL)
                OVER (ORDER BY s.id) <= $8::int THEN 'in_flight'
            ELSE 'pending'
          END AS status
        FROM subscribers AS s
      ),
      counted AS MATERIALIZED (
        SELECT count(*) AS subscribers, count(*) <= cardinality($10::text[]) AS fits FROM pairs
      ),
      inserted AS (
        INSERT INTO ${events} (${EVENT_COLUMNS})
        SELECT $1::text, $2::text, $3::text, $4::text, $5::timestamptz, $6::text FROM counted WHERE fits
        ON CONFLICT (tenant_id, id) DO NOTHING
        RETURNING id
      ),
      written AS (
        INSERT INTO ${deliveries} (${DELIVERY_COLUMNS})
        SELECT ($10::text[])[p.rank], $1::text, p.webhook_id, ins.id, $3::text, p.status, 0,
          CASE p.status WHEN 'pending' THEN $5::timestamptz WHEN 'in_flight' THEN $9::timestamptz END,
          CASE WHEN p.status = 'in_flight' THEN $7::text END,
          CASE WHEN p.status = $14 THEN $5::timestamptz END,
          NULL, $5::timestamptz, $5::timestamptz
        FROM pairs AS p CROSS JOIN inserted AS ins
        RETURNING ${DELIVERY_COLUMNS}
      )
      SELECT 1 AS position, c.fits, c.subscribers, EXISTS (SELECT 1 FROM inserted) AS inserted,
        (SELECT pg_notify($11, $12) WHERE EXISTS (SELECT 1 FROM written WHERE status = 'pending'))${asText ? '::text' : ''} AS notified,
        ${qualified('written', DELIVERY_COLUMNS)}, ${qualified('s', WEBHOOK_COLUMNS, WEBHOOK_PREFIX)}
      FROM counted AS c
      LEFT JOIN written ON true
      LEFT JOIN subscribers AS s ON s.id = written.webhook_id AND written.status = 'in_flight'
      ORDER BY written.webhook_id`;

  return {
    // publishEvent for one event or many (the store's group commit) in one statement, so a
    // publish outside a caller's transaction is one round trip and one commit. $1 is a JSON array
    // of the events, one object each (PUBLISH_INPUT's fields: the event's columns, its lease's
    // id, limit and end, NULL without one, and where its delivery ids start in $2 and how many
    // there are). One JSON document costs the driver a JSON.stringify where ten arrays cost it an
    // escaping pass over every payload. $3 and $4 are the NOTIFY's channel and payload; $5 and $6
    // core's hold rule (DELIVERY_RULES.hold: the endpoint status that holds, the state it holds in).
    // - `subscribers` share-locks, in id order, every endpoint that may subscribe to one of the
    //   events. FOR SHARE is the lock setWebhookStatus's UPDATE conflicts with: a status change
    //   either commits before this read (which then sees the new status) or waits for the publish
    //   to commit (and then holds or releases the deliveries it wrote).
    // - An event with more subscribers than delivery ids does not `fit`: nothing of it is written,
    //   and the caller sends it again with as many ids as `subscribers` counted.
    // - The primary key decides between concurrent publishes of one id: the later waits for the
    //   earlier to commit and then writes nothing (or, if the earlier rolled back, writes after
    //   all). `inserted` false for an event that fits is a replay. The caller never puts one
    //   event id in a batch twice.
    // - Each delivery's state is the Postgres form of core's newDeliveryRecord and
    //   leasedSubscribers (src/delivery/records.ts in @keyhook/core), with core's hold rule bound as
    //   $5 and $6 rather than spelled here: held on an endpoint whose status holds;
    //   with a lease, in flight for the first `limit` active endpoints until the lease's end;
    //   pending otherwise, due at once. The store conformance suite checks the two agree.
    // - The NOTIFY goes out when a delivery is pending; the server sends it at commit.
    // One row per written delivery, by event and webhook id, with the endpoint's columns when it
    // was leased (the worker needs them); one row of NULL delivery columns for an event without.
    publish: `WITH ${publishCtes}
${publishRows('')}      ORDER BY i.position, written.webhook_id`,

    // `publish` for one event, its columns bound one by one: $1–$6 the event's (EVENT_COLUMNS),
    // $7–$9 its lease's id, limit and end (NULL without one), $10 the delivery ids, $11 and $12
    // the NOTIFY's channel and payload, $13 and $14 core's hold rule. The same rules and the same
    // rows as `publish` (position 1); without the JSON input, the positions and their joins, a
    // lone publish costs Postgres about a third less (docs/decisions.md §8.19).
    publishOne: publishOne(false),
    publishOneText: publishOne(true),

    // A new statement after the insert found a conflict, so its snapshot holds the committed winner.
    getEvent: `SELECT ${EVENT_COLUMNS} FROM ${events} WHERE tenant_id = $1 AND id = $2`,

    // A test event and its one delivery (publishTestEvent), the delivery's columns from core's
    // newDeliveryRecord. One statement: the delivery's foreign key is checked at its end, when
    // the event is there. No feed place (feed_seq NULL, docs/decisions.md §8.17). $1–$6 are the event's columns, $7–$19 the delivery's.
    insertTestEvent: `WITH event AS (
        INSERT INTO ${events} (${EVENT_COLUMNS}, feed_seq) VALUES ($1, $2, $3, $4, $5, $6, NULL)
      )
      INSERT INTO ${deliveries} (${DELIVERY_COLUMNS})
      VALUES ($7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,

    // Sent inside the writing transaction: the server delivers it at commit, and never on rollback.
    notify: 'SELECT pg_notify($1, $2)',

    // LeaseRequest.endLeases: leases a worker gives up end now, as if they had run out, so their
    // deliveries are due at once. $1 now, $2 the latest end a live lease can have (now + leaseMs),
    // so the due index finds them; $3 leases ended whole, $4 and $5 single deliveries with theirs.
    endLeases: `UPDATE ${deliveries} AS d SET due_at = $1::timestamptz
      WHERE d.status = 'in_flight' AND d.due_at > $1::timestamptz AND d.due_at <= $2::timestamptz
        AND (d.lease_id = ANY ($3::text[])
          OR (d.id, d.lease_id) IN (SELECT * FROM unnest($4::text[], $5::text[])))`,

    // One statement. `due` locks the oldest due deliveries of active endpoints, skipping rows another
    // lease holds (FOR UPDATE OF d SKIP LOCKED), and share-locks their webhooks, skipping one whose
    // row a setWebhookStatus (or a completion counting a failure) holds: a delivery is never leased
    // while its endpoint is being disabled. A row changed after the snapshot is re-checked on its
    // latest version, and the webhook columns come from that locked version. LIMIT counts only rows
    // that were locked. The RETURNING carries the old due time, so the answer keeps the lease order.
    // The webhook is read by a LATERAL subquery that locks its own row: a subquery with a locking
    // clause is never merged into the outer query, so the deliveries are read first, in the order
    // of keyhook_deliveries_due_idx, whatever the planner believes about the tables' sizes (joined
    // plainly, a planner without statistics started from the webhooks and read every queued
    // delivery of the endpoint for each lease).
    // $5 is the endpoint status that holds its deliveries (core's DELIVERY_RULES.hold), bound.
    //
    // docs/decisions.md §8.18, the endpoint rate: $6 is now in milliseconds since the epoch, $7, $8
    // and $9 core's ENDPOINT_RATE_RULE.early, .late and .spread. `rates` locks the slot rows of the limited
    // endpoints met (FOR UPDATE SKIP LOCKED: a concurrent claim that holds one paces that endpoint,
    // and this one leaves its deliveries as they are; it never waits, so no lock order can cycle).
    // `extra` locks up to $9 more due deliveries of each of those endpoints, beyond the LIMIT (SKIP
    // LOCKED, as `due`). `paced` is core's paceEndpoint in closed form, over each endpoint's due
    // deliveries met (`due`'s and `extra`'s) in due order: the slot is now without a next_at, else greatest(next_at, now - late); when it is at
    // most now + early the first delivery is leased and next_at moves one interval on (early +
    // late is below one interval, so at most one is). Of the others (r = 0, 1, …), the first takes
    // the next slot unless a delivery of the endpoint already waits for it (`taken`); the rest
    // (q = 0, 1, …) wait one interval apart from the slot after both the next one and queue_at, so
    // no slot is given twice; rounded up to the millisecond, and queue_at moves to the last one
    // given. Each delivery is in `due` once, so each row below is written once.
    // The usual claim, when no due delivery in reach belongs to an endpoint with a rate: `due` as
    // in `lease`, and only the unlimited endpoints' deliveries leased. `limited_met` counts the
    // limited ones `due` met (locked, and let go unchanged at the statement's end); when any,
    // the store claims again with `lease`, which paces them (docs/decisions.md §8.18). The pacing
    // CTEs are planned on every claim that carries them, even one that meets nothing, and most
    // claims meet nothing. This one is prepared: its plan is the same generic or custom.
    leaseUnlimited: leaseUnlimitedClaim(),
    leaseUnlimitedSkipping: leaseUnlimitedClaim('$6'),

    lease: leaseClaim(),
    leaseSkipping: leaseClaim('$10'),

    // Unlocked: only to learn which webhook to lock first (its id never changes), and whether its failure
    // count looks like it will change (which decides the lock; re-checked once locked).
    deliveryWebhook: `SELECT d.webhook_id, w.consecutive_failures
      FROM ${deliveries} AS d JOIN ${webhooks} AS w ON w.id = d.webhook_id
      WHERE d.id = $1 AND d.tenant_id = $2 AND d.lease_id = $3`,

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
      WHERE id = $1 AND tenant_id = $2 AND lease_id = $3
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
        WHERE d.id = $1 AND d.tenant_id = $2 AND d.lease_id = $9
        FOR SHARE OF w
      ),
      done AS (
        UPDATE ${deliveries}
        SET status = 'succeeded', due_at = NULL, held_since = NULL, lease_id = NULL,
            attempts = attempts + 1, last_attempt_at = $4, updated_at = $10
        WHERE id = $1 AND tenant_id = $2 AND lease_id = $9
          AND (SELECT consecutive_failures FROM w) = 0
        RETURNING ${DELIVERY_COLUMNS}
      ),
      logged AS (
        INSERT INTO ${attempts} (${ATTEMPT_COLUMNS})
        SELECT id, tenant_id, $3, $4, $5, $6, $7, $8 FROM done
      )
      SELECT (SELECT consecutive_failures FROM w) AS failures, done.*
      FROM (SELECT 1) AS one LEFT JOIN done ON true`,

    // completeSucceeded for many deliveries in one statement (the store's group commit): $1 is a
    // JSON array of them, one object each (SUCCESS_INPUT's fields, completeSucceeded's parameters). The webhooks are share-locked in id order before
    // any delivery is written, so two batches, or a batch and a completion that counts a failure,
    // take their locks in one order. One row per input, in input order: failures NULL for a lost
    // lease; done.id NULL when nothing was written. Each delivery is looked up on its own (a
    // LATERAL subquery with a LIMIT is never merged into a join), by primary key: a prepared
    // statement keeps the plan it made while the table was small, and a joined form of this
    // lookup was then planned as a scan of the whole table.
    completeSucceededBatch: `WITH ${successCtes('$1')}
${successRows('w.consecutive_failures AS failures, done.*')}      ORDER BY i.position`,

    // A batch of publishes and a batch of successes in one statement, one round trip and one
    // commit: the store's group commit when both wait at once. $1–$6 as in `publish`, $7 the
    // successes as in `completeSucceededBatch`; each part keeps its own statement's rules. The
    // two touch different deliveries (a success's delivery was leased before; a publish writes
    // new ones). Every webhook lock either part takes is a share lock, and share locks never wait
    // on each other. What locks a webhook row exclusively (a status change, a failure count, a
    // delete) locks nothing after it but that webhook's deliveries, so it cannot wait in a cycle
    // with this statement.
    // The publish rows come first (`success` false, as `publish` orders them), then one row per
    // success in input order (`success` true, with `failures` and the delivery columns of
    // `completeSucceededBatch`, NULL in every publish column).
    publishAndSucceed: `WITH ${publishCtes},
      ${successCtes('$7')}
${publishRows('false AS success, NULL::int AS failures, ')}      UNION ALL
${successRows(`true, w.consecutive_failures, i.position, NULL, NULL, NULL, NULL, done.*, ${noWebhook}`)}      ORDER BY success, position, webhook_id`,

    setFailures: `UPDATE ${webhooks} SET consecutive_failures = $2 WHERE id = $1`,

    // Whether to disable is core's autoDisables; the status ($4), the reason ($5) and the twin claim
    // that status makes ($6) are core's too (DELIVERY_RULES.hold, the completion's rule, claimsTwinKey).
    disableForFailures: `UPDATE ${webhooks}
      SET consecutive_failures = $2, status = $4, disabled_reason = $5,
        twin_claim = CASE WHEN $6::boolean THEN twin_key END, updated_at = $3,
        disabled_at = CASE WHEN $5::text IS NULL THEN NULL ELSE $3::timestamptz END
      WHERE id = $1
      RETURNING ${WEBHOOK_COLUMNS}`,

    // Run after the webhook's row is updated (locked) in the same transaction: see `publish`. $3 is
    // the state core's hold rule holds in (DELIVERY_RULES.hold), here and in `release`.
    hold: transition(
      `webhook_id = $1 AND status IN ('pending', 'retry_scheduled')`,
      `status = $3, due_at = NULL, held_since = $2, updated_at = $2`,
    ),

    release: transition(
      `webhook_id = $1 AND status = $3`,
      `status = 'pending', due_at = $2, held_since = NULL, updated_at = $2`,
    ),

    // docs/decisions.md §8.18: after the webhook's row is updated (locked) in the same transaction,
    // as `release` runs, its rate starts afresh: the slots given out are given up, and what waits
    // on them ($2 < due_at <= the end of those slots) is due at $2. The slot row after the webhook
    // row, the deliveries after both: a claim takes all three without waiting, so no cycle.
    resetRate: `WITH old AS MATERIALIZED (
        SELECT queue_at FROM ${rates} WHERE webhook_id = $1 FOR UPDATE
      ),
      reset AS (
        UPDATE ${rates} SET next_at = NULL, queue_at = NULL WHERE webhook_id = $1
      ),
      waiting AS MATERIALIZED (
        SELECT id FROM ${deliveries}
        WHERE webhook_id = $1 AND status IN ('pending', 'retry_scheduled') AND due_at > $2::timestamptz
          AND due_at <= 'epoch'::timestamptz + ceil((SELECT queue_at FROM old)) * interval '1 millisecond'
        ORDER BY id FOR UPDATE
      ),
      moved AS (
        UPDATE ${deliveries} AS d SET due_at = $2::timestamptz, updated_at = $2::timestamptz
        FROM waiting WHERE d.id = waiting.id
        RETURNING d.id
      )
      SELECT count(*)::int AS moved FROM moved`,

    // Schema, not rule: `status = 'held'` here and in countQueued is keyhook_deliveries_held_idx's
    // predicate (0004), which a bound state would not match (docs/decisions.md §10.4).
    expireHeld: transition(
      `status = 'held' AND held_since <= $1`,
      `status = 'failed', held_since = NULL, updated_at = $2`,
    ),

    // The queue-depth gauge, on each collection. Both counts read their partial index only (the
    // due index includes the status, migration 0010), never the finished rows.
    countQueued: `SELECT
        count(*) FILTER (WHERE status <> 'in_flight' AND due_at <= $1)::int AS due,
        count(*) FILTER (WHERE status <> 'in_flight' AND due_at > $1)::int AS scheduled,
        count(*) FILTER (WHERE status = 'in_flight')::int AS in_flight,
        (SELECT count(*) FROM ${deliveries} WHERE status = 'held')::int AS held
      FROM ${deliveries} WHERE status IN ('pending', 'retry_scheduled', 'in_flight')`,

    // A missing filter is a NULL parameter; pg sends unnamed statements, planned with their values,
    // so the index on (webhook_id, id) serves each variant.
    list: `SELECT ${DELIVERY_COLUMNS} FROM ${deliveries}
      WHERE tenant_id = $1 AND webhook_id = $2
        AND ($4::text IS NULL OR status = $4)
        AND ($5::text IS NULL OR id < $5)
        AND ($6::text IS NULL OR event_type = $6) AND ($7::text IS NULL OR event_id = $7)
        AND ($8::timestamptz IS NULL OR created_at >= $8) AND ($9::timestamptz IS NULL OR created_at < $9)
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
    // and checked on keyhook_deliveries_event_id_idx (0006).
    purgeEvents: `DELETE FROM ${events} WHERE (tenant_id, id) IN (
        SELECT tenant_id, id FROM ${events} AS e WHERE created_at <= $1
          AND NOT EXISTS (SELECT 1 FROM ${deliveries} AS d WHERE d.tenant_id = e.tenant_id AND d.event_id = e.id)
        ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,

    vacuumPurged: `VACUUM (SKIP_LOCKED) ${attempts}, ${deliveries}, ${events}`,

    requeue: `UPDATE ${deliveries}
      SET status = $2, due_at = $3, held_since = $4, lease_id = NULL, updated_at = $5
      WHERE id = $1
      RETURNING ${DELIVERY_COLUMNS}`,

    // Bulk recovery, one batch: the oldest $5 failed deliveries of webhook $1 (tenant $2) created
    // in [$3, $4), queued as `requeue` queues one ($6 status, $7 due, $8 held since, $9 at).
    // Read in order on keyhook_deliveries_failed_idx (0009), which holds failed deliveries only
    // (`status = 'failed'` is its predicate, which is what lets the planner use it): a batch reads
    // the entries it queues and stops. SKIP LOCKED passes over a row another recovery or an admin
    // retry holds, so concurrent recoveries neither wait nor deadlock on each other, and each row
    // is locked and re-checked on its latest version, so one another transaction queued meanwhile
    // is no longer failed and is left alone (and not counted against the limit). The chosen ids
    // come back as one array, so the write finds each by primary key: joined with the subquery,
    // on a table of 30,000 deliveries, the write was planned as a scan of all of them.
    recoverFailed: `UPDATE ${deliveries}
      SET status = $6, due_at = $7, held_since = $8, lease_id = NULL, updated_at = $9
      WHERE id = ANY (ARRAY(
        SELECT id FROM ${deliveries}
        WHERE webhook_id = $1 AND status = 'failed' AND tenant_id = $2
          AND created_at >= $3 AND created_at < $4 AND updated_at < $10
        ORDER BY created_at, id
        LIMIT $5
        FOR UPDATE SKIP LOCKED))`,
  };
}
