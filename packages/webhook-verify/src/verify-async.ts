import { matchesAny } from './compare.js';
import { hmacHexAsync } from './hmac-web.js';
import type { AnyWebhookEvents, WebhookEvent, WebhookEventMap } from './payload.js';
import {
  type DeliveryHeaders,
  finishVerification,
  prepareVerification,
  type VerifyOptions,
  type WebhookSecret,
} from './verification.js';

/**
 * Verifies a delivery with WebCrypto (`crypto.subtle`), for Deno, Bun, Workers, browsers and Node.
 * Same arguments, rules, errors and result as `verify`.
 */
export async function verifyAsync<Events extends WebhookEventMap<Events> = AnyWebhookEvents>(
  rawBody: string | Uint8Array,
  headers: DeliveryHeaders,
  secret: WebhookSecret,
  options: VerifyOptions = {},
): Promise<WebhookEvent<Events>> {
  const prepared = prepareVerification(rawBody, headers, secret, options);
  const secrets = typeof prepared.secrets === 'string' ? [prepared.secrets] : prepared.secrets;
  const digests = await hmacHexAsync(secrets, prepared.timestamp, rawBody);
  let matched = false;
  // Every secret's digest against every v1, with no early exit (docs/http-api.md §6.4 rule 4).
  for (const digest of digests) matched = matchesAny(digest, prepared.signatures) || matched;
  return finishVerification<Events>(matched, prepared, rawBody);
}
