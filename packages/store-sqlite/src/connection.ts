import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { isUnavailableError, unavailable } from './unavailable.js';

export const DEFAULT_BUSY_TIMEOUT_MS = 5_000;

/**
 * Opens a connection as keyhook wants it: WAL (readers never block the writer, and a commit is
 * visible to every other connection's next read), `synchronous=NORMAL` (durable at checkpoints,
 * never corrupt; the WAL default), foreign keys on, and a busy timeout so a second process waits
 * for the write lock instead of failing at once.
 */
export function openDatabase(
  filename: string,
  busyTimeoutMs: number = DEFAULT_BUSY_TIMEOUT_MS,
): Database.Database {
  assertFilename(filename);
  assertBusyTimeout(busyTimeoutMs);
  let db: Database.Database | undefined;
  try {
    db = new Database(filename, { timeout: busyTimeoutMs });
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    const mode = enterWal(db, busyTimeoutMs);
    // An in-memory database answers "memory"; a file that stays in another mode would lose the guarantees above.
    if (mode !== 'wal' && !db.memory)
      throw new Error(`journal_mode stayed "${String(mode)}" instead of "wal"`);
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    return db;
  } catch (error) {
    db?.close();
    throw openFailure(filename, 'open', error);
  }
}

/**
 * Opens an existing file read-only, to read its migrations without writing anything: no file is
 * created and no pragma is changed. Null when there is no file yet (an in-memory name included),
 * that is, when every migration is pending.
 */
export function openReadOnly(
  filename: string,
  busyTimeoutMs: number = DEFAULT_BUSY_TIMEOUT_MS,
): Database.Database | null {
  assertFilename(filename);
  assertBusyTimeout(busyTimeoutMs);
  if (filename === ':memory:' || !existsSync(filename)) return null;
  try {
    return new Database(filename, { readonly: true, fileMustExist: true, timeout: busyTimeoutMs });
  } catch (error) {
    throw openFailure(filename, 'open', error);
  }
}

/**
 * Left out and empty are one mistake with one message (docs/decisions.md §19): SQLite would take
 * `''` for a private temporary database, and an unset variable would lose every key at exit.
 */
function assertFilename(filename: unknown): void {
  if (typeof filename === 'string' && filename.trim() !== '') return;
  throw new TypeError(
    "keyhook: filename is required. Pass the SQLite database file's path, createSqliteStore({ filename: './data/keyhook.db' }): " +
      "it is created when missing; ':memory:' keeps the database in this process only.",
  );
}

function assertBusyTimeout(busyTimeoutMs: number): void {
  if (!Number.isSafeInteger(busyTimeoutMs) || busyTimeoutMs < 0) {
    throw new TypeError(`busyTimeoutMs must be a non-negative integer, got ${busyTimeoutMs}`);
  }
}

// Pause lengths while another connection holds the lock WAL needs: 1, 2, 4 … capped at 50 ms.
const MAX_PAUSE_MS = 50;
const pauseCell = new Int32Array(new SharedArrayBuffer(4));

/**
 * Switches the file to WAL, waiting up to `busyTimeoutMs` for the exclusive lock that takes.
 * SQLite does not call its busy handler here when two connections both hold a shared lock and
 * both want to upgrade (it answers SQLITE_BUSY at once to break the deadlock), which is exactly
 * what several processes opening one new file do; so this waits and retries by itself.
 */
function enterWal(db: Database.Database, busyTimeoutMs: number): unknown {
  const deadline = Date.now() + busyTimeoutMs;
  for (let pause = 1; ; pause = Math.min(pause * 2, MAX_PAUSE_MS)) {
    try {
      return db.pragma('journal_mode = WAL', { simple: true });
    } catch (error) {
      if (!isBusy(error) || Date.now() >= deadline) throw error;
      Atomics.wait(pauseCell, 0, 0, pause);
    }
  }
}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/** A failure while opening or migrating, with the file named: unavailable when it may pass, else a plain Error. */
export function openFailure(filename: string, step: 'open' | 'migrate', error: unknown): Error {
  // Without the `keyhook: ` of keyhook's own errors: this message already starts with it.
  const reason = (error instanceof Error ? error.message : String(error)).replace(/^keyhook: /, '');
  const message = `keyhook: cannot ${step} the SQLite database at ${filename}: ${reason}`;
  return isUnavailableError(error) ? unavailable(message, error) : new Error(message, { cause: error });
}
