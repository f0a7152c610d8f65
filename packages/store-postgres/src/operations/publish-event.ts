import type {
  AttemptCompletion,
  DeliveryRecord,
  DeliveryStatus,
  EventRecord,
  LeasedDelivery,
  PublishLease,
  PublishOutcome,
  WebhookStatus,
} from '@keyhook/core/store';
import { DELIVERY_RULES, newDeliveryRecord } from '@keyhook/core/store';
import { answer, type Cells } from '../answer.js';
import { DELIVERY_COLUMNS, EVENT_COLUMNS, type EventRow, toEventRecord } from '../delivery-row.js';
import { joinTransaction, type Queryable, refused, sqlStateOf } from '../host-transaction.js';
import { DELIVERY_CHANNEL } from '../shared-statements.js';
import type { Prepare, Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';
import { fromEpochMs } from '../timestamps.js';
import { toStoreError, unavailable } from '../unavailable.js';
import { WEBHOOK_VERSION } from '../webhook-cache.js';
import {
  SUCCESS_ONLY,
  type SuccessOutcome,
  successCtes,
  successInput,
  successOutcome,
  successRows,
} from './complete-attempt.js';

const { hold } = DELIVERY_RULES;

/** The savepoint publishEvent runs under inside a caller's transaction. */
const PUBLISH_SAVEPOINT = 'keyhook_publish';

/** One event of a batched publish, as the fields of its object in the statement's JSON input; times in epoch ms (fromEpochMs). */
const PUBLISH_INPUT =
  'position int, tenant_id text, id text, type text, payload text, created_at bigint, trace_context text, ' +
  'lease_id text, lease_limit int, lease_ends bigint, first_id int, ids int';

/**
 * What a publish returns of each delivery it wrote: its id, endpoint and state (with the
 * endpoint's status, read beside them). The rest of the record follows from the event, the lease
 * and that status by core's newDeliveryRecord, the rule the statement's INSERT is the Postgres
 * form of (publishedOutcome).
 */
const WRITTEN_COLUMNS = 'id, webhook_id, status, tenant_id, event_id';
/**
 * What a publish reads of each endpoint it locks: what decides its deliveries, and its row's
 * version, by which a leased delivery's endpoint comes from the store's cache (src/webhook-cache.ts).
 */
const SUBSCRIBER_COLUMNS = `id, tenant_id, events, status, rate_per_second, ${WEBHOOK_VERSION} AS version`;

/**
 * A publish's answer, read by position (src/answer.ts): one row per delivery written, or one of
 * NULL delivery cells for an event without. The event's verdict (`fits`, `subscribers`,
 * `inserted`, and the NOTIFY), the delivery's id, endpoint and state, the endpoint's status as
 * the statement read it under its lock, and the version of the endpoint's row when the publish
 * leased the delivery (its worker needs the endpoint). Every publish statement answers in these
 * positions.
 */
const publishColumns = (position: string, inserted: string, notified: string) =>
  [
    [position, 'position'],
    ['c.fits', 'fits'],
    ['c.subscribers', 'subscribers'],
    [inserted, 'inserted'],
    [notified, 'notified'],
    ['written.id', 'id'],
    ['written.webhook_id', 'webhook_id'],
    ['written.status', 'status'],
    ['ws.status', 'webhook_status'],
    ["CASE WHEN written.status = 'in_flight' THEN ws.version END", 'webhook_version'],
  ] as const;
const notifyPending = (channel: string, payload: string) =>
  `(SELECT pg_notify(${channel}, ${payload}) WHERE EXISTS (SELECT 1 FROM written WHERE status = 'pending'))`;
const batchColumns = publishColumns('i.position', 'ins.id IS NOT NULL', notifyPending('$3', '$4'));
const PUBLISH = answer(batchColumns);
/** `publishOne`'s; its NOTIFY's column read as text for a data layer that cannot read `void` (Prisma). */
const PUBLISH_ONE = answer(
  publishColumns('1', 'EXISTS (SELECT 1 FROM inserted)', notifyPending('$11', '$12')),
);
const PUBLISH_ONE_TEXT = answer(
  publishColumns('1', 'EXISTS (SELECT 1 FROM inserted)', `${notifyPending('$11', '$12')}::text`),
);
/**
 * publishAndSucceed's: a publish's cells, then whether the row is a success's, and a success's
 * failure count and delivery columns (NULL in a publish row).
 */
const PUBLISH_AND_SUCCEED = answer([
  ...batchColumns,
  ['false', 'success'],
  ['NULL::int', 'consecutive_failures'],
  ...SUCCESS_ONLY.map((column) => ['NULL', column] as const),
]);
/** A success row of publishAndSucceed: its own cells where it has them, NULL in every publish one. */
const successCells: Record<string, string> = {
  position: 'i.position',
  id: 'done.id',
  webhook_id: 'done.webhook_id',
  success: 'true',
  consecutive_failures: 'w.consecutive_failures',
  ...Object.fromEntries(SUCCESS_ONLY.map((column) => [column, `done.${column}`])),
};
const successSelect = PUBLISH_AND_SUCCEED.names.map((name) => successCells[name] ?? 'NULL').join(', ');
/** Where a publish row's cells are, in the answer of any publish statement. */
const P = PUBLISH.at;
const S = PUBLISH_AND_SUCCEED.at;

// The publish statement's parts (see `publish` below), which publishAndSucceed shares.
const publishCtes = (t: Tables) => `input AS MATERIALIZED (
        SELECT i.position, i.tenant_id, i.id, i.type, i.payload, ${fromEpochMs('i.created_at')} AS created_at,
          i.trace_context, i.lease_id, i.lease_limit, ${fromEpochMs('i.lease_ends')} AS lease_ends, i.first_id, i.ids
        FROM json_to_recordset($1::json) AS i(${PUBLISH_INPUT})
      ),
      subscribers AS MATERIALIZED (
        SELECT ${SUBSCRIBER_COLUMNS} FROM ${t.webhooks}
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
        INSERT INTO ${t.events} (${EVENT_COLUMNS})
        SELECT i.tenant_id, i.id, i.type, i.payload, i.created_at, i.trace_context
        FROM input AS i JOIN counted AS c ON c.position = i.position AND c.fits
        ORDER BY i.position
        ON CONFLICT (tenant_id, id) DO NOTHING
        RETURNING tenant_id, id
      ),
      written AS (
        INSERT INTO ${t.deliveries} (${DELIVERY_COLUMNS})
        SELECT ($2::text[])[i.first_id + p.rank - 1], i.tenant_id, p.webhook_id, i.id, i.type, p.status, 0,
          CASE p.status WHEN 'pending' THEN i.created_at WHEN 'in_flight' THEN i.lease_ends END,
          CASE WHEN p.status = 'in_flight' THEN i.lease_id END,
          CASE WHEN p.status = $6 THEN i.created_at END,
          NULL, i.created_at, i.created_at
        FROM pairs AS p
        JOIN input AS i ON i.position = p.position
        JOIN inserted AS ins ON ins.tenant_id = i.tenant_id AND ins.id = i.id
        RETURNING ${WRITTEN_COLUMNS}
      )`;
const publishRows = (select: string) => `      SELECT ${select}
      FROM input AS i
      JOIN counted AS c ON c.position = i.position
      LEFT JOIN inserted AS ins ON ins.tenant_id = i.tenant_id AND ins.id = i.id
      LEFT JOIN written ON written.tenant_id = i.tenant_id AND written.event_id = i.id
      LEFT JOIN subscribers AS ws ON ws.id = written.webhook_id
`;

const publishOne = (t: Tables, asText: boolean) => `WITH subscribers AS MATERIALIZED (
        SELECT ${SUBSCRIBER_COLUMNS} FROM ${t.webhooks}
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
        INSERT INTO ${t.events} (${EVENT_COLUMNS})
        SELECT $1::text, $2::text, $3::text, $4::text, $5::timestamptz, $6::text FROM counted WHERE fits
        ON CONFLICT (tenant_id, id) DO NOTHING
        RETURNING id
      ),
      written AS (
        INSERT INTO ${t.deliveries} (${DELIVERY_COLUMNS})
        SELECT ($10::text[])[p.rank], $1::text, p.webhook_id, ins.id, $3::text, p.status, 0,
          CASE p.status WHEN 'pending' THEN $5::timestamptz WHEN 'in_flight' THEN $9::timestamptz END,
          CASE WHEN p.status = 'in_flight' THEN $7::text END,
          CASE WHEN p.status = $14 THEN $5::timestamptz END,
          NULL, $5::timestamptz, $5::timestamptz
        FROM pairs AS p CROSS JOIN inserted AS ins
        RETURNING ${WRITTEN_COLUMNS}
      )
      SELECT ${(asText ? PUBLISH_ONE_TEXT : PUBLISH_ONE).select}
      FROM counted AS c
      LEFT JOIN written ON true
      LEFT JOIN subscribers AS ws ON ws.id = written.webhook_id
      ORDER BY written.webhook_id`;

/**
 * The publish statements, all but publishOneText prepared: they run for every event. Also what
 * the store's group commit of publishes and successes sends (src/write-queue.ts).
 */
export const statements = (t: Tables, prepare: Prepare) => ({
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
  // One row per written delivery, by event and webhook id, with the version of the endpoint's
  // row when it was leased (PUBLISH); one row of NULL delivery cells for an event without.
  publish: prepare(`WITH ${publishCtes(t)}
${publishRows(PUBLISH.select)}      ORDER BY i.position, written.webhook_id`),

  // `publish` for one event, its columns bound one by one: $1–$6 the event's (EVENT_COLUMNS),
  // $7–$9 its lease's id, limit and end (NULL without one), $10 the delivery ids, $11 and $12
  // the NOTIFY's channel and payload, $13 and $14 core's hold rule. The same rules and the same
  // rows as `publish` (position 1); without the JSON input, the positions and their joins, a
  // lone publish costs Postgres about a third less (docs/decisions.md §8.19).
  publishOne: prepare(publishOne(t, false)),
  /** `publishOne` with its NOTIFY's column read as text: for a data layer that cannot read a `void` column (Prisma). */
  publishOneText: publishOne(t, true),

  // A new statement after the insert found a conflict, so its snapshot holds the committed winner.
  getEvent: prepare(`SELECT ${EVENT_COLUMNS} FROM ${t.events} WHERE tenant_id = $1 AND id = $2`),

  // A batch of publishes and a batch of successes in one statement, one round trip and one
  // commit: the store's group commit when both wait at once. $1–$6 as in `publish`, $7 the
  // successes as in completeAttempt's `completeSucceededBatch`; each part keeps its own statement's rules. The
  // two touch different deliveries (a success's delivery was leased before; a publish writes
  // new ones). Every webhook lock either part takes is a share lock, and share locks never wait
  // on each other. What locks a webhook row exclusively (a status change, a failure count, a
  // delete) locks nothing after it but that webhook's deliveries, so it cannot wait in a cycle
  // with this statement.
  // The publish rows come first (`success` false, as `publish` orders them), then one row per
  // success in input order (`success` true, with the failure count and the delivery columns of
  // `completeSucceededBatch`, NULL in every publish column; PUBLISH_AND_SUCCEED).
  publishAndSucceed: prepare(`WITH ${publishCtes(t)},
      ${successCtes(t, '$7')}
${publishRows(PUBLISH_AND_SUCCEED.select)}      UNION ALL
${successRows(successSelect)}      ORDER BY success, position, webhook_id`),
});

/** SQLSTATE 25P01, no_active_sql_transaction: what SAVEPOINT answers outside BEGIN … COMMIT. */
const NO_ACTIVE_TRANSACTION = '25P01';
/** SQLSTATEs 3F000 and 42P01: the caller's connection has no store schema (another database). */
const INVALID_SCHEMA_NAME = '3F000';
const UNDEFINED_TABLE = '42P01';

/** Tenant-and-type subscriber counts a store remembers to size its publishes' delivery ids. */
const SUBSCRIBER_HINTS = 10_000;

/** One publish as the batch of publishes takes it. */
export interface PublishCall {
  event: EventRecord;
  newDeliveryId: () => string;
  lease?: PublishLease | undefined;
}

const hintKey = (event: EventRecord) => `${event.tenantId}\u0000${event.type}`;

/**
 * The event, its subscribers under FOR SHARE, their deliveries and the NOTIFY, by one
 * statement (see publishOn): on its own, one round trip and one commit, through the store's group
 * commit (src/write-queue.ts); with `transaction`, in the caller's transaction under a savepoint,
 * so a failure here rolls back only this publish and leaves the caller's transaction usable.
 */
export async function publishEvent(
  ctx: StoreContext,
  event: EventRecord,
  newDeliveryId: () => string,
  transaction?: unknown,
  lease?: PublishLease,
): Promise<PublishOutcome> {
  if (transaction === undefined) {
    ctx.assertOpen();
    try {
      return (await ctx.writes.submit({
        kind: 'publish',
        call: { event, newDeliveryId, lease },
      })) as PublishOutcome;
    } catch (error) {
      throw toStoreError(error);
    }
  }
  let joined = joinTransaction(transaction);
  ctx.assertOpen();
  try {
    joined = await ctx.publishFunction.route(joined);
    const [[outcome]] = await joined.inSavepoint(PUBLISH_SAVEPOINT, (client) =>
      publishOn(ctx, client, [{ event, newDeliveryId }]),
    );
    return outcome!;
  } catch (error) {
    const state = sqlStateOf(error);
    if (state === NO_ACTIVE_TRANSACTION)
      throw refused(
        `is a ${joined.library} connection outside a transaction (or one whose transaction has ended)`,
      );
    if (state === INVALID_SCHEMA_NAME || state === UNDEFINED_TABLE)
      throw refused(`reaches a database without the store's schema "${ctx.schema}" (${state})`);
    throw toStoreError(error);
  }
}

/**
 * Events and their deliveries by one statement (`publish`), on the pool (its own transaction) or
 * on a caller's client inside their transaction. The statement writes nothing of an event it is
 * given fewer delivery ids for than the event has subscribers; that event is sent again with as
 * many as it counted. A count remembered per tenant and type sizes the first try.
 * `completions`, when there are any, ride along with the first statement (`publishAndSucceed`);
 * their outcomes come second.
 */
export async function publishOn(
  ctx: StoreContext,
  client: Queryable,
  calls: readonly PublishCall[],
  completions: readonly AttemptCompletion[] = [],
): Promise<[PublishOutcome[], SuccessOutcome[]]> {
  const sql = ctx.sql(statements);
  const outcomes: PublishOutcome[] = new Array(calls.length);
  let succeeded: SuccessOutcome[] = [];
  const replays: number[] = [];
  const written: Written[] = [];
  let pending = calls.map((call, index) => ({
    call,
    index,
    ids: ctx.subscriberHints.get(hintKey(call.event)) ?? 1,
  }));
  let riding = completions.length > 0;
  while (pending.length > 0) {
    const ids: string[] = [];
    const firstIds: number[] = [];
    for (const { call, ids: count } of pending) {
      firstIds.push(ids.length + 1);
      for (let i = 0; i < count; i++) ids.push(call.newDeliveryId());
    }
    let rowsOf: Cells[][];
    if (pending.length === 1 && !riding) {
      // One event alone: its columns bound one by one (publishOne).
      const { event, lease } = pending[0]!.call;
      const [statement, answered] =
        client.readsVoid === false ? [sql.publishOneText, PUBLISH_ONE_TEXT] : [sql.publishOne, PUBLISH_ONE];
      const rows = await ctx.cells(
        client,
        statement,
        [
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
          ctx.schema,
          hold.endpointStatus,
          hold.state,
        ],
        answered,
      );
      rowsOf = [rows];
    } else {
      const input = pending.map(({ call: { event, lease }, ids: count }, k) => ({
        position: k + 1,
        tenant_id: event.tenantId,
        id: event.id,
        type: event.type,
        payload: event.payload,
        created_at: event.createdAt.getTime(),
        trace_context: event.traceContext,
        lease_id: lease?.leaseId ?? null,
        lease_limit: lease?.limit ?? null,
        lease_ends: lease ? event.createdAt.getTime() + lease.leaseMs : null,
        first_id: firstIds[k],
        ids: count,
      }));
      const params = [
        JSON.stringify(input),
        ids,
        DELIVERY_CHANNEL,
        ctx.schema,
        hold.endpointStatus,
        hold.state,
      ];
      let rows: Cells[];
      if (riding) {
        riding = false;
        params.push(successInput(completions));
        rows = await ctx.cells(client, sql.publishAndSucceed, params, PUBLISH_AND_SUCCEED);
        const first = rows.findIndex((row) => row[S.success] === true);
        succeeded = rows
          .slice(first)
          .map((row) => successOutcome(row, S, completions[Number(row[S.position]) - 1]!));
        rows = rows.slice(0, first);
      } else {
        rows = await ctx.cells(client, sql.publish, params, PUBLISH);
      }
      rowsOf = pending.map(() => []);
      for (const row of rows) rowsOf[Number(row[P.position]) - 1]!.push(row);
    }
    const again: typeof pending = [];
    for (const [k, entry] of pending.entries()) {
      const rows = rowsOf[k]!;
      const head = rows[0]!;
      const subscribers = Number(head[P.subscribers]);
      rememberSubscribers(ctx, hintKey(entry.call.event), subscribers);
      if (!head[P.fits]) again.push({ ...entry, ids: subscribers });
      else if (!head[P.inserted]) replays.push(entry.index);
      else written.push({ index: entry.index, call: entry.call, rows });
    }
    pending = again;
  }
  await settlePublished(ctx, client, written, outcomes);
  for (const index of replays) outcomes[index] = await replayed(ctx, client, calls[index]!.event);
  return [outcomes, succeeded];
}

/** A new event, as its publish wrote it: its call, its place among the calls, and its rows. */
interface Written {
  index: number;
  call: PublishCall;
  rows: readonly Cells[];
}

/**
 * New events' outcomes from their rows of `publish`, each leased delivery with its endpoint
 * from the store's cache, by the version of the row the statement read under its lock
 * (src/webhook-cache.ts). If the endpoints cannot be read, the publishes still answer (they have
 * committed), without those deliveries in `leased`: their worker never starts them, and they
 * are claimed again when the lease runs out, as after a worker that stopped.
 */
async function settlePublished(
  ctx: StoreContext,
  client: Queryable,
  written: readonly Written[],
  outcomes: PublishOutcome[],
): Promise<void> {
  const wanted: (readonly [string, string, string])[] = [];
  for (const { call, rows } of written)
    for (const row of rows)
      if (row[P.status] === 'in_flight')
        wanted.push([call.event.tenantId, row[P.webhook_id] as string, row[P.webhook_version] as string]);
  const webhooks =
    wanted.length === 0
      ? []
      : await ctx.webhooks.resolve(ctx, client, wanted).catch(() => wanted.map(() => null));
  let next = 0;
  for (const { index, call, rows } of written) {
    // The row as written: the insert sent exactly these values.
    const published: EventRecord = { ...call.event, createdAt: new Date(call.event.createdAt) };
    const deliveries: DeliveryRecord[] = [];
    const leased: LeasedDelivery[] = [];
    for (const row of rows) {
      if (row[P.id] === null) continue;
      const delivery = writtenDelivery(published, row, call.lease);
      deliveries.push(delivery);
      if (delivery.status !== 'in_flight') continue;
      const webhook = webhooks[next++];
      // Null: deleted since, with its deliveries; or unreadable (above).
      if (webhook) leased.push({ delivery, event: published, webhook });
    }
    outcomes[index] = { outcome: 'published', event: published, deliveries, leased };
  }
}

/**
 * A delivery the statement wrote, from its id, its endpoint and that endpoint's status as the
 * statement read it under its lock: core's newDeliveryRecord, under the lease when the statement
 * leased it. The statement decided the state; a record that disagrees with it is a bug, not an
 * answer.
 */
function writtenDelivery(event: EventRecord, row: Cells, lease: PublishLease | undefined): DeliveryRecord {
  const status = row[P.status] as DeliveryStatus;
  const delivery = newDeliveryRecord(
    event,
    { id: row[P.webhook_id] as string, status: row[P.webhook_status] as WebhookStatus },
    row[P.id] as string,
    status === 'in_flight' ? lease : undefined,
  );
  if (delivery.status !== status)
    throw new Error(
      `keyhook: the publish wrote a delivery ${status}, and core's rule makes it ${delivery.status}`,
    );
  return delivery;
}

/** A publish whose event id was there already answers with the event as first published. */
async function replayed(ctx: StoreContext, client: Queryable, event: EventRecord): Promise<PublishOutcome> {
  const stored = await ctx.run<EventRow>(client, ctx.sql(statements).getEvent, [event.tenantId, event.id]);
  const existing = stored.rows[0];
  // Unreachable under READ COMMITTED (the conflict waited for the winner's commit); a stricter caller
  // transaction gets a serialization failure from the insert instead. Still: never answer without it.
  if (!existing) throw unavailable('The event was published concurrently; retry.');
  return { outcome: 'duplicate', event: toEventRecord(existing) };
}

/** Sizes a tenant and type's next publish; a bounded map, emptied when full. */
function rememberSubscribers(ctx: StoreContext, key: string, count: number): void {
  if (ctx.subscriberHints.get(key) === count) return;
  if (ctx.subscriberHints.size >= SUBSCRIBER_HINTS) ctx.subscriberHints.clear();
  ctx.subscriberHints.set(key, count);
}
