import { createKeyhook, type EventCatalog, MemoryStore, silentLogger, toDeliveryView } from '@keyhook/core';
import { openApiDocument } from '@keyhook/core/http';
import { TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY, TestReceiver } from '@keyhook/testing/support';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startedKeyhook } from './worker-harness.js';

const invoiceEvents = {
  'invoice.paid': {
    description: 'An invoice was paid in full.',
    data: z.object({ invoiceId: z.string(), amountCents: z.int().positive(), paidAt: z.iso.datetime() }),
    example: { invoiceId: 'in_1001', amountCents: 12_500, paidAt: '2026-02-01T10:00:00Z' },
  },
  // No example given: one is made from the schema.
  'invoice.created': {
    data: z.object({ invoiceId: z.string(), currency: z.enum(['EUR', 'USD']), note: z.string().optional() }),
  },
  // No schema: any object, and {} as the example.
  'invoice.voided': { description: 'An invoice was voided.' },
  // A schema no made value passes: no example, so a test event needs its data.
  'invoice.refunded': { data: z.object({ currency: z.string().regex(/^[A-Z]{3}$/) }) },
  // The host's example has a key the schema strips: the catalog shows what a receiver gets.
  'invoice.sent': {
    data: z.object({ to: z.email() }),
    example: { to: 'billing@example.com', internalNote: 'dropped' },
  },
} satisfies EventCatalog;

function invoices(store = new MemoryStore()) {
  return createKeyhook({
    store,
    adminSession: { secret: TEST_ADMIN_SECRET },
    encryptionKey: TEST_ENCRYPTION_KEY,
    logger: silentLogger,
    mode: 'development',
    eventCatalog: invoiceEvents,
  });
}

/** A webhook of `tenantId` to a URL that is never called (nothing runs a worker here). */
async function webhookOf(
  keyhook: ReturnType<typeof invoices>,
  tenantId = 'tenant_a',
  events = ['invoice.paid'],
) {
  const { webhook } = await keyhook.webhooks.create(tenantId, { url: 'http://127.0.0.1:9/hook', events });
  return webhook;
}

const dataOf = (payload: string) => (JSON.parse(payload) as { data: unknown }).data;

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const item of opened.splice(0)) await item.close();
});

describe('the event catalog (keyhook.eventCatalog(), docs/decisions.md §8.16)', () => {
  it('lists each type in declaration order with its description, its JSON Schema and an example', () => {
    const catalog = invoices().eventCatalog();
    expect(catalog.map((entry) => entry.type)).toEqual(Object.keys(invoiceEvents));
    const byType = new Map(catalog.map((entry) => [entry.type, entry]));
    expect(byType.get('invoice.paid')).toMatchObject({
      description: 'An invoice was paid in full.',
      example: invoiceEvents['invoice.paid'].example,
      schema: { type: 'object', required: ['invoiceId', 'amountCents', 'paidAt'] },
    });
    expect(byType.get('invoice.created')).toEqual({
      type: 'invoice.created',
      schema: expect.objectContaining({ type: 'object' }),
      example: { invoiceId: 'string', currency: 'EUR', note: 'string' },
    });
    expect(byType.get('invoice.created')).not.toHaveProperty('description');
    expect(byType.get('invoice.voided')).toEqual({
      type: 'invoice.voided',
      description: 'An invoice was voided.',
      schema: null,
      example: {},
    });
    expect(byType.get('invoice.refunded')!.example).toBeNull();
    expect(byType.get('invoice.sent')!.example).toEqual({ to: 'billing@example.com' });
  });

  it("describes data with the OpenAPI document's own JSON Schema, and hands out copies", () => {
    const keyhook = invoices();
    const document = openApiDocument({ title: 't', version: '1' }, [], keyhook) as {
      // biome-ignore lint/suspicious/noExplicitAny: asserted field by field
      webhooks: Record<string, any>;
    };
    const first = keyhook.eventCatalog();
    for (const entry of first.filter((e) => e.schema !== null)) {
      const body = document.webhooks[entry.type].post.requestBody.content['application/json'].schema;
      expect(entry.schema, entry.type).toEqual(body.properties.data);
    }
    first[0]!.example!['invoiceId'] = 'changed';
    expect(keyhook.eventCatalog()[0]!.example!['invoiceId']).toBe('in_1001');
  });

  it("createKeyhook refuses an example its type's schema refuses, naming the type and the field", () => {
    const make = (example: unknown) => () =>
      createKeyhook({
        store: new MemoryStore(),
        adminSession: { secret: TEST_ADMIN_SECRET },
        logger: silentLogger,
        eventCatalog: { 'invoice.paid': { ...invoiceEvents['invoice.paid'], example: example as never } },
      });
    expect(make({ invoiceId: 'in_1', amountCents: -1, paidAt: '2026-02-01T10:00:00Z' })).toThrow(
      /event invoice\.paid: example does not pass its data schema \(example\.amountCents: /,
    );
    expect(make([1, 2])).toThrow(/event invoice\.paid: example must be an object/);
    expect(make('in_1')).toThrow(TypeError);
  });
});

describe('webhooks.sendTestEvent (docs/decisions.md §8.16)', () => {
  it("marks a test event by its id, evt_test_, which no publish may take; a published event's delivery is no test", async () => {
    const keyhook = invoices();
    const target = await webhookOf(keyhook);
    const { delivery } = await keyhook.webhooks.sendTestEvent('tenant_a', target.id, {
      type: 'invoice.paid',
    });
    expect(toDeliveryView(delivery).test).toBe(true);
    const data = invoiceEvents['invoice.paid'].example;
    const published = await keyhook.events.publish({ tenantId: 'tenant_a', type: 'invoice.paid', data });
    expect(toDeliveryView(published.deliveries[0]!).test).toBe(false);
    await expect(
      keyhook.events.publish({ tenantId: 'tenant_a', type: 'invoice.paid', id: 'evt_test_mine', data }),
    ).rejects.toMatchObject({ code: 'validation_failed', details: [{ path: 'id' }] });
    // evt_test alone, or evt_testing_, is any id.
    const own = await keyhook.events.publish({
      tenantId: 'tenant_a',
      type: 'invoice.paid',
      id: 'evt_testing_1',
      data,
    });
    expect(toDeliveryView(own.deliveries[0]!).test).toBe(false);
  });

  it("sends the type's example to that endpoint only, pending, with a minted evt_ id", async () => {
    const keyhook = invoices();
    const target = await webhookOf(keyhook);
    const other = await webhookOf(keyhook, 'tenant_a', ['invoice.paid', 'invoice.sent']);
    const { event, delivery } = await keyhook.webhooks.sendTestEvent('tenant_a', target.id, {
      type: 'invoice.paid',
    });
    expect(event).toMatchObject({ tenantId: 'tenant_a', type: 'invoice.paid' });
    expect(event.id).toMatch(/^evt_test_[0-9a-z]{26}$/);
    expect(dataOf(event.payload)).toEqual(invoiceEvents['invoice.paid'].example);
    expect(delivery).toMatchObject({
      webhookId: target.id,
      eventId: event.id,
      status: 'pending',
      attempts: 0,
    });
    expect(await keyhook.deliveries.list('tenant_a', other.id, 10, undefined, null)).toEqual([]);
    expect(await keyhook.deliveries.list('tenant_a', target.id, 10, undefined, null)).toEqual([delivery]);
  });

  it('each call is a new event: not idempotent', async () => {
    const keyhook = invoices();
    const target = await webhookOf(keyhook);
    const first = await keyhook.webhooks.sendTestEvent('tenant_a', target.id, { type: 'invoice.paid' });
    const second = await keyhook.webhooks.sendTestEvent('tenant_a', target.id, { type: 'invoice.paid' });
    expect(second.event.id).not.toBe(first.event.id);
    expect(await keyhook.deliveries.list('tenant_a', target.id, 10, undefined, null)).toHaveLength(2);
  });

  it('any type of the catalog, whatever the endpoint subscribes to; a made example, or {} without a schema', async () => {
    const keyhook = invoices();
    const target = await webhookOf(keyhook);
    const created = await keyhook.webhooks.sendTestEvent('tenant_a', target.id, { type: 'invoice.created' });
    expect(dataOf(created.event.payload)).toEqual({ invoiceId: 'string', currency: 'EUR', note: 'string' });
    const voided = await keyhook.webhooks.sendTestEvent('tenant_a', target.id, { type: 'invoice.voided' });
    expect(dataOf(voided.event.payload)).toEqual({});
    // What is sent is the schema's output, as at publish.
    const sent = await keyhook.webhooks.sendTestEvent('tenant_a', target.id, { type: 'invoice.sent' });
    expect(dataOf(sent.event.payload)).toEqual({ to: 'billing@example.com' });
  });

  it('given data is sent, checked by the type’s schema as at publish (400 naming the field)', async () => {
    const keyhook = invoices();
    const target = await webhookOf(keyhook);
    const data = { invoiceId: 'in_2', amountCents: 1, paidAt: '2026-03-01T00:00:00Z' };
    const { event } = await keyhook.webhooks.sendTestEvent('tenant_a', target.id, {
      type: 'invoice.paid',
      data,
    });
    expect(dataOf(event.payload)).toEqual(data);
    await expect(
      keyhook.webhooks.sendTestEvent('tenant_a', target.id, {
        type: 'invoice.paid',
        data: { ...data, amountCents: 0 },
      }),
    ).rejects.toMatchObject({ code: 'validation_failed', details: [{ path: 'data.amountCents' }] });
    await expect(
      keyhook.webhooks.sendTestEvent('tenant_a', target.id, { type: 'invoice.paid', data: [] as never }),
    ).rejects.toMatchObject({ code: 'validation_failed', details: [{ path: 'data' }] });
    expect(await keyhook.deliveries.list('tenant_a', target.id, 10, undefined, null)).toHaveLength(1);
  });

  it('a type outside the catalog, or a key the body does not take, is 400 validation_failed', async () => {
    const keyhook = invoices();
    const target = await webhookOf(keyhook);
    await expect(
      keyhook.webhooks.sendTestEvent('tenant_a', target.id, { type: 'invoice.lost' }),
    ).rejects.toMatchObject({ code: 'validation_failed', details: [{ path: 'type' }] });
    await expect(
      keyhook.webhooks.sendTestEvent('tenant_a', target.id, { type: 'invoice.paid', id: 'evt_1' } as never),
    ).rejects.toMatchObject({ code: 'validation_failed' });
    expect(await keyhook.deliveries.list('tenant_a', target.id, 10, undefined, null)).toEqual([]);
  });

  it('a type without an example needs data: 400 naming `data` without it, sent with it', async () => {
    const keyhook = invoices();
    const target = await webhookOf(keyhook);
    await expect(
      keyhook.webhooks.sendTestEvent('tenant_a', target.id, { type: 'invoice.refunded' }),
    ).rejects.toMatchObject({
      code: 'validation_failed',
      status: 400,
      details: [{ path: 'data', message: expect.stringContaining('invoice.refunded has no example') }],
    });
    const { event } = await keyhook.webhooks.sendTestEvent('tenant_a', target.id, {
      type: 'invoice.refunded',
      data: { currency: 'EUR' },
    });
    expect(dataOf(event.payload)).toEqual({ currency: 'EUR' });
  });

  it("an unknown webhook, another tenant's, or an id that is not one, is not_found, and nothing is written", async () => {
    const keyhook = invoices();
    const theirs = await webhookOf(keyhook, 'tenant_b');
    for (const id of [theirs.id, 'wh_01jz0000000000000000000000', 'not-an-id']) {
      await expect(
        keyhook.webhooks.sendTestEvent('tenant_a', id, { type: 'invoice.paid' }),
      ).rejects.toMatchObject({ code: 'not_found', status: 404 });
    }
    expect(await keyhook.deliveries.list('tenant_b', theirs.id, 10, undefined, null)).toEqual([]);
  });

  it('on a disabled endpoint the delivery is held', async () => {
    const keyhook = invoices();
    const target = await webhookOf(keyhook);
    await keyhook.webhooks.update('tenant_a', target.id, { status: 'disabled' });
    const { delivery } = await keyhook.webhooks.sendTestEvent('tenant_a', target.id, {
      type: 'invoice.paid',
    });
    expect(delivery).toMatchObject({ status: 'held', dueAt: null });
  });

  it("wakes this process's workers: the delivery goes out without the poll coming due", async () => {
    const receiver = await TestReceiver.start();
    opened.push(receiver);
    const { keyhook } = startedKeyhook({ eventCatalog: invoiceEvents });
    opened.push(keyhook);
    const { webhook } = await keyhook.webhooks.create('tenant_a', {
      url: receiver.url('/hook'),
      events: ['invoice.voided'],
    });
    const { event } = await keyhook.webhooks.sendTestEvent('tenant_a', webhook.id, { type: 'invoice.paid' });
    // The virtual clock never moves: only the wake-up can have leased it.
    await receiver.waitFor((requests) => requests.length === 1);
    const body = JSON.parse(receiver.requests[0]!.body);
    expect(body).toEqual({
      id: event.id,
      type: 'invoice.paid',
      createdAt: event.createdAt.toISOString(),
      data: invoiceEvents['invoice.paid'].example,
    });
  });
});
