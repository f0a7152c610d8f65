import { unavailableError } from '@keyhook/core/store';

// Socket-level errno codes, and SQLSTATEs: admin/crash/cannot-connect-now shutdown, too many
// connections, a cancelled or timed-out statement, a transaction ended for sitting idle, a
// read-only standby after a failover, and a
// serialization failure or deadlock (all pass if the client tries again).
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  '57P01',
  '57P02',
  '57P03',
  '53300',
  '57014',
  '25P03',
  '25006',
  '40001',
  '40P01',
]);

// SQLSTATE class 53 (insufficient resources) but too many connections, above: a full disk (53100)
// or a server out of memory (53200). Writes pass again once the operator frees some, without a
// restart (docs/decisions.md §20.3).
const SHORTAGE_CODES = new Set(['53000', '53100', '53200']);

// SQLSTATE class 08: connection exception.
const CONNECTION_EXCEPTION = /^08[0-9A-Z]{3}$/;

// pg and pg-pool raise these as plain Errors without a code.
const CONNECTION_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Cannot use a pool after calling end on the pool',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'Query read timeout',
];

/** Whether an error from pg means the database could not be reached, rather than a bug. */
export function isConnectionFailure(error: unknown, depth = 0): boolean {
  if (!(error instanceof Error) || depth > 4) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (CONNECTION_CODES.has(code) || CONNECTION_EXCEPTION.test(code)))
    return true;
  if (CONNECTION_MESSAGES.some((message) => error.message.startsWith(message))) return true;
  // Node's happy-eyeballs connect reports one AggregateError for all addresses it tried.
  if (error instanceof AggregateError && error.errors.some((inner) => isConnectionFailure(inner, depth + 1)))
    return true;
  return isConnectionFailure(error.cause, depth + 1);
}

/** Whether an error from pg means the server is short of disk space or memory. */
export function isResourceShortage(error: unknown, depth = 0): boolean {
  if (!(error instanceof Error) || depth > 4) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && SHORTAGE_CODES.has(code)) return true;
  return isResourceShortage(error.cause, depth + 1);
}

/**
 * How often an operation decides again when the row changed between its deciding write and its
 * report read, before it answers `unavailable` (setWebhookStatus, claimIdempotencyKey,
 * exchangePortalLink).
 */
export const RACE_ATTEMPTS = 5;

export function unavailable(message: string, cause?: unknown): Error {
  return unavailableError(message, cause);
}

/**
 * Connection failures and a server short of disk or memory become `unavailable` (503 with
 * Retry-After); anything else is a bug and stays as it is.
 */
export function toStoreError(error: unknown): unknown {
  // Already mapped (a statement inside a transaction whose failure is mapped again on the way out).
  if (error instanceof Error && error.name === 'KeyhookError') return error;
  if (isResourceShortage(error)) return unavailable('PostgreSQL is short of disk space or memory.', error);
  return isConnectionFailure(error) ? unavailable('PostgreSQL is unreachable.', error) : error;
}
