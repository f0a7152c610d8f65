import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../src/index.js';
import { boundLimit } from '../src/shared-statements.js';

const root = mkdtempSync(join(tmpdir(), 'keyhook-limits-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A LIMIT or OFFSET whose value is a bare parameter: `LIMIT ?`, `LIMIT @limit`, `OFFSET :n`. */
const BARE_BOUND_LIMIT = /\b(LIMIT|OFFSET)\s+[?@:$]/i;

/** docs/decisions.md §8.13: a bare bound LIMIT makes SQLite compile its statement on every call. */
describe('bound LIMITs', () => {
  it('no statement the store prepares takes its LIMIT or OFFSET as a bare parameter', async () => {
    const prepare = Database.prototype.prepare;
    const prepared: string[] = [];
    Database.prototype.prepare = function counted(this: Database.Database, source: string) {
      prepared.push(source);
      return prepare.call(this, source);
    } as typeof prepare;
    try {
      const store = createSqliteStore({ filename: join(root, 'limits.db') });
      await store.close();
    } finally {
      Database.prototype.prepare = prepare;
    }
    // The store prepared its statements, among them those with a bound LIMIT.
    expect(prepared.filter((source) => source.includes(`LIMIT ${boundLimit()}`)).length).toBeGreaterThan(3);
    expect(prepared.filter((source) => BARE_BOUND_LIMIT.test(source))).toEqual([]);
  });

  it('a bound LIMIT behind its unary plus still limits, to the value bound at each call', () => {
    const db = new Database(':memory:');
    db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY)');
    const insert = db.prepare('INSERT INTO t (n) VALUES (?)');
    for (let n = 1; n <= 10; n++) insert.run(n);
    const first = db.prepare(`SELECT n FROM t ORDER BY n LIMIT ${boundLimit()}`).pluck();
    const named = db.prepare(`SELECT n FROM t ORDER BY n LIMIT ${boundLimit('@limit')}`).pluck();
    expect(first.all(3)).toEqual([1, 2, 3]);
    expect(first.all(0)).toEqual([]);
    expect(first.all(1)).toEqual([1]);
    expect(named.all({ limit: 2 })).toEqual([1, 2]);
    db.close();
  });
});
