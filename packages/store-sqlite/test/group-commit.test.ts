import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isKeyhookError } from '@keyhook/core';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/connection.js';
import { GroupCommit, MAX_GROUP_SIZE } from '../src/group-commit.js';
import { translateDriverError } from '../src/unavailable.js';

const root = mkdtempSync(join(tmpdir(), 'keyhook-group-commit-'));
let count = 0;
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A WAL file, the group writer on one connection and an observer on a second one. */
function setup() {
  const file = join(root, `db-${++count}.db`);
  const db = openDatabase(file);
  db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY)');
  const observer = new Database(file, { readonly: true });
  const committed = () => observer.prepare('SELECT count(*) FROM t').pluck().get() as number;
  const insert = db.transaction((n: number) => {
    db.prepare('INSERT INTO t (n) VALUES (?)').run(n);
    return n;
  });
  return { db, committed, insert, group: new GroupCommit(db, translateDriverError) };
}

describe('group commit (the SQLite delivery path)', () => {
  it('runs the operations of one turn in one transaction and settles them after its commit', async () => {
    const { committed, insert, group } = setup();
    const seenByObserver: number[] = [];
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, n) =>
        group.run(() => {
          // Another connection sees no row of the group until the single commit.
          seenByObserver.push(committed());
          return insert(n);
        }),
      ),
    );
    expect(results).toEqual(Array.from({ length: 50 }, (_, n) => n));
    expect(new Set(seenByObserver)).toEqual(new Set([0]));
    expect(committed()).toBe(50);
  });

  it('rolls back an operation that throws to its own savepoint; the others commit', async () => {
    const { committed, insert, group } = setup();
    const outcomes = await Promise.allSettled([
      group.run(() => insert(1)),
      group.run(() => insert(1)), // the primary key refuses it
      group.run(() => insert(2)),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((outcomes[1] as PromiseRejectedResult).reason.code).toBe('SQLITE_CONSTRAINT_PRIMARYKEY');
    expect(committed()).toBe(2);
  });

  it('uses no savepoint while nothing throws, and runs a group with one that throws again, isolated', async () => {
    const file = join(root, `db-${++count}.db`);
    const statements: string[] = [];
    const db = new Database(file, { verbose: (sql) => statements.push(String(sql)) });
    db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY)');
    const group = new GroupCommit(db, translateDriverError);
    const insert = db.prepare('INSERT INTO t (n) VALUES (?)');
    const runs = new Map<number, number>();
    // A plain function, not a transaction function: the group makes it atomic.
    const op = (n: number) => () => {
      runs.set(n, (runs.get(n) ?? 0) + 1);
      insert.run(n);
      return runs.get(n);
    };

    statements.length = 0;
    expect(await Promise.all([group.run(op(1)), group.run(op(2))])).toEqual([1, 1]);
    expect(statements).toEqual([
      'BEGIN IMMEDIATE',
      'INSERT INTO t (n) VALUES (1.0)',
      'INSERT INTO t (n) VALUES (2.0)',
      'COMMIT',
    ]);

    statements.length = 0;
    runs.clear();
    const outcomes = await Promise.allSettled([group.run(op(3)), group.run(op(1)), group.run(op(4))]);
    // op(3) ran twice (its first run was rolled back with the group), op(1) failed twice, op(4)
    // ran once, in the second, isolated run; what the callers get is from the committed run.
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : o.reason.code))).toEqual([
      2,
      'SQLITE_CONSTRAINT_PRIMARYKEY',
      1,
    ]);
    expect(statements.filter((sql) => /^(BEGIN IMMEDIATE|COMMIT|ROLLBACK)$/.test(sql))).toEqual([
      'BEGIN IMMEDIATE',
      'ROLLBACK',
      'BEGIN IMMEDIATE',
      'COMMIT',
    ]);
    expect(statements.filter((sql) => sql.startsWith('SAVEPOINT'))).toHaveLength(3);
    expect(db.prepare('SELECT n FROM t ORDER BY n').pluck().all()).toEqual([1, 2, 3, 4]);
    db.close();
  });

  it('rejects every operation, the finished ones too, when the transaction is lost', async () => {
    const { db, committed, insert, group } = setup();
    const outcomes = await Promise.allSettled([
      group.run(() => insert(1)),
      group.run(() => {
        // What SQLite does on its own after some I/O errors: the whole transaction is gone.
        db.exec('ROLLBACK');
        throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' });
      }),
      group.run(() => insert(2)),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected']);
    for (const outcome of outcomes) {
      const reason = (outcome as PromiseRejectedResult).reason;
      expect(isKeyhookError(reason) && reason.code).toBe('unavailable');
    }
    expect(committed()).toBe(0);
    // The next turn's group works again.
    await expect(group.run(() => insert(3))).resolves.toBe(3);
    expect(committed()).toBe(1);
  });

  it('fails the whole group with unavailable when the write lock cannot be had, without running it', async () => {
    const file = join(root, `db-${++count}.db`);
    const statements: string[] = [];
    const db = new Database(file, { timeout: 50, verbose: (sql) => statements.push(String(sql)) });
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY)');
    const other = new Database(file, { timeout: 0 });
    other.exec('BEGIN IMMEDIATE');
    const group = new GroupCommit(db, translateDriverError);
    statements.length = 0;
    let runs = 0;
    const insert = (n: number) => () => {
      runs++;
      return db.prepare('INSERT INTO t (n) VALUES (?)').run(n);
    };
    const outcomes = await Promise.allSettled([group.run(insert(1)), group.run(insert(2))]);
    other.exec('ROLLBACK');
    for (const outcome of outcomes) {
      expect(outcome.status).toBe('rejected');
      const reason = (outcome as PromiseRejectedResult).reason;
      expect(isKeyhookError(reason) && reason.code).toBe('unavailable');
    }
    // A failed BEGIN is the group's answer: it is not run, and not tried a second time.
    expect(runs).toBe(0);
    expect(statements).toEqual(['BEGIN IMMEDIATE']);
  });

  it(`commits at most ${MAX_GROUP_SIZE} operations together, the rest in the next group`, async () => {
    const { committed, insert, group } = setup();
    const seen: number[] = [];
    await Promise.all(
      Array.from({ length: MAX_GROUP_SIZE + 10 }, (_, n) =>
        group.run(() => {
          seen.push(committed());
          return insert(n);
        }),
      ),
    );
    expect(seen.slice(0, MAX_GROUP_SIZE).every((c) => c === 0)).toBe(true);
    expect(seen.slice(MAX_GROUP_SIZE).every((c) => c === MAX_GROUP_SIZE)).toBe(true);
    expect(committed()).toBe(MAX_GROUP_SIZE + 10);
  });
});
