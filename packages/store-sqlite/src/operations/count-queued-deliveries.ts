import type { QueueDepth } from '@keyhook/core/store';
import type Database from 'better-sqlite3';

export function prepareCountQueuedDeliveries(
  db: Database.Database,
): Database.Statement<
  [{ now: number }],
  { due: number; scheduled: number; in_flight: number; held: number }
> {
  // The queue-depth gauge, on each collection: both counts read their partial index alone (the
  // due index carries the status, migration 0009), never a finished row; the held count names
  // keyhook_deliveries_held's predicate, as expireHeldDeliveries does: schema, not rule (docs/decisions.md §10.4).
  return db.prepare(
    `SELECT
          count(*) FILTER (WHERE status <> 'in_flight' AND due_at <= @now) AS due,
          count(*) FILTER (WHERE status <> 'in_flight' AND due_at > @now) AS scheduled,
          count(*) FILTER (WHERE status = 'in_flight') AS in_flight,
          (SELECT count(*) FROM keyhook_deliveries INDEXED BY keyhook_deliveries_held
            WHERE status = 'held') AS held
        FROM keyhook_deliveries INDEXED BY keyhook_deliveries_due WHERE due_at IS NOT NULL`,
  );
}

export function countQueuedDeliveries(
  countQueued: ReturnType<typeof prepareCountQueuedDeliveries>,
  now: Date,
): QueueDepth {
  const row = countQueued.get({ now: now.getTime() })!;
  return { due: row.due, scheduled: row.scheduled, inFlight: row.in_flight, held: row.held };
}
