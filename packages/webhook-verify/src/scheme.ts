import { WebhookVerificationError } from './errors.js';
import { type HeadersLike, headerValue, type WebhookHeaderNames } from './header-names.js';
import type { SignatureHeaderValue } from './signature-header.js';
import { STANDARD_WEBHOOKS_HEADERS, standardWebhooksKey } from './standard-webhooks.js';

/**
 * How a delivery is signed: keyhook's `t=…,v1=<hex>` header (the default), or Standard Webhooks'
 * `webhook-id`, `webhook-timestamp` and `webhook-signature: v1,<base64>`.
 */
export type WebhookScheme = 'keyhook' | 'standard-webhooks';

const SCHEMES: readonly WebhookScheme[] = ['keyhook', 'standard-webhooks'];

/** The `scheme` option, checked: a typo is a TypeError, not every delivery refused. */
export function checkScheme(scheme: unknown): WebhookScheme | undefined {
  if (scheme === undefined || SCHEMES.includes(scheme as WebhookScheme))
    return scheme as WebhookScheme | undefined;
  throw new TypeError(`scheme must be 'keyhook' or 'standard-webhooks', got ${JSON.stringify(scheme)}`);
}

/**
 * The scheme whose signature header the delivery carries. Both is refused as ambiguous; neither
 * reads as keyhook's, so the refusal names the header a keyhook receiver expects, as it always has.
 */
export function detectScheme(headers: HeadersLike, names: Readonly<WebhookHeaderNames>): WebhookScheme {
  const keyhook = isPresent(headerValue(headers, names.signature));
  const standard = isPresent(headerValue(headers, STANDARD_WEBHOOKS_HEADERS.signature));
  if (keyhook && standard) {
    throw new WebhookVerificationError(
      'malformed_header',
      `the delivery carries both ${names.signature} and ${STANDARD_WEBHOOKS_HEADERS.signature}: ` +
        "pass { scheme: 'keyhook' } or { scheme: 'standard-webhooks' } to say which to verify",
    );
  }
  return standard ? 'standard-webhooks' : 'keyhook';
}

function isPresent(value: SignatureHeaderValue): boolean {
  if (value === undefined || value === null) return false;
  const text = typeof value === 'string' ? value : value.join('');
  return text.trim() !== '';
}

/**
 * The HMAC key of one secret under a scheme: keyhook keys with the whole string, `whsec_` included
 * (docs/decisions.md §6.2); Standard Webhooks with the base64 after `whsec_`, decoded.
 */
export function hmacKey(secret: string, scheme: WebhookScheme): string | Uint8Array {
  return scheme === 'keyhook' ? secret : standardWebhooksKey(secret);
}
