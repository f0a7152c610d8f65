import type { DeliveryStatus, RequeueOutcome, WebhookStatus } from '@keyhook/core/store';
import { queuedOn } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import {
  DELIVERY_COLUMNS,
  type DeliveryRow,
  type PlaceParams,
  placeParams,
  toDeliveryRecord,
} from '../delivery-row.js';
import { deliveryById } from '../shared-statements.js';

/** The delivery's new queue position after a requeue: pending and due, or held. */
interface RequeueParams extends PlaceParams {
  id: string;
  at: number;
}

/** The read, the endpoint's status and the write, in one transaction. */
export function prepareRequeueDelivery(
  db: Database.Database,
): Database.Transaction<
  (
    tenantId: string,
    webhookId: string,
    deliveryId: string,
    from: readonly DeliveryStatus[],
    at: number,
  ) => RequeueOutcome
> {
  const byId = deliveryById(db);
  const webhookStatus = db
    .prepare<[string], WebhookStatus>('SELECT status FROM keyhook_webhooks WHERE id = ?')
    .pluck();
  const requeue = db.prepare<[RequeueParams], DeliveryRow>(
    `UPDATE keyhook_deliveries SET status = @status, due_at = @due_at, held_since = @held_since,
          lease_id = NULL, updated_at = @at
        WHERE id = @id RETURNING ${DELIVERY_COLUMNS}`,
  );
  return db.transaction((tenantId, webhookId, deliveryId, from, at) => {
    const current = byId.get(tenantId, webhookId, deliveryId);
    if (!current) return { outcome: 'not_found' };
    if (!from.includes(current.status)) {
      return { outcome: 'wrong_state', delivery: toDeliveryRecord(current) };
    }
    // Read under the lock setWebhookStatus takes: a disable cannot slip in before the write.
    const endpointStatus = webhookStatus.get(webhookId)!;
    const when = new Date(at);
    const row = requeue.get({
      id: deliveryId,
      ...placeParams(queuedOn(endpointStatus, 'pending', when, when)),
      at,
    })!;
    return { outcome: 'queued', delivery: toDeliveryRecord(row) };
  });
}

/** Under BEGIN IMMEDIATE, the lock setWebhookStatus takes. */
export function requeueDelivery(
  transaction: ReturnType<typeof prepareRequeueDelivery>,
  tenantId: string,
  webhookId: string,
  deliveryId: string,
  from: readonly DeliveryStatus[],
  at: Date,
): RequeueOutcome {
  return transaction.immediate(tenantId, webhookId, deliveryId, from, at.getTime());
}
