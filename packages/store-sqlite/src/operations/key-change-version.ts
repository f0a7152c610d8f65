import type Database from 'better-sqlite3';

/** The store's own key changes, which rotateApiKey, revokeApiKey and updateApiKey count. */
export interface LocalKeyChanges {
  local: number;
}

/**
 * keyChangeVersion's state on the store's connection: the data version last read and when, and
 * the store's own key changes, which the data version never counts.
 */
export interface KeyChangeState extends LocalKeyChanges {
  readonly readDataVersion: Database.Statement<[], number>;
  readonly checkIntervalMs: number;
  dataVersion: number;
  checkedAt: number;
}

export function prepareKeyChangeVersion(db: Database.Database, checkIntervalMs: number): KeyChangeState {
  return {
    // Changes whenever another connection commits to the file; never for this connection's own writes.
    readDataVersion: db.prepare<[], number>('PRAGMA data_version').pluck(),
    checkIntervalMs,
    dataVersion: 0,
    checkedAt: Number.NEGATIVE_INFINITY,
    local: 0,
  };
}

/** This store's own revokes and rotations at once; other connections' within the check interval. */
export function keyChangeVersion(state: KeyChangeState): number | null {
  // A monotonic clock read (40 ns), not a timer: a timer cost more to arm and fire than the
  // PRAGMA it spared, and never fires for a caller that does not let the event loop turn.
  const now = performance.now();
  if (now - state.checkedAt >= state.checkIntervalMs) {
    try {
      state.dataVersion = state.readDataVersion.get()!;
    } catch {
      return null; // the file cannot be read: cache nothing, and ask again on the next call
    }
    state.checkedAt = now;
  }
  return state.dataVersion + state.local;
}
