import { createHmac } from 'node:crypto';

/** Header names of a delivery (spec §6 "Delivery"). */
export const SIGNATURE_HEADER = 'x-chatbot-signature';
export const EVENT_ID_HEADER = 'x-chatbot-event-id';

/**
 * `t=<unix seconds>,v1=<hex>`: HMAC-SHA256 keyed with the full `whsec_…` string as UTF-8,
 * over `<t>.<raw body>` (spec §6 "Signature"; DESIGN.md §6). Keying with the whole string
 * keeps Stripe's verifiers able to check our deliveries.
 */
export function signatureHeader(secret: string, body: string | Uint8Array, unixSeconds: number): string {
  if (!Number.isSafeInteger(unixSeconds) || unixSeconds <= 0) {
    throw new TypeError(`the signature timestamp must be positive whole seconds, got ${unixSeconds}`);
  }
  const v1 = createHmac('sha256', secret).update(`${unixSeconds}.`).update(body).digest('hex');
  return `t=${unixSeconds},v1=${v1}`;
}
