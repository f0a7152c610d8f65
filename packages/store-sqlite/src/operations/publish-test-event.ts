import type { EventRecord, TestEventOutcome } from '@keyhook/core/store';
import { newDeliveryRecord } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { deliveryValues, EVENT_COLUMNS, eventValues, placeholdersFor } from '../delivery-row.js';
import { insertDelivery, webhookById } from '../shared-statements.js';

/**
 * A test event to one webhook (docs/decisions.md §8.16). Read with the tenant: another tenant's
 * id writes nothing.
 */
export function preparePublishTestEvent(
  db: Database.Database,
): Database.Transaction<(event: EventRecord, webhookId: string, deliveryId: string) => TestEventOutcome> {
  const byId = webhookById(db);
  // A test event takes no place in the feed (docs/decisions.md §8.17).
  const insertTestEvent = db.prepare<unknown[]>(
    `INSERT INTO keyhook_events (${EVENT_COLUMNS}) VALUES (${placeholdersFor(EVENT_COLUMNS)})
        ON CONFLICT (tenant_id, id) DO NOTHING`,
  );
  const insert = insertDelivery(db);
  return db.transaction((event, webhookId, deliveryId) => {
    const webhook = byId.get(event.tenantId, webhookId);
    if (!webhook) return { outcome: 'not_found' };
    // The id is freshly minted by core: a conflict is a fault, not a replay to answer.
    if (insertTestEvent.run(eventValues(event)).changes === 0) {
      throw new Error(`keyhook: test event ${event.id} already exists`);
    }
    const delivery = newDeliveryRecord(event, webhook, deliveryId);
    insert.run(deliveryValues(delivery));
    return { outcome: 'published', event, delivery };
  });
}

/**
 * Under BEGIN IMMEDIATE, the write lock publishEvent's group takes, which setWebhookStatus takes
 * too: the status read is the one the delivery is written for.
 */
export function publishTestEvent(
  transaction: ReturnType<typeof preparePublishTestEvent>,
  event: EventRecord,
  webhookId: string,
  deliveryId: string,
): TestEventOutcome {
  return transaction.immediate(event, webhookId, deliveryId);
}
