import { validationFailed } from '../validation.js';

/** docs/http-api.md §4.3 rule 9: 1 to 255 printable ASCII characters. */
const PRINTABLE_ASCII = /^[\x20-\x7e]{1,255}$/;

/**
 * An `Idempotency-Key` as keyhook takes it, for a host route that takes one too: the key, or a
 * `400 validation_failed` naming the header.
 */
export function checkIdempotencyKey(key: string): string {
  if (!PRINTABLE_ASCII.test(key)) {
    throw validationFailed([
      { path: 'Idempotency-Key', message: 'must be 1 to 255 printable ASCII characters' },
    ]);
  }
  return key;
}

/**
 * The refusals whose answer is not kept for a key: the client fixes the request and sends it again
 * with the same key (docs/decisions.md §7.4). Every other answer below 500 is.
 */
export const IDEMPOTENCY_REFUSALS_NOT_KEPT: ReadonlySet<string> = new Set([
  'validation_failed',
  'invalid_json',
  'payload_too_large',
  'unsupported_media_type',
]);
