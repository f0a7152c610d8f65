import { documentedRouteKeys, openApiProblems, registeredRouteKeys } from '@keyhook/testing/openapi';
import { postgresAvailable } from '@keyhook/testing/postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropSchemas, type RunningApp, startInvoicesApp, testOptions, uniqueSchemas } from './harness.js';

const available = await postgresAvailable();

/** One OpenAPI 3.1 document: keyhook's admin routes, the app's invoice routes, and its events. */
describe.skipIf(!available)('GET /api/v1/openapi.json', () => {
  const schemas = uniqueSchemas('invoices_openapi');
  let running: RunningApp;
  // biome-ignore lint/suspicious/noExplicitAny: the document is asserted field by field
  let document: any;

  beforeAll(async () => {
    running = await startInvoicesApp(testOptions(schemas));
    const reply = await running.call('GET', '/api/v1/openapi.json');
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toContain('application/json');
    document = reply.body;
  });
  afterAll(async () => {
    await running?.instance.close();
    await dropSchemas(schemas);
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    expect(document.openapi).toBe('3.1.0');
    expect(await openApiProblems(document)).toEqual([]);
  });

  it('lists every route the app registers, and nothing it does not', () => {
    const registered = registeredRouteKeys(running.instance.routes);
    const documented = documentedRouteKeys(document);
    expect(documented).toEqual(registered);
    expect(documented).toEqual(
      expect.arrayContaining([
        'POST /api/v1/invoices',
        'GET /api/v1/invoices',
        'GET /api/v1/invoices/{invoiceId}',
        'POST /api/v1/invoices/{invoiceId}/pay',
        'POST /api/v1/admin/keys',
        'GET /api/v1/openapi.json',
      ]),
    );
  });

  it("a key's scopes are the app's two and the events feed's, with their descriptions", () => {
    const body = document.paths['/api/v1/admin/keys'].post.requestBody.content['application/json'].schema;
    // events:read joins a catalog with events (docs/decisions.md §8.17).
    expect(body.properties.scopes.items.enum).toEqual(['invoices:read', 'invoices:write', 'events:read']);
    expect(body.properties.scopes.items['x-enumDescriptions']).toEqual({
      'invoices:read': 'List and read invoices',
      'invoices:write': 'Create and pay invoices',
      'events:read': expect.stringContaining('events feed'),
    });
  });

  it("the app's own routes carry their zod request bodies and the scope each needs", () => {
    const create = document.paths['/api/v1/invoices'].post;
    expect(create).toMatchObject({ security: [{ apiKey: [] }], 'x-required-scope': 'invoices:write' });
    expect(create.requestBody.content['application/json'].schema).toMatchObject({
      type: 'object',
      required: ['customer', 'amountCents'],
      additionalProperties: false,
      properties: {
        amountCents: { type: 'integer', minimum: 1 },
        customer: { type: 'string', minLength: 1 },
      },
    });
    expect(document.paths['/api/v1/invoices/{invoiceId}/pay'].post['x-required-scope']).toBe(
      'invoices:write',
    );
    expect(document.paths['/api/v1/invoices/{invoiceId}'].get['x-required-scope']).toBe('invoices:read');
    expect(document.paths['/api/v1/invoices'].get['x-required-scope']).toBe('invoices:read');
    expect(document.paths['/api/v1/invoices'].get.parameters.map((p: { name: string }) => p.name)).toEqual([
      'limit',
      'cursor',
    ]);
    expect(document.paths['/api/v1/openapi.json'].get.security).toBeUndefined();
  });

  it('webhooks are exactly invoice.created and invoice.paid, their data schemas, and the custom headers', () => {
    expect(Object.keys(document.webhooks)).toEqual(['invoice.created', 'invoice.paid']);
    const dataOf = (type: string) =>
      document.webhooks[type].post.requestBody.content['application/json'].schema.properties.data;
    expect(dataOf('invoice.created')).toMatchObject({
      type: 'object',
      required: ['invoiceId', 'customer', 'amountCents'],
      properties: { amountCents: { type: 'integer' } },
    });
    expect(dataOf('invoice.paid')).toMatchObject({
      type: 'object',
      required: ['invoiceId', 'customer', 'amountCents', 'paidAt'],
      properties: { paidAt: { type: 'string', format: 'date-time' } },
    });
    for (const type of ['invoice.created', 'invoice.paid']) {
      const post = document.webhooks[type].post;
      expect(post.parameters.map((p: { name: string }) => p.name)).toEqual([
        'x-invoices-signature',
        'x-invoices-event-id',
      ]);
      expect(post.requestBody.content['application/json'].schema.properties.type).toEqual({
        type: 'string',
        const: type,
      });
    }
    expect(document.webhooks['invoice.paid'].post.summary).toBe('An invoice was paid in full.');
  });
});
