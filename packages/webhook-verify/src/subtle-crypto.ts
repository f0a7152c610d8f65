import type { AnyWebhookEvents, WebhookEvent, WebhookEventMap } from './payload.js';
import { hmacKey, type WebhookScheme } from './scheme.js';
import {
  eventBody,
  prepareSigning,
  type SignEventOptions,
  type SignedDelivery,
  type SigningInput,
  type SignOptions,
  signatureHeaderText,
  signedDelivery,
  type WebhookEventInput,
} from './signed-delivery.js';
import { publicKeyBytes } from './standard-webhooks.js';
import { matchesAny } from './timing-safe.js';
import {
  type DeliveryHeaders,
  finishVerification,
  isPublicKey,
  prepareVerification,
  type VerifyOptions,
  type WebhookSecret,
} from './verification.js';

// Signing and verifying with WebCrypto's SubtleCrypto (`crypto.subtle`), for Deno, Bun, Workers,
// browsers and Node: node-crypto.ts with promises, and nothing from node:*.

/** `sign` with WebCrypto, for receivers tested on Deno, Bun, Workers or in a browser. */
export async function signAsync(
  rawBody: string | Uint8Array,
  secret: WebhookSecret,
  options: SignOptions = {},
): Promise<string> {
  const signing = prepareSigning(rawBody, secret, options);
  return signatureHeaderText(signing, await digests(signing, rawBody));
}

/** `signEvent` with WebCrypto. */
export async function signEventAsync<Events extends WebhookEventMap<Events> = AnyWebhookEvents>(
  // NoInfer: without a type argument the map is the default, not inferred from `event`.
  event: WebhookEventInput<NoInfer<Events>>,
  secret: WebhookSecret,
  options: SignEventOptions = {},
): Promise<SignedDelivery<Events>> {
  const delivery = eventBody(event as WebhookEventInput, options);
  const id = options.scheme === 'standard-webhooks' ? delivery.event.id : undefined;
  const signing = prepareSigning(delivery.body, secret, { now: options.now, scheme: options.scheme, id });
  return signedDelivery<Events>(delivery, signing, await digests(signing, delivery.body));
}

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
  const keys = typeof prepared.secrets === 'string' ? [prepared.secrets] : prepared.secrets;
  const shared = keys.filter((key) => !isPublicKey(key));
  const computed = await hmacHexAsync(shared, prepared.scheme, prepared.signedPrefix, rawBody);
  let matched = false;
  // Every secret's digest against every v1, with no early exit (docs/http-api.md §6.4 rule 4).
  for (const digest of computed) matched = matchesAny(digest, prepared.signatures) || matched;
  const publicKeys = keys.filter(isPublicKey);
  if (publicKeys.length > 0 && prepared.asymmetricSignatures.length > 0) {
    matched =
      (await ed25519Verifies(publicKeys, prepared.asymmetricSignatures, prepared.signedPrefix, rawBody)) ||
      matched;
  }
  return finishVerification<Events>(matched, prepared, rawBody);
}

/** Whether any public key verifies any v1a signature of `<prefix><body>` (WebCrypto's Ed25519). */
async function ed25519Verifies(
  publicKeys: readonly string[],
  signatures: readonly Uint8Array[],
  signedPrefix: string,
  body: string | Uint8Array,
): Promise<boolean> {
  const subtle = globalThis.crypto?.subtle;
  if (subtle === undefined) throw new TypeError('crypto.subtle is not available in this runtime');
  const message = signedMessage(signedPrefix, body);
  const keys = await Promise.all(
    publicKeys.map((key) =>
      subtle.importKey('raw', publicKeyBytes(key), { name: 'Ed25519' }, false, ['verify']),
    ),
  );
  const checks = keys.flatMap((key) =>
    signatures.map((signature) => subtle.verify('Ed25519', key, signature, message)),
  );
  return (await Promise.all(checks)).some(Boolean);
}

function signedMessage(signedPrefix: string, body: string | Uint8Array): Uint8Array {
  const bytes = typeof body === 'string' ? encoder.encode(body) : body;
  const prefix = encoder.encode(signedPrefix);
  const message = new Uint8Array(prefix.length + bytes.length);
  message.set(prefix);
  message.set(bytes, prefix.length);
  return message;
}

const encoder = new TextEncoder();

function digests(signing: SigningInput, rawBody: string | Uint8Array): Promise<string[]> {
  return hmacHexAsync(signing.secrets, signing.scheme, signing.signedPrefix, rawBody);
}

/** The HMAC of node-crypto.ts with WebCrypto: one lowercase hex digest per secret, in the order given. */
async function hmacHexAsync(
  secrets: readonly string[],
  scheme: WebhookScheme,
  signedPrefix: string,
  body: string | Uint8Array,
): Promise<string[]> {
  const subtle = globalThis.crypto?.subtle;
  if (subtle === undefined) throw new TypeError('crypto.subtle is not available in this runtime');
  const message = signedMessage(signedPrefix, body);
  // Keys first, synchronously: a secret that has no key under the scheme is a TypeError, not a rejection race.
  const keys = secrets.map((secret) => {
    const key = hmacKey(secret, scheme);
    return typeof key === 'string' ? encoder.encode(key) : key;
  });
  return Promise.all(
    keys.map(async (bytes) => {
      const key = await subtle.importKey('raw', bytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
      return toHex(new Uint8Array(await subtle.sign('HMAC', key, message)));
    }),
  );
}

const HEX_DIGITS = '0123456789abcdef';

/** Lowercase hex of a digest, as node:crypto's `digest('hex')` gives it. */
export function toHex(bytes: Uint8Array): string {
  let text = '';
  for (let i = 0; i < bytes.length; i++) text += HEX_DIGITS[bytes[i]! >> 4]! + HEX_DIGITS[bytes[i]! & 15]!;
  return text;
}
