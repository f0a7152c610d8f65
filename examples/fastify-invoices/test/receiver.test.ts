import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { signEvent } from '@keyhook/webhook-verify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { INVOICE_WEBHOOK_HEADERS, type InvoiceEvents } from '../src/app.js';
import {
  createInvoiceReceiver,
  describeInvoiceEvent,
  type InvoiceWebhookEvent,
} from '../src/invoice-receiver.js';

const SECRET = `whsec_${'ab'.repeat(32)}`;

/** The receiver alone, fed deliveries made by webhook-verify's signEvent under this API's header names. */
describe('the invoice webhook receiver (src/invoice-receiver.ts)', () => {
  const received: InvoiceWebhookEvent[] = [];
  let server: Server;
  let url: string;

  const deliver = (event: InvoiceWebhookEvent, { secret = SECRET, eventId = event.id } = {}) => {
    const { body, headers } = signEvent<InvoiceEvents>(event, secret, { headers: INVOICE_WEBHOOK_HEADERS });
    return fetch(url, {
      method: 'POST',
      headers: { ...headers, [INVOICE_WEBHOOK_HEADERS.eventId]: eventId },
      body,
    });
  };
  const paidEvent = {
    id: 'evt_inv_1_paid',
    type: 'invoice.paid',
    createdAt: '2026-01-01T00:00:00.000Z',
    data: { invoiceId: 'inv_1', customer: 'Initech', amountCents: 1200, paidAt: '2026-01-01T00:00:00.000Z' },
  } satisfies InvoiceWebhookEvent;
  const createdEvent = {
    id: 'evt_inv_1_created',
    type: 'invoice.created',
    createdAt: '2026-01-01T00:00:00.000Z',
    data: { invoiceId: 'inv_1', customer: 'Initech', amountCents: 1200 },
  } satisfies InvoiceWebhookEvent;

  beforeAll(async () => {
    server = createInvoiceReceiver({ secret: SECRET, onEvent: (event) => void received.push(event) });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('hands a verified event on once, and answers a redelivery without handing it on again', async () => {
    expect((await deliver(paidEvent)).status).toBe(200);
    await vi.waitFor(() => expect(received).toEqual([paidEvent]));
    const again = await deliver(paidEvent);
    expect(await again.json()).toEqual({ received: true, duplicate: true });
    expect(received).toHaveLength(1);
  });

  it('refuses a wrong signature and an event id header that is not the signed id', async () => {
    const forged = await deliver({ ...paidEvent, id: 'evt_forged' }, { secret: `whsec_${'cd'.repeat(32)}` });
    expect(forged.status).toBe(400);
    expect(await forged.json()).toEqual({ error: 'signature_mismatch' });
    const mismatch = await deliver({ ...paidEvent, id: 'evt_other' }, { eventId: 'evt_inv_1_paid' });
    expect(mismatch.status).toBe(400);
    expect(await mismatch.json()).toEqual({ error: 'event_id_mismatch' });
    expect(received.map((event) => event.id)).toEqual(['evt_inv_1_paid']);
  });

  it('describes each event type from its own data', () => {
    expect(describeInvoiceEvent(paidEvent)).toBe(
      'inv_1 paid at 2026-01-01T00:00:00.000Z: 1200 cents from Initech',
    );
    expect(describeInvoiceEvent(createdEvent)).toBe('inv_1 created: 1200 cents for Initech');
  });
});
