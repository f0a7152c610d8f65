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
 * that arrive in the same turn of the event loop run in one IMMEDIATE transaction, and their
 * promises settle once that transaction has committed.
 *
 * - Each operation is still atomic. A group runs its operations one after another, and if one
 *   throws, the whole transaction is rolled back and the group runs again with each operation in
 *   a savepoint of its own: the one that throws is rolled back to its savepoint alone and
 *   rejects alone; the others commit. The usual group, where nothing throws, pays for no
 *   savepoints (a savepoint and its release cost about as much as a small statement). An
 *   operation is a function of the database alone, so running it again is safe: nothing of the
 *   first run was committed or told to anyone.
 * - Nothing resolves before the commit: a failed BEGIN or COMMIT, or an error that made SQLite
 *   roll the whole transaction back, rejects every operation of the group, so no caller is told
 *   "done" about a write that did not land.
 * - A commit costs a WAL write of every page the transaction touched; one commit for a group
 *   writes the shared pages (the same table and index leaves) once instead of once per
 *   operation, which is most of what a delivery cost on SQLite (docs/decisions.md §8.13).
 */
export class GroupCommit {
  private queue: Pending[] = [];
  private scheduled = false;
  private readonly commitGroup: (group: readonly Pending[]) => Settled[];

  constructor(
    private readonly db: Database.Database,
    private readonly translate: (error: unknown) => unknown,
    /** After each group that committed (checkpoint-thread.ts). */
    private readonly committed: () => void = () => {},
  ) {
    let operationThrew = false;
    const straight = db.transaction((group: readonly Pending[]): Settled[] =>
      group.map((pending): Settled => {
        try {
          return { ok: true, value: pending.operation() };
        } catch (error) {
          operationThrew = true;
          throw error; // better-sqlite3 rolls the transaction back
        }
      }),
    );
    const isolated = db.transaction((group: readonly Pending[]): Settled[] =>
      group.map((pending): Settled => {
        try {
          // Called inside a transaction, a transaction function runs in a savepoint.
          return { ok: true, value: db.transaction(pending.operation)() };
        } catch (error) {
          // SQLite rolled the whole transaction back (I/O error, a full disk, …): the group fails
          // together, the operations before this one included.
          if (!db.inTransaction) throw error;
          return { ok: false, error };
        }
      }),
    );
    this.commitGroup = (group) => {
      operationThrew = false;
      try {
        return straight.immediate(group);
      } catch (error) {
        // BEGIN or COMMIT failed: that is the group's answer, not a reason to run it again.
        if (!operationThrew) throw error;
      }
      return isolated.immediate(group);
    };
  }

  /**
   * Runs `operation` (a function of the database alone: it may run twice, see above) in the next
   * group, and settles with its result after the group commits.
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
      this.committed();
      group.forEach((pending, index) => {
        const outcome = settled[index]!;
        if (outcome.ok) pending.resolve(outcome.value as never);
        else pending.reject(this.translate(outcome.error));
      });
    }
  }
}
