import type { PurgeOutcome } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { boundLimit } from '../shared-statements.js';

/**
 * One batch of retention, in one transaction. Attempts are deleted by hand, as in deleteWebhook:
 * the foreign key cascades only where foreign_keys is on.
 */
export function preparePurgeFinishedDeliveries(
  db: Database.Database,
): Database.Transaction<(before: number, limit: number) => PurgeOutcome> {
  // Finished is spelled as the index keyhook_deliveries_finished (0005) spells it: no due time
  // and not held, which the table's checks tie to succeeded and failed.
  const finishedBefore = db
    .prepare<[number, number], string>(
      `SELECT id FROM keyhook_deliveries WHERE due_at IS NULL AND held_since IS NULL AND updated_at <= ?
        ORDER BY updated_at LIMIT ${boundLimit()}`,
    )
    .pluck();
  const deleteAttemptsIn = db.prepare<[string]>(
    'DELETE FROM keyhook_attempts WHERE delivery_id IN (SELECT value FROM json_each(?))',
  );
  const deleteDeliveriesIn = db.prepare<[string]>(
    'DELETE FROM keyhook_deliveries WHERE id IN (SELECT value FROM json_each(?))',
  );
  // Events old enough that no delivery refers to any more (keyhook_deliveries_event, 0005).
  const eventsWithoutDeliveries = db.prepare<[number, number], { tenant_id: string; id: string }>(
    `SELECT tenant_id, id FROM keyhook_events AS e WHERE created_at <= ? AND NOT EXISTS
          (SELECT 1 FROM keyhook_deliveries AS d WHERE d.tenant_id = e.tenant_id AND d.event_id = e.id)
        ORDER BY created_at LIMIT ${boundLimit()}`,
  );
  const deleteEvent = db.prepare<[string, string]>(
    'DELETE FROM keyhook_events WHERE tenant_id = ? AND id = ?',
  );
  return db.transaction((before, limit) => {
    const ids = finishedBefore.all(before, limit);
    if (ids.length > 0) {
      const list = JSON.stringify(ids);
      deleteAttemptsIn.run(list);
      deleteDeliveriesIn.run(list);
    }
    const events = eventsWithoutDeliveries.all(before, limit);
    for (const event of events) deleteEvent.run(event.tenant_id, event.id);
    return { deliveries: ids.length, events: events.length, skipped: false };
  });
}

/** Under BEGIN IMMEDIATE: processes sharing the file take turns at it. */
export function purgeFinishedDeliveries(
  transaction: ReturnType<typeof preparePurgeFinishedDeliveries>,
  finishedBefore: Date,
  limit: number,
): PurgeOutcome {
  return transaction.immediate(finishedBefore.getTime(), limit);
}
