import { statSync } from 'node:fs';
import path from 'node:path';
import type { Keyhook } from '@keyhook/core';
import { recordingLogger, waitUntil } from '@keyhook/testing/support';
import Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { CHECKPOINT_FAILURES_BEFORE_FALLBACK, sqliteStagingDb } from '../src/data-plane/sqlite-db.js';
import { tempDir } from './instances.js';

/**
 * The data plane's WAL checkpointer (a worker thread) must not fail in silence: a WAL that no
 * checkpoint moves grows without bound. It tells a failure, and past a few in a row gives the
 * checkpoints back to the connection.
 */
describe('the WAL checkpointer', () => {
  const temp = tempDir();
  const opened: { db: Database.Database; close(): Promise<void> }[] = [];
  afterEach(async () => {
    for (const { db, close } of opened.splice(0)) {
      await close();
      db.close();
    }
  });
  afterAll(() => temp.remove());

  const open = (statement?: string) => {
    const db = new Database(path.join(temp.dir, `staging-${opened.length}.db`));
    db.pragma('journal_mode = WAL');
    const logger = recordingLogger();
    const staging = sqliteStagingDb(db, {} as Keyhook['events'], logger, { statement });
    opened.push({ db, close: () => staging.close() });
    return { db, logger };
  };

  it('takes over the checkpoints from the connection while it works', async () => {
    const { db, logger } = open();
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    // Pages written to the WAL reach the database file only by a checkpoint, and the
    // connection runs none now: the file grows once the checkpointer has run one.
    const size = () => statSync(db.name).size;
    const before = size();
    db.exec('CREATE TABLE filler (blob BLOB)');
    db.exec(
      'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50) INSERT INTO filler SELECT randomblob(2000) FROM n',
    );
    await waitUntil(
      () => size() > before,
      10_000,
      () => `the database file is still ${size()} bytes`,
    );
    expect(logger.lines).toEqual([]);
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
  });

  it('says when checkpoints fail, and after several in a row turns the automatic ones back on', async () => {
    // Prepares, then fails every time it runs, as a damaged file would.
    const { db, logger } = open("SELECT json_extract('not json', '$')");
    await expect
      .poll(() => db.pragma('wal_autocheckpoint', { simple: true }), { timeout: 10_000 })
      .toBe(1000);
    expect(logger.lines.map((line) => [line.level, line.message])).toEqual([
      ['warn', 'staging: a WAL checkpoint failed'],
      ['error', 'staging: WAL checkpoints keep failing; automatic checkpoints are back on'],
    ]);
    expect(logger.lines[1]!.context).toMatchObject({
      failures: CHECKPOINT_FAILURES_BEFORE_FALLBACK,
      code: 'SQLITE_ERROR',
    });
  });

  it('a checkpointer that cannot start its statement leaves the automatic checkpoints on, and says so', async () => {
    const { db, logger } = open('SELECT no_such_function()');
    await expect
      .poll(() => db.pragma('wal_autocheckpoint', { simple: true }), { timeout: 10_000 })
      .toBe(1000);
    expect(logger.lines.map((line) => line.message)).toEqual([
      'staging: the WAL checkpointer stopped; automatic checkpoints are back on',
    ]);
  });
});
