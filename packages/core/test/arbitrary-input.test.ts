import { createKeyhook, ERROR_STATUS, MemoryStore, silentLogger } from '@keyhook/core';
import type { KeyhookRequest } from '@keyhook/core/http';
import { adminToken, FakeClock, TEST_ADMIN_SECRET, TEST_CATALOG } from '@keyhook/testing/support';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

describe('the admin key endpoints under arbitrary input', () => {
  it('never answer 5xx, and always answer with the envelope and a request id', async () => {
    const clock = new FakeClock(new Date());
    const keyhook = createKeyhook({
      ...TEST_CATALOG,
      store: new MemoryStore(),
      clock,
      logger: silentLogger,
      adminSession: { secret: TEST_ADMIN_SECRET },
    });
    const tokens = {
      a: await adminToken({ tenantId: 'tenant_a', now: clock.now() }),
      b: await adminToken({ tenantId: 'tenant_b', now: clock.now() }),
      expired: await adminToken({ now: clock.now(), expiresIn: -5 }),
    };
    const created = await keyhook.keys.create('tenant_a', { name: 'seed', scopes: ['items:read'] });
    const ids = [created.key.id, 'key_00000000000000000000000000', 'nope', '%E0%A4%A', '..', 'key_💥', ''];

    const scopeish = fc.oneof(
      fc.constantFrom('sources:read', 'items:write', 'runs:apply', 'admin', ''),
      fc.string(),
    );
    const createBody = fc.record(
      {
        name: fc.oneof(fc.string({ maxLength: 250 }), fc.integer(), fc.constant(null)),
        scopes: fc.oneof(fc.array(scopeish, { maxLength: 9 }), fc.string(), fc.constant(null)),
        expiresAt: fc.oneof(
          fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
          fc.string(),
          fc.integer(),
          fc.constant(null),
        ),
        extra: fc.anything(),
      },
      { requiredKeys: [] },
    );
    const body = fc.oneof(
      createBody.map((value) => JSON.stringify(value)),
      fc.jsonValue().map((value) => JSON.stringify(value)),
      fc.string(),
      fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes).toString('latin1')),
      fc.constant(''),
    );
    const request = fc.record({
      method: fc.constantFrom('GET', 'POST', 'DELETE', 'PATCH', 'PUT', 'HEAD'),
      path: fc.oneof(
        fc.constant('/admin/keys'),
        fc.constantFrom(...ids).map((id) => `/admin/keys/${id}`),
        fc.constantFrom(...ids).map((id) => `/admin/keys/${id}/rotate`),
        fc.constant('/whoami'),
        fc.webPath(),
      ),
      query: fc.oneof(
        fc.constant(''),
        fc.constantFrom('limit=0', 'limit=101', 'limit=abc', 'limit=5', 'cursor=%%%', 'cursor=a2V5XzA'),
        fc.string(),
      ),
      token: fc.oneof(fc.constantFrom(tokens.a, tokens.b, tokens.expired, created.secret), fc.string()),
      contentType: fc.constantFrom(
        'application/json',
        'application/json; charset=utf-8',
        'application/json; charset=latin1',
        'text/plain',
        undefined,
      ),
      body,
      bodyError: fc.constantFrom(
        undefined,
        undefined,
        undefined,
        'too_large' as const,
        'unreadable' as const,
      ),
    });

    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const headers: KeyhookRequest['headers'] = { authorization: `Bearer ${r.token}` };
        if (r.contentType) headers['content-type'] = r.contentType;
        const response = await keyhook.handle({
          method: r.method,
          path: r.path,
          query: r.query,
          headers,
          rawBody: Buffer.from(r.body, 'utf8'),
          bodyError: r.bodyError,
        });
        expect(response.status).toBeLessThan(500);
        expect(response.headers['x-request-id']).toMatch(/^req_/);
        if (response.status >= 400) {
          const parsed = JSON.parse(response.body!);
          expect(Object.keys(ERROR_STATUS)).toContain(parsed.error.code);
          expect(
            ERROR_STATUS[parsed.error.code as keyof typeof ERROR_STATUS] === response.status ||
              response.status === 409,
          ).toBe(true);
        }
      }),
      { numRuns: 1500 },
    );
  });
});
