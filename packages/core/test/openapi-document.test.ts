import { createKeyhook, MemoryStore } from '@keyhook/core';
import { openApiDocument } from '@keyhook/core/http';
import { TEST_ADMIN_SECRET, TEST_CATALOG, TEST_ENCRYPTION_KEY } from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

const keyhook = createKeyhook({
  ...TEST_CATALOG,
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
    expect(operations.find((o) => o.path === '/v2/events')).toMatchObject({
      auth: 'apiKey',
      scope: 'events:read',
    });
    // Every route but the two a data-plane key calls: whoami and the events feed.
    expect(operations.filter((o) => o.auth === 'admin')).toHaveLength(keyhook.routes.length - 2);
  });

  it('builds request and response bodies from the schemas the routes validate and answer with', () => {
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
    expect(createWebhook.requestBody.required).toBe(true);
    expect(createWebhook.responses['201'].content['application/json'].schema).toMatchObject({
      type: 'object',
      required: ['webhook', 'secret'],
      properties: {
        webhook: {
          required: expect.arrayContaining(['id', 'url', 'events', 'status', 'keyType', 'publicKey']),
        },
        // Null for an ed25519 endpoint, whose secret key is never shown.
        secret: { type: ['string', 'null'] },
      },
    });
    expect(Object.keys(createWebhook.responses)).toEqual([
      '201',
      '400',
      '401',
      '409',
      '413',
      '415',
      '500',
      '503',
    ]);
    expect(createWebhook.responses['201'].headers).toMatchObject({
      'x-request-id': { required: true },
      'idempotent-replayed': { $ref: '#/components/headers/IdempotentReplayed' },
    });
    expect(createWebhook.responses['409'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/Error',
    });
    expect(createWebhook.responses['401'].headers['www-authenticate']).toMatchObject({ required: true });
    expect(createWebhook.responses['503'].headers['retry-after']).toMatchObject({ required: true });
    const remove = document.paths['/api/v1/admin/webhooks/{webhookId}']!['delete'];
    expect(remove.responses['204'].content).toBeUndefined();
    expect(Object.keys(remove.responses)).toEqual(['204', '401', '404', '413', '500', '503']);
    expect(remove.parameters).toEqual([
      { name: 'webhookId', in: 'path', required: true, schema: { type: 'string' } },
    ]);
    expect(
      document.paths['/api/v1/admin/keys']!['get'].parameters.map((p: { name: string }) => p.name),
    ).toEqual(['limit', 'cursor']);
    expect(
      document.paths['/api/v1/admin/keys']!['get'].responses['200'].content['application/json'].schema,
    ).toMatchObject({ required: ['data', 'nextCursor'], properties: { data: { type: 'array' } } });
    expect((document as { servers?: unknown }).servers).toEqual([
      { url: '/', description: 'The server this document came from' },
    ]);
  });

  it("a webhook's delivery rate: deliveryRate in its view and bodies; rateLimit in the bodies, deprecated", () => {
    const document = openApiDocument({ title: 't', version: '1' }, keyhook.operations()) as {
      // biome-ignore lint/suspicious/noExplicitAny: asserted field by field
      paths: Record<string, Record<string, any>>;
    };
    const webhooks = document.paths['/api/v1/admin/webhooks']!;
    const one = document.paths['/api/v1/admin/webhooks/{webhookId}']!;
    const json = (part: { content: Record<string, { schema: unknown }> }) =>
      part.content['application/json']!.schema as { properties: Record<string, Record<string, unknown>> };
    for (const body of [json(webhooks['post'].requestBody), json(one['patch'].requestBody)]) {
      expect(body.properties['deliveryRate']!['deprecated']).toBeUndefined();
      expect(body.properties['rateLimit']).toMatchObject({
        deprecated: true,
        description: expect.stringContaining('deliveryRate'),
      });
    }
    const view = json(one['get'].responses['200']).properties['webhook'] as {
      properties: Record<string, unknown>;
      required: string[];
    };
    expect(Object.keys(view.properties)).toContain('deliveryRate');
    expect(Object.keys(view.properties)).not.toContain('rateLimit');
    expect(view.required).toContain('deliveryRate');
  });

  it('describes the test event route: its body of the catalog’s types, 202 with the event and its delivery, no Idempotency-Key', () => {
    const document = openApiDocument({ title: 't', version: '1' }, keyhook.operations()) as {
      // biome-ignore lint/suspicious/noExplicitAny: asserted field by field
      paths: Record<string, Record<string, any>>;
    };
    const test = document.paths['/api/v1/admin/webhooks/{webhookId}/test']!['post'];
    expect(test.operationId).toBe('postAdminWebhooksByWebhookIdTest');
    expect(test.tags).toEqual(['Webhooks']);
    expect(test.requestBody.required).toBe(true);
    expect(test.requestBody.content['application/json'].schema).toMatchObject({
      type: 'object',
      required: ['type'],
      additionalProperties: false,
      properties: {
        type: { enum: Object.keys(TEST_CATALOG.eventCatalog) },
        data: { type: 'object', description: expect.stringContaining("the type's example") },
      },
    });
    expect(Object.keys(test.responses)).toEqual(['202', '400', '401', '404', '413', '415', '500', '503']);
    expect(test.responses['202'].content['application/json'].schema).toMatchObject({
      required: ['event', 'delivery'],
      properties: {
        event: { required: ['id', 'type', 'createdAt'] },
        delivery: { required: expect.arrayContaining(['id', 'webhookId', 'eventId', 'status']) },
      },
    });
    expect(test.parameters.map((p: { name: string }) => p.name)).toEqual(['webhookId']);
  });

  it("describes a host's operation by what it declares: optional body, several successes, its errors", () => {
    const document = openApiDocument({ title: 't', version: '1' }, [
      {
        method: 'PUT',
        path: '/things/:id',
        summary: 'Upsert a thing',
        success: [200, 201],
        requestBody: z.object({ name: z.string() }).partial(),
        requestBodyOptional: true,
        auth: 'apiKey',
        scope: 'runs:apply',
        errors: [409],
        tag: 'Things',
      },
    ]) as {
      // biome-ignore lint/suspicious/noExplicitAny: asserted field by field
      paths: Record<string, Record<string, any>>;
    };
    const upsert = document.paths['/things/{id}']!['put'];
    expect(upsert.requestBody.required).toBe(false);
    expect(Object.keys(upsert.responses)).toEqual([
      '200',
      '201',
      '400',
      '401',
      '403',
      '404',
      '409',
      '415',
      '429',
      '500',
      '503',
    ]);
    // The guard's rate limit answers for the host's route too, with its fields.
    expect(Object.keys(upsert.responses['429'].headers)).toEqual([
      'x-request-id',
      'retry-after',
      'ratelimit-limit',
      'ratelimit-remaining',
      'ratelimit-reset',
      'ratelimit-policy',
    ]);
    // A host's success is its own response: keyhook promises no request id on it, only on the guard's refusals.
    expect(upsert.responses['200'].headers['x-request-id']).toEqual({
      $ref: '#/components/headers/RequestId',
    });
    expect(upsert.responses['403'].headers['x-request-id']).toMatchObject({ required: true });
    expect(upsert.responses['200'].content['application/json'].schema).toEqual({ type: 'object' });
  });
});
