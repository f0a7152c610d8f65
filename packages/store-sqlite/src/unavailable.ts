import { unavailableError } from '@keyhook/core/store';

// SQLite result codes that mean "the database cannot answer now", not "the statement is wrong".
// Extended codes (SQLITE_IOERR_WRITE, SQLITE_BUSY_SNAPSHOT, …) count with their base code.
// SQLITE_READONLY covers a file moved or deleted under a running process (SQLITE_READONLY_DBMOVED).
const UNAVAILABLE_CODES = [
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
  'SQLITE_IOERR',
  'SQLITE_CANTOPEN',
  'SQLITE_FULL',
  'SQLITE_READONLY',
  'SQLITE_PROTOCOL',
  'SQLITE_NOMEM',
  'SQLITE_INTERRUPT',
];

// better-sqlite3 throws a TypeError with this message once its connection was closed.
const CLOSED_MESSAGE = 'database connection is not open';

/** True when the error says the database is out of reach (busy, locked, I/O, full, closed). */
export function isUnavailableError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && UNAVAILABLE_CODES.some((c) => code === c || code.startsWith(`${c}_`))) {
    return true;
  }
  return error.message.includes(CLOSED_MESSAGE);
}

export function unavailable(message: string, cause?: unknown): Error {
  return unavailableError(message, cause);
}

/** Maps "database out of reach" to `KeyhookError('unavailable')`; anything else is a bug and stays as it is. */
export function translateDriverError(error: unknown): unknown {
  if (!isUnavailableError(error)) return error;
  const reason = error instanceof Error ? error.message : String(error);
  return unavailable(`The SQLite database is unavailable: ${reason}`, error);
}
