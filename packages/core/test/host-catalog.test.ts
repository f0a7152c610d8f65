import { createHmac } from 'node:crypto';
import {
  createKeyhook,
  type EventCatalogOf,
  type EventMapOf,
  type Keyhook,
  MemoryStore,
  type ScopeOf,
  silentLogger,
} from '@keyhook/core';
import { type KeyhookRequest, openApiDocument } from '@keyhook/core/http';
import { adminToken, TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY, TestReceiver } from '@keyhook/testing/support';
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { startedKeyhook } from './worker-harness.js';

const invoiceEvents = {
  'invoice.created': {
    description: 'An invoice was drafted.',
    data: z.object({ invoiceId: z.string(), amountCents: z.number().int().nonnegative() }),
  },
  'invoice.paid': {
    description: 'An invoice was paid in full.',
    data: z.object({ invoiceId: z.string(), paidAt: z.iso.datetime() }),
  },
  'invoice.voided': { description: 'An invoice was voided; any data.' },
};

/** The invoices host's scopes and events. */
const invoiceCatalog = {
  scopes: ['invoices:read', { name: 'invoices:write', description: 'Create, pay and void invoices' }],
  eventCatalog: invoiceEvents,
} as const;

function invoices(store = new MemoryStore(), delivery = {}) {
  return createKeyhook({
    store,
    adminSession: { secret: TEST_ADMIN_SECRET },
    encryptionKey: TEST_ENCRYPTION_KEY,
    logger: silentLogger,
    mode: 'development',
    ...invoiceCatalog,
    delivery,
  });
}

async function admin(
  keyhook: Pick<Keyhook, 'handle'>,
  method: KeyhookRequest['method'],
  path: string,
  body?: unknown,
) {
  const response = await keyhook.handle({
    method,
    path,
    headers: { authorization: `Bearer ${await adminToken()}`, 'content-type': 'application/json' },
    rawBody: body === undefined ? null : Buffer.from(JSON.stringify(body)),
  });
  return { status: response.status, body: JSON.parse(response.body ?? 'null') };
}

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const item of opened.splice(0)) await item.close();
});

describe('host-defined scopes', () => {
  it('keys carry the host’s scopes; another scope is 400 validation_failed naming the allowed ones', async () => {
    const keyhook = invoices();
    // The events feed's scope joins a catalog with events (docs/decisions.md §8.17).
    expect(keyhook.scopes).toEqual(['invoices:read', 'invoices:write', 'events:read']);
    const created = await admin(keyhook, 'POST', '/admin/keys', { name: 'ci', scopes: ['invoices:read'] });
    expect(created.status).toBe(201);
    expect(created.body.key.scopes).toEqual(['invoices:read']);

    const refused = await admin(keyhook, 'POST', '/admin/keys', { name: 'ci', scopes: ['sources:read'] });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('validation_failed');
    expect(refused.body.error.message).toContain(
      'must be one of "invoices:read", "invoices:write", "events:read"',
    );
    expect(refused.body.error.details[0].path).toBe('scopes.0');
  });

  it('the guard admits a key holding the scope and refuses one without it (403 insufficient_scope)', async () => {
    const keyhook = invoices();
    const { secret } = await keyhook.keys.create('tenant_a', { name: 'reader', scopes: ['invoices:read'] });
    const headers = { authorization: `Bearer ${secret}` };
    expect(await keyhook.guard('invoices:read')(headers)).toMatchObject({ ok: true });
    const refused = await keyhook.guard('invoices:write')(headers);
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(JSON.parse(refused.response.body!).error.code).toBe('insufficient_scope');
  });

  it('a guard for an undeclared scope throws at setup, not at request time', () => {
    const keyhook = invoices();
    // @ts-expect-error 'invoices:delete' is not a declared scope
    expect(() => keyhook.guard('invoices:delete')).toThrow(/unknown scope "invoices:delete"/);
  });

  it('a bad scope list fails createKeyhook', () => {
    const make = (scopes: unknown) => () =>
      createKeyhook({
        store: new MemoryStore(),
        adminSession: { secret: TEST_ADMIN_SECRET },
        logger: silentLogger,
        scopes: scopes as never,
      });
    expect(make('sources:read')).toThrow(/must be a list/);
    expect(make(['a', 'a'])).toThrow(/declared twice/);
    expect(make(['has space'])).toThrow(/not a scope name/);
    expect(make([{ description: 'no name' }])).toThrow(/not a scope name/);
  });

  it('declares nothing by default: keys carry no scope, nothing is published or subscribed to, neutral headers', async () => {
    // docs/decisions.md §3.13: core has no scopes or events of its own.
    const keyhook = createKeyhook({
      store: new MemoryStore(),
      adminSession: { secret: TEST_ADMIN_SECRET },
      logger: silentLogger,
    });
    expect(keyhook.scopes).toEqual([]);
    expect(keyhook.eventCatalog()).toEqual([]);
    expect(keyhook.headerNames).toEqual({ signature: 'keyhook-signature', eventId: 'keyhook-event-id' });

    const created = await admin(keyhook, 'POST', '/admin/keys', { name: 'plain', scopes: [] });
    expect(created.status).toBe(201);
    expect(created.body.key.scopes).toEqual([]);
    const headers = { authorization: `Bearer ${created.body.secret}` };
    expect(await keyhook.guard()(headers)).toMatchObject({ ok: true });
    const scoped = await admin(keyhook, 'POST', '/admin/keys', { name: 'scoped', scopes: ['sources:read'] });
    expect(scoped.status).toBe(400);
    expect(scoped.body.error.message).toContain('this API declares no scopes');

    const webhook = await admin(keyhook, 'POST', '/admin/webhooks', {
      url: 'http://127.0.0.1:9/',
      events: ['run.completed'],
    });
    expect(webhook.status).toBe(400);
    expect(webhook.body.error.message).toContain('this API declares no event types');
    await expect(
      keyhook.events.publish({ tenantId: 't', type: 'run.completed', data: {} } as never),
    ).rejects.toMatchObject({ code: 'validation_failed' });

    expectTypeOf<ScopeOf<typeof keyhook>>().toBeNever();
    expectTypeOf<keyof EventMapOf<typeof keyhook>>().toBeNever();
  });
});

describe('host-defined events', () => {
  it('webhooks subscribe to the host’s events; another kind is 400 naming the allowed ones', async () => {
    const keyhook = invoices();
    const created = await admin(keyhook, 'POST', '/admin/webhooks', {
      url: 'http://127.0.0.1:9/hook',
      events: ['invoice.paid', 'invoice.created'],
    });
    expect(created.status).toBe(201);
    expect(created.body.webhook.events).toEqual(['invoice.created', 'invoice.paid']);
    const refused = await admin(keyhook, 'POST', '/admin/webhooks', {
      url: 'http://127.0.0.1:9/other',
      events: ['run.completed'],
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('validation_failed');
    expect(refused.body.error.message).toContain(
      'must be one of "invoice.created", "invoice.paid", "invoice.voided"',
    );
  });

  it('publish refuses an undeclared type, naming the declared ones', async () => {
    const keyhook = invoices();
    // @ts-expect-error 'run.completed' is not in the invoices catalog
    const publishing = keyhook.events.publish({ tenantId: 't', type: 'run.completed', data: {} });
    await expect(publishing).rejects.toMatchObject({
      code: 'validation_failed',
      message: expect.stringContaining('must be one of "invoice.created", "invoice.paid", "invoice.voided"'),
    });
  });

  it('publish refuses data that fails its event’s schema, naming the field, and writes nothing', async () => {
    const store = new MemoryStore();
    const keyhook = invoices(store);
    const hook = await keyhook.webhooks.create('tenant_a', {
      url: 'http://127.0.0.1:9/h',
      events: ['invoice.paid'],
    });
    const refused = keyhook.events.publish({
      tenantId: 'tenant_a',
      type: 'invoice.paid',
      id: 'evt_bad_1',
      // @ts-expect-error paidAt must be a string
      data: { invoiceId: 'inv_1', paidAt: 42 },
    });
    await expect(refused).rejects.toMatchObject({
      code: 'validation_failed',
      details: [expect.objectContaining({ path: 'data.paidAt' })],
    });
    // Nothing was written: the same id publishes afresh, and no delivery was queued before it.
    expect(await keyhook.deliveries.list('tenant_a', hook.webhook.id, 10, undefined, null)).toEqual([]);
    const ok = await keyhook.events.publish({
      tenantId: 'tenant_a',
      type: 'invoice.paid',
      id: 'evt_bad_1',
      data: { invoiceId: 'inv_1', paidAt: '2026-11-24T10:00:00Z' },
    });
    expect(ok.replayed).toBe(false);
    expect(ok.deliveries).toHaveLength(1);
  });

  it('publishSync validates data before it asks the store', () => {
    const keyhook = invoices();
    expect(() =>
      keyhook.events.publishSync(
        // @ts-expect-error amountCents is missing
        { tenantId: 't', type: 'invoice.created', data: { invoiceId: 'inv_1' } },
        { transaction: {} },
      ),
    ).toThrow(expect.objectContaining({ code: 'validation_failed' }));
  });

  it('the schema’s output is what is sent: undeclared keys are stripped; an event without a schema takes any object', async () => {
    const keyhook = invoices();
    const created = await keyhook.events.publish({
      tenantId: 't',
      type: 'invoice.created',
      data: { invoiceId: 'inv_1', amountCents: 1200, internalNote: 'x' } as {
        invoiceId: string;
        amountCents: number;
      },
    });
    expect(JSON.parse(created.event.payload).data).toEqual({ invoiceId: 'inv_1', amountCents: 1200 });
    const voided = await keyhook.events.publish({
      tenantId: 't',
      type: 'invoice.voided',
      data: { anything: [1] },
    });
    expect(JSON.parse(voided.event.payload).data).toEqual({ anything: [1] });
  });

  it('a schema that does not produce an object is refused at publish', async () => {
    const keyhook = createKeyhook({
      store: new MemoryStore(),
      adminSession: { secret: TEST_ADMIN_SECRET },
      logger: silentLogger,
      eventCatalog: { 'odd.event': { data: z.object({}).transform(() => 'text') as never } },
    });
    await expect(
      keyhook.events.publish({ tenantId: 't', type: 'odd.event', data: {} } as never),
    ).rejects.toMatchObject({
      code: 'validation_failed',
      message: expect.stringContaining('must produce an object'),
    });
  });

  it('a bad catalog fails createKeyhook', () => {
    const make = (events: unknown) => () =>
      createKeyhook({
        store: new MemoryStore(),
        adminSession: { secret: TEST_ADMIN_SECRET },
        logger: silentLogger,
        eventCatalog: events as never,
      });
    expect(make({})).not.toThrow();
    expect(make(['invoice.paid'])).toThrow(/must be an object/);
    expect(make({ 'a,b': {} })).toThrow(/not an event type/);
    expect(make({ 'a.b': { data: { parse: 1 } } })).toThrow(/zod schema/);
  });

  it('the old option name `events` still declares the catalog, typed the same; both names is a TypeError', async () => {
    const base = {
      store: new MemoryStore(),
      adminSession: { secret: TEST_ADMIN_SECRET },
      logger: silentLogger,
    };
    const old = createKeyhook({ ...base, events: invoiceEvents });
    expect(old.eventCatalog().map((entry) => entry.type)).toEqual([
      'invoice.created',
      'invoice.paid',
      'invoice.voided',
    ]);
    expectTypeOf<EventMapOf<typeof old>>().toEqualTypeOf<EventMapOf<ReturnType<typeof invoices>>>();
    const refused = old.events.publish({
      tenantId: 't',
      type: 'invoice.paid',
      // @ts-expect-error: paidAt is a string under the old name too
      data: { invoiceId: 'inv_1', paidAt: 1 },
    });
    await expect(refused).rejects.toMatchObject({ code: 'validation_failed' });
    await old.close();
    expect(() => createKeyhook({ ...base, eventCatalog: invoiceEvents, events: invoiceEvents })).toThrow(
      new TypeError('keyhook: give eventCatalog or events (its deprecated name), not both'),
    );
  });
});

describe('types from the catalog', () => {
  it('ScopeOf and EventMapOf give the declared scopes and each event’s data (the schema’s output)', () => {
    type Invoices = ReturnType<typeof invoices>;
    expectTypeOf<EventCatalogOf<Invoices>>().toEqualTypeOf<typeof invoiceEvents>();
    expectTypeOf<ScopeOf<Invoices>>().toEqualTypeOf<'invoices:read' | 'invoices:write'>();
    expectTypeOf<EventMapOf<Invoices>>().toEqualTypeOf<{
      'invoice.created': { invoiceId: string; amountCents: number };
      'invoice.paid': { invoiceId: string; paidAt: string };
      'invoice.voided': Record<string, unknown>;
    }>();
    // Without type parameters, `Keyhook` is any keyhook: any scope, any event with any object as data.
    expectTypeOf<ScopeOf<Keyhook>>().toEqualTypeOf<string>();
    expectTypeOf<EventMapOf<Keyhook>>().toEqualTypeOf<Record<string, Record<string, unknown>>>();
  });
});

describe('delivery header names', () => {
  it('a delivery carries the host’s header names, and the signature checks out under them', async () => {
    const receiver = await TestReceiver.start();
    opened.push(receiver);
    // The delivery goes out at publish: the worker's clock never moves.
    const { keyhook } = startedKeyhook({
      ...invoiceCatalog,
      delivery: { headers: { signature: 'x-acme-signature', eventId: 'x-acme-event-id' } },
    });
    opened.push(keyhook);
    const { secret } = await keyhook.webhooks.create('tenant_a', {
      url: receiver.url('/h'),
      events: ['invoice.paid'],
    });
    const published = await keyhook.events.publish({
      tenantId: 'tenant_a',
      type: 'invoice.paid',
      data: { invoiceId: 'inv_9', paidAt: '2026-11-24T10:00:00Z' },
    });
    await receiver.waitFor((requests) => requests.length === 1);
    const [request] = receiver.requests;
    expect(request!.headers['keyhook-signature']).toBeUndefined();
    expect(request!.headers['x-acme-event-id']).toBe(published.event.id);
    const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(request!.headers['x-acme-signature']))!;
    expect(v1).toBe(createHmac('sha256', secret).update(`${t}.`).update(request!.body).digest('hex'));
  });

  it('bad header names fail createKeyhook', () => {
    const make = (headers: object) => () => invoices(new MemoryStore(), { headers });
    expect(make({ signature: 'X-Acme-Signature' })).toThrow(/lowercase HTTP header name/);
    expect(make({ signature: 'content-type' })).toThrow(/of your own/);
    expect(make({ eventId: 'has space' })).toThrow(/lowercase HTTP header name/);
    expect(make({ signature: 'x-a', eventId: 'x-a' })).toThrow(/two different headers/);
  });
});

describe('OpenAPI: the host’s scopes and events', () => {
  it('lists the scopes with their descriptions and every event under webhooks, with its payload schema', () => {
    const keyhook = invoices(new MemoryStore(), { headers: { signature: 'x-acme-signature' } });
    const document = openApiDocument(
      { title: 'invoices', version: '1' },
      keyhook.operations(),
      keyhook,
      // biome-ignore lint/suspicious/noExplicitAny: asserted field by field
    ) as any;
    const scopes =
      document.paths['/api/v1/admin/keys'].post.requestBody.content['application/json'].schema.properties
        .scopes.items;
    expect(scopes.enum).toEqual(['invoices:read', 'invoices:write', 'events:read']);
    expect(scopes['x-enumDescriptions']).toEqual({
      'invoices:write': 'Create, pay and void invoices',
      'events:read': expect.stringContaining('events feed'),
    });
    expect(scopes.description).toContain('`invoices:write`: Create, pay and void invoices');
    const events =
      document.paths['/api/v1/admin/webhooks'].post.requestBody.content['application/json'].schema.properties
        .events.items;
    expect(events.enum).toEqual(['invoice.created', 'invoice.paid', 'invoice.voided']);

    expect(Object.keys(document.webhooks)).toEqual(['invoice.created', 'invoice.paid', 'invoice.voided']);
    const paid = document.webhooks['invoice.paid'].post;
    expect(paid.summary).toBe('An invoice was paid in full.');
    expect(paid.parameters.map((p: { name: string }) => p.name)).toEqual([
      'x-acme-signature',
      'keyhook-event-id',
    ]);
    const body = paid.requestBody.content['application/json'].schema;
    expect(body.properties.type).toEqual({ type: 'string', const: 'invoice.paid' });
    expect(body.properties.data).toMatchObject({
      type: 'object',
      required: ['invoiceId', 'paidAt'],
      properties: { invoiceId: { type: 'string' }, paidAt: { type: 'string', format: 'date-time' } },
    });
    expect(
      document.webhooks['invoice.voided'].post.requestBody.content['application/json'].schema.properties.data,
    ).toEqual({
      type: 'object',
    });
  });
});
