/**
 * One error type for everything keyhook refuses. The code is from a closed union and
 * decides the HTTP status through one table (docs/decisions.md §1.2).
 */
export const ERROR_STATUS = {
  invalid_json: 400,
  validation_failed: 400,
  missing_credentials: 401,
  invalid_api_key: 401,
  key_expired: 401,
  key_revoked: 401,
  invalid_admin_session: 401,
  /** A portal link that is unknown, used, expired or revoked (docs/decisions.md §22). */
  invalid_portal_link: 401,
  /** No portal session, or one that expired, was revoked or signed out. */
  invalid_portal_session: 401,
  insufficient_scope: 403,
  /** A portal session may not do this: a permission it lacks, a scope it may not grant, or a request from another origin. */
  forbidden: 403,
  not_found: 404,
  /** The client did not send its request (headers or body) within the server's timeout. */
  request_timeout: 408,
  idempotency_conflict: 409,
  idempotency_in_progress: 409,
  webhook_conflict: 409,
  rotation_conflict: 409,
  delivery_not_retryable: 409,
  /** Rotating a key whose format (prefix) the keyhook no longer accepts: the new secret would not verify. */
  key_format_not_accepted: 409,
  /**
   * The events feed's `after` names an event older than the feed's window (the delivery
   * retention): events after it may be gone, so the reader starts again without `after`.
   */
  feed_expired: 410,
  payload_too_large: 413,
  /** A path (or a path parameter) longer than the server accepts. */
  uri_too_long: 414,
  unsupported_media_type: 415,
  rate_limited: 429,
  /** Request headers larger than the server accepts. */
  headers_too_large: 431,
  internal_error: 500,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/**
 * The same code answers with another status in a few places the design names:
 * rotating a revoked (or expired) key is a 409 conflict, not an authentication failure.
 */
export const STATUS_OVERRIDES = {
  key_revoked: [401, 409],
  key_expired: [401, 409],
} as const satisfies Partial<Record<ErrorCode, readonly number[]>>;

export interface ErrorDetail {
  path?: string;
  message: string;
  [extra: string]: unknown;
}

export interface KeyhookErrorOptions {
  details?: ErrorDetail[];
  /** Only for the codes in STATUS_OVERRIDES. */
  status?: number;
  /** Seconds, sent as Retry-After (429, 503). */
  retryAfter?: number;
  /** More response headers, lowercase names (the `RateLimit-*` fields of a 429). */
  headers?: Record<string, string>;
  cause?: unknown;
}

const BRAND = Symbol.for('keyhook.error');

export class KeyhookError extends Error {
  readonly [BRAND] = true;
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: ErrorDetail[] | undefined;
  readonly retryAfter: number | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(code: ErrorCode, message: string, options: KeyhookErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'KeyhookError';
    this.code = code;
    this.status = resolveStatus(code, options.status);
    this.details = options.details;
    this.retryAfter = options.retryAfter;
    this.headers = options.headers;
  }
}

function resolveStatus(code: ErrorCode, requested: number | undefined): number {
  if (requested === undefined) return ERROR_STATUS[code];
  const allowed: readonly number[] | undefined = (
    STATUS_OVERRIDES as Partial<Record<ErrorCode, readonly number[]>>
  )[code];
  if (!allowed?.includes(requested)) {
    throw new TypeError(`status ${requested} is not allowed for error code ${code}`);
  }
  return requested;
}

/** Works across bundles and realms, where `instanceof` does not (trpc#4848). */
export function isKeyhookError(value: unknown): value is KeyhookError {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
}

/**
 * What a store throws when its database is out of reach (busy, closed, a dropped connection):
 * `unavailable`, answered 503 with `Retry-After: 1` (docs/decisions.md §1.9). Public on
 * `@keyhook/core/store` so a store raises it without the error surface a host uses; typed as an
 * `Error` since a store only throws it.
 */
export function unavailableError(message: string, cause?: unknown): Error {
  return new KeyhookError('unavailable', message, { retryAfter: 1, cause });
}
