import { createKeyhook, MemoryStore } from '@keyhook/core';
import { openApiRoute } from '@keyhook/core/http';
import { TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY } from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';

const keyhook = createKeyhook({
  store: new MemoryStore(),
  adminSession: { secret: TEST_ADMIN_SECRET },
  encryptionKey: TEST_ENCRYPTION_KEY,
  scopes: ['invoices:read'],
  eventCatalog: { 'invoice.paid': { description: 'An invoice was paid.' } },
});

const paths = (body: string | null) => Object.keys((JSON.parse(body!) as { paths: object }).paths);

describe('openApiRoute: the document an adapter serves', () => {
  it('is off unless asked for', () => {
    expect(openApiRoute(keyhook, '/api/v1', undefined)).toBeUndefined();
    expect(openApiRoute(keyhook, '/api/v1', false)).toBeUndefined();
  });

  it('is served at <prefix>/openapi.json, or the path given, which must start with "/"', () => {
    expect(openApiRoute(keyhook, '/v2', true)?.path).toBe('/v2/openapi.json');
    expect(openApiRoute(keyhook, '/v2', '/spec.json')?.path).toBe('/spec.json');
    expect(openApiRoute(keyhook, '/v2', { info: { title: 't', version: '1' } })?.path).toBe(
      '/v2/openapi.json',
    );
    expect(() => openApiRoute(keyhook, '/v2', 'spec.json')).toThrow(TypeError);
  });

  it('answers JSON with its caching, keyhook’s routes below base + prefix, the host’s catalog and itself', () => {
    const route = openApiRoute(keyhook, '/v2', true)!;
    const response = route.response('/outer');
    expect(response.status).toBe(200);
    expect(response.headers).toEqual({
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'max-age=300',
      'x-request-id': expect.stringMatching(/^req_/),
    });
    // Every answer has an id of its own, as every answer of keyhook's (docs/decisions.md §1.3).
    expect(route.response('/outer').headers['x-request-id']).not.toBe(response.headers['x-request-id']);
    const document = JSON.parse(response.body!);
    expect(document.info).toEqual({ title: 'Developer API', version: '1' });
    expect(Object.keys(document.webhooks)).toEqual(['invoice.paid']);
    expect(paths(response.body)).toEqual([
      ...new Set(keyhook.operations('/outer/v2').map((o) => o.path.replace(/:(\w+)/g, '{$1}'))),
      '/outer/v2/openapi.json',
    ]);
    expect(paths(route.response().body)).toContain('/v2/admin/keys');
  });

  it('is built once per base, and remembers only a few bases', () => {
    let builds = 0;
    const counted = {
      operations: (prefix?: string) => {
        builds++;
        return keyhook.operations(prefix);
      },
      eventCatalog: () => keyhook.eventCatalog(),
      headerNames: keyhook.headerNames,
    };
    const route = openApiRoute(counted, '/v2', true)!;
    const builtFor = (base?: string) => {
      const before = builds;
      const body = route.response(base).body;
      return { built: builds - before, body };
    };
    expect(builtFor().built).toBe(1);
    expect(builtFor().built).toBe(0);
    expect(builtFor('/a').built).toBe(1);
    expect(builtFor('/a').built).toBe(0);
    for (let n = 0; n < 6; n++) builtFor(`/b${n}`);
    // Eight kept ('', '/a', six more): a ninth, say from a mount path with a parameter, is built each time.
    expect(builtFor('/ninth')).toEqual({ built: 1, body: builtFor('/ninth').body });
    expect(builtFor('/ninth').built).toBe(1);
    expect(builtFor('/b5').built).toBe(0);
  });
});
