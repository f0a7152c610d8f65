import { hmacHex } from './hmac.js';
import type { AnyWebhookEvents, WebhookEventMap } from './payload.js';
import {
  eventBody,
  prepareSigning,
  type SignEventOptions,
  type SignedDelivery,
  type SignOptions,
  signatureHeaderText,
  signedDelivery,
  type WebhookEventInput,
} from './signing.js';
import type { WebhookSecret } from './verification.js';

/**
 * The signature header keyhook would send with `rawBody`, for a receiver's own tests (node:crypto).
 * Several secrets give one `v1` each, as during a rotation.
 */
export function sign(rawBody: string | Uint8Array, secret: WebhookSecret, options: SignOptions = {}): string {
  const { secrets, timestamp } = prepareSigning(rawBody, secret, options);
  return signatureHeaderText(
    timestamp,
    secrets.map((key) => hmacHex(key, timestamp, rawBody)),
  );
}

/**
 * A whole delivery of `event`, as keyhook would send it: its body and its three headers, ready
 * for `fetch(url, { method: 'POST', body, headers })` or for `verify(body, headers, secret)`.
 */
export function signEvent<Events extends WebhookEventMap<Events> = AnyWebhookEvents>(
  // NoInfer: without a type argument the map is the default, not inferred from `event`.
  event: WebhookEventInput<NoInfer<Events>>,
  secret: WebhookSecret,
  options: SignEventOptions = {},
): SignedDelivery<Events> {
  const delivery = eventBody(event as WebhookEventInput, options);
  return signedDelivery<Events>(delivery, sign(delivery.body, secret, options));
}
