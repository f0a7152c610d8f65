import { matchesAny } from './compare.js';
import { hmacHex } from './hmac.js';
import type { AnyWebhookEvents, WebhookEvent, WebhookEventMap } from './payload.js';
import {
  checkSignatureAndTime,
  type DeliveryHeaders,
  finishVerification,
  type PreparedVerification,
  prepareVerification,
  type VerifyOptions,
  type WebhookSecret,
} from './verification.js';

/**
 * Verifies a delivery with node:crypto, synchronously, and returns its event. Throws a
 * `WebhookVerificationError` for a delivery that must be refused (docs/http-api.md §6.4).
 * `headers` is the request's headers (the event-id header is then checked too), or the
 * signature header's value. `Events` types the event: a union on `type`.
 */
export function verify<Events extends WebhookEventMap<Events> = AnyWebhookEvents>(
  rawBody: string | Uint8Array,
  headers: DeliveryHeaders,
  secret: WebhookSecret,
  options: VerifyOptions = {},
): WebhookEvent<Events> {
  const prepared = prepareVerification(rawBody, headers, secret, options);
  return finishVerification<Events>(signatureMatches(prepared, rawBody), prepared, rawBody);
}

/**
 * `verify` without reading the body as an event: the signature and the timestamp only. For a
 * receiver that parses the body its own way (a streaming parser, a schema library); it must
 * still parse the exact bytes it verified, and compare the event-id header itself.
 */
export function verifySignature(
  rawBody: string | Uint8Array,
  headers: DeliveryHeaders,
  secret: WebhookSecret,
  options: VerifyOptions = {},
): void {
  const prepared = prepareVerification(rawBody, headers, secret, options);
  checkSignatureAndTime(signatureMatches(prepared, rawBody), prepared);
}

function signatureMatches(prepared: PreparedVerification, rawBody: string | Uint8Array): boolean {
  const { secrets, signatures, timestamp } = prepared;
  if (typeof secrets === 'string') return matchesAny(hmacHex(secrets, timestamp, rawBody), signatures);
  let matched = false;
  // The call comes before `||`, so every secret is compared even after a match.
  for (const key of secrets) matched = matchesAny(hmacHex(key, timestamp, rawBody), signatures) || matched;
  return matched;
}
