import type Database from 'better-sqlite3';

export function prepareTouchApiKey(db: Database.Database): Database.Statement<[number, string, number]> {
  return db.prepare(
    `UPDATE keyhook_api_keys SET last_used_at = ?
        WHERE id = ? AND (last_used_at IS NULL OR last_used_at <= ?)`,
  );
}

/** One conditional write: of concurrent touches within the interval, one writes. */
export function touchApiKey(
  touch: ReturnType<typeof prepareTouchApiKey>,
  id: string,
  at: Date,
  minIntervalMs: number,
): boolean {
  return touch.run(at.getTime(), id, at.getTime() - minIntervalMs).changes > 0;
}
