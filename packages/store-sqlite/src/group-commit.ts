import type Database from 'better-sqlite3';

/** At most this many operations share one commit, so the write lock is never held for long. */
export const MAX_GROUP_SIZE = 256;

interface Pending {
  operation: () => unknown;
  resolve: (value: never) => void;
  reject: (error: unknown) => void;
}

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * Group commit for the delivery path's writes (publish, lease, record an attempt). Operations
 * that arrive in the same turn of the event loop run in one IMMEDIATE transaction, each inside
 * a savepoint of its own (better-sqlite3 nests a transaction function as a savepoint), and
 * their promises settle once that transaction has committed.
 *
 * - Each operation is still atomic: one that throws is rolled back to its savepoint alone and
 *   rejects alone; the others commit.
 * - Nothing resolves before the commit: a failed BEGIN or COMMIT, or an error that made SQLite
 *   roll the whole transaction back, rejects every operation of the group, so no caller is told
 *   "done" about a write that did not land.
 * - A commit costs a WAL write of every page the transaction touched; one commit for a group
 *   writes the shared pages (the same table and index leaves) once instead of once per
 *   operation, which is most of what a delivery cost on SQLite (BENCHMARKS.md).
 */
export class GroupCommit {
  private queue: Pending[] = [];
  private scheduled = false;
  private readonly commitGroup: (group: readonly Pending[]) => Settled[];

  constructor(
    private readonly db: Database.Database,
    private readonly translate: (error: unknown) => unknown,
  ) {
    const inGroup = db.transaction((group: readonly Pending[]): Settled[] =>
      group.map((pending): Settled => {
        try {
          return { ok: true, value: pending.operation() };
        } catch (error) {
          // SQLite rolled the whole transaction back (I/O error, a full disk, …): the group fails
          // together, the operations before this one included.
          if (!db.inTransaction) throw error;
          return { ok: false, error };
        }
      }),
    );
    this.commitGroup = (group) => inGroup.immediate(group);
  }

  /**
   * Runs `operation` (a better-sqlite3 transaction function, so that it nests as a savepoint)
   * in the next group, and settles with its result after the group commits.
   */
  run<T>(operation: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ operation, resolve: resolve as (value: never) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    // A connection shared with the host (`database`) may hold the host's transaction open across
    // an await: a group run now would commit or roll back with it. Wait for it to end.
    if (this.db.inTransaction) {
      setImmediate(() => this.flush());
      return;
    }
    this.scheduled = false;
    while (this.queue.length > 0) {
      const group = this.queue.splice(0, MAX_GROUP_SIZE);
      let settled: Settled[];
      try {
        settled = this.commitGroup(group);
      } catch (error) {
        const translated = this.translate(error);
        for (const pending of group) pending.reject(translated);
        continue;
      }
      group.forEach((pending, index) => {
        const outcome = settled[index]!;
        if (outcome.ok) pending.resolve(outcome.value as never);
        else pending.reject(this.translate(outcome.error));
      });
    }
  }
}
