import { createHmac, sign } from 'node:crypto';
import type { SignatureScheme } from '../store/types.js';
import {
  ED25519_SECRET_KEY_PREFIX,
  ed25519PrivateKey,
  WEBHOOK_SECRET_PREFIX,
} from '../webhooks/signing-secret.js';

/** Header names of a delivery when the host names none (docs/decisions.md §6.5). */
export const SIGNATURE_HEADER = 'keyhook-signature';
export const EVENT_ID_HEADER = 'keyhook-event-id';

/** The two headers a delivery carries besides its content type, named as the host chooses. */
export interface DeliveryHeaderNames {
  /** `t=<unix seconds>,v1=<hex>`. Default `keyhook-signature`. */
  signature: string;
  /** The event id, for receivers that dedupe before parsing. Default `keyhook-event-id`. */
  eventId: string;
}

export const DEFAULT_HEADER_NAMES: Readonly<DeliveryHeaderNames> = {
  signature: SIGNATURE_HEADER,
  eventId: EVENT_ID_HEADER,
};

// An HTTP token (RFC 9110 §5.1); lowercase, since Node hands receivers lowercase names.
const HEADER_NAME = /^[a-z0-9!#$%&'*+.^_`|~-]{1,100}$/;
// What the sender sets itself (traceparent with telemetry.traceparent), and what proxies and
// servers read as framing.
const RESERVED = new Set([
  'content-type',
  'content-length',
  'user-agent',
  'traceparent',
  'tracestate',
  'host',
  'connection',
  'transfer-encoding',
  'expect',
  'te',
  'upgrade',
  'trailer',
  'keep-alive',
  'proxy-connection',
]);

/** The host's header names, checked at start: HTTP tokens, not framing headers, and not the same header twice. */
export function deliveryHeaderNames(names: Partial<DeliveryHeaderNames> = {}): DeliveryHeaderNames {
  const chosen = { ...DEFAULT_HEADER_NAMES, ...stripUndefined(names) };
  for (const [option, name] of Object.entries(chosen)) {
    if (typeof name !== 'string' || !HEADER_NAME.test(name) || RESERVED.has(name)) {
      throw new TypeError(
        `keyhook: delivery.headers.${option} must be a lowercase HTTP header name of your own (got ${JSON.stringify(name)})`,
      );
    }
  }
  if (chosen.signature === chosen.eventId) {
    throw new TypeError('keyhook: delivery.headers.signature and .eventId must be two different headers');
  }
  return chosen;
}

function stripUndefined(names: Partial<DeliveryHeaderNames>): Partial<DeliveryHeaderNames> {
  return Object.fromEntries(Object.entries(names).filter(([, value]) => value !== undefined));
}

/**
 * `t=<unix seconds>,v1=<hex>`: HMAC-SHA256 keyed with the full `whsec_…` string as UTF-8,
 * over `<t>.<raw body>` (docs/http-api.md §6.4). Keying with the whole string keeps Stripe's
 * verifiers able to check our deliveries. Several secrets (inside a rotation's overlap, the
 * newest first) give one `v1=` each, in that order, as Stripe signs during a secret roll.
 */
export function signatureHeader(
  secret: string | readonly string[],
  body: string | Uint8Array,
  unixSeconds: number,
): string {
  if (!Number.isSafeInteger(unixSeconds) || unixSeconds <= 0) {
    throw new TypeError(`the signature timestamp must be positive whole seconds, got ${unixSeconds}`);
  }
  const v1 = (key: string) => createHmac('sha256', key).update(`${unixSeconds}.`).update(body).digest('hex');
  if (typeof secret === 'string') return `t=${unixSeconds},v1=${v1(secret)}`;
  return `t=${unixSeconds}${secret.map((key) => `,v1=${v1(key)}`).join('')}`;
}

/** The host's `delivery.signatureScheme`, checked at start; `'keyhook'` when absent. */
export function signatureSchemeOption(scheme: SignatureScheme | undefined): SignatureScheme {
  if (scheme === undefined || scheme === 'keyhook' || scheme === 'standard-webhooks')
    return scheme ?? 'keyhook';
  throw new TypeError(
    `keyhook: delivery.signatureScheme must be 'keyhook' or 'standard-webhooks' (got ${JSON.stringify(scheme)})`,
  );
}

/** The Standard Webhooks headers (standardwebhooks.com); fixed by that specification, so never renamed. */
export const STANDARD_WEBHOOKS_HEADERS = Object.freeze({
  id: 'webhook-id',
  timestamp: 'webhook-timestamp',
  signature: 'webhook-signature',
});

/**
 * The three headers of a Standard Webhooks delivery: `webhook-signature` is `v1,<base64>` of
 * HMAC-SHA256 over `<id>.<timestamp>.<raw body>`, keyed with the secret's part after `whsec_`,
 * base64-decoded (docs/decisions.md §6.8), as `standardwebhooks` and `svix` key it; for a `whsk_`
 * key, `v1a,<base64>` of the ed25519 signature of the same bytes (§6.10). Several keys (a
 * rotation's overlap, the newest first) give one space-separated entry each.
 */
export function standardWebhooksHeaders(
  secret: string | readonly string[],
  id: string,
  body: string | Uint8Array,
  unixSeconds: number,
): Record<string, string> {
  if (!Number.isSafeInteger(unixSeconds) || unixSeconds <= 0) {
    throw new TypeError(`the signature timestamp must be positive whole seconds, got ${unixSeconds}`);
  }
  const keys = typeof secret === 'string' ? [secret] : secret;
  const prefix = `${id}.${unixSeconds}.`;
  const entry = (key: string) => {
    if (isAsymmetric(key)) {
      const message = Buffer.concat([
        Buffer.from(prefix),
        typeof body === 'string' ? Buffer.from(body) : body,
      ]);
      return `v1a,${sign(null, message, ed25519PrivateKey(key)).toString('base64')}`;
    }
    const hmac = createHmac('sha256', Buffer.from(key.slice(WEBHOOK_SECRET_PREFIX.length), 'base64'));
    return `v1,${hmac.update(prefix).update(body).digest('base64')}`;
  };
  return {
    [STANDARD_WEBHOOKS_HEADERS.id]: id,
    [STANDARD_WEBHOOKS_HEADERS.timestamp]: String(unixSeconds),
    [STANDARD_WEBHOOKS_HEADERS.signature]: keys.map(entry).join(' '),
  };
}

/** Whether a signing key is an ed25519 secret key (`whsk_…`) rather than a shared secret. */
export function isAsymmetric(key: string): boolean {
  return key.startsWith(ED25519_SECRET_KEY_PREFIX);
}

/**
 * The signature headers of one attempt under the endpoint's scheme (docs/http-api.md §6.3). An
 * ed25519 key signs only Standard Webhooks headers (docs/decisions.md §6.10): when the current key
 * is one, those are sent whatever the scheme says; under keyhook's scheme a previous ed25519 key
 * is left out.
 */
export function signedHeaders(
  scheme: SignatureScheme,
  names: DeliveryHeaderNames,
  secret: string | readonly string[],
  eventId: string,
  body: string | Uint8Array,
  unixSeconds: number,
): Record<string, string> {
  const keys = typeof secret === 'string' ? [secret] : secret;
  if (scheme === 'standard-webhooks' || isAsymmetric(keys[0]!)) {
    return standardWebhooksHeaders(keys, eventId, body, unixSeconds);
  }
  const shared = keys.filter((key) => !isAsymmetric(key));
  return { [names.eventId]: eventId, [names.signature]: signatureHeader(shared, body, unixSeconds) };
}
