import { DELIVERY_COLUMNS, qualified } from './delivery-row.js';
import type { Queryable } from './host-transaction.js';
import type { Tables } from './statements.js';
import type { StoreContext } from './store-context.js';
import { WEBHOOK_COLUMNS } from './webhook-row.js';

// The statements several operations run; each operation's own live in its module (src/operations/).

/**
 * The NOTIFY channel of delivery wake-ups; the payload is the schema, so stores on other schemas
 * of one database ignore it (src/change-feed.ts listens on its one connection for both channels).
 */
export const DELIVERY_CHANNEL = 'keyhook_deliveries';

/** The unique index of twin claims (migration 0011): its violation means "a second active twin". */
export const ACTIVE_TWIN_INDEX = 'keyhook_webhooks_twin_claim_idx';

/** A unique violation of the active-twin index, and not of any other constraint. */
export function isActiveTwinViolation(error: unknown): boolean {
  const { code, constraint } = (error ?? {}) as { code?: unknown; constraint?: unknown };
  return code === '23505' && constraint === ACTIVE_TWIN_INDEX;
}

/**
 * A state change of many deliveries: `set` on the rows `where` picks. They are locked in id order
 * first (a MATERIALIZED CTE, so the lock is taken before the UPDATE reads the rows). Two of them
 * over overlapping rows (an expiry and a release of the same held deliveries) then queue behind
 * each other instead of deadlocking. FOR UPDATE re-checks the WHERE on a row's latest committed
 * version, so a row another transaction moved out of the state meanwhile is left alone.
 */
export function transition(t: Tables, where: string, set: string): string {
  return `WITH locked AS MATERIALIZED (
        SELECT id FROM ${t.deliveries} WHERE ${where} ORDER BY id FOR UPDATE
      )
      UPDATE ${t.deliveries} AS d SET ${set}
      FROM locked WHERE d.id = locked.id
      RETURNING ${qualified('d', DELIVERY_COLUMNS)}`;
}

export function sharedStatements(t: Tables) {
  const webhook = `SELECT ${WEBHOOK_COLUMNS} FROM ${t.webhooks} WHERE tenant_id = $1 AND id = $2`;
  return {
    // getWebhook's read.
    webhook,
    // The same, under the lock publishEvent's subscriber read takes: what publishTestEvent,
    // requeueDelivery and recoverFailedDeliveries read the webhook with before they queue a delivery.
    webhookForShare: `${webhook} FOR SHARE`,

    // Sent inside the writing transaction: the server delivers it at commit, and never on rollback.
    notify: 'SELECT pg_notify($1, $2)',

    // Run after the webhook's row is updated (locked) in the same transaction: see publishEvent's
    // statement (operations/publish-event.ts). $3 is the state core's hold rule holds in
    // (DELIVERY_RULES.hold), here and in setWebhookStatus's release. Run by setWebhookStatus and
    // by completeAttempt when it disables the endpoint.
    hold: transition(
      t,
      `webhook_id = $1 AND status IN ('pending', 'retry_scheduled')`,
      `status = $3, due_at = NULL, held_since = $2, updated_at = $2`,
    ),

    // docs/decisions.md §8.18: after the webhook's row is updated (locked) in the same transaction,
    // as setWebhookStatus's release runs, its rate starts afresh: the slots given out are given up,
    // and what waits on them ($2 < due_at <= the end of those slots) is due at $2. The slot row
    // after the webhook row, the deliveries after both: a claim takes all three without waiting,
    // so no cycle. Run by setWebhookStatus and updateWebhookSubscription.
    resetRate: `WITH old AS MATERIALIZED (
        SELECT queue_at FROM ${t.rates} WHERE webhook_id = $1 FOR UPDATE
      ),
      reset AS (
        UPDATE ${t.rates} SET next_at = NULL, queue_at = NULL WHERE webhook_id = $1
      ),
      waiting AS MATERIALIZED (
        SELECT id FROM ${t.deliveries}
        WHERE webhook_id = $1 AND status IN ('pending', 'retry_scheduled') AND due_at > $2::timestamptz
          AND due_at <= 'epoch'::timestamptz + ceil((SELECT queue_at FROM old)) * interval '1 millisecond'
        ORDER BY id FOR UPDATE
      ),
      moved AS (
        UPDATE ${t.deliveries} AS d SET due_at = $2::timestamptz, updated_at = $2::timestamptz
        FROM waiting WHERE d.id = waiting.id
        RETURNING d.id
      )
      SELECT count(*)::int AS moved FROM moved`,
  };
}

/** Queues the wake-up inside the caller's transaction: the server sends it at commit only. */
export async function notifyDeliveries(ctx: StoreContext, client: Queryable): Promise<void> {
  await ctx.run(client, ctx.sql(sharedStatements).notify, [DELIVERY_CHANNEL, ctx.schema]);
}
