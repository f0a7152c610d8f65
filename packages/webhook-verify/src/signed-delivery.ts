import { headerNames, type WebhookHeaderNames } from './header-names.js';
import type { AnyWebhookEvents, WebhookEvent, WebhookEventMap } from './payload.js';
import {
  checkSecrets,
  checkTime,
  currentMillis,
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
}

export interface SignEventOptions extends SignOptions {
  /** The header names of the delivery. Default `keyhook-signature` and `keyhook-event-id`. */
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
}

export function prepareSigning(rawBody: unknown, secret: WebhookSecret, options: SignOptions): SigningInput {
  if (typeof rawBody !== 'string' && !(rawBody instanceof Uint8Array)) {
    throw new TypeError('rawBody must be the body to send, a string or Uint8Array/Buffer');
  }
  if (!isWellFormed(rawBody))
    throw new TypeError('rawBody holds a lone surrogate: it has no UTF-8 form to sign');
  const checked = checkSecrets(secret);
  const timestamp = Math.floor(currentMillis(checkTime(options.now)) / 1000);
  if (!Number.isSafeInteger(timestamp) || timestamp <= 0) {
    throw new TypeError('now must be after 1970-01-01T00:00:01Z: t is positive unix seconds');
  }
  return { secrets: typeof checked === 'string' ? [checked] : checked, timestamp };
}

/** `t=<unix seconds>,v1=<hex>`, one `v1` per secret (as a sender rotating its secret sends). */
export function signatureHeaderText(timestamp: number, digests: readonly string[]): string {
  return `t=${timestamp},${digests.map((digest) => `v1=${digest}`).join(',')}`;
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
  const event = { id, type, createdAt, data };
  return { event, body: JSON.stringify(event), names: headerNames(options.headers) };
}

/** The delivery of a serialised event once its signature header is made. */
export function signedDelivery<Events extends WebhookEventMap<Events>>(
  serialised: ReturnType<typeof eventBody>,
  signature: string,
): SignedDelivery<Events> {
  const { event, body, names } = serialised;
  return {
    event: event as WebhookEvent<Events>,
    body,
    headers: { 'content-type': 'application/json', [names.eventId]: event.id, [names.signature]: signature },
  };
}

function randomHex(bytes: number): string {
  return Array.from(globalThis.crypto.getRandomValues(new Uint8Array(bytes)), (byte) =>
    byte.toString(16).padStart(2, '0'),
  ).join('');
}
