import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { isKeyhookError } from '@keyhook/core';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/connection.js';
import { createSqliteStore } from '../src/index.js';

const root = mkdtempSync(join(tmpdir(), 'keyhook-sqlite-connection-'));
let count = 0;
const freshFile = () => join(root, `db-${++count}.db`);

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('opening', () => {
  it('sets WAL, synchronous=NORMAL, foreign keys and the busy timeout (default 5000 ms)', () => {
    const filename = freshFile();
    const db = openDatabase(filename);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('synchronous', { simple: true })).toBe(1);
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(db.pragma('busy_timeout', { simple: true })).toBe(5000);
    db.close();
    const custom = openDatabase(filename, 250);
    expect(custom.pragma('busy_timeout', { simple: true })).toBe(250);
    custom.close();
    expect(() => openDatabase(filename, -1)).toThrow(/busyTimeoutMs/);
  });

  it('waits for the write lock when switching to WAL, where SQLite itself would answer SQLITE_BUSY at once', async () => {
    // SQLite skips its busy handler when a read transaction asks to become a write transaction
    // (the switch to WAL does that), so without a wait of keyhook's own this open fails in ~0 ms.
    const filename = freshFile();
    const holder = new Worker(holdWriteLock, { workerData: { filename, holdMs: 150 } });
    const messages: string[] = [];
    const released = new Promise<void>((resolve, reject) => {
      holder.on('message', (message: string) => {
        messages.push(message);
        if (message === 'released') resolve();
      });
      holder.on('error', reject);
    });
    await new Promise<void>((resolve) => holder.once('message', () => resolve()));
    const started = performance.now();
    const db = openDatabase(filename, 5_000);
    const waited = performance.now() - started;
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    db.close();
    await released;
    await holder.terminate();
    expect(messages).toEqual(['locked', 'released']);
    expect(waited).toBeGreaterThanOrEqual(100);
  });

  it('gives up after the busy timeout with the unavailable code when the lock stays taken', async () => {
    const filename = freshFile();
    const holder = new Worker(holdWriteLock, { workerData: { filename, holdMs: 1_000 } });
    await new Promise<void>((resolve) => holder.once('message', () => resolve()));
    const error = captured(() => openDatabase(filename, 100));
    await holder.terminate();
    expect(error.message).toMatch(/cannot open the SQLite database at .*: database is locked/);
    expect(isKeyhookError(error) && error.code === 'unavailable').toBe(true);
  });

  it('names the file when the path cannot be opened', () => {
    const notADir = join(root, `plain-file-${++count}`);
    writeFileSync(notADir, 'just a file');
    const filename = join(notADir, 'keyhook.db');
    const error = captured(() => createSqliteStore({ filename }));
    expect(error.message).toContain(`cannot open the SQLite database at ${filename}`);
    // SQLITE_CANTOPEN: out of reach, so a caller that retries gets the 503 code.
    expect(isKeyhookError(error) && error.code === 'unavailable').toBe(true);

    const missingDir = join(root, 'no-such-dir', 'keyhook.db');
    expect(() => createSqliteStore({ filename: missingDir })).toThrow(
      /cannot open the SQLite database at .*no-such-dir.*directory does not exist/,
    );
  });

  it('names the file when it is not a SQLite database', () => {
    const filename = join(root, `garbage-${++count}.db`);
    writeFileSync(filename, 'this is not a database file, just some text that is long enough'.repeat(100));
    const error = captured(() => createSqliteStore({ filename }));
    expect(error.message).toMatch(/cannot open the SQLite database at .*garbage.*: file is not a database/);
    expect(isKeyhookError(error)).toBe(false);
    expect((error.cause as { code?: string }).code).toBe('SQLITE_NOTADB');
  });
});

function captured(action: () => unknown): Error {
  try {
    action();
  } catch (error) {
    if (error instanceof Error) return error;
    throw error;
  }
  throw new Error('expected a throw');
}

const holdWriteLock = new URL('./fixtures/hold-write-lock.mjs', import.meta.url);
