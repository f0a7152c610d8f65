import { queuedOn } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { type PlaceParams, placeParams } from '../delivery-row.js';
import { boundLimit, webhookById } from '../shared-statements.js';

/** One batch of bulk recovery: which failed deliveries, and where they go (requeueDelivery's columns). */
interface RecoverParams extends PlaceParams {
  tenant_id: string;
  webhook_id: string;
  since: number;
  until: number;
  limit: number;
  failed_before: number;
  at: number;
}

/**
 * One batch of bulk recovery. The webhook is read under the lock setWebhookStatus takes, so a
 * disable cannot slip in between the read and the write (as in requeueDelivery), and it is read
 * with the tenant: another tenant's webhook id queues nothing.
 */
export function prepareRecoverFailedDeliveries(
  db: Database.Database,
): Database.Transaction<
  (
    tenantId: string,
    webhookId: string,
    since: number,
    until: number,
    at: number,
    limit: number,
    failedBefore: number,
  ) => number
> {
  const byId = webhookById(db);
  // The oldest `limit` failed deliveries of the webhook created in [since, until), as requeueDelivery
  // writes one. Pinned to keyhook_deliveries_failed (0008), walked in (created_at, id) order up to
  // the limit; `status = 'failed'` is that partial index's condition word for word, which is what
  // lets SQLite use it. The table is WITHOUT ROWID, so the batch is chosen by id in a subquery
  // (UPDATE … LIMIT is a compile-time option).
  const recoverFailed = db.prepare<[RecoverParams]>(
    `UPDATE keyhook_deliveries SET status = @status, due_at = @due_at, held_since = @held_since,
          lease_id = NULL, updated_at = @at
        WHERE id IN (
          SELECT id FROM keyhook_deliveries INDEXED BY keyhook_deliveries_failed
          WHERE webhook_id = @webhook_id AND status = 'failed' AND tenant_id = @tenant_id
            AND created_at >= @since AND created_at < @until AND updated_at < @failed_before
          ORDER BY created_at, id LIMIT ${boundLimit('@limit')})`,
  );
  return db.transaction((tenantId, webhookId, since, until, at, limit, failedBefore) => {
    const webhook = byId.get(tenantId, webhookId);
    if (!webhook) return 0;
    const when = new Date(at);
    return recoverFailed.run({
      tenant_id: tenantId,
      webhook_id: webhookId,
      since,
      until,
      limit,
      failed_before: failedBefore,
      ...placeParams(queuedOn(webhook.status, 'pending', when, when)),
      at,
    }).changes;
  });
}

/** Under BEGIN IMMEDIATE, as requeueDelivery queues one. */
export function recoverFailedDeliveries(
  transaction: ReturnType<typeof prepareRecoverFailedDeliveries>,
  tenantId: string,
  webhookId: string,
  since: Date,
  until: Date,
  at: Date,
  limit: number,
  failedBefore: Date,
): number {
  return transaction.immediate(
    tenantId,
    webhookId,
    since.getTime(),
    until.getTime(),
    at.getTime(),
    limit,
    failedBefore.getTime(),
  );
}
