import { hmacHexAsync } from './hmac-web.js';
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

/** `sign` with WebCrypto, for receivers tested on Deno, Bun, Workers or in a browser. */
export async function signAsync(
  rawBody: string | Uint8Array,
  secret: WebhookSecret,
  options: SignOptions = {},
): Promise<string> {
  const { secrets, timestamp } = prepareSigning(rawBody, secret, options);
  return signatureHeaderText(timestamp, await hmacHexAsync(secrets, timestamp, rawBody));
}

/** `signEvent` with WebCrypto. */
export async function signEventAsync<Events extends WebhookEventMap<Events> = AnyWebhookEvents>(
  // NoInfer: without a type argument the map is the default, not inferred from `event`.
  event: WebhookEventInput<NoInfer<Events>>,
  secret: WebhookSecret,
  options: SignEventOptions = {},
): Promise<SignedDelivery<Events>> {
  const delivery = eventBody(event as WebhookEventInput, options);
  return signedDelivery<Events>(delivery, await signAsync(delivery.body, secret, options));
}
