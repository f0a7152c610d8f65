import type { RandomBytes } from '../clock.js';

export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/**
 * A signing secret: `whsec_` + 32 CSPRNG bytes as lowercase hex. Hex, not base64, so a
 * double-click selects the whole secret and no character needs escaping anywhere.
 */
export function mintWebhookSecret(randomBytes: RandomBytes): string {
  return WEBHOOK_SECRET_PREFIX + Buffer.from(randomBytes(32)).toString('hex');
}

/** The bytes a secret of the host's may decode to, after `whsec_` (the Standard Webhooks key). */
export const WEBHOOK_SECRET_BYTES = Object.freeze({ min: 24, max: 64 });

/**
 * Why `value` is not a signing secret keyhook can take from a host, or null when it is:
 * `whsec_` and base64 (padding optional) of 24 to 64 bytes, as Svix and other Standard Webhooks
 * senders issue them; keyhook's own hex secrets are base64 too (docs/decisions.md §6.1).
 */
export function webhookSecretProblem(value: string): string | null {
  if (!value.startsWith(WEBHOOK_SECRET_PREFIX)) return `must start with ${WEBHOOK_SECRET_PREFIX}`;
  const encoded = value.slice(WEBHOOK_SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.replace(/=+$/, '').length % 4 === 1)
    return `must be ${WEBHOOK_SECRET_PREFIX} followed by base64`;
  const bytes = Buffer.from(encoded, 'base64');
  if (bytes.toString('base64').replace(/=+$/, '') !== encoded.replace(/=+$/, ''))
    return `must be ${WEBHOOK_SECRET_PREFIX} followed by base64`;
  if (bytes.length < WEBHOOK_SECRET_BYTES.min || bytes.length > WEBHOOK_SECRET_BYTES.max)
    return `must decode to ${WEBHOOK_SECRET_BYTES.min} to ${WEBHOOK_SECRET_BYTES.max} bytes after ${WEBHOOK_SECRET_PREFIX} (this one has ${bytes.length})`;
  return null;
}
