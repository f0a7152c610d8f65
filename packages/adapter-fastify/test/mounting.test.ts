import { keyhookFastify, keyhookPortalFastify, requireScope } from '@keyhook/adapter-fastify';
import { createKeyhook, type Keyhook, MemoryStore, silentLogger } from '@keyhook/core';
import { adminToken, portalCookiePath, TEST_ADMIN_SECRET, TEST_CATALOG } from '@keyhook/testing/support';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';

const newKeyhook = () =>
  createKeyhook({
    ...TEST_CATALOG,
    store: new MemoryStore(),
    adminSession: { secret: TEST_ADMIN_SECRET },
    logger: silentLogger,
  });

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function createKey(base: string, keyhook: Keyhook) {
  const reply = await fetch(`${base}/admin/keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${await adminToken()}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'k', scopes: ['items:read'] }),
  });
  expect(reply.status).toBe(201);
  expect(keyhook.maxBodyBytes).toBe(65_536);
  return (await reply.json()) as { key: { id: string }; secret: string };
}

describe('Fastify-specific mounting', () => {
  it('inside a host scope that has its own prefix, core still sees the path below the full mount point', async () => {
    const keyhook = newKeyhook();
    app = Fastify();
    await app.register(
      async (api) => {
        await api.register(keyhookFastify, { keyhook, prefix: '/v1' });
      },
      { prefix: '/outer' },
    );
    const base = `${await app.listen({ port: 0, host: '127.0.0.1' })}/outer/v1`;
    const { key } = await createKey(base, keyhook);
    const reply = await fetch(`${base}/admin/keys/${key.id}?unused=1`, {
      headers: { authorization: `Bearer ${await adminToken()}` },
    });
    expect(reply.status).toBe(200);
    expect(((await reply.json()) as { key: { id: string } }).key.id).toBe(key.id);
  });

  it('inside a host scope that has its own prefix, the OpenAPI document is served and names the routes below it', async () => {
    const keyhook = newKeyhook();
    app = Fastify();
    await app.register(
      async (api) => {
        await api.register(keyhookFastify, { keyhook, prefix: '/v1', openapi: '/openapi.json' });
      },
      { prefix: '/outer' },
    );
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    const reply = await fetch(`${base}/outer/openapi.json`);
    expect(reply.status).toBe(200);
    const paths = Object.keys(((await reply.json()) as { paths: object }).paths);
    expect(paths).toContain('/outer/v1/admin/keys');
    expect(paths.filter((path) => !path.startsWith('/outer/v1/'))).toEqual(['/outer/openapi.json']);
    await createKey(`${base}/outer/v1`, keyhook);
  });

  it('the host’s bodyLimit and JSON parser stay the host’s; keyhook keeps its own 64 KiB limit', async () => {
    const keyhook = newKeyhook();
    app = Fastify({ bodyLimit: 1024 });
    await app.register(keyhookFastify, { keyhook });
    app.post('/api/v1/host/echo', async (request) => ({ body: request.body }));
    const base = await app.listen({ port: 0, host: '127.0.0.1' });

    const big = JSON.stringify({ name: 'k', scopes: ['items:read'], pad: 'x'.repeat(4000) });
    const hostReply = await fetch(`${base}/api/v1/host/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: big,
    });
    expect(hostReply.status).toBe(413);
    expect(hostReply.headers.get('x-request-id')).toBeNull();

    // Over the host's 1 KiB but under keyhook's 64 KiB: core reads it and judges the fields.
    const keyhookReply = await fetch(`${base}/api/v1/admin/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await adminToken()}`, 'content-type': 'application/json' },
      body: big,
    });
    expect(keyhookReply.status).toBe(400);
    expect(((await keyhookReply.json()) as { error: { code: string } }).error.code).toBe('validation_failed');
  });

  it('an error from a host hook on keyhook’s routes goes to the host’s error handler, untranslated', async () => {
    const keyhook = newKeyhook();
    app = Fastify();
    app.addHook('onRequest', async (request) => {
      if (request.headers['x-block'] === 'yes') {
        throw Object.assign(new Error('slow down'), { statusCode: 429, code: 'HOST_RATE_LIMIT' });
      }
    });
    app.setErrorHandler(async (error: Error & { statusCode?: number }, _request, reply) =>
      reply.code(error.statusCode ?? 500).send({ host: error.message }),
    );
    await app.register(keyhookFastify, { keyhook });
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    const reply = await fetch(`${base}/api/v1/whoami`, { headers: { 'x-block': 'yes' } });
    expect(reply.status).toBe(429);
    expect(await reply.json()).toEqual({ host: 'slow down' });
  });

  it('two keyhook instances mount side by side at two prefixes', async () => {
    const first = newKeyhook();
    const second = newKeyhook();
    app = Fastify();
    await app.register(keyhookFastify, { keyhook: first, prefix: '/one' });
    await app.register(keyhookFastify, { keyhook: second, prefix: '/two' });
    app.get('/two/guarded', { onRequest: requireScope(second, 'items:read') }, async (request) => ({
      keyId: request.apiKey?.keyId,
    }));
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    const { key, secret } = await createKey(`${base}/two`, second);
    const inFirst = await fetch(`${base}/one/whoami`, { headers: { authorization: `Bearer ${secret}` } });
    expect(inFirst.status).toBe(401);
    const inSecond = await fetch(`${base}/two/guarded`, { headers: { authorization: `Bearer ${secret}` } });
    expect(await inSecond.json()).toEqual({ keyId: key.id });
  });

  describe('the portal', () => {
    it('is served at <prefix>/portal by default, inside a host scope with its own prefix', async () => {
      const keyhook = newKeyhook();
      app = Fastify();
      await app.register(
        async (scope) => {
          await scope.register(keyhookFastify, { keyhook, prefix: '/v1', portal: keyhook.portal.api });
        },
        { prefix: '/outer' },
      );
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      expect(await portalCookiePath(keyhook, `${base}/outer/v1/portal`)).toBe('/outer/v1/portal');
    });

    it("is served at the portal's own path when it names one", async () => {
      const keyhook = newKeyhook();
      app = Fastify();
      await app.register(keyhookFastify, { keyhook, portal: { ...keyhook.portal.api, path: '/developers' } });
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      expect(await portalCookiePath(keyhook, `${base}/developers`)).toBe('/developers');
      expect((await fetch(`${base}/api/v1/portal/api/session`)).status).toBe(404);
    });

    it('is served on its own by keyhookPortalFastify, at the prefix the host registers it with', async () => {
      const keyhook = newKeyhook();
      app = Fastify();
      await app.register(keyhookFastify, { keyhook });
      await app.register(keyhookPortalFastify, { portal: keyhook.portal.api, prefix: '/account/api-access' });
      const base = await app.listen({ port: 0, host: '127.0.0.1' });
      expect(await portalCookiePath(keyhook, `${base}/account/api-access`)).toBe('/account/api-access');
    });
  });
});
