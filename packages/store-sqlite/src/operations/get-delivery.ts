import type { DeliveryDetail } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import {
  ATTEMPT_COLUMNS,
  type AttemptRow,
  toAttemptRecord,
  toDeliveryRecord,
  toEventRecord,
} from '../delivery-row.js';
import { deliveryById, eventById } from '../shared-statements.js';

/**
 * Reads only: a plain (deferred) transaction, one WAL snapshot for the three reads, without the
 * write lock, so a writer elsewhere never makes the detail unavailable.
 */
export function prepareGetDelivery(
  db: Database.Database,
): Database.Transaction<(tenantId: string, webhookId: string, deliveryId: string) => DeliveryDetail | null> {
  const byId = deliveryById(db);
  const eventOf = eventById(db);
  const attemptsOf = db.prepare<[string], AttemptRow>(
    `SELECT ${ATTEMPT_COLUMNS} FROM keyhook_attempts WHERE delivery_id = ? ORDER BY attempt`,
  );
  return db.transaction((tenantId, webhookId, deliveryId) => {
    const delivery = byId.get(tenantId, webhookId, deliveryId);
    if (!delivery) return null;
    const event = eventOf.get(delivery.tenant_id, delivery.event_id)!;
    return {
      delivery: toDeliveryRecord(delivery),
      event: toEventRecord(event),
      attempts: attemptsOf.all(deliveryId).map(toAttemptRecord),
    } satisfies DeliveryDetail;
  });
}

export function getDelivery(
  transaction: ReturnType<typeof prepareGetDelivery>,
  tenantId: string,
  webhookId: string,
  deliveryId: string,
): DeliveryDetail | null {
  return transaction(tenantId, webhookId, deliveryId);
}
