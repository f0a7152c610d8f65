import { isKeyhookError, KeyhookError } from '../errors.js';
import type { KeyhookResponse } from './messages.js';

const REALM = 'keyhook';

export function jsonResponse(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): KeyhookResponse {
  return {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
    body: JSON.stringify(body),
  };
}

export function emptyResponse(status: number, headers: Record<string, string> = {}): KeyhookResponse {
  return { status, headers, body: null };
}

/** Any thrown value becomes a KeyhookError; what is not one is an internal error, told to nobody. */
export function toKeyhookError(error: unknown): KeyhookError {
  if (isKeyhookError(error)) return error;
  return new KeyhookError('internal_error', 'An internal error occurred.', { cause: error });
}

const QUOTED_UNSAFE = /["\\\r\n]/g;

/**
 * `{ "error": { code, message, details? } }` with its status (docs/decisions.md §1.2): the one
 * envelope, for keyhook's own errors and for a host's routes beside them (the reference data
 * plane's `source_inactive`, say), so a client reads every error the same way.
 */
export function errorEnvelope(
  status: number,
  code: string,
  message: string,
  details?: readonly unknown[],
  headers: Record<string, string> = {},
): KeyhookResponse {
  const body: { code: string; message: string; details?: readonly unknown[] } = { code, message };
  if (details) body.details = details;
  return jsonResponse(status, { error: body }, headers);
}

/** The error envelope of docs/decisions.md §1.2, with RFC 6750 challenges on 401 and 403. */
export function errorResponse(error: KeyhookError): KeyhookResponse {
  const headers: Record<string, string> = { ...error.headers };
  const challenge = challengeFor(error);
  if (challenge) headers['www-authenticate'] = challenge;
  if (error.retryAfter !== undefined)
    headers['retry-after'] = String(Math.max(0, Math.ceil(error.retryAfter)));
  const internal = error.code === 'internal_error';
  const message = internal ? 'An internal error occurred.' : error.message;
  return errorEnvelope(error.status, error.code, message, internal ? undefined : error.details, headers);
}

function challengeFor(error: KeyhookError): string | undefined {
  if (error.status === 401) {
    // RFC 6750 §3.1: a request with no credentials gets a challenge without an error code.
    if (error.code === 'missing_credentials') return `Bearer realm="${REALM}"`;
    const description = error.message.replace(QUOTED_UNSAFE, '');
    return `Bearer realm="${REALM}", error="invalid_token", error_description="${description}"`;
  }
  if (error.code === 'insufficient_scope') {
    const scope = error.details?.find((d) => typeof d['scope'] === 'string')?.['scope'];
    return `Bearer realm="${REALM}", error="insufficient_scope"${scope ? `, scope="${scope}"` : ''}`;
  }
  return undefined;
}
