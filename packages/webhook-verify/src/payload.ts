import { WebhookVerificationError } from './errors.js';

/** Spec §6 "Event kinds"; the union stays open so a receiver keeps compiling when kinds are added. */
export type WebhookEventType =
  | 'run.completed'
  | 'run.failed'
  | 'run.conflict'
  | 'generation.published'
  | 'apply.failed'
  | (string & {});

/** The delivery body (DESIGN.md §6). `id` is signed and equals `x-chatbot-event-id`: dedupe on it. */
export interface WebhookEvent<TData = Record<string, unknown>> {
  id: string;
  type: WebhookEventType;
  createdAt: string;
  data: TData;
}

// ignoreBOM keeps a BOM in the text, so bytes and the same body as a string parse alike.
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Runs only after the signature matched: the body is authentic, but may still not be an event. */
export function parseEvent<TData>(rawBody: string | Uint8Array): WebhookEvent<TData> {
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
  return value as WebhookEvent<TData>;
}

function isEvent(value: unknown): value is WebhookEvent<unknown> {
  if (!isObject(value)) return false;
  const { id, type, createdAt, data } = value;
  return (
    typeof id === 'string' && typeof type === 'string' && typeof createdAt === 'string' && isObject(data)
  );
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
