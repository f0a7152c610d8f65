import type { PurgeOutcome } from '@keyhook/core/store';
import { checkOut } from '../checkout.js';
import { purgeLockKey } from '../schema-name.js';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';

/** Rows a store purges between two VACUUMs of the purged tables (see vacuumPurged). */
const VACUUM_AFTER_PURGED_ROWS = 10_000;

const statements = (t: Tables) => ({
  // Retention, one batch per transaction. Only the holder of this transaction-scoped lock
  // purges; another instance gets false and skips its round instead of queueing behind it.
  purgeLock: 'SELECT pg_try_advisory_xact_lock($1::bigint) AS held',
  // Oldest first on keyhook_deliveries_finished_idx (0005); SKIP LOCKED passes over a row an
  // admin retry holds, so the purge never waits on one. Attempts go by ON DELETE CASCADE.
  purgeDeliveries: `DELETE FROM ${t.deliveries} WHERE id IN (
        SELECT id FROM ${t.deliveries} WHERE status IN ('succeeded', 'failed') AND updated_at <= $1
        ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
  // Events old enough that no delivery refers to any more, found on keyhook_events_created_at_idx
  // and checked on keyhook_deliveries_event_id_idx (0006).
  purgeEvents: `DELETE FROM ${t.events} WHERE (tenant_id, id) IN (
        SELECT tenant_id, id FROM ${t.events} AS e WHERE created_at <= $1
          AND NOT EXISTS (SELECT 1 FROM ${t.deliveries} AS d WHERE d.tenant_id = e.tenant_id AND d.event_id = e.id)
        ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,

  vacuumPurged: `VACUUM (SKIP_LOCKED) ${t.attempts}, ${t.deliveries}, ${t.events}`,
});

/** One batch in one transaction, by the instance that holds the schema's purge lock. */
export async function purgeFinishedDeliveries(
  ctx: StoreContext,
  finishedBefore: Date,
  limit: number,
): Promise<PurgeOutcome> {
  const sql = ctx.sql(statements);
  const outcome = await ctx.transaction(async (client): Promise<PurgeOutcome> => {
    const lock = await ctx.run<{ held: boolean }>(client, sql.purgeLock, [purgeLockKey(ctx.schema)]);
    if (!lock.rows[0]?.held) return { deliveries: 0, events: 0, skipped: true };
    const deliveries = await ctx.run(client, sql.purgeDeliveries, [finishedBefore, limit]);
    const events = await ctx.run(client, sql.purgeEvents, [finishedBefore, limit]);
    return { deliveries: deliveries.rowCount ?? 0, events: events.rowCount ?? 0, skipped: false };
  });
  ctx.purgedSinceVacuum += outcome.deliveries + outcome.events;
  if (ctx.purgedSinceVacuum >= VACUUM_AFTER_PURGED_ROWS) {
    ctx.purgedSinceVacuum = 0;
    await vacuumPurged(ctx);
  }
  return outcome;
}

/**
 * Deleted rows take room until a VACUUM marks it free, and autovacuum looks at a table once a
 * minute at most: under a steady purge the tables would grow between its visits. So the
 * instance that purged VACUUMs the three tables itself every VACUUM_AFTER_PURGED_ROWS rows.
 * A plain VACUUM blocks neither reads nor writes, SKIP_LOCKED never waits for a table another
 * session locked, and a role that does not own the tables only gets a warning and leaves the
 * work to autovacuum.
 */
async function vacuumPurged(ctx: StoreContext): Promise<void> {
  const { vacuumPurged: vacuum } = ctx.sql(statements);
  try {
    // VACUUM runs outside a transaction, so its bulk bound is the session's until it is done.
    const ms = ctx.bounds.bulkServerMs();
    if (ms === null) await ctx.pool.query(ctx.prepared.config(vacuum, [], true));
    else {
      const client = await checkOut(ctx.pool);
      let reset = false;
      try {
        await client.query(`SET statement_timeout = ${ms}`);
        await client.query(ctx.prepared.config(vacuum, [], true));
        await client.query('RESET statement_timeout');
        reset = true;
      } finally {
        // One whose setting could not be put back is not pooled again.
        client.release(!reset);
      }
    }
  } catch (error) {
    ctx.logger.warn({ err: (error as Error).message }, 'keyhook: could not vacuum after a purge');
  }
}
