import { createHmac, createPublicKey, verify as verifyEd25519 } from 'node:crypto';
import type { AnyWebhookEvents, WebhookEvent, WebhookEventMap } from './payload.js';
import { hmacKey } from './scheme.js';
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
  checkSignatureAndTime,
  type DeliveryHeaders,
  finishVerification,
  isPublicKey,
  type PreparedVerification,
  prepareVerification,
  type VerifyOptions,
  type WebhookSecret,
} from './verification.js';

// The Node entry's signing and verifying: the only file that imports node:crypto, and the only
// one `./web` never reaches. subtle-crypto.ts is the same with WebCrypto.

/**
 * The signature header keyhook would send with `rawBody`, for a receiver's own tests (node:crypto).
 * Several secrets give one `v1` each, as during a rotation. With `scheme: 'standard-webhooks'`
 * and `id`, the `webhook-signature` value.
 */
export function sign(rawBody: string | Uint8Array, secret: WebhookSecret, options: SignOptions = {}): string {
  const signing = prepareSigning(rawBody, secret, options);
  return signatureHeaderText(signing, digests(signing, rawBody));
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
  const id = options.scheme === 'standard-webhooks' ? delivery.event.id : undefined;
  const signing = prepareSigning(delivery.body, secret, { now: options.now, scheme: options.scheme, id });
  return signedDelivery<Events>(delivery, signing, digests(signing, delivery.body));
}

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
  const { secrets } = prepared;
  if (typeof secrets === 'string') return keyMatches(secrets, prepared, rawBody);
  let matched = false;
  // The call comes before `||`, so every secret is compared even after a match.
  for (const secret of secrets) matched = keyMatches(secret, prepared, rawBody) || matched;
  return matched;
}

/** One key against the delivery: a shared secret's HMAC against each v1, a public key against each v1a. */
function keyMatches(key: string, prepared: PreparedVerification, rawBody: string | Uint8Array): boolean {
  const { signatures, signedPrefix, scheme, asymmetricSignatures } = prepared;
  if (!isPublicKey(key)) return matchesAny(hmacHex(hmacKey(key, scheme), signedPrefix, rawBody), signatures);
  if (asymmetricSignatures.length === 0) return false;
  // A public key is not a secret: no constant-time concern in finding which signature it verifies.
  const publicKey = createPublicKey({ key: ed25519Spki(publicKeyBytes(key)), format: 'der', type: 'spki' });
  const message = Buffer.concat([
    Buffer.from(signedPrefix),
    typeof rawBody === 'string' ? Buffer.from(rawBody) : rawBody,
  ]);
  return asymmetricSignatures.some((signature) => verifyEd25519(null, message, publicKey, signature));
}

// RFC 8410: the DER of an ed25519 SubjectPublicKeyInfo is this prefix and the key's 32 bytes.
const SPKI_ED25519_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

function ed25519Spki(key: Uint8Array): Buffer {
  return Buffer.concat([SPKI_ED25519_PREFIX, key]);
}

function digests(signing: SigningInput, rawBody: string | Uint8Array): string[] {
  return signing.secrets.map((secret) =>
    hmacHex(hmacKey(secret, signing.scheme), signing.signedPrefix, rawBody),
  );
}

/**
 * The lowercase hex HMAC-SHA256 of `<prefix><body>`: `<t>.<body>` (docs/http-api.md §6.4 rule 1)
 * or Standard Webhooks' `<id>.<t>.<body>`. A string key is used as its UTF-8 bytes, `whsec_`
 * included (docs/decisions.md §6.2).
 */
function hmacHex(key: string | Uint8Array, prefix: string, body: string | Uint8Array): string {
  return createHmac('sha256', key).update(prefix).update(body).digest('hex');
}
