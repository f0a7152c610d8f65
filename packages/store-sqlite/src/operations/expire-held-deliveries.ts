import type Database from 'better-sqlite3';

export function prepareExpireHeldDeliveries(db: Database.Database): Database.Statement<[number, number]> {
  // Schema, not rule: `status = 'held'` is the partial index keyhook_deliveries_held's predicate
  // (0003) word for word, which SQLite needs to use it; a bound state could not be (docs/decisions.md §10.4).
  return db.prepare(
    `UPDATE keyhook_deliveries SET status = 'failed', held_since = NULL, updated_at = ?
        WHERE status = 'held' AND held_since <= ?`,
  );
}

export function expireHeldDeliveries(
  expireHeld: ReturnType<typeof prepareExpireHeldDeliveries>,
  heldBefore: Date,
  at: Date,
): number {
  return expireHeld.run(at.getTime(), heldBefore.getTime()).changes;
}
