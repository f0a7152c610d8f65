import type { EndedLease, LeasedDelivery, LeaseRequest } from '@keyhook/core/store';
import { DELIVERY_RULES, ENDPOINT_RATE_RULE } from '@keyhook/core/store';
import {
  DELIVERY_COLUMNS,
  type DeliveryRow,
  EVENT_COLUMNS,
  EVENT_PREFIX,
  joinedEvent,
  joinedWebhook,
  qualified,
  toDeliveryRecord,
  WEBHOOK_PREFIX,
} from '../delivery-row.js';
import type { Prepare, Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';
import { WEBHOOK_COLUMNS } from '../webhook-row.js';

const { hold } = DELIVERY_RULES;

// The webhook columns `due` read from the locked row, under their prefixed names.
const leasedWebhook = WEBHOOK_COLUMNS.split(', ')
  .map((column) => `due.${WEBHOOK_PREFIX}${column}`)
  .join(', ');

// The lease's answer when it leased nothing: its rate summary, NULL in every other column.
const noLease = [DELIVERY_COLUMNS, WEBHOOK_COLUMNS, EVENT_COLUMNS]
  .flatMap((columns) => columns.split(', '))
  .map(() => 'NULL')
  .join(', ');

// The claim's head, shared by leaseUnlimited and lease: the due deliveries of endpoints that are
// not held, oldest due first, locked, with their webhook's columns (see lease for why so).
// `skip`, when given, is the parameter of the endpoints the worker's cap leaves (LeaseRequest.skipEndpoints).
const dueClaim = (t: Tables, skip?: string) => `due AS MATERIALIZED (
        SELECT d.id, d.due_at AS was_due, ${qualified('w', WEBHOOK_COLUMNS, WEBHOOK_PREFIX)}
        FROM ${t.deliveries} AS d
        CROSS JOIN LATERAL (
          SELECT ${WEBHOOK_COLUMNS} FROM ${t.webhooks}
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

// The plain claim and the pacing claim, with or without `skip` (see `statements` for both).
const leaseUnlimitedClaim = (t: Tables, skip?: string) => `WITH ${dueClaim(t, skip)}      leased AS (
        UPDATE ${t.deliveries} AS d
        SET status = 'in_flight', lease_id = $3, due_at = $4::timestamptz, updated_at = $1::timestamptz
        FROM due WHERE d.id = due.id AND due.${WEBHOOK_PREFIX}rate_per_second IS NULL
        RETURNING ${qualified('d', DELIVERY_COLUMNS)}
      ),
      met AS (
        SELECT count(*)::int AS limited_met FROM due WHERE ${WEBHOOK_PREFIX}rate_per_second IS NOT NULL
      )
      SELECT (SELECT limited_met FROM met) AS limited_met, due.was_due AS lease_order,
        leased.*, ${leasedWebhook}, ${qualified('e', EVENT_COLUMNS, EVENT_PREFIX)}
      FROM leased
      JOIN due ON due.id = leased.id
      JOIN ${t.events} AS e ON e.tenant_id = leased.tenant_id AND e.id = leased.event_id
      UNION ALL
      SELECT limited_met, NULL, ${noLease}
      FROM met WHERE NOT EXISTS (SELECT 1 FROM leased)
      ORDER BY lease_order, id`;

const leaseClaim = (t: Tables, skip?: string) => `WITH ${dueClaim(t, skip)}      rates AS MATERIALIZED (
        SELECT r.webhook_id, r.next_at, r.queue_at FROM ${t.rates} AS r
        WHERE r.webhook_id IN (SELECT ${WEBHOOK_PREFIX}id FROM due WHERE ${WEBHOOK_PREFIX}rate_per_second IS NOT NULL)
        ORDER BY r.webhook_id
        FOR UPDATE SKIP LOCKED
      ),
      extra AS MATERIALIZED (
        SELECT x.id, x.was_due, r.webhook_id, NULL::float8 AS rate
        FROM rates AS r
        CROSS JOIN LATERAL (
          SELECT d.id, d.due_at AS was_due FROM ${t.deliveries} AS d
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
            SELECT 1 FROM ${t.deliveries} AS h
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
        UPDATE ${t.deliveries} AS d
        SET due_at = 'epoch'::timestamptz
            + ceil(CASE WHEN p.q < 0 THEN p.next ELSE p.base + p.q * p.step END) * interval '1 millisecond',
          updated_at = $1::timestamptz
        FROM paced AS p WHERE d.id = p.id AND NOT p.leased
      ),
      advanced AS (
        UPDATE ${t.rates} AS r
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
        UPDATE ${t.deliveries} AS d
        SET status = 'in_flight', lease_id = $3, due_at = $4::timestamptz, updated_at = $1::timestamptz
        FROM chosen WHERE d.id = chosen.id
        RETURNING ${qualified('d', DELIVERY_COLUMNS)}
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
      JOIN ${t.events} AS e ON e.tenant_id = leased.tenant_id AND e.id = leased.event_id
      UNION ALL
      SELECT rate_deferred, rate_next_slot, rate_next_slots, NULL, ${noLease}
      FROM summary WHERE NOT EXISTS (SELECT 1 FROM leased)
      ORDER BY lease_order, id`;

export const statements = (t: Tables, prepare: Prepare) => ({
  // LeaseRequest.endLeases: leases a worker gives up end now, as if they had run out, so their
  // deliveries are due at once. $1 now, $2 the latest end a live lease can have (now + leaseMs),
  // so the due index finds them; $3 leases ended whole, $4 and $5 single deliveries with theirs.
  endLeases: `UPDATE ${t.deliveries} AS d SET due_at = $1::timestamptz
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
  leaseUnlimited: prepare(leaseUnlimitedClaim(t)),
  /** `lease` and `leaseUnlimited` with $10 and $6 the endpoints the worker's cap leaves. */
  leaseUnlimitedSkipping: leaseUnlimitedClaim(t, '$6'),

  lease: leaseClaim(t),
  leaseSkipping: leaseClaim(t, '$10'),
});

/** The rate summary the lease statement's rows carry (docs/decisions.md §8.18). */
interface RateSummaryRow {
  rate_deferred: number;
  /** Milliseconds since the epoch; null when the claim met no limited endpoint. */
  rate_next_slot: number | null;
  rate_next_slots: number[] | null;
}

/** One row of the lease statement: the delivery as leased, its event and its webhook. */
type LeaseRow = DeliveryRow & Record<string, unknown>;

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

export async function leaseDeliveries(ctx: StoreContext, request: LeaseRequest): Promise<LeasedDelivery[]> {
  const sql = ctx.sql(statements);
  const leaseEnds = new Date(request.now.getTime() + request.leaseMs);
  if (request.endLeases?.length) await endLeases(ctx, request.now, leaseEnds, request.endLeases);
  // The endpoints the worker's cap leaves go as one more parameter, to a claim of their own.
  const skip = request.skipEndpoints?.length ? [request.skipEndpoints] : [];
  let leased: LeasedDelivery[] = [];
  if (!ctx.pacing) {
    // Most claims meet no endpoint with a rate: the plain claim leases those and says whether
    // it met any that has one (leaseUnlimited).
    const plain = await ctx.query<LeaseRow & { limited_met: number }>(
      skip.length ? sql.leaseUnlimitedSkipping : sql.leaseUnlimited,
      [request.now, request.limit, request.leaseId, leaseEnds, hold.endpointStatus, ...skip],
    );
    leased = leasedRows(plain.rows);
    if (!plain.rows[0]?.limited_met) return leased;
  }
  const rule = request.rate ?? ENDPOINT_RATE_RULE;
  const result = await ctx.query<LeaseRow & RateSummaryRow>(skip.length ? sql.leaseSkipping : sql.lease, [
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
  ]);
  // One row at least: the rate summary, with no delivery when nothing was leased.
  const summary = result.rows[0];
  // A slot given out (a delivery leased or made to wait) means a limited endpoint with work.
  ctx.pacing = summary !== undefined && summary.rate_next_slot !== null;
  if (summary && summary.rate_next_slot !== null) {
    request.onRateWait?.({
      deferred: summary.rate_deferred,
      nextSlotAt: new Date(summary.rate_next_slot),
      nextSlots: (summary.rate_next_slots ?? []).map((at) => new Date(at)),
    });
  }
  return [...leased, ...leasedRows(result.rows)];
}

/** LeaseRequest.endLeases, in one statement before the claim (`endLeases`). */
async function endLeases(
  ctx: StoreContext,
  now: Date,
  latestEnd: Date,
  ended: readonly EndedLease[],
): Promise<void> {
  const whole = ended.filter((lease) => lease.deliveryId === undefined).map((lease) => lease.leaseId);
  const single = ended.filter((lease) => lease.deliveryId !== undefined);
  await ctx.query(ctx.sql(statements).endLeases, [
    now,
    latestEnd,
    whole,
    single.map((lease) => lease.deliveryId),
    single.map((lease) => lease.leaseId),
  ]);
}
