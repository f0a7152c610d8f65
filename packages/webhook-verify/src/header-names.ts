import { EVENT_ID_HEADER, SIGNATURE_HEADER } from './constants.js';
import type { SignatureHeaderValue } from './signature-header.js';

/** The two headers of a delivery, as the sender names them (keyhook's `delivery.headers`). */
export interface WebhookHeaderNames {
  /** `t=<unix seconds>,v1=<hex>`. Default `keyhook-signature`. */
  signature: string;
  /** The event id, equal to the signed body's `id`. Default `keyhook-event-id`. */
  eventId: string;
}

/**
 * A request's headers as frameworks hand them over: Node's `req.headers` (Express, Fastify,
 * node:http) or any record of lowercase names, or a Fetch `Headers`.
 */
export type HeadersLike =
  | { get(name: string): string | null }
  | { readonly [name: string]: string | readonly string[] | undefined };

const DEFAULT_NAMES: Readonly<WebhookHeaderNames> = Object.freeze({
  signature: SIGNATURE_HEADER,
  eventId: EVENT_ID_HEADER,
});

// An HTTP token (RFC 9110 §5.1): what a header name may be.
const TOKEN = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/;

/** The names to read, checked: a typo'd option is a TypeError, not a delivery refused as unsigned. */
export function headerNames(names: Partial<WebhookHeaderNames> | undefined): Readonly<WebhookHeaderNames> {
  if (names === undefined) return DEFAULT_NAMES;
  if (typeof names !== 'object' || names === null) {
    throw new TypeError('headers must be { signature?, eventId? }: the header names your sender uses');
  }
  const signature = checkName(names.signature ?? SIGNATURE_HEADER, 'signature');
  const eventId = checkName(names.eventId ?? EVENT_ID_HEADER, 'eventId');
  if (signature === eventId) {
    throw new TypeError('headers.signature and headers.eventId must name two different headers');
  }
  return { signature, eventId };
}

function checkName(name: unknown, option: keyof WebhookHeaderNames): string {
  if (typeof name !== 'string' || !TOKEN.test(name)) {
    throw new TypeError(`headers.${option} must be an HTTP header name, got ${JSON.stringify(name)}`);
  }
  // Header names are case-insensitive; Node hands them over in lowercase.
  return name.toLowerCase();
}

/** A whole set of headers, rather than the signature header's value. */
export function isHeaders(value: SignatureHeaderValue | HeadersLike): value is HeadersLike {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** One header of either kind of headers; `name` is lowercase. */
export function headerValue(headers: HeadersLike, name: string): SignatureHeaderValue {
  if (typeof headers.get === 'function') return (headers as { get(name: string): string | null }).get(name);
  const record = headers as { readonly [name: string]: string | readonly string[] | undefined };
  // Own properties only: `constructor` is a valid header name, and a plain object inherits one.
  if (Object.hasOwn(record, name)) return record[name];
  // A record built by hand may keep the sender's spelling; Node's own is always lowercase.
  for (const key of Object.keys(record)) if (key.toLowerCase() === name) return record[key];
  return undefined;
}
