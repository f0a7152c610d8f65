import type { EndedLease, LeasedDelivery, LeaseRequest, RateWait } from '@keyhook/core/store';
import {
  DELIVERY_RULES,
  ENDPOINT_RATE_RULE,
  paceEndpoint,
  type RateSlots,
  rateWaitOf,
} from '@keyhook/core/store';
import {
  DELIVERY_COLUMNS,
  type DeliveryRow,
  EVENT_COLUMNS,
  EVENT_PREFIX,
  joinedEvent,
  qualified,
  toDeliveryRecord,
  WEBHOOK_PREFIX,
} from '../delivery-row.js';
import type { Queryable } from '../host-transaction.js';
import type { Prepare, Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';
import { WEBHOOK_VERSION } from '../webhook-cache.js';

const { hold } = DELIVERY_RULES;

// The lease's answer when it leased nothing: its rate summary, NULL in every other column (the
// delivery's, its endpoint's version, the event's).
const noLease = [DELIVERY_COLUMNS, 'webhook_version', EVENT_COLUMNS]
  .flatMap((columns) => columns.split(', '))
  .map(() => 'NULL')
  .join(', ');

// The claim's head, shared by leaseUnlimited and lockPaced: the due deliveries of endpoints that
// are not held, oldest due first, locked, with their webhook's id, rate and row version (see
// `statements` for why so; the version finds the endpoint in the store's cache,
// src/webhook-cache.ts). `p` names the parameters: now, the limit, the hold status and, when
// given, the endpoints the worker's cap leaves (LeaseRequest.skipEndpoints).
interface DueParams {
  now: string;
  limit: string;
  hold: string;
  skip?: string;
}
const dueClaim = (t: Tables, p: DueParams) => `due AS MATERIALIZED (
        SELECT d.id, d.due_at AS was_due, ${qualified('w', 'id, rate_per_second, version', WEBHOOK_PREFIX)}
        FROM ${t.deliveries} AS d
        CROSS JOIN LATERAL (
          SELECT id, rate_per_second, ${WEBHOOK_VERSION} AS version FROM ${t.webhooks}
          WHERE id = d.webhook_id AND status <> ${p.hold}
          FOR SHARE SKIP LOCKED
        ) AS w
        WHERE d.status IN ('pending', 'retry_scheduled', 'in_flight')
          AND d.due_at <= ${p.now}::timestamptz${
            p.skip === undefined
              ? ''
              : `
          AND d.webhook_id <> ALL (${p.skip}::text[])`
          }
        ORDER BY d.due_at, d.id
        LIMIT ${p.limit}
        FOR UPDATE OF d SKIP LOCKED
      ),
`;

// The plain claim, with or without `skip` (see `statements`).
const leaseUnlimitedClaim = (
  t: Tables,
  skip?: string,
) => `WITH ${dueClaim(t, { now: '$1', limit: '$2', hold: '$5', skip })}      leased AS (
        UPDATE ${t.deliveries} AS d
        SET status = 'in_flight', lease_id = $3, due_at = $4::timestamptz, updated_at = $1::timestamptz
        FROM due WHERE d.id = due.id AND due.${WEBHOOK_PREFIX}rate_per_second IS NULL
        RETURNING ${qualified('d', DELIVERY_COLUMNS)}
      ),
      met AS (
        SELECT count(*)::int AS limited_met FROM due WHERE ${WEBHOOK_PREFIX}rate_per_second IS NOT NULL
      )
      SELECT (SELECT limited_met FROM met) AS limited_met, due.was_due AS lease_order,
        leased.*, due.${WEBHOOK_PREFIX}version AS webhook_version, ${qualified('e', EVENT_COLUMNS, EVENT_PREFIX)}
      FROM leased
      JOIN due ON due.id = leased.id
      JOIN ${t.events} AS e ON e.tenant_id = leased.tenant_id AND e.id = leased.event_id
      UNION ALL
      SELECT limited_met, NULL, ${noLease}
      FROM met WHERE NOT EXISTS (SELECT 1 FROM leased)
      ORDER BY lease_order, id`;

// The paced claim's locks and reads, with or without `skip` (see `statements`).
const lockPacedClaim = (
  t: Tables,
  skip?: string,
) => `WITH ${dueClaim(t, { now: '$1', limit: '$2', hold: '$3', skip })}      rates AS MATERIALIZED (
        SELECT r.webhook_id, r.next_at, r.queue_at FROM ${t.rates} AS r
        WHERE r.webhook_id IN (SELECT ${WEBHOOK_PREFIX}id FROM due WHERE ${WEBHOOK_PREFIX}rate_per_second IS NOT NULL)
        ORDER BY r.webhook_id
        FOR UPDATE SKIP LOCKED
      ),
      extra AS MATERIALIZED (
        SELECT x.id, x.was_due, r.webhook_id
        FROM rates AS r
        CROSS JOIN LATERAL (
          SELECT d.id, d.due_at AS was_due FROM ${t.deliveries} AS d
          WHERE d.webhook_id = r.webhook_id
            AND d.status IN ('pending', 'retry_scheduled', 'in_flight')
            AND d.due_at <= $1::timestamptz
            AND d.id <> ALL (ARRAY(SELECT id FROM due))
          ORDER BY d.due_at, d.id
          LIMIT $4
          FOR UPDATE SKIP LOCKED
        ) AS x
      )
      SELECT m.id, m.webhook_id, m.per_second, r.webhook_id IS NOT NULL AS paced, r.next_at, r.queue_at
      FROM (
        SELECT id, was_due, ${WEBHOOK_PREFIX}id AS webhook_id, ${WEBHOOK_PREFIX}rate_per_second AS per_second FROM due
        UNION ALL
        SELECT id, was_due, webhook_id, NULL FROM extra
      ) AS m
      LEFT JOIN rates AS r ON r.webhook_id = m.webhook_id
      ORDER BY m.was_due, m.id`;

export const statements = (t: Tables, prepare: Prepare) => ({
  // LeaseRequest.endLeases: leases a worker gives up end now, as if they had run out, so their
  // deliveries are due at once. $1 now, $2 the latest end a live lease can have (now + leaseMs),
  // so the due index finds them; $3 leases ended whole, $4 and $5 single deliveries with theirs.
  endLeases: `UPDATE ${t.deliveries} AS d SET due_at = $1::timestamptz
      WHERE d.status = 'in_flight' AND d.due_at > $1::timestamptz AND d.due_at <= $2::timestamptz
        AND (d.lease_id = ANY ($3::text[])
          OR (d.id, d.lease_id) IN (SELECT * FROM unnest($4::text[], $5::text[])))`,

  // The plain claim, one statement. `due` locks the oldest due deliveries of active endpoints,
  // skipping rows another lease holds (FOR UPDATE OF d SKIP LOCKED), and share-locks their
  // webhooks, skipping one whose row a setWebhookStatus (or a completion counting a failure)
  // holds: a delivery is never leased while its endpoint is being disabled. A row changed after
  // the snapshot is re-checked on its latest version, and the webhook's version comes from that
  // locked version. LIMIT counts only rows that were locked. The RETURNING carries the old due
  // time, so the answer keeps the lease order. The webhook is read by a LATERAL subquery that
  // locks its own row: a subquery with a locking clause is never merged into the outer query, so
  // the deliveries are read first, in the order of keyhook_deliveries_due_idx, whatever the
  // planner believes about the tables' sizes (joined plainly, a planner without statistics
  // started from the webhooks and read every queued delivery of the endpoint for each lease).
  // $5 is the endpoint status that holds its deliveries (core's DELIVERY_RULES.hold), bound.
  // Only the unlimited endpoints' deliveries are leased; `limited_met` counts the limited ones
  // `due` met (locked, and let go unchanged at the statement's end): when any, the store runs the
  // paced claim (docs/decisions.md §8.18). Prepared: its plan is the same generic or custom.
  leaseUnlimited: prepare(leaseUnlimitedClaim(t)),
  /** `leaseUnlimited` with $6 the endpoints the worker's cap leaves. */
  leaseUnlimitedSkipping: leaseUnlimitedClaim(t, '$6'),

  // The paced claim (docs/decisions.md §8.18), one transaction: these locks, core's paceEndpoint
  // per endpoint, then `pace`. `due` as above ($3 the hold status); `rates` locks the limited
  // endpoints' slot rows, `extra` up to $4 (the rule's spread) more due deliveries of each. Every
  // lock is SKIP LOCKED, taken in this order (deliveries, webhooks, slot rows, deliveries): a claim
  // never waits, so no lock order can cycle, and one that holds an endpoint's slot row paces it
  // while the others leave its deliveries as they are. Rows in due order, `paced` when their
  // endpoint's slot row is held. Unnamed: a generic plan walks the due index for `extra`.
  lockPaced: lockPacedClaim(t),
  /** `lockPaced` with $5 the endpoints the worker's cap leaves. */
  lockPacedSkipping: lockPacedClaim(t, '$5'),

  // paceEndpoint's slotTaken, for every endpoint at once: which of the ($1, $2) pairs has a
  // delivery of that webhook already waiting for that due time. Answers with their ordinals.
  slotsTaken: prepare(`SELECT x.n::int AS n
      FROM unnest($1::text[], $2::timestamptz[]) WITH ORDINALITY AS x(webhook_id, due_at, n)
      WHERE EXISTS (
        SELECT 1 FROM ${t.deliveries} AS h
        WHERE h.due_at = x.due_at AND h.webhook_id = x.webhook_id AND h.status IN ('pending', 'retry_scheduled')
      )`),

  // What paceEndpoint decided, written under the locks above: the deferred deliveries' due times
  // ($5, $6), the slot rows' pointers ($7, $8, $9), and the leases ($4, in lease order), answered
  // in that order with their event and their webhook's row version (the webhook rows are
  // share-locked, so as read).
  pace: prepare(`WITH deferred AS (
        UPDATE ${t.deliveries} AS d SET due_at = x.due_at, updated_at = $1::timestamptz
        FROM unnest($5::text[], $6::timestamptz[]) AS x(id, due_at) WHERE d.id = x.id
      ),
      advanced AS (
        UPDATE ${t.rates} AS r SET next_at = x.next_at, queue_at = x.queue_at
        FROM unnest($7::text[], $8::float8[], $9::float8[]) AS x(webhook_id, next_at, queue_at)
        WHERE r.webhook_id = x.webhook_id
      ),
      leased AS (
        UPDATE ${t.deliveries} AS d
        SET status = 'in_flight', lease_id = $2, due_at = $3::timestamptz, updated_at = $1::timestamptz
        FROM unnest($4::text[]) WITH ORDINALITY AS x(id, n) WHERE d.id = x.id
        RETURNING x.n AS lease_order, ${qualified('d', DELIVERY_COLUMNS)}
      )
      SELECT leased.*, w.${WEBHOOK_VERSION} AS webhook_version, ${qualified('e', EVENT_COLUMNS, EVENT_PREFIX)}
      FROM leased
      JOIN ${t.webhooks} AS w ON w.id = leased.webhook_id
      JOIN ${t.events} AS e ON e.tenant_id = leased.tenant_id AND e.id = leased.event_id
      ORDER BY leased.lease_order`),
});

/** One row of a claim's answer: the delivery as leased, its event and its webhook's row version. */
type LeaseRow = DeliveryRow & { webhook_version: string } & Record<string, unknown>;

/**
 * A claim's rows as leased deliveries, each endpoint from the store's cache by its row's version
 * (src/webhook-cache.ts), read on `client`; a row without a delivery (the plain claim's summary)
 * is none, and so is one whose endpoint was deleted since (its deliveries went with it).
 */
async function leasedRows(
  ctx: StoreContext,
  client: Queryable,
  rows: readonly LeaseRow[],
): Promise<LeasedDelivery[]> {
  const claimed = rows.filter((row) => row.id !== null);
  if (claimed.length === 0) return [];
  const webhooks = await ctx.webhooks.resolve(
    ctx,
    client,
    claimed.map((row) => [row.tenant_id, row.webhook_id, row.webhook_version] as const),
  );
  return claimed.flatMap((row, k) => {
    const webhook = webhooks[k];
    return webhook ? [{ delivery: toDeliveryRecord(row), event: joinedEvent(row), webhook }] : [];
  });
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
    leased = await leasedRows(ctx, ctx.pool, plain.rows);
    if (!plain.rows[0]?.limited_met) return leased;
  }
  const paced = await ctx.transaction((client) =>
    leasePaced(ctx, client, request, request.limit - leased.length, leaseEnds, skip),
  );
  // Once committed: a limited endpoint paced means it has work, and its worker hears its slots.
  ctx.pacing = paced.wait !== null;
  if (paced.wait) request.onRateWait?.(paced.wait);
  return [...leased, ...paced.leased];
}

/** One row of lockPaced. */
interface LockedRow {
  id: string;
  webhook_id: string;
  per_second: number | null;
  paced: boolean;
  next_at: number | null;
  queue_at: number | null;
}

/** An endpoint the claim paces: its slots, its limit, and its deliveries met, in due order. */
interface PacedEndpoint {
  slots: RateSlots;
  perSecond: number;
  ids: string[];
}

/**
 * The paced claim (docs/decisions.md §8.18) in the caller's transaction: lock, pace each endpoint
 * whose slot row it holds with core's paceEndpoint, write. `wait`: null when it paced none.
 */
async function leasePaced(
  ctx: StoreContext,
  client: Queryable,
  request: LeaseRequest,
  limit: number,
  leaseEnds: Date,
  skip: unknown[],
): Promise<{ leased: LeasedDelivery[]; wait: RateWait | null }> {
  const sql = ctx.sql(statements);
  const rule = request.rate ?? ENDPOINT_RATE_RULE;
  const now = request.now.getTime();
  const { rows } = await ctx.run<LockedRow>(client, skip.length ? sql.lockPacedSkipping : sql.lockPaced, [
    request.now,
    limit,
    hold.endpointStatus,
    rule.spread,
    ...skip,
  ]);
  const endpoints = new Map<string, PacedEndpoint>();
  for (const row of rows) {
    if (!row.paced) continue;
    let endpoint = endpoints.get(row.webhook_id);
    if (endpoint === undefined) {
      endpoint = { slots: { nextAt: row.next_at, queueAt: row.queue_at }, perSecond: 0, ids: [] };
      endpoints.set(row.webhook_id, endpoint);
    }
    if (row.per_second !== null) endpoint.perSecond = row.per_second;
    endpoint.ids.push(row.id);
  }
  // The slots paceEndpoint asks about, asked of the store at once, then paced with the answers.
  const pace = (endpoint: PacedEndpoint, slotTaken: (dueAt: number) => boolean) =>
    paceEndpoint(
      endpoint.slots,
      { perSecond: endpoint.perSecond },
      now,
      rule,
      endpoint.ids.length,
      slotTaken,
    );
  const asked: { webhookId: string; dueAt: number }[] = [];
  for (const [webhookId, endpoint] of endpoints) {
    const trial = { ...endpoint, slots: { ...endpoint.slots } };
    pace(trial, (dueAt) => {
      asked.push({ webhookId, dueAt });
      return false;
    });
  }
  const taken = new Set<string>();
  if (asked.length > 0) {
    const answer = await ctx.run<{ n: number }>(client, sql.slotsTaken, [
      asked.map((ask) => ask.webhookId),
      asked.map((ask) => new Date(ask.dueAt)),
    ]);
    for (const { n } of answer.rows) taken.add(`${asked[n - 1]!.webhookId} ${asked[n - 1]!.dueAt}`);
  }
  const refused = new Map<string, number>();
  const nextSlots: number[] = [];
  for (const [webhookId, endpoint] of endpoints) {
    pace(endpoint, (dueAt) => taken.has(`${webhookId} ${dueAt}`)).forEach((decision, i) => {
      if (!decision.lease) refused.set(endpoint.ids[i]!, decision.dueAt);
    });
    nextSlots.push(endpoint.slots.nextAt ?? now);
  }
  // Leased: the unlimited endpoints' deliveries and those paceEndpoint leased, in due order.
  const leasing = rows
    .filter((row) => (row.per_second === null && !row.paced) || (row.paced && !refused.has(row.id)))
    .map((row) => row.id);
  if (leasing.length === 0 && endpoints.size === 0) return { leased: [], wait: null };
  const rates = [...endpoints];
  const result = await ctx.run<LeaseRow>(client, sql.pace, [
    request.now,
    request.leaseId,
    leaseEnds,
    leasing,
    [...refused.keys()],
    [...refused.values()].map((dueAt) => new Date(dueAt)),
    rates.map(([webhookId]) => webhookId),
    rates.map(([, endpoint]) => endpoint.slots.nextAt),
    rates.map(([, endpoint]) => endpoint.slots.queueAt),
  ]);
  const wait = endpoints.size > 0 ? rateWaitOf(refused.size, nextSlots) : null;
  return { leased: await leasedRows(ctx, client, result.rows), wait };
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
