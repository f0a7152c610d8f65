import type Database from 'better-sqlite3';

export function preparePurgeIdempotencyKeys(db: Database.Database): Database.Statement<[number]> {
  return db.prepare('DELETE FROM keyhook_idempotency_keys WHERE expires_at <= ?');
}

export function purgeIdempotencyKeys(
  purge: ReturnType<typeof preparePurgeIdempotencyKeys>,
  now: Date,
): number {
  return purge.run(now.getTime()).changes;
}
