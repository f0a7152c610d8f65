import { createKeyhook, type EventCatalog, type Keyhook, MemoryStore, silentLogger } from '@keyhook/core';
import { newId, openApiDocument } from '@keyhook/core/http';

import { FakeClock, TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY } from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';

const events = { 'invoice.paid': {}, 'invoice.voided': {} } satisfies EventCatalog;
const DAY = 24 * 60 * 60 * 1000;

function make(options: Partial<Parameters<typeof createKeyhook>[0]> = {}) {
  const clock = new FakeClock('2026-05-01T00:00:00.000Z');
  const store = new MemoryStore();
  const keyhook = createKeyhook({
    store,
    adminSession: { secret: TEST_ADMIN_SECRET },
    encryptionKey: TEST_ENCRYPTION_KEY,
    logger: silentLogger,
    clock,
    eventCatalog: events,
    delivery: { retentionMs: 7 * DAY },
    ...options,
  } as Parameters<typeof createKeyhook>[0]);
  return { keyhook, clock, store };
}

async function feed(keyhook: Keyhook, secret: string, query = '') {
  const response = await keyhook.handle({
    method: 'GET',
    path: '/events',
    query,
    headers: { authorization: `Bearer ${secret}` },
    rawBody: null,
  });
  return { status: response.status, body: JSON.parse(response.body ?? 'null') };
}

async function keyWith(keyhook: Keyhook, scopes: string[], tenantId = 'tenant_a') {
  return (await keyhook.keys.create(tenantId, { name: 'reader', scopes })).secret;
}

describe('the events feed option (docs/decisions.md §8.17)', () => {
  it('by default serves GET /events under events:read, added to the catalog with a description', async () => {
    const { keyhook } = make({ scopes: ['invoices:read'] });
    expect(keyhook.scopes).toEqual(['invoices:read', 'events:read']);
    expect(keyhook.routes).toContainEqual({ method: 'GET', path: '/events' });
    const reader = await keyWith(keyhook, ['events:read']);
    expect((await feed(keyhook, reader)).status).toBe(200);
    const other = await keyWith(keyhook, ['invoices:read']);
    const refused = await feed(keyhook, other);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({
      code: 'insufficient_scope',
      details: [{ scope: 'events:read' }],
    });
  });

  it('keeps a host’s own declaration of events:read, with its description', () => {
    const { keyhook } = make({ scopes: [{ name: 'events:read', description: 'Ours' }, 'invoices:read'] });
    expect(keyhook.scopes).toEqual(['events:read', 'invoices:read']);
    const described = keyhook.operations().find((operation) => operation.path === '/api/v1/events');
    expect(described).toMatchObject({ auth: 'apiKey', scope: 'events:read', tag: 'Events' });
  });

  it('takes one of the host’s scopes instead, and adds none', async () => {
    const { keyhook } = make({ scopes: ['invoices:read'], eventsFeed: { scope: 'invoices:read' } });
    expect(keyhook.scopes).toEqual(['invoices:read']);
    expect((await feed(keyhook, await keyWith(keyhook, ['invoices:read']))).status).toBe(200);
    expect(() => make({ scopes: ['invoices:read'], eventsFeed: { scope: 'events:all' } })).toThrow(
      /eventsFeed.scope: unknown scope "events:all"/,
    );
  });

  it('false: no route, no scope', async () => {
    const { keyhook } = make({ scopes: ['invoices:read'], eventsFeed: false });
    expect(keyhook.scopes).toEqual(['invoices:read']);
    expect(keyhook.routes.some((route) => route.path === '/events')).toBe(false);
    const answer = await feed(keyhook, await keyWith(keyhook, ['invoices:read']));
    expect(answer.status).toBe(404);
  });

  it('a catalog without events has no feed and no scope; a scope named for it then fails at setup', () => {
    const { keyhook } = make({ eventCatalog: {} });
    expect(keyhook.scopes).toEqual([]);
    expect(keyhook.routes.some((route) => route.path === '/events')).toBe(false);
    expect(() => make({ eventCatalog: {}, scopes: ['a'], eventsFeed: { scope: 'a' } })).toThrow(
      /needs at least one event type/,
    );
    expect(() => make({ eventsFeed: 'yes' as never })).toThrow(/eventsFeed must be/);
  });
});

describe('GET /events (docs/http-api.md §4.8)', () => {
  it('answers the tenant’s events oldest first with data and deliveries; pages with after and hasMore', async () => {
    const { keyhook, clock } = make();
    const { webhook } = await keyhook.webhooks.create('tenant_a', {
      url: 'http://127.0.0.1:9/hook',
      events: ['invoice.paid'],
    });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      const type = i % 2 === 0 ? 'invoice.paid' : 'invoice.voided';
      ids.push((await keyhook.events.publish({ tenantId: 'tenant_a', type, data: { n: i } })).event.id);
    }
    await keyhook.events.publish({ tenantId: 'tenant_b', type: 'invoice.paid', data: {} });
    const reader = await keyWith(keyhook, ['events:read']);

    const first = await feed(keyhook, reader, 'limit=2');
    expect(first.status).toBe(200);
    expect(first.body.hasMore).toBe(true);
    expect(first.body.data.map((event: { id: string }) => event.id)).toEqual(ids.slice(0, 2));
    expect(first.body.data[0]).toEqual({
      id: ids[0],
      type: 'invoice.paid',
      createdAt: '2026-05-01T00:00:01.000Z',
      data: { n: 0 },
      deliveries: [
        { webhookId: webhook.id, status: 'pending', delivered: false, attempts: 0, lastAttemptAt: null },
      ],
    });
    expect(first.body.data[1].deliveries).toEqual([]);

    const rest = await feed(keyhook, reader, `after=${ids[1]}&limit=3`);
    expect(rest.body).toMatchObject({ hasMore: false });
    expect(rest.body.data.map((event: { id: string }) => event.id)).toEqual(ids.slice(2));

    const paid = await feed(keyhook, reader, 'type=invoice.paid');
    expect(paid.body.data.map((event: { id: string }) => event.id)).toEqual([ids[0], ids[2], ids[4]]);
  });

  it('leaves test events out', async () => {
    const { keyhook } = make();
    const { webhook } = await keyhook.webhooks.create('tenant_a', {
      url: 'http://127.0.0.1:9/hook',
      events: ['invoice.paid'],
    });
    const sent = await keyhook.webhooks.sendTestEvent('tenant_a', webhook.id, { type: 'invoice.paid' });
    const published = await keyhook.events.publish({ tenantId: 'tenant_a', type: 'invoice.paid', data: {} });
    const reader = await keyWith(keyhook, ['events:read']);
    const page = await feed(keyhook, reader);
    expect(page.body.data.map((event: { id: string }) => event.id)).toEqual([published.event.id]);
    expect((await feed(keyhook, reader, `after=${sent.event.id}`)).status).toBe(404);
  });

  it('400 for a malformed after, an unknown type or a bad limit', async () => {
    const { keyhook } = make();
    const reader = await keyWith(keyhook, ['events:read']);
    for (const query of [
      'after=evt_',
      'after=not-an-id',
      'type=invoice.sent',
      'limit=0',
      'limit=101',
      'limit=x',
    ]) {
      const answer = await feed(keyhook, reader, query);
      expect({ query, status: answer.status, code: answer.body.error.code }).toEqual({
        query,
        status: 400,
        code: 'validation_failed',
      });
    }
  });

  it('404 for a well-formed after within the window that is no event of this tenant', async () => {
    const { keyhook } = make();
    const theirs = await keyhook.events.publish({ tenantId: 'tenant_b', type: 'invoice.paid', data: {} });
    const reader = await keyWith(keyhook, ['events:read']);
    for (const after of [newId('evt'), theirs.event.id]) {
      const answer = await feed(keyhook, reader, `after=${after}`);
      expect(answer.status).toBe(404);
      expect(answer.body.error.code).toBe('not_found');
    }
  });

  it('410 feed_expired for an id the host chose that the feed does not hold: it may have been purged', async () => {
    const { keyhook, clock, store } = make();
    const reader = await keyWith(keyhook, ['events:read']);
    await keyhook.events.publish({ tenantId: 'tenant_a', type: 'invoice.paid', data: {}, id: 'evt_run_42' });
    expect((await feed(keyhook, reader, 'after=evt_run_42')).status).toBe(200);
    // Retention purges it (it has no deliveries to wait for) once the window has passed.
    clock.advance(8 * DAY);
    await store.purgeFinishedDeliveries(new Date(clock.now().getTime() - 7 * DAY), 100);
    for (const after of ['evt_run_42', 'evt_run_41']) {
      const answer = await feed(keyhook, reader, `after=${after}`);
      expect({ after, status: answer.status, code: answer.body.error.code }).toEqual({
        after,
        status: 410,
        code: 'feed_expired',
      });
    }
  });

  it('410 feed_expired for an after older than the window, by its id when it is gone, by its record when it is not', async () => {
    const { keyhook, clock } = make();
    const reader = await keyWith(keyhook, ['events:read']);
    const old = await keyhook.events.publish({ tenantId: 'tenant_a', type: 'invoice.paid', data: {} });
    const kept = await keyhook.events.publish({
      tenantId: 'tenant_a',
      type: 'invoice.paid',
      data: {},
      id: 'evt_callers_own_id',
    });
    clock.advance(7 * DAY - 1);
    expect((await feed(keyhook, reader, `after=${old.event.id}`)).status).toBe(200);
    clock.advance(2);
    // Still stored (nothing purges here), but older than the window: events after it may be gone.
    for (const after of [old.event.id, kept.event.id, newId('evt', { now: () => new Date(0) })]) {
      const answer = await feed(keyhook, reader, `after=${after}`);
      expect(answer.status).toBe(410);
      expect(answer.body.error.code).toBe('feed_expired');
      expect(answer.body.error.message).toContain('Start again without after');
    }
    // Started again: the window shows nothing older than itself.
    expect((await feed(keyhook, reader)).body).toEqual({ data: [], hasMore: false });
  });
});

describe('the OpenAPI document (docs/decisions.md §1.10)', () => {
  it('describes GET /events: its key and scope, its query, its page, and 400, 403, 404, 410', () => {
    const { keyhook } = make({ scopes: ['invoices:read'] });
    // biome-ignore lint/suspicious/noExplicitAny: asserted field by field
    const document = openApiDocument({ title: 't', version: '1' }, keyhook.operations()) as any;
    const operation = document.paths['/api/v1/events'].get;
    expect(operation.security).toEqual([{ apiKey: [] }]);
    expect(operation['x-required-scope']).toBe('events:read');
    expect(operation.tags).toEqual(['Events']);
    expect(operation.parameters.map((p: { name: string }) => p.name)).toEqual([
      'after',
      'since',
      'type',
      'limit',
    ]);
    const page = operation.responses['200'].content['application/json'].schema;
    expect(page.required).toEqual(['data', 'hasMore']);
    expect(page.properties.data.items.properties.deliveries.items.required).toEqual([
      'webhookId',
      'status',
      'delivered',
      'attempts',
      'lastAttemptAt',
    ]);
    expect(Object.keys(operation.responses)).toEqual(
      expect.arrayContaining(['200', '400', '401', '403', '404', '410', '429', '503']),
    );
    expect(operation.responses['410'].description).toContain('feed_expired');
  });
});
