import { WebhookVerificationError } from './errors.js';

/**
 * Event type → the `data` it carries: what a receiver expects, as types only. A sender built with
 * `@keyhook/core` gives it as `EventMapOf<typeof keyhook>`; any hand-written type or interface
 * whose values are objects does too: `{ 'invoice.paid': { invoiceId: string } }`.
 */
export type WebhookEventMap<Events = Record<string, unknown>> = { [Type in keyof Events]: object };

/** Any event type, any JSON object as `data`: the map when a receiver names none. */
export type AnyWebhookEvents = Record<string, Record<string, unknown>>;

/**
 * The delivery body (README, "What a delivery looks like"), one member per event type of `Events`: a union on `type`, so
 * `switch (event.type)` narrows `data`. `id` is signed and equals the event-id header: dedupe on it.
 */
export type WebhookEvent<Events extends WebhookEventMap<Events> = AnyWebhookEvents> = {
  [Type in keyof Events & string]: {
    id: string;
    type: Type;
    createdAt: string;
    data: Events[Type];
  };
}[keyof Events & string];

// ignoreBOM keeps a BOM in the text, so bytes and the same body as a string parse alike.
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Runs only after the signature matched: the body is authentic, but may still not be an event.
 * Its `data` is typed by the receiver's map without a runtime check (docs/decisions.md §6.6).
 */
export function parseEvent<Events extends WebhookEventMap<Events>>(
  rawBody: string | Uint8Array,
): WebhookEvent<Events> {
  let text: string;
  try {
    text = typeof rawBody === 'string' ? rawBody : decoder.decode(rawBody);
  } catch (cause) {
    throw new WebhookVerificationError('invalid_payload', 'the body is not valid UTF-8', { cause });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw new WebhookVerificationError('invalid_payload', 'the body is not JSON', { cause });
  }
  if (!isEvent(value)) {
    throw new WebhookVerificationError(
      'invalid_payload',
      'the body is not a keyhook event: expected { id, type, createdAt, data }',
    );
  }
  return value as WebhookEvent<Events>;
}

function isEvent(value: unknown): boolean {
  if (!isObject(value)) return false;
  const { id, type, createdAt, data } = value;
  return (
    typeof id === 'string' && typeof type === 'string' && typeof createdAt === 'string' && isObject(data)
  );
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
