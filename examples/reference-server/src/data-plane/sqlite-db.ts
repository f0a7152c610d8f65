import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { type Logger, silentLogger } from '@keyhook/core';
import { toStoreError } from '@keyhook/store-sqlite';
import type Database from 'better-sqlite3';
import type { ReferenceKeyhook } from '../catalog.js';
import { Serial, type SqlParam, type StagingDb, type Tx } from './db.js';

/**
 * The data plane's tables on SQLite, on the connection the keyhook store was given (`database`), so
 * that an event joins the transaction of the state change that caused it (publishSync).
 * better-sqlite3 is synchronous: a transaction runs to its end without yielding to other
 * requests, and `Serial` keeps the async wrappers in call order, one transaction at a time.
 */
export function sqliteStagingDb(
  db: Database.Database,
  events: ReferenceKeyhook['events'],
  logger: Logger = silentLogger,
  checkpoints: CheckpointerOptions = {},
): StagingDb {
  const serial = new Serial();
  const checkpointer = startCheckpointer(db, logger, checkpoints);
  const statements = new Map<string, Database.Statement>();
  const prepare = (sql: string) => {
    let statement = statements.get(sql);
    if (!statement) {
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
  const attempt = <T>(action: () => T): Promise<T> => {
    try {
      return Promise.resolve(action());
    } catch (error) {
      return Promise.reject(toStoreError(error));
    }
  };
  const tx: Tx = {
    all: <T>(sql: string, params: readonly SqlParam[] = []) =>
      attempt(() => prepare(sql).all(...params) as T[]),
    get: <T>(sql: string, params: readonly SqlParam[] = []) =>
      attempt(() => prepare(sql).get(...params) as T | undefined),
    run: (sql: string, params: readonly SqlParam[] = []) =>
      attempt(() => prepare(sql).run(...params).changes),
    exec: (sql: string) => attempt(() => void db.exec(sql)),
    publish: async (input) => {
      if (!db.inTransaction) throw new Error('staging: an event is published inside a transaction only');
      events.publishSync(input, { transaction: db });
    },
  };
  return {
    dialect: 'sqlite',
    transaction: (work) =>
      serial.run(async () => {
        await attempt(() => db.exec('BEGIN IMMEDIATE'));
        try {
          const result = await work(tx);
          await attempt(() => db.exec('COMMIT'));
          return result;
        } catch (error) {
          if (db.inTransaction) db.exec('ROLLBACK');
          throw error;
        }
      }),
    read: (work) => serial.run(() => work(tx)),
    close: async () => {
      await serial.run(async () => {});
      await checkpointer?.stop();
    },
  };
}

/** How often the background checkpointer moves committed WAL pages into the database file. */
export const CHECKPOINT_INTERVAL_MS = 200;

/** Checkpoints failing in a row, for a reason other than a busy database, before the automatic ones come back. */
export const CHECKPOINT_FAILURES_BEFORE_FALLBACK = 5;

export interface CheckpointerOptions {
  /** Tests: the checkpoint statement the worker runs (a failing one, to see the fallback). */
  statement?: string;
}

/**
 * WAL checkpoints off the event loop. SQLite runs an automatic checkpoint inside the COMMIT that
 * takes the WAL past `wal_autocheckpoint` pages (1000): with better-sqlite3 that COMMIT copies
 * every page the WAL holds into the database file and fsyncs it on the event loop, 40–190 ms
 * during a large snapshot or apply (data-plane.md §5.8). So the connection's
 * automatic checkpoints are turned off, and a worker thread with a connection of its own runs
 * `PRAGMA wal_checkpoint(PASSIVE)` every CHECKPOINT_INTERVAL_MS: a passive checkpoint takes no
 * lock a writer needs, so commits go on while it copies and syncs. If the worker cannot run,
 * the automatic checkpoints come back. An in-memory database has no WAL: nothing to do.
 */
function startCheckpointer(
  db: Database.Database,
  logger: Logger,
  options: CheckpointerOptions,
): { stop(): Promise<void> } | undefined {
  if (db.memory || db.name === '' || db.pragma('journal_mode', { simple: true }) !== 'wal') return undefined;
  const automatic = db.pragma('wal_autocheckpoint', { simple: true }) as number;
  let worker: Worker;
  try {
    worker = new Worker(CHECKPOINTER, {
      eval: true,
      workerData: {
        driver: createRequire(import.meta.url).resolve('better-sqlite3'),
        file: db.name,
        intervalMs: CHECKPOINT_INTERVAL_MS,
        statement: options.statement ?? 'PRAGMA wal_checkpoint(PASSIVE)',
      },
    });
  } catch {
    return undefined; // the automatic checkpoints stay on
  }
  db.pragma('wal_autocheckpoint = 0');
  let running = true;
  const restore = () => {
    if (!running) return;
    running = false;
    if (db.open) db.pragma(`wal_autocheckpoint = ${automatic}`);
  };
  worker.on('error', (error) => {
    logger.error(
      { err: error.message },
      'staging: the WAL checkpointer stopped; automatic checkpoints are back on',
    );
    restore();
  });
  worker.on('exit', restore);
  // A checkpoint that fails for any reason but a busy database: said once per run of failures,
  // and after CHECKPOINT_FAILURES_BEFORE_FALLBACK in a row the connection checkpoints itself
  // again, so the WAL cannot grow without bound behind a checkpointer that no longer works.
  worker.on(
    'message',
    (message: { failures: number; code: string; message: string } | { recovered: true }) => {
      if ('recovered' in message) {
        logger.info({}, 'staging: WAL checkpoints succeed again');
        return;
      }
      if (message.failures === 1) {
        logger.warn({ code: message.code, err: message.message }, 'staging: a WAL checkpoint failed');
      }
      if (message.failures >= CHECKPOINT_FAILURES_BEFORE_FALLBACK && running) {
        logger.error(
          { code: message.code, err: message.message, failures: message.failures },
          'staging: WAL checkpoints keep failing; automatic checkpoints are back on',
        );
        restore();
        void worker.terminate();
      }
    },
  );
  worker.unref();
  return {
    stop: async () => {
      if (!running) return;
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      // Unref'd while it ran; a close waits for its last checkpoint, so it holds the process now.
      worker.ref();
      worker.postMessage('stop'); // a last checkpoint, then the worker closes its connection
      await exited;
    },
  };
}

/** The checkpointer worker (CommonJS, run with `eval`): its own connection, a passive checkpoint per tick. */
const CHECKPOINTER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true, timeout: 5000 });
const checkpoint = db.prepare(workerData.statement);
let failures = 0;
const tick = () => {
  try {
    checkpoint.get();
    if (failures > 0) parentPort.postMessage({ recovered: true });
    failures = 0;
  } catch (error) {
    // A busy database is the usual case, and the next tick tries again; anything else is told.
    const code = String((error && error.code) || 'unknown');
    if (code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED') return;
    failures++;
    parentPort.postMessage({ failures, code, message: String((error && error.message) || error) });
  }
};
const timer = setInterval(tick, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  tick();
  db.close();
  parentPort.close();
});
`;
