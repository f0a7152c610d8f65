import { DEFAULT_TOLERANCE_SECONDS, PUBLIC_KEY_PREFIX, SECRET_PREFIX } from './constants.js';
import { WebhookVerificationError } from './errors.js';
import {
  type HeadersLike,
  headerNames,
  headerValue,
  isHeaders,
  type WebhookHeaderNames,
} from './header-names.js';
import { parseEvent, type WebhookEvent, type WebhookEventMap } from './payload.js';
import { checkScheme, detectScheme, type WebhookScheme } from './scheme.js';
import {
  readSignatureHeader,
  type SignatureHeaderText,
  type SignatureHeaderValue,
} from './signature-header.js';
import {
  publicKeyBytes,
  readStandardWebhooksHeaders,
  STANDARD_WEBHOOKS_HEADERS,
  standardWebhooksPrefix,
} from './standard-webhooks.js';

/**
 * One signing secret (`whsec_…`) or ed25519 public key (`whpk_…`, for Standard Webhooks' `v1a`),
 * or several while a receiver rotates: any of them may match.
 */
export type WebhookSecret = string | readonly string[];

/** A point in time: a Date, epoch milliseconds, or a function giving either. */
export type TimeInput = Date | number | (() => Date | number);

export interface VerifyOptions {
  /** How far `t` may be from now, into the past or the future. Default 300 (docs/http-api.md §6.4 rule 3). */
  toleranceSeconds?: number;
  /** The current time. Default `Date.now`. */
  now?: TimeInput;
  /**
   * The header names the sender uses (keyhook's `delivery.headers`), read when `headers` is a
   * whole set of headers. Default `keyhook-signature` and `keyhook-event-id`.
   */
  headers?: Partial<WebhookHeaderNames>;
  /**
   * The signing scheme to verify. Default: the one whose signature header the delivery carries
   * (`webhook-signature` → `'standard-webhooks'`, the keyhook signature header → `'keyhook'`).
   */
  scheme?: WebhookScheme;
}

/** What `verify` takes as its second argument: the request's headers, or the signature header's value. */
export type DeliveryHeaders = HeadersLike | SignatureHeaderValue;

/** What `verify` and `verifyAsync` share before the HMAC: checked arguments and the parsed header. */
export interface PreparedVerification extends SignatureHeaderText {
  /** As given: one secret, or the list of them. */
  secrets: WebhookSecret;
  toleranceSeconds: number;
  now: TimeInput;
  names: Readonly<WebhookHeaderNames>;
  /** The event-id header, when whole headers were given: it must then equal the signed id. */
  eventIdHeader: SignatureHeaderValue;
  scheme: WebhookScheme;
  /** What is signed before the body: `<t>.`, or `<webhook-id>.<t>.` for Standard Webhooks. */
  signedPrefix: string;
  /** The `v1a` ed25519 signatures of a Standard Webhooks delivery, each 64 bytes; none otherwise. */
  asymmetricSignatures: readonly Uint8Array[];
}

/** Whether a key given to verify is an ed25519 public key rather than a shared secret. */
export function isPublicKey(key: string): boolean {
  return key.startsWith(PUBLIC_KEY_PREFIX);
}

// For Standard Webhooks the `names` in messages are its own, and `webhook-id` is the event id.
const STANDARD_NAMES: Readonly<WebhookHeaderNames> = Object.freeze({
  signature: STANDARD_WEBHOOKS_HEADERS.signature,
  eventId: STANDARD_WEBHOOKS_HEADERS.id,
});

/** Argument mistakes throw TypeError first, so a misconfigured receiver fails loudly, not as a 400. */
export function prepareVerification(
  rawBody: unknown,
  headers: DeliveryHeaders,
  secret: WebhookSecret,
  options: VerifyOptions,
): PreparedVerification {
  if (typeof rawBody !== 'string' && !(rawBody instanceof Uint8Array)) {
    throw new TypeError(
      `rawBody must be the body as received, a string or Uint8Array/Buffer, got ${describe(rawBody)}. ` +
        "A parsed body cannot be verified: use express.raw({ type: 'application/json' }), " +
        "a Fastify parseAs: 'buffer' parser, or request.arrayBuffer().",
    );
  }
  const secrets = checkSecrets(secret);
  const toleranceSeconds = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (typeof toleranceSeconds !== 'number' || !Number.isFinite(toleranceSeconds) || toleranceSeconds < 0) {
    throw new TypeError('toleranceSeconds must be a finite number of seconds, 0 or more');
  }
  const now = checkTime(options.now);
  const names = headerNames(options.headers);
  const chosen = checkScheme(options.scheme);
  // After the arguments, before the header: such a string cannot be the bytes that were signed.
  if (!isWellFormed(rawBody)) {
    throw new WebhookVerificationError(
      'invalid_payload',
      'the body string holds a lone surrogate, so it cannot be the UTF-8 bytes that were signed',
    );
  }
  const common = { secrets, toleranceSeconds, now };
  const publicKeys = (typeof secrets === 'string' ? [secrets] : secrets).some(isPublicKey);
  if (publicKeys && (chosen === 'keyhook' || !isHeaders(headers))) {
    throw new TypeError(
      `a ${PUBLIC_KEY_PREFIX} public key verifies Standard Webhooks deliveries (v1a signatures), from the request headers`,
    );
  }
  if (!isHeaders(headers)) {
    if (chosen === 'standard-webhooks') {
      throw new TypeError(
        'a Standard Webhooks delivery is verified from the request headers (webhook-id, webhook-timestamp, ' +
          'webhook-signature), not from one header value',
      );
    }
    return keyhookVerification(common, headers, names, undefined);
  }
  const scheme = chosen ?? detectScheme(headers, names);
  if (scheme === 'standard-webhooks') {
    const { id, timestamp, signatures, asymmetricSignatures } = readStandardWebhooksHeaders({
      id: headerValue(headers, STANDARD_WEBHOOKS_HEADERS.id),
      timestamp: headerValue(headers, STANDARD_WEBHOOKS_HEADERS.timestamp),
      signature: headerValue(headers, STANDARD_WEBHOOKS_HEADERS.signature),
    });
    const signedPrefix = standardWebhooksPrefix(id, timestamp);
    return {
      ...common,
      timestamp,
      signatures,
      names: STANDARD_NAMES,
      eventIdHeader: id,
      scheme,
      signedPrefix,
      asymmetricSignatures,
    };
  }
  return keyhookVerification(
    common,
    headerValue(headers, names.signature),
    names,
    headerValue(headers, names.eventId),
  );
}

/** keyhook's scheme: `t=…,v1=…` in the signature header, over `<t>.<body>`. */
function keyhookVerification(
  common: Pick<PreparedVerification, 'secrets' | 'toleranceSeconds' | 'now'>,
  signatureHeader: SignatureHeaderValue,
  names: Readonly<WebhookHeaderNames>,
  eventIdHeader: SignatureHeaderValue,
): PreparedVerification {
  const { timestamp, signatures } = readSignatureHeader(signatureHeader, names.signature);
  return {
    ...common,
    timestamp,
    signatures,
    names,
    eventIdHeader,
    scheme: 'keyhook',
    signedPrefix: `${timestamp}.`,
    asymmetricSignatures: [],
  };
}

/** After the HMAC: the signature first, so a stale timestamp is only reported for authentic bytes. */
export function checkSignatureAndTime(matched: boolean, prepared: PreparedVerification): void {
  if (!matched) {
    throw new WebhookVerificationError(
      'signature_mismatch',
      'no signature matches: check that the secret is the whole whsec_… string (or the public key the ' +
        'whole whpk_… one) and that the body is the raw bytes received, not re-serialised JSON',
    );
  }
  const nowSeconds = Math.floor(currentMillis(prepared.now) / 1000);
  const age = nowSeconds - prepared.timestamp;
  // Both directions: a future t is as replayable as an old one (docs/http-api.md §6.4 rule 3).
  if (Math.abs(age) > prepared.toleranceSeconds) {
    const when = age > 0 ? `${age} s in the past` : `${-age} s in the future`;
    throw new WebhookVerificationError(
      'timestamp_out_of_tolerance',
      `the signature timestamp is ${when}; the tolerance is ${prepared.toleranceSeconds} s`,
    );
  }
}

/** The signature and time checks, then the event: what `verify` and `verifyAsync` return. */
export function finishVerification<Events extends WebhookEventMap<Events>>(
  matched: boolean,
  prepared: PreparedVerification,
  rawBody: string | Uint8Array,
): WebhookEvent<Events> {
  checkSignatureAndTime(matched, prepared);
  const event = parseEvent<Events>(rawBody);
  const { eventIdHeader } = prepared;
  // The header is not signed; a receiver that dedupes on it before verifying must see the signed id.
  if (eventIdHeader !== undefined && eventIdHeader !== null && eventIdHeader !== event.id) {
    throw new WebhookVerificationError(
      'event_id_mismatch',
      `the ${prepared.names.eventId} header is not the id of the signed event`,
    );
  }
  return event;
}

/** A lone surrogate is hashed as U+FFFD but parsed as itself: the event would not be what was signed. */
export function isWellFormed(rawBody: string | Uint8Array): boolean {
  return (
    typeof rawBody !== 'string' || (rawBody as { isWellFormed?: () => boolean }).isWellFormed?.() !== false
  );
}

/** One secret or a non-empty list, each the full `whsec_…` string; the list form as a list. */
export function checkSecrets(secret: WebhookSecret): WebhookSecret {
  if (typeof secret === 'string') {
    checkSecret(secret);
    return secret;
  }
  if (!Array.isArray(secret) || secret.length === 0) {
    throw new TypeError('secret must be a signing secret or a non-empty list of them');
  }
  for (const item of secret) checkSecret(item);
  return secret;
}

function checkSecret(item: unknown): void {
  if (typeof item === 'string' && isPublicKey(item)) {
    publicKeyBytes(item);
    return;
  }
  // The key is the full string (docs/decisions.md §6.2): a stripped prefix would fail every
  // delivery as a mismatch.
  if (typeof item !== 'string' || !item.startsWith(SECRET_PREFIX) || item.length === SECRET_PREFIX.length) {
    throw new TypeError(
      `secret must be the full signing secret, ${SECRET_PREFIX} prefix included, or a ${PUBLIC_KEY_PREFIX} public key`,
    );
  }
}

/** `now` as given, checked for its kind; `Date.now` when absent. */
export function checkTime(now: TimeInput | undefined): TimeInput {
  if (now === undefined) return Date.now;
  if (!(now instanceof Date) && typeof now !== 'number' && typeof now !== 'function') {
    throw new TypeError('now must be a Date, epoch milliseconds, or a function returning either');
  }
  return now;
}

export function currentMillis(now: TimeInput): number {
  const value = typeof now === 'function' ? now() : now;
  const millis = value instanceof Date ? value.getTime() : value;
  if (typeof millis !== 'number' || !Number.isFinite(millis)) {
    throw new TypeError('now must give a valid Date or finite epoch milliseconds');
  }
  return millis;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value !== 'object') return typeof value;
  return value.constructor?.name ?? 'object';
}
