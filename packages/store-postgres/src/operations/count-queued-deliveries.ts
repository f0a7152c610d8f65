import type { QueueDepth } from '@keyhook/core/store';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';

const statements = (t: Tables) => ({
  // The queue-depth gauge, on each collection. Both counts read their partial index only (the
  // due index includes the status, migration 0010), never the finished rows.
  // Schema, not rule: `status = 'held'` here and in expireHeldDeliveries is
  // keyhook_deliveries_held_idx's predicate (0004), which a bound state would not match
  // (docs/decisions.md §10.4).
  countQueued: `SELECT
        count(*) FILTER (WHERE status <> 'in_flight' AND due_at <= $1)::int AS due,
        count(*) FILTER (WHERE status <> 'in_flight' AND due_at > $1)::int AS scheduled,
        count(*) FILTER (WHERE status = 'in_flight')::int AS in_flight,
        (SELECT count(*) FROM ${t.deliveries} WHERE status = 'held')::int AS held
      FROM ${t.deliveries} WHERE status IN ('pending', 'retry_scheduled', 'in_flight')`,
});

export async function countQueuedDeliveries(ctx: StoreContext, now: Date): Promise<QueueDepth> {
  const result = await ctx.query<{ due: number; scheduled: number; in_flight: number; held: number }>(
    ctx.sql(statements).countQueued,
    [now],
  );
  const row = result.rows[0]!;
  return { due: row.due, scheduled: row.scheduled, inFlight: row.in_flight, held: row.held };
}
