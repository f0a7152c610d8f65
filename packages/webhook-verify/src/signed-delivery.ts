import { headerNames, type WebhookHeaderNames } from './header-names.js';
import type { AnyWebhookEvents, WebhookEvent, WebhookEventMap } from './payload.js';
import { checkScheme, type WebhookScheme } from './scheme.js';
import {
  STANDARD_WEBHOOKS_HEADERS,
  standardSignatureHeaderText,
  standardWebhooksPrefix,
} from './standard-webhooks.js';
import {
  checkSecrets,
  checkTime,
  currentMillis,
  isPublicKey,
  isWellFormed,
  type TimeInput,
  type WebhookSecret,
} from './verification.js';

/**
 * Signing for a receiver's own tests: the header a keyhook sender would send, so a test needs no
 * sender. The same scheme as `verify` checks (docs/http-api.md §6.4), nothing more.
 */
export interface SignOptions {
  /** The signing time, `t`. Default `Date.now`. */
  now?: TimeInput;
  /** The signing scheme. Default `'keyhook'`. */
  scheme?: WebhookScheme;
  /** The `webhook-id` signed with the body: required by `'standard-webhooks'`, refused by `'keyhook'`. */
  id?: string;
}

export interface SignEventOptions extends Omit<SignOptions, 'id'> {
  /**
   * The header names of the delivery. Default `keyhook-signature` and `keyhook-event-id`; keyhook's
   * scheme only, as Standard Webhooks fixes its own.
   */
  headers?: Partial<WebhookHeaderNames>;
}

/** An event to sign: `id` and `createdAt` are made when not given. */
export type WebhookEventInput<Events extends WebhookEventMap<Events> = AnyWebhookEvents> = {
  [Type in keyof Events & string]: {
    type: Type;
    data: Events[Type];
    id?: string;
    createdAt?: string;
  };
}[keyof Events & string];

/** A delivery as keyhook sends it: POST `body` with `headers`, and the event the body holds. */
export interface SignedDelivery<Events extends WebhookEventMap<Events> = AnyWebhookEvents> {
  event: WebhookEvent<Events>;
  body: string;
  headers: Record<string, string>;
}

/** What signing computes from: the checked secrets, `t`, and the body. */
export interface SigningInput {
  secrets: readonly string[];
  timestamp: number;
  scheme: WebhookScheme;
  /** The text signed before the body: `<t>.`, or `<id>.<t>.` for Standard Webhooks. */
  signedPrefix: string;
  /** The `webhook-id`, for Standard Webhooks. */
  id?: string;
}

export function prepareSigning(rawBody: unknown, secret: WebhookSecret, options: SignOptions): SigningInput {
  if (typeof rawBody !== 'string' && !(rawBody instanceof Uint8Array)) {
    throw new TypeError('rawBody must be the body to send, a string or Uint8Array/Buffer');
  }
  if (!isWellFormed(rawBody))
    throw new TypeError('rawBody holds a lone surrogate: it has no UTF-8 form to sign');
  const checked = checkSecrets(secret);
  if ((typeof checked === 'string' ? [checked] : checked).some(isPublicKey)) {
    throw new TypeError('a whpk_ public key verifies deliveries; it cannot sign them');
  }
  const timestamp = Math.floor(currentMillis(checkTime(options.now)) / 1000);
  if (!Number.isSafeInteger(timestamp) || timestamp <= 0) {
    throw new TypeError('now must be after 1970-01-01T00:00:01Z: t is positive unix seconds');
  }
  const secrets = typeof checked === 'string' ? [checked] : checked;
  const scheme = checkScheme(options.scheme) ?? 'keyhook';
  if (scheme === 'keyhook') {
    if (options.id !== undefined) throw new TypeError("id is signed by scheme 'standard-webhooks' only");
    return { secrets, timestamp, scheme, signedPrefix: `${timestamp}.` };
  }
  const { id } = options;
  if (typeof id !== 'string' || id === '') {
    throw new TypeError("scheme 'standard-webhooks' signs a webhook-id: pass options.id, a non-empty string");
  }
  return { secrets, timestamp, scheme, signedPrefix: standardWebhooksPrefix(id, timestamp), id };
}

/**
 * The signature header's value for one lowercase hex digest per secret: keyhook's
 * `t=<unix seconds>,v1=<hex>,…` or Standard Webhooks' `v1,<base64> …`.
 */
export function signatureHeaderText(signing: SigningInput, digests: readonly string[]): string {
  if (signing.scheme === 'standard-webhooks') return standardSignatureHeaderText(digests);
  return `t=${signing.timestamp},${digests.map((digest) => `v1=${digest}`).join(',')}`;
}

/** The event's body as keyhook serialises it: `id`, `type`, `createdAt`, `data`, in that order. */
export function eventBody(
  input: WebhookEventInput,
  options: SignEventOptions,
): { event: WebhookEvent; body: string; names: Readonly<WebhookHeaderNames> } {
  if (typeof input !== 'object' || input === null) throw new TypeError('the event must be { type, data }');
  const { type, data } = input;
  if (typeof type !== 'string' || type === '') throw new TypeError('event.type must be a non-empty string');
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new TypeError('event.data must be a JSON object');
  }
  const id = input.id ?? `evt_test_${randomHex(12)}`;
  if (typeof id !== 'string' || id === '') throw new TypeError('event.id must be a non-empty string');
  const createdAt = input.createdAt ?? new Date(currentMillis(checkTime(options.now))).toISOString();
  if (typeof createdAt !== 'string') throw new TypeError('event.createdAt must be an ISO 8601 string');
  if (options.headers !== undefined && options.scheme === 'standard-webhooks') {
    throw new TypeError('headers names keyhook’s headers; Standard Webhooks fixes its own');
  }
  const event = { id, type, createdAt, data };
  return { event, body: JSON.stringify(event), names: headerNames(options.headers) };
}

/** The delivery of a serialised event once its signature header is made. */
export function signedDelivery<Events extends WebhookEventMap<Events>>(
  serialised: ReturnType<typeof eventBody>,
  signing: SigningInput,
  digests: readonly string[],
): SignedDelivery<Events> {
  const { event, body, names } = serialised;
  const signature = signatureHeaderText(signing, digests);
  const headers: Record<string, string> =
    signing.scheme === 'standard-webhooks'
      ? {
          'content-type': 'application/json',
          [STANDARD_WEBHOOKS_HEADERS.id]: event.id,
          [STANDARD_WEBHOOKS_HEADERS.timestamp]: String(signing.timestamp),
          [STANDARD_WEBHOOKS_HEADERS.signature]: signature,
        }
      : { 'content-type': 'application/json', [names.eventId]: event.id, [names.signature]: signature };
  return { event: event as WebhookEvent<Events>, body, headers };
}

function randomHex(bytes: number): string {
  return Array.from(globalThis.crypto.getRandomValues(new Uint8Array(bytes)), (byte) =>
    byte.toString(16).padStart(2, '0'),
  ).join('');
}
