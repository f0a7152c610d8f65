import { createKeyhook, type EventMapOf, MemoryStore, silentLogger } from '@keyhook/core';
import {
  type SignedDelivery,
  signEvent,
  verify,
  verifyAsync,
  verifyRequest,
  type WebhookEvent,
} from '@keyhook/webhook-verify';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { SECRET } from './wire-format.js';

/**
 * What the event map makes a compile error. `npm run typecheck` checks every `@ts-expect-error`
 * here (an unused one fails it); the runtime lines show the same values pass through untouched.
 */
// recipe:typed
// Event type → data: by hand, or `EventMapOf<typeof keyhook>` from the sender's @keyhook/core.
type InvoiceEvents = {
  'invoice.created': { invoiceId: string; amountCents: number };
  'invoice.paid': { invoiceId: string; amountCents: number; paidAt: string };
};

function describeEvent(event: WebhookEvent<InvoiceEvents>): string {
  switch (event.type) {
    case 'invoice.created':
      return `created ${event.data.invoiceId}`;
    case 'invoice.paid':
      return `paid ${event.data.invoiceId} at ${event.data.paidAt}`; // paidAt exists only here
  }
}
// recipe:end

const created = signEvent<InvoiceEvents>(
  { type: 'invoice.created', data: { invoiceId: 'inv_1', amountCents: 1200 } },
  SECRET,
);
const paid = signEvent<InvoiceEvents>(
  { type: 'invoice.paid', data: { invoiceId: 'inv_1', amountCents: 1200, paidAt: '2026-01-01T00:00:00Z' } },
  SECRET,
);

/** What the narrowing allows, and refuses, under each case. */
function narrowing(event: WebhookEvent<InvoiceEvents>): void {
  // @ts-expect-error paidAt is not on every event
  void event.data.paidAt;
  if (event.type === 'invoice.created') {
    expectTypeOf(event.data).toEqualTypeOf<InvoiceEvents['invoice.created']>();
    // @ts-expect-error an invoice.created has no paidAt
    void event.data.paidAt;
  } else {
    expectTypeOf(event.data.paidAt).toEqualTypeOf<string>();
  }
}

describe('an event map types the verified event', () => {
  it('verify, verifyAsync and verifyRequest narrow data by type', async () => {
    const event = verify<InvoiceEvents>(paid.body, paid.headers, SECRET);
    expectTypeOf(event.type).toEqualTypeOf<'invoice.created' | 'invoice.paid'>();
    narrowing(event);
    expect(describeEvent(event)).toBe('paid inv_1 at 2026-01-01T00:00:00Z');
    const viaAsync = await verifyAsync<InvoiceEvents>(created.body, created.headers, SECRET);
    expect(describeEvent(viaAsync)).toBe('created inv_1');
    const request = new Request('https://receiver.example/', {
      method: 'POST',
      headers: paid.headers,
      body: paid.body,
    });
    const viaRequest = await verifyRequest<InvoiceEvents>(request, SECRET);
    expectTypeOf(viaRequest).toEqualTypeOf<WebhookEvent<InvoiceEvents>>();
    expect(describeEvent(viaRequest)).toBe('paid inv_1 at 2026-01-01T00:00:00Z');
  });

  it('without a map, type is any string and data any JSON object', () => {
    const event = verify(paid.body, paid.headers, SECRET);
    expectTypeOf(event).toEqualTypeOf<{
      id: string;
      type: string;
      createdAt: string;
      data: Record<string, unknown>;
    }>();
    expect(event.data.paidAt).toBe('2026-01-01T00:00:00Z');
  });

  it('an interface serves as a map too', () => {
    interface Events {
      'user.deleted': { userId: string };
    }
    const delivery = signEvent<Events>({ type: 'user.deleted', data: { userId: 'u_1' } }, SECRET);
    expect(verify<Events>(delivery.body, delivery.headers, SECRET).data.userId).toBe('u_1');
  });

  it('refuses what is not a map of event types to objects', () => {
    // @ts-expect-error a data type is not an event map: { runId: string } maps "runId" to a string
    verify<{ runId: string }>(paid.body, paid.headers, SECRET);
    expect(() => verify(paid.body, paid.headers, SECRET)).not.toThrow();
  });

  it('signEvent without a map takes any type and any JSON object, and nothing else', () => {
    const untyped = signEvent({ type: 'anything.at_all', data: { n: 1 } }, SECRET);
    expectTypeOf(untyped.event.data).toEqualTypeOf<Record<string, unknown>>();
    // @ts-expect-error data is a JSON object, not a string
    expect(() => signEvent({ type: 'x', data: 'a string' }, SECRET)).toThrow(TypeError);
    // @ts-expect-error data is a JSON object, not null
    expect(() => signEvent({ type: 'x', data: null }, SECRET)).toThrow(TypeError);
  });

  it('signEvent takes only declared types, with their data', () => {
    // @ts-expect-error invoice.refunded is not in the map
    signEvent<InvoiceEvents>({ type: 'invoice.refunded', data: { invoiceId: 'inv_1' } }, SECRET);
    // @ts-expect-error invoice.paid needs paidAt
    signEvent<InvoiceEvents>({ type: 'invoice.paid', data: { invoiceId: 'inv_1', amountCents: 1 } }, SECRET);
    expectTypeOf(paid).toEqualTypeOf<SignedDelivery<InvoiceEvents>>();
    expect(paid.event.type).toBe('invoice.paid');
  });

  it("a sender's catalog gives the map: EventMapOf<typeof keyhook>", async () => {
    const keyhook = createKeyhook({
      store: new MemoryStore(),
      adminSession: { secret: 'types-test-admin-secret-of-32-bytes!!' },
      mode: 'development',
      logger: silentLogger,
      eventCatalog: {
        'invoice.paid': { data: z.object({ invoiceId: z.string(), amountCents: z.number().int() }) },
        'invoice.voided': {},
      },
    });
    try {
      type Events = EventMapOf<typeof keyhook>;
      expectTypeOf<keyof Events>().toEqualTypeOf<'invoice.paid' | 'invoice.voided'>();
      const delivery = signEvent<Events>(
        { type: 'invoice.paid', data: { invoiceId: 'inv_9', amountCents: 3 } },
        SECRET,
      );
      const event = verify<Events>(delivery.body, delivery.headers, SECRET);
      if (event.type === 'invoice.paid') expectTypeOf(event.data.amountCents).toEqualTypeOf<number>();
      else expectTypeOf(event.data).toEqualTypeOf<Record<string, unknown>>();
      expect(event.data).toEqual({ invoiceId: 'inv_9', amountCents: 3 });
    } finally {
      await keyhook.close();
    }
  });
});
