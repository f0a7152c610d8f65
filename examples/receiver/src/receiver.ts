import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import {
  isWebhookVerificationError,
  verify,
  type WebhookEvent,
  type WebhookHeaderNames,
} from '@keyhook/webhook-verify';

/** The header names the reference server sends (its catalog.ts), which this example receives. */
export const REFERENCE_SERVER_HEADERS: WebhookHeaderNames = {
  signature: 'x-chatbot-signature',
  eventId: 'x-chatbot-event-id',
};

export interface ReceiverOptions {
  /** The endpoint's signing secret; during a rotation, the old and the new one. */
  secret: string | string[];
  /**
   * The real work. It runs after the 2xx has been sent (docs/http-api.md §6.8: answer quickly, work
   * afterwards).
   */
  handle: (event: WebhookEvent) => Promise<void> | void;
  /** Called when `handle` throws: the sender already has its 2xx, so the receiver owns the failure. */
  onError?: (error: unknown, event: WebhookEvent) => void;
  /** Called with a failure of the receiver itself (a bug or a misconfiguration), answered 500. */
  onInternalError?: (error: unknown) => void;
  /** Event ids remembered for de-duplication. Default 10,000. */
  rememberedIds?: number;
  /**
   * The ids already taken, shared with the feed's catch-up (catch-up.ts), so an event taken from
   * the feed and then delivered live, or the other way round, is handled once. Default: its own.
   */
  seen?: SeenEventIds;
  /** Largest body read, in bytes. Default 1 MiB. */
  maxBodyBytes?: number;
  /** The sender's two header names (its `delivery.headers`). Default the reference server's. */
  headers?: WebhookHeaderNames;
}

/**
 * The receiving end of keyhook's webhooks, written as a careful receiver would:
 * 1. read the raw body bytes (never a re-serialised body: that is what breaks signatures);
 * 2. verify the signature header with @keyhook/webhook-verify;
 * 3. drop a redelivery of an event already taken, by the event-id header;
 * 4. answer 200 at once, then do the work.
 * Deliveries are at least once, so step 3 is not optional. A real app keeps the seen ids in
 * its database, in the same transaction as the work; this example keeps them in memory.
 */
export function createReceiver(options: ReceiverOptions): Server {
  const seen = options.seen ?? new SeenEventIds(options.rememberedIds ?? 10_000);
  const limit = options.maxBodyBytes ?? 1024 * 1024;
  const headers = options.headers ?? REFERENCE_SERVER_HEADERS;
  return createServer((request, response) => {
    // A client that hangs up mid-body, or a receiver bug, rejects here: answer if still possible, never crash.
    receive(request, response).catch((error: unknown) => {
      (options.onInternalError ?? console.error)(error);
      if (!response.headersSent && !response.destroyed) reply(response, 500, { error: 'internal_error' });
      else response.destroy();
    });
  });

  async function receive(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (request.method !== 'POST') return reply(response, 405, { error: 'method_not_allowed' });
    const body = await readBody(request, limit);
    if (body === null) {
      // Stop reading a body that is already too large; the connection closes after this answer.
      response.setHeader('connection', 'close');
      reply(response, 413, { error: 'payload_too_large' });
      response.on('finish', () => request.destroy());
      return;
    }
    let event: WebhookEvent;
    try {
      event = verify(body, request.headers[headers.signature], options.secret);
    } catch (error) {
      if (!isWebhookVerificationError(error)) throw error;
      return reply(response, 400, { error: error.code });
    }
    // The header and the signed body must name the same event; the body is what was signed.
    if (request.headers[headers.eventId] !== event.id)
      return reply(response, 400, { error: 'event_id_mismatch' });
    if (!seen.add(event.id)) return reply(response, 200, { received: true, duplicate: true });
    reply(response, 200, { received: true });
    setImmediate(async () => {
      try {
        await options.handle(event);
      } catch (error) {
        try {
          options.onError?.(error, event);
        } catch {
          // A failing error callback must not take the receiver down with it.
        }
      }
    });
  }
}

function reply(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** The body's bytes, or null as soon as it is known to pass `limit` (the rest is never read). */
async function readBody(request: IncomingMessage, limit: number): Promise<Buffer | null> {
  if (Number(request.headers['content-length'] ?? 0) > limit) return null;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > limit) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** The most recent event ids taken, oldest forgotten first (a Map keeps insertion order). */
export class SeenEventIds {
  private readonly ids = new Map<string, true>();

  constructor(private readonly capacity = 10_000) {}

  /** False when the id was already seen. */
  add(id: string): boolean {
    if (this.ids.has(id)) return false;
    this.ids.set(id, true);
    if (this.ids.size > this.capacity) this.ids.delete(this.ids.keys().next().value!);
    return true;
  }
}
