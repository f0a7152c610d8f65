import { describe, expect, it } from 'vitest';
import { requestJson } from '../support/http.js';
import { documentedRouteKeys, OpenApiContract, openApiProblems } from '../support/openapi-contract.js';
import type { HttpSuiteApp, SuiteContext } from './suite-context.js';

/** A host's own catalog: the host routes' two scopes, one more, and events of its own. */
const HOST_CATALOG = {
  scopes: ['items:read', 'items:write', { name: 'reports:export', description: 'Export reports' }],
  eventCatalog: {
    'report.ready': { description: 'A report is ready.' },
    'report.failed': { description: 'A report failed.' },
  },
};

// biome-ignore lint/suspicious/noExplicitAny: a served document, asserted field by field
type Document = any;

/** GET `url` as a client would; insists on the document's answer and returns the document. */
async function fetchDocument(url: string): Promise<Document> {
  const reply = await requestJson('GET', url);
  expect(reply.status, reply.text).toBe(200);
  expect(reply.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(reply.headers.get('cache-control')).toBe('max-age=300');
  expect(reply.headers.get('x-request-id')).toMatch(/^req_/);
  expect(await openApiProblems(reply.body)).toEqual([]);
  return reply.body;
}

/** A keyhook with the host's catalog, served with `openapi`. */
function serveHost(ctx: SuiteContext, openapi: HttpSuiteApp['openapi']): Promise<SuiteContext> {
  return ctx.serve(HOST_CATALOG, openapi);
}

/** The host's 404 for `path`: nothing of keyhook's answers it. */
async function expectHostNotFound(baseUrl: string, path: string): Promise<void> {
  const reply = await requestJson('GET', `${baseUrl}${path}`);
  expect(reply.status, path).toBe(404);
  expect(reply.headers.get('x-request-id')).toBeNull();
}

export function openApiDocumentCases(ctx: SuiteContext): void {
  describe('the OpenAPI document (docs/decisions.md §1.10)', () => {
    it('is not served unless the host asks: the host’s 404', async () => {
      await expectHostNotFound(ctx.baseUrl, `${ctx.prefix}/openapi.json`);
      const off = await serveHost(ctx, false);
      await expectHostNotFound(off.baseUrl, `${ctx.prefix}/openapi.json`);
      await expectHostNotFound(off.baseUrl, '/openapi.json');
    });

    it('`openapi: true` serves it at <prefix>/openapi.json: keyhook’s routes at the prefix, the host’s scopes and events', async () => {
      const served = await serveHost(ctx, true);
      const document = await fetchDocument(`${served.baseUrl}${ctx.prefix}/openapi.json`);
      expect(document.openapi).toBe('3.1.0');
      expect(documentedRouteKeys(document)).toEqual(
        [
          ...served.keyhook.routes.map(
            (route) => `${route.method} ${ctx.prefix}${route.path.replace(/:(\w+)/g, '{$1}')}`,
          ),
          `GET ${ctx.prefix}/openapi.json`,
        ].sort(),
      );
      const body = (method: string, path: string) =>
        document.paths[`${ctx.prefix}${path}`][method].requestBody.content['application/json'].schema;
      // The events feed's scope joins a catalog with events (docs/decisions.md §8.17).
      expect(body('post', '/admin/keys').properties.scopes.items.enum).toEqual([
        'items:read',
        'items:write',
        'reports:export',
        'events:read',
      ]);
      expect(body('post', '/admin/webhooks').properties.events.items.enum).toEqual([
        'report.ready',
        'report.failed',
      ]);
      // A test event takes any type of the host's catalog (docs/decisions.md §8.16).
      expect(body('post', '/admin/webhooks/{webhookId}/test').properties.type.enum).toEqual([
        'report.ready',
        'report.failed',
      ]);
      expect(
        document.paths[`${ctx.prefix}/admin/webhooks/{webhookId}/test`].post.responses['202'],
      ).toBeDefined();
      expect(Object.keys(document.webhooks)).toEqual(['report.ready', 'report.failed']);
      expect(document.webhooks['report.ready'].post.summary).toBe('A report is ready.');
    });

    it('every route it names is answered there by keyhook, as it describes', async () => {
      const served = await serveHost(ctx, true);
      const document = await fetchDocument(`${served.baseUrl}${ctx.prefix}/openapi.json`);
      // Each reply below is held to the served document, not the suite's.
      const contract = await OpenApiContract.of(document);
      const operations = Object.entries(document.paths as Record<string, Record<string, { security?: [] }>>)
        .flatMap(([path, methods]) =>
          Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
        )
        .filter(({ operation }) => operation.security !== undefined);
      expect(operations).toHaveLength(served.keyhook.routes.length);
      for (const { path, method } of operations) {
        const url = `${served.baseUrl}${path.replace(/\{\w+\}/g, 'x')}`;
        // Without credentials: keyhook's 401, whatever the route, before any body or id is read.
        const reply = await requestJson(method.toUpperCase(), url, { contract });
        expect(reply.status, `${method} ${path}`).toBe(401);
        expect(reply.headers.get('x-request-id')).toMatch(/^req_/);
      }
    });

    it('a path of the host’s choice serves it there, and only there; its routes stay at the prefix', async () => {
      const served = await serveHost(ctx, '/openapi.json');
      const document = await fetchDocument(`${served.baseUrl}/openapi.json`);
      await expectHostNotFound(served.baseUrl, `${ctx.prefix}/openapi.json`);
      expect(Object.keys(document.paths)).toContain('/openapi.json');
      expect(Object.keys(document.paths)).toContain(`${ctx.prefix}/admin/keys`);
      expect(
        Object.keys(document.paths).filter(
          (path) => path !== '/openapi.json' && !path.startsWith(ctx.prefix),
        ),
      ).toEqual([]);
    });

    it('holds the host’s own routes, title and servers when given them', async () => {
      const served = await serveHost(ctx, {
        path: `${ctx.prefix}/spec.json`,
        info: { title: 'Reports API', version: '2026-01' },
        servers: [{ url: 'https://api.example.com' }],
        operations: [
          {
            method: 'GET',
            path: `${ctx.prefix}/host/items`,
            summary: 'The host’s items',
            success: 200,
            auth: 'apiKey',
            scope: 'items:read',
            tag: 'Items',
          },
        ],
      });
      const document = await fetchDocument(`${served.baseUrl}${ctx.prefix}/spec.json`);
      expect(document.info).toEqual({ title: 'Reports API', version: '2026-01' });
      expect(document.servers).toEqual([{ url: 'https://api.example.com' }]);
      expect(document.paths[`${ctx.prefix}/host/items`].get['x-required-scope']).toBe('items:read');
      expect(document.paths[`${ctx.prefix}/spec.json`].get.summary).toBe('This document (OpenAPI 3.1)');
      await expectHostNotFound(served.baseUrl, `${ctx.prefix}/openapi.json`);
    });
  });
}
