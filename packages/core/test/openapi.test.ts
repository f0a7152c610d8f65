import { createKeyhook, MemoryStore, openApiDocument } from '@keyhook/core';
import { TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY } from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';

const keyhook = createKeyhook({
  store: new MemoryStore(),
  adminSession: { secret: TEST_ADMIN_SECRET },
  encryptionKey: TEST_ENCRYPTION_KEY,
});

describe('keyhook.operations() and openApiDocument', () => {
  it('describe every route handle serves, at the mount point asked for', () => {
    const operations = keyhook.operations('/v2');
    expect(operations.map((o) => `${o.method} ${o.path}`)).toEqual(
      keyhook.routes.map((r) => `${r.method} /v2${r.path}`),
    );
    expect(operations.find((o) => o.path === '/v2/whoami')).toMatchObject({ auth: 'apiKey', success: 200 });
    expect(operations.filter((o) => o.auth === 'admin')).toHaveLength(keyhook.routes.length - 1);
  });

  it('builds request bodies from the schemas the routes validate with, and one error envelope', () => {
    const document = openApiDocument({ title: 't', version: '1' }, keyhook.operations()) as {
      // biome-ignore lint/suspicious/noExplicitAny: asserted field by field
      paths: Record<string, Record<string, any>>;
    };
    const createWebhook = document.paths['/api/v1/admin/webhooks']!['post'];
    expect(createWebhook.operationId).toBe('postAdminWebhooks');
    expect(createWebhook.requestBody.content['application/json'].schema).toMatchObject({
      type: 'object',
      required: ['url', 'events'],
      additionalProperties: false,
    });
    expect(createWebhook.requestBody.content['application/json'].schema.$schema).toBeUndefined();
    expect(createWebhook.responses['201']).toBeDefined();
    expect(createWebhook.responses.default.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/Error',
    });
    const remove = document.paths['/api/v1/admin/webhooks/{webhookId}']!['delete'];
    expect(remove.responses['204']).toEqual({ description: 'Done; no body.' });
    expect(remove.parameters).toEqual([
      { name: 'webhookId', in: 'path', required: true, schema: { type: 'string' } },
    ]);
    expect(
      document.paths['/api/v1/admin/keys']!['get'].parameters.map((p: { name: string }) => p.name),
    ).toEqual(['limit', 'cursor']);
  });
});
