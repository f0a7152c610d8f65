import { requireScope } from '@keyhook/adapter-fastify';
import { MemoryStore, silentLogger } from '@keyhook/core';
import { afterAll, describe, expect, expectTypeOf, it } from 'vitest';
import { createInvoicesKeyhook, type InvoiceEvents } from '../src/app.js';
import type { InvoiceWebhookEvent } from '../src/invoice-receiver.js';

/**
 * What the catalog makes a compile error. `npm run typecheck` checks every `@ts-expect-error`
 * here (an unused one fails it); at run time the same calls are refused as JavaScript callers see it.
 */
describe('the catalog types what the app can write', () => {
  // MemoryStore in development needs no encryption key: these calls never reach a database.
  const keyhook = createInvoicesKeyhook(new MemoryStore(), {
    adminSecret: 'types-test-admin-secret-of-32-bytes!!',
    encryptionKey: undefined,
    mode: 'development',
    logger: silentLogger,
  });
  afterAll(() => keyhook.close());

  it('publish takes only declared event types, with data of their schema', async () => {
    await expect(
      // @ts-expect-error invoice.refunded is not an event of this app
      keyhook.events.publish({ tenantId: 'acme', type: 'invoice.refunded', data: { invoiceId: 'inv_1' } }),
    ).rejects.toMatchObject({ code: 'validation_failed', details: [{ path: 'type' }] });
    await expect(
      keyhook.events.publish({
        tenantId: 'acme',
        type: 'invoice.created',
        // @ts-expect-error amountCents is a number
        data: { invoiceId: 'inv_1', customer: 'Initech', amountCents: '12' },
      }),
    ).rejects.toMatchObject({ code: 'validation_failed', details: [{ path: 'data.amountCents' }] });
    await expect(
      keyhook.events.publish({
        tenantId: 'acme',
        type: 'invoice.paid',
        // @ts-expect-error invoice.paid needs paidAt
        data: { invoiceId: 'inv_1', customer: 'Initech', amountCents: 12 },
      }),
    ).rejects.toMatchObject({ code: 'validation_failed', details: [{ path: 'data.paidAt' }] });
  });

  it('requireScope takes only declared scopes', () => {
    expect(typeof requireScope(keyhook, 'invoices:read')).toBe('function');
    // @ts-expect-error invoices:raed is not a scope of this app
    expect(() => requireScope(keyhook, 'invoices:raed')).toThrow(/unknown scope "invoices:raed"/);
  });

  it('InvoiceEvents maps each type to the data its schema outputs', () => {
    expectTypeOf<keyof InvoiceEvents>().toEqualTypeOf<'invoice.created' | 'invoice.paid'>();
    expectTypeOf<InvoiceEvents['invoice.paid']>().toEqualTypeOf<{
      invoiceId: string;
      customer: string;
      amountCents: number;
      paidAt: string;
    }>();
    expect(keyhook.eventCatalog().map((entry) => entry.type)).toEqual(['invoice.created', 'invoice.paid']);
  });

  it("a receiver's callback reaches paidAt only under 'invoice.paid'", () => {
    const seen: string[] = [];
    const onEvent = (event: InvoiceWebhookEvent) => {
      // @ts-expect-error paidAt is not on every event
      seen.push(`before the switch: ${event.data.paidAt}`);
      switch (event.type) {
        case 'invoice.created':
          expectTypeOf(event.data).toEqualTypeOf<InvoiceEvents['invoice.created']>();
          // @ts-expect-error an invoice.created has no paidAt
          seen.push(`created: ${event.data.paidAt}`);
          break;
        case 'invoice.paid':
          expectTypeOf(event.data.paidAt).toEqualTypeOf<string>();
          seen.push(`paid: ${event.data.paidAt}`);
          break;
      }
    };
    onEvent({
      id: 'evt_1',
      type: 'invoice.paid',
      createdAt: '2026-01-01T00:00:00.000Z',
      data: { invoiceId: 'inv_1', customer: 'Initech', amountCents: 12, paidAt: '2026-01-01T00:00:00.000Z' },
    });
    expect(seen).toEqual(['before the switch: 2026-01-01T00:00:00.000Z', 'paid: 2026-01-01T00:00:00.000Z']);
  });
});
