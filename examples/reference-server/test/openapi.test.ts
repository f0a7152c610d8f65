import { documentedRouteKeys, openApiProblems, registeredRouteKeys } from '@keyhook/testing/openapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REFERENCE_EVENTS } from '../src/catalog.js';
import { PORTAL_PATH } from '../src/server.js';
import { backends, startDataPlane } from './data-plane.js';

/** Issue 5: one OpenAPI 3.1 document for the whole API, every registered route in it. */
describe('the OpenAPI document (/api/v1/openapi.json) and its page (/api/v1/docs)', () => {
  let plane: Awaited<ReturnType<typeof startDataPlane>>;
  // biome-ignore lint/suspicious/noExplicitAny: the document is asserted field by field
  let document: any;

  beforeAll(async () => {
    plane = await startDataPlane(backends[0]!);
    const reply = await plane.running.client.request('GET', '/api/v1/openapi.json');
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toContain('application/json');
    document = reply.body;
  });
  afterAll(async () => {
    await plane?.close();
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    expect(document.openapi).toBe('3.1.0');
    expect(await openApiProblems(document)).toEqual([]);
    // The check itself can fail: a document with no info is not OpenAPI.
    expect(await openApiProblems({ openapi: '3.1.0', paths: {} })).not.toEqual([]);
  });

  it("describes each event's data field by field, with an example the schema takes (issue 44, item 5)", () => {
    const catalog = plane.running.server.keyhook.eventCatalog();
    expect(catalog.map((entry) => entry.type)).toEqual([
      'run.completed',
      'run.failed',
      'run.conflict',
      'generation.published',
      'apply.failed',
    ]);
    for (const entry of catalog) {
      const properties = (
        entry.schema as {
          properties: Record<string, { description?: string; anyOf?: { description?: string }[] }>;
        }
      ).properties;
      expect(Object.keys(properties).length, entry.type).toBeGreaterThanOrEqual(3);
      for (const [field, node] of Object.entries(properties)) {
        const described = node.description ?? node.anyOf?.find((option) => option.description)?.description;
        expect(described, `${entry.type}.${field}`).toMatch(/\w/);
      }
      expect(Object.keys(entry.example ?? {}).sort(), entry.type).toEqual(Object.keys(properties).sort());
      // The document's webhook of that type carries the same schema.
      expect(document.webhooks[entry.type].post.requestBody.content['application/json'].schema).toBeDefined();
    }
  });

  it("lists every route the server registers, the portal's JSON API among them, and nothing it does not", () => {
    // The portal's pages (its HTML, scripts and styles) are no API: its JSON API below /api is.
    const isPortalPage = ({ url }: { url: string }) =>
      (url === PORTAL_PATH || url.startsWith(`${PORTAL_PATH}/`)) && !url.startsWith(`${PORTAL_PATH}/api/`);
    const { routes } = plane.running.server;
    const registered = registeredRouteKeys(routes.filter((route) => !isPortalPage(route)));
    const documented = documentedRouteKeys(document);
    // 19 of keyhook's (the events feed too), 22 of the portal's (5 its own, 17 admin routes again),
    // 17 of the data plane, 3 of the server's
    expect(registered.length).toBe(61);
    expect(documented).toEqual(registered);
    expect(documented).toContain(`POST ${PORTAL_PATH}/api/exchange`);
    expect(registeredRouteKeys(routes.filter(isPortalPage))).toContain(`GET ${PORTAL_PATH}`);
  });

  it("describes the portal's routes with their schemas, under a portal session's cookie or token", () => {
    const session = document.paths[`${PORTAL_PATH}/api/session`].get;
    expect(session.security).toEqual([{ portalCookie: [] }, { portalToken: [] }]);
    const answer = session.responses['200'].content['application/json'].schema;
    expect(answer.required).toEqual(['session', 'csrfToken']);
    expect(answer.properties.session.properties.permissions.items.enum).toEqual([
      'keys:read',
      'keys:write',
      'webhooks:read',
      'webhooks:write',
    ]);
    const exchange = document.paths[`${PORTAL_PATH}/api/exchange`].post;
    expect(exchange.security).toBeUndefined();
    expect(exchange.requestBody.content['application/json'].schema.required).toEqual(['token']);
    const createKey = document.paths[`${PORTAL_PATH}/api/keys`].post;
    expect(createKey.parameters).toContainEqual(
      expect.objectContaining({ name: 'x-csrf-token', in: 'header', required: true }),
    );
    expect(document.components.securitySchemes.portalCookie).toMatchObject({
      type: 'apiKey',
      in: 'cookie',
      name: 'keyhook_portal',
    });
  });

  it('describes request bodies from the zod schemas the routes validate with, and who may call each', () => {
    const createKey = document.paths['/api/v1/admin/keys'].post;
    expect(createKey.security).toEqual([{ adminSession: [] }]);
    expect(createKey.requestBody.content['application/json'].schema).toMatchObject({
      type: 'object',
      required: ['name', 'scopes'],
      additionalProperties: false,
      properties: { scopes: { type: 'array', items: { enum: expect.arrayContaining(['runs:apply']) } } },
    });
    const upsert = document.paths['/api/v1/sources/{sourceId}/items/{key}'].put;
    expect(upsert).toMatchObject({ security: [{ apiKey: [] }], 'x-required-scope': 'items:write' });
    expect(upsert.parameters.map((p: { name: string }) => p.name)).toEqual(['sourceId', 'key']);
    expect(upsert.requestBody.content['application/json'].schema.required).toEqual(['content']);
    expect(document.paths['/api/v1/admin/webhooks'].post.parameters).toContainEqual(
      expect.objectContaining({ name: 'Idempotency-Key', in: 'header' }),
    );
    expect(document.paths['/healthz'].get.security).toBeUndefined();
  });

  it("shows Idempotency-Key on the data plane's five POSTs, as on keyhook's webhook create, and on no other of its routes", () => {
    const keyed: string[] = [];
    for (const [path, methods] of Object.entries<Record<string, typeof document>>(document.paths)) {
      if (!path.startsWith('/api/v1/sources')) continue;
      for (const [method, operation] of Object.entries(methods)) {
        const header = operation.parameters.find((p: { name: string }) => p.name === 'Idempotency-Key');
        if (!header) continue;
        keyed.push(`${method.toUpperCase()} ${path}`);
        expect(header).toMatchObject({
          in: 'header',
          required: false,
          schema: { minLength: 1, maxLength: 255 },
        });
        const success = Object.keys(operation.responses).find((status) => status.startsWith('2'))!;
        expect(operation.responses[success].headers).toHaveProperty('idempotent-replayed');
        // A malformed key (400) and a key used otherwise or still in progress (409).
        expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['400', '409']));
      }
    }
    expect(keyed.sort()).toEqual([
      'POST /api/v1/sources',
      'POST /api/v1/sources/{sourceId}/deactivate',
      'POST /api/v1/sources/{sourceId}/items/batch',
      'POST /api/v1/sources/{sourceId}/runs',
      'POST /api/v1/sources/{sourceId}/runs/{runId}/apply',
    ]);
  });

  it('lists the five events of data-plane.md §2.2 under webhooks, signed with the x-chatbot headers', () => {
    expect(Object.keys(document.webhooks)).toEqual([
      'run.completed',
      'run.failed',
      'run.conflict',
      'generation.published',
      'apply.failed',
    ]);
    const completed = document.webhooks['run.completed'].post;
    expect(completed.summary).toBe(REFERENCE_EVENTS['run.completed'].description);
    expect(completed.parameters.map((p: { name: string }) => p.name)).toEqual([
      'x-chatbot-signature',
      'x-chatbot-event-id',
    ]);
    expect(completed.requestBody.content['application/json'].schema.properties.type).toEqual({
      type: 'string',
      const: 'run.completed',
    });
  });

  it('serves a page to read, built from the same document, with nothing fetched from elsewhere', async () => {
    const response = await fetch(`${plane.running.client.baseUrl}/api/v1/docs`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/html');
    const html = await response.text();
    expect(html).toContain('/api/v1/sources/{sourceId}/runs/{runId}/apply');
    expect(html).toContain('<code>runs:apply</code>');
    expect(html).not.toMatch(/<script|https?:\/\/(?!127\.0\.0\.1)[a-z]/i);
  });
});
