import type {
  AttemptCompletion,
  AttemptCompletionOutcome,
  DeliveryRecord,
  WebhookRecord,
} from '@keyhook/core/store';
import { autoDisables, claimsTwinKey, DELIVERY_RULES, queuedOn } from '@keyhook/core/store';
import { answer, type Cells } from '../answer.js';
import {
  ATTEMPT_COLUMNS,
  DELIVERY_COLUMNS,
  type DeliveryRow,
  qualified,
  toAttemptParams,
  toDeliveryRecord,
} from '../delivery-row.js';
import type { Queryable } from '../host-transaction.js';
import { sharedStatements } from '../shared-statements.js';
import type { Prepare, Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';
import { fromEpochMs } from '../timestamps.js';
import { oneWebhook, WEBHOOK_COLUMNS, type WebhookRow } from '../webhook-row.js';

const { hold } = DELIVERY_RULES;

/** One success of a batched completion, as the fields of its object in the statement's JSON input; times in epoch ms (fromEpochMs). */
const SUCCESS_INPUT =
  'position int, id text, tenant_id text, attempt int, started_at bigint, duration_ms int, ' +
  'status_code int, error text, response_body text, lease_id text, at bigint';

/**
 * What a success returns of the delivery it wrote: the columns it did not set itself. The rest of
 * the record is what the UPDATE wrote from the completion (successOutcome), so it is not sent
 * back and parsed again on every delivery.
 */
const SUCCESS_COLUMNS = 'id, webhook_id, event_id, event_type, attempts, created_at';
/** SUCCESS_COLUMNS but the id and the webhook: what a success row of publishAndSucceed has that a publish row has not. */
export const SUCCESS_ONLY = ['event_id', 'event_type', 'attempts', 'created_at'] as const;

/**
 * A success's answer, read by position (src/answer.ts): the endpoint's failure count (NULL for
 * a lost lease), then SUCCESS_COLUMNS of the delivery it wrote (NULL when it
 * wrote none) from the `done` CTE.
 */
const successAnswer = (failures: string) =>
  answer([
    [failures, 'consecutive_failures'],
    ['done.id', 'id'],
    ['done.webhook_id', 'webhook_id'],
    ...SUCCESS_ONLY.map((column) => [`done.${column}`, column] as const),
  ]);
/** Where a success's cells are in its row: completeSucceeded's, or publishAndSucceed's. */
export type SuccessAt = ReturnType<typeof successAnswer>['at'];
const ONE_SUCCESS = successAnswer('(SELECT consecutive_failures FROM w)');
const SUCCESSES = successAnswer('w.consecutive_failures');

/**
 * The success batch's parts (see `completeSucceededBatch` below), which publishEvent's
 * publishAndSucceed shares. `param` is the JSON array of the successes.
 */
export const successCtes = (t: Tables, param: string) => `completions AS (
        SELECT i.position, i.id, i.tenant_id, i.attempt, ${fromEpochMs('i.started_at')} AS started_at, i.duration_ms,
          i.status_code, i.error, i.response_body, i.lease_id, ${fromEpochMs('i.at')} AS at
        FROM json_to_recordset(${param}::json) AS i(${SUCCESS_INPUT})
      ),
      completed_webhooks AS MATERIALIZED (
        SELECT i.id AS delivery_id, w.consecutive_failures
        FROM completions AS i
        CROSS JOIN LATERAL (
          SELECT webhook_id FROM ${t.deliveries}
          WHERE id = i.id AND tenant_id = i.tenant_id AND lease_id = i.lease_id
          LIMIT 1
        ) AS d
        JOIN ${t.webhooks} AS w ON w.id = d.webhook_id
        ORDER BY w.id
        FOR SHARE OF w
      ),
      done AS (
        UPDATE ${t.deliveries} AS d
        SET status = 'succeeded', due_at = NULL, held_since = NULL, lease_id = NULL,
            attempts = d.attempts + 1, last_attempt_at = i.started_at, updated_at = i.at
        FROM completions AS i JOIN completed_webhooks AS w ON w.delivery_id = i.id AND w.consecutive_failures = 0
        WHERE d.id = i.id AND d.tenant_id = i.tenant_id AND d.lease_id = i.lease_id
        RETURNING ${qualified('d', SUCCESS_COLUMNS)}
      ),
      logged AS (
        INSERT INTO ${t.attempts} (${ATTEMPT_COLUMNS})
        SELECT i.id, i.tenant_id, i.attempt, i.started_at, i.duration_ms, i.status_code, i.error, i.response_body
        FROM done JOIN completions AS i ON i.id = done.id
      )`;

/** The rows of the success batch: `columns` of each input, its webhook and its written delivery. */
export const successRows = (columns: string) => `      SELECT ${columns}
      FROM completions AS i
      LEFT JOIN completed_webhooks AS w ON w.delivery_id = i.id
      LEFT JOIN done ON done.id = i.id
`;

// "The lease still holds the delivery" is `lease_id = <the lease>` alone: the table's CHECK
// (0004) keeps lease_id set exactly while a delivery is in flight. Without a status test, a
// lookup by id cannot be answered from the partial index of queued deliveries, which a planner
// without statistics took for the cheaper path and scanned whole.
// What every completion runs is prepared; the disable, which is rare, is not.
const statements = (t: Tables, prepare: Prepare) => ({
  // Unlocked: only to learn which webhook to lock first (its id never changes), and whether its failure
  // count looks like it will change (which decides the lock; re-checked once locked).
  deliveryWebhook: prepare(`SELECT d.webhook_id, w.consecutive_failures
      FROM ${t.deliveries} AS d JOIN ${t.webhooks} AS w ON w.id = d.webhook_id
      WHERE d.id = $1 AND d.tenant_id = $2 AND d.lease_id = $3`),

  // A completion locks the webhook before the delivery, as setWebhookStatus, requeue and delete do, so
  // none of them can wait on each other in a cycle. FOR NO KEY UPDATE when it will write the failure
  // count; otherwise FOR SHARE, which orders it against a disable just as well but, unlike the
  // exclusive lock, does not make concurrent leases skip the endpoint's other deliveries.
  lockWebhook: prepare(`SELECT ${WEBHOOK_COLUMNS}, consecutive_failures FROM ${t.webhooks} WHERE id = $1
      FOR NO KEY UPDATE`),
  shareWebhook: prepare(`SELECT ${WEBHOOK_COLUMNS}, consecutive_failures FROM ${t.webhooks} WHERE id = $1
      FOR SHARE`),

  // Only while this lease still holds the delivery; the row lock re-checks it on the latest version.
  complete: prepare(`UPDATE ${t.deliveries}
      SET status = $4, due_at = $5, held_since = $6, lease_id = NULL, attempts = attempts + 1,
          last_attempt_at = $7, updated_at = $8
      WHERE id = $1 AND tenant_id = $2 AND lease_id = $3
      RETURNING ${DELIVERY_COLUMNS}`),

  insertAttempt: prepare(
    `INSERT INTO ${t.attempts} (${ATTEMPT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
  ),

  // completeAttempt's common case in one round trip: a success on an endpoint whose failure
  // count is 0 writes nothing on the webhook, so it needs only the share lock (taken first, as
  // in the transaction: webhook, then delivery), the delivery's update and the attempt log.
  // A count other than 0 on the locked row writes nothing here (failures > 0 comes back) and
  // the caller takes the transaction, which resets it. No row in `w`: the lease was lost.
  // $1–$8 the attempt as toAttemptParams binds it (delivery, tenant, attempt number, started,
  // duration, status code, error, response body), $9 the lease, $10 finished at.
  completeSucceeded: prepare(`WITH w AS MATERIALIZED (
        SELECT w.consecutive_failures FROM ${t.webhooks} AS w
        JOIN ${t.deliveries} AS d ON d.webhook_id = w.id
        WHERE d.id = $1 AND d.tenant_id = $2 AND d.lease_id = $9
        FOR SHARE OF w
      ),
      done AS (
        UPDATE ${t.deliveries}
        SET status = 'succeeded', due_at = NULL, held_since = NULL, lease_id = NULL,
            attempts = attempts + 1, last_attempt_at = $4, updated_at = $10
        WHERE id = $1 AND tenant_id = $2 AND lease_id = $9
          AND (SELECT consecutive_failures FROM w) = 0
        RETURNING ${SUCCESS_COLUMNS}
      ),
      logged AS (
        INSERT INTO ${t.attempts} (${ATTEMPT_COLUMNS})
        SELECT id, $2, $3, $4, $5, $6, $7, $8 FROM done
      )
      SELECT ${ONE_SUCCESS.select}
      FROM (SELECT 1) AS one LEFT JOIN done ON true`),

  // completeSucceeded for many deliveries in one statement (the store's group commit): $1 is a
  // JSON array of them, one object each (SUCCESS_INPUT's fields, completeSucceeded's parameters). The webhooks are share-locked in id order before
  // any delivery is written, so two batches, or a batch and a completion that counts a failure,
  // take their locks in one order. One row per input, in input order: the failure count NULL for a lost
  // lease; done.id NULL when nothing was written. Each delivery is looked up on its own (a
  // LATERAL subquery with a LIMIT is never merged into a join), by primary key: a prepared
  // statement keeps the plan it made while the table was small, and a joined form of this
  // lookup was then planned as a scan of the whole table.
  completeSucceededBatch: prepare(`WITH ${successCtes(t, '$1')}
${successRows(SUCCESSES.select)}      ORDER BY i.position`),

  setFailures: prepare(`UPDATE ${t.webhooks} SET consecutive_failures = $2 WHERE id = $1`),

  // Whether to disable is core's autoDisables; the status ($4), the reason ($5) and the twin claim
  // that status makes ($6) are core's too (DELIVERY_RULES.hold, the completion's rule, claimsTwinKey).
  disableForFailures: `UPDATE ${t.webhooks}
      SET consecutive_failures = $2, status = $4, disabled_reason = $5,
        twin_claim = CASE WHEN $6::boolean THEN twin_key END, updated_at = $3,
        disabled_at = CASE WHEN $5::text IS NULL THEN NULL ELSE $3::timestamptz END
      WHERE id = $1
      RETURNING ${WEBHOOK_COLUMNS}`,
});

/** completeOn's answer when it must run again holding the webhook's exclusive lock. */
const RETRY_EXCLUSIVE = Symbol('retry with the exclusive lock');

export type SuccessOutcome = AttemptCompletionOutcome | typeof RETRY_EXCLUSIVE;

/** One row of completeSucceeded(Batch) or publishAndSucceed: recorded, lost, or left to the transaction (a count to reset). */
export function successOutcome(row: Cells, at: SuccessAt, completion: AttemptCompletion): SuccessOutcome {
  const failures = row[at.consecutive_failures] as number | null;
  const id = row[at.id] as string | null;
  if (failures === null) return { outcome: 'lease_lost' };
  if (id === null) return failures === 0 ? { outcome: 'lease_lost' } : RETRY_EXCLUSIVE;
  // The delivery as the UPDATE wrote it: its SET, from the completion, over the columns it returned.
  const delivery: DeliveryRecord = {
    id,
    tenantId: completion.tenantId,
    webhookId: row[at.webhook_id] as string,
    eventId: row[at.event_id] as string,
    eventType: row[at.event_type] as string,
    status: 'succeeded',
    attempts: row[at.attempts] as number,
    dueAt: null,
    leaseId: null,
    heldSince: null,
    lastAttemptAt: new Date(completion.attempt.startedAt.getTime()),
    createdAt: row[at.created_at] as Date,
    updatedAt: new Date(completion.at.getTime()),
  };
  return { outcome: 'recorded', delivery, disabledWebhook: null };
}

/** The JSON input of completeSucceededBatch (SUCCESS_INPUT's fields), in call order. */
export function successInput(completions: readonly AttemptCompletion[]): string {
  return JSON.stringify(
    completions.map((c, k) => ({
      position: k + 1,
      id: c.deliveryId,
      tenant_id: c.tenantId,
      attempt: c.attempt.attempt,
      started_at: c.attempt.startedAt.getTime(),
      duration_ms: c.attempt.durationMs,
      status_code: c.attempt.statusCode,
      error: c.attempt.error,
      response_body: c.attempt.responseBody,
      lease_id: c.leaseId,
      at: c.at.getTime(),
    })),
  );
}

/**
 * Locks the webhook, then the delivery (only while the lease holds it), then writes the
 * delivery, the attempt log, the failure count, and on an auto-disable the webhook and its
 * held deliveries, in one transaction. Webhook before delivery is the order every writer of
 * both keeps, so none of them waits on another in a cycle. A success goes first through the
 * store's group commit (src/write-queue.ts) as one statement.
 */
export async function completeAttempt(
  ctx: StoreContext,
  completion: AttemptCompletion,
): Promise<AttemptCompletionOutcome> {
  if (completion.status === 'succeeded') {
    const fast = (await ctx.writes.submit({ kind: 'success', completion })) as SuccessOutcome;
    if (fast !== RETRY_EXCLUSIVE) return fast;
  }
  const first = await ctx.transaction((client) => completeOn(ctx, client, completion, false));
  if (first !== RETRY_EXCLUSIVE) return first;
  // The count moved between the unlocked read and the share lock: once more, locked to write.
  const second = await ctx.transaction((client) => completeOn(ctx, client, completion, true));
  if (second === RETRY_EXCLUSIVE) throw new Error('keyhook: an exclusive completion asked for a retry');
  return second;
}

/**
 * A success as one statement (completeSucceeded), which is most completions. It answers
 * RETRY_EXCLUSIVE when the endpoint's failure count is not 0: resetting it is the transaction's work.
 */
export async function completeSucceeded(
  ctx: StoreContext,
  completion: AttemptCompletion,
): Promise<SuccessOutcome> {
  const rows = await ctx.queryCells(ctx.sql(statements).completeSucceeded, [
    ...toAttemptParams(completion.deliveryId, completion.attempt),
    completion.leaseId,
    completion.at,
  ]);
  return successOutcome(rows[0]!, ONE_SUCCESS.at, completion);
}

/** Many successes in one statement (completeSucceededBatch): the group commit. */
export async function completeSucceededBatch(
  ctx: StoreContext,
  completions: AttemptCompletion[],
): Promise<SuccessOutcome[]> {
  const rows = await ctx.queryCells(ctx.sql(statements).completeSucceededBatch, [successInput(completions)]);
  return rows.map((row, k) => successOutcome(row, SUCCESSES.at, completions[k]!));
}

/**
 * One try of completeAttempt. It takes the webhook's exclusive row lock only when it will
 * write the failure count (an increment, or a reset of a count that is not 0), judged from an
 * unlocked read; when the share-locked row shows the judgement was wrong (a failure was
 * counted in between), it writes nothing and asks to be run again with `exclusive`, rather
 * than upgrade its share lock, which two completions could deadlock on.
 */
async function completeOn(
  ctx: StoreContext,
  client: Queryable,
  completion: AttemptCompletion,
  exclusive: boolean,
): Promise<AttemptCompletionOutcome | typeof RETRY_EXCLUSIVE> {
  const sql = ctx.sql(statements);
  const lost: AttemptCompletionOutcome = { outcome: 'lease_lost' };
  const { tenantId, deliveryId, leaseId, at, endpointFailures } = completion;
  const holder = await ctx.run<{ webhook_id: string; consecutive_failures: number }>(
    client,
    sql.deliveryWebhook,
    [deliveryId, tenantId, leaseId],
  );
  const seen = holder.rows[0];
  if (!seen) return lost;
  const writesCount = (failures: number) =>
    endpointFailures === 'increment' || (endpointFailures === 'reset' && failures !== 0);
  const lockExclusive = exclusive || writesCount(seen.consecutive_failures);
  const locked = await ctx.run<WebhookRow & { consecutive_failures: number }>(
    client,
    lockExclusive ? sql.lockWebhook : sql.shareWebhook,
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
  const completed = await ctx.run<DeliveryRow>(client, sql.complete, [
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
  await ctx.run(client, sql.insertAttempt, toAttemptParams(deliveryId, completion.attempt));

  let disabledWebhook: WebhookRecord | null = null;
  if (endpointFailures === 'reset' && webhook.consecutive_failures !== 0) {
    await ctx.run(client, sql.setFailures, [webhook.id, 0]);
  } else if (endpointFailures === 'increment') {
    const count = webhook.consecutive_failures + 1;
    if (autoDisables(count, webhook.status, completion.autoDisable)) {
      disabledWebhook = oneWebhook(
        await ctx.run<WebhookRow>(client, sql.disableForFailures, [
          webhook.id,
          count,
          at,
          hold.endpointStatus,
          completion.autoDisable.reason,
          claimsTwinKey(hold.endpointStatus),
        ]),
      );
      // Held with the rest, this delivery too should it have just been scheduled for a retry.
      await ctx.allowBulk(client);
      const heldRows = await ctx.run<DeliveryRow>(
        client,
        ctx.sql(sharedStatements).hold,
        [webhook.id, at, hold.state],
        true,
      );
      const self = heldRows.rows.find((heldRow) => heldRow.id === deliveryId);
      if (self) delivery = toDeliveryRecord(self);
    } else {
      await ctx.run(client, sql.setFailures, [webhook.id, count]);
    }
  }
  return { outcome: 'recorded', delivery, disabledWebhook };
}
