import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { isWebhookVerificationError, verify, type WebhookEvent } from '@keyhook/webhook-verify';
import type { InvoiceEvents } from './keyhook.js';
import { INVOICE_WEBHOOK_HEADERS } from './webhook-headers.js';

/** A verified delivery: a union on `type`, so `data` is `invoice.paid`'s only under `'invoice.paid'`. */
export type InvoiceWebhookEvent = WebhookEvent<InvoiceEvents>;

export interface InvoiceReceiverOptions {
  /** The endpoint's `whsec_…` secret; during a rotation, the old and the new one. Read at every request. */
  secret: string | readonly string[];
  /** Each new verified event, after the 200 was sent. Default: one log line. */
  onEvent?: (event: InvoiceWebhookEvent) => void | Promise<void>;
  /** A failure of `onEvent`: the sender already has its 200, so the receiver owns it. Default: console.error. */
  onError?: (error: unknown, event: InvoiceWebhookEvent) => void;
}

// keyhook's events are at most 256 KiB; anything larger is not a delivery.
const MAX_BODY_BYTES = 512 * 1024;
// Deliveries are at least once: remember this many recent event ids to drop redeliveries.
const REMEMBERED_IDS = 10_000;

/** One line per event, written against the narrowed union: `paidAt` exists only on `invoice.paid`. */
export function describeInvoiceEvent(event: InvoiceWebhookEvent): string {
  switch (event.type) {
    case 'invoice.created':
      return `${event.data.invoiceId} created: ${event.data.amountCents} cents for ${event.data.customer}`;
    case 'invoice.paid':
      return `${event.data.invoiceId} paid at ${event.data.paidAt}: ${event.data.amountCents} cents from ${event.data.customer}`;
  }
}

/**
 * A webhook receiver for the invoices API on node:http: reads the raw bytes, verifies them with
 * `verify<InvoiceEvents>` and the request's headers under this API's names (the signature, and
 * `x-invoices-event-id` against the signed id), answers 200 at once, then hands the event on.
 */
export function createInvoiceReceiver(options: InvoiceReceiverOptions): Server {
  const onEvent = options.onEvent ?? ((event) => console.log(describeInvoiceEvent(event)));
  const onError = options.onError ?? ((error) => console.error('handling a webhook event failed', error));
  const seen = new Set<string>();

  const receive = async (request: IncomingMessage, response: ServerResponse) => {
    if (request.method !== 'POST') {
      response.setHeader('allow', 'POST');
      return reply(response, 405, { error: 'method_not_allowed' });
    }
    const body = await readBody(request);
    if (body === undefined) {
      response.setHeader('connection', 'close');
      return reply(response, 413, { error: 'payload_too_large' });
    }
    let event: InvoiceWebhookEvent;
    try {
      event = verify<InvoiceEvents>(body, request.headers, options.secret, {
        headers: INVOICE_WEBHOOK_HEADERS,
      });
    } catch (error) {
      if (!isWebhookVerificationError(error)) throw error;
      return reply(response, 400, { error: error.code });
    }
    if (seen.has(event.id)) return reply(response, 200, { received: true, duplicate: true });
    seen.add(event.id);
    if (seen.size > REMEMBERED_IDS) seen.delete(seen.values().next().value!);
    reply(response, 200, { received: true });
    try {
      await onEvent(event);
    } catch (error) {
      onError(error, event);
    }
  };

  return createServer((request, response) => {
    receive(request, response).catch((error: unknown) => {
      console.error('the webhook receiver failed', error);
      if (!response.headersSent) reply(response, 500, { error: 'internal_error' });
      else response.destroy();
    });
  });
}

function reply(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** The raw body, or undefined once it passes the limit (the rest is not read). */
async function readBody(request: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
