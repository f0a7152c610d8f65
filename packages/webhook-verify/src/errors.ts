/** Why a delivery was refused; one code per cause, so a receiver can log and count them. */
export const VERIFICATION_ERROR_CODES = [
  'missing_signature',
  'malformed_header',
  'signature_mismatch',
  'timestamp_out_of_tolerance',
  'invalid_payload',
  'event_id_mismatch',
] as const;

export type WebhookVerificationErrorCode = (typeof VERIFICATION_ERROR_CODES)[number];

// Symbol.for, so the ESM and CJS builds (and two copies of the package) recognise each other's errors.
const BRAND = Symbol.for('keyhook.webhook-verify.error');

/**
 * Thrown for a delivery that must not be trusted. Arguments that are wrong (no secret, a parsed
 * body instead of the raw one, a bad option) throw a TypeError instead: that is a bug, not a forgery.
 */
export class WebhookVerificationError extends Error {
  readonly [BRAND] = true;
  readonly code: WebhookVerificationErrorCode;

  constructor(code: WebhookVerificationErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'WebhookVerificationError';
    this.code = code;
  }
}

/** Prefer this to `instanceof`, which fails across bundles and between the ESM and CJS builds. */
export function isWebhookVerificationError(value: unknown): value is WebhookVerificationError {
  return typeof value === 'object' && value !== null && (value as { [BRAND]?: unknown })[BRAND] === true;
}
