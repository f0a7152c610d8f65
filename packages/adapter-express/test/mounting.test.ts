import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { keyhookRouter, portalRouter } from '@keyhook/adapter-express';
import { createKeyhook, MemoryStore, silentLogger } from '@keyhook/core';
import { adminToken, portalCookiePath, TEST_ADMIN_SECRET, TEST_CATALOG } from '@keyhook/testing/support';
import express, { type Express } from 'express';
import { afterEach, describe, expect, it } from 'vitest';

const newKeyhook = () =>
  createKeyhook({
    ...TEST_CATALOG,
    store: new MemoryStore(),
    adminSession: { secret: TEST_ADMIN_SECRET },
    logger: silentLogger,
  });

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

async function listen(app: Express): Promise<string> {
  server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const createBody = JSON.stringify({ name: 'k', scopes: ['items:read'] });

async function postKey(url: string) {
  return fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${await adminToken()}`, 'content-type': 'application/json' },
    body: createBody,
  });
}

describe('Express-specific mounting', () => {
  it('under a host mount path, core still sees the path below the full mount point', async () => {
    const app = express();
    app.use('/outer', keyhookRouter(newKeyhook(), { prefix: '/v1' }));
    const base = `${await listen(app)}/outer/v1`;
    const created = await postKey(`${base}/admin/keys`);
    expect(created.status).toBe(201);
    const { key } = (await created.json()) as { key: { id: string } };
    const reply = await fetch(`${base}/admin/keys/${key.id}?unused=1`, {
      headers: { authorization: `Bearer ${await adminToken()}` },
    });
    expect(reply.status).toBe(200);
    expect(((await reply.json()) as { key: { id: string } }).key.id).toBe(key.id);
  });

  it('mounted at two host mount paths, each serves an OpenAPI document of the routes under it', async () => {
    const app = express();
    const router = keyhookRouter(newKeyhook(), { prefix: '/v1', openapi: true });
    app.use('/outer', router);
    app.use('/other', router);
    const base = await listen(app);
    for (const mount of ['/outer', '/other', '/outer']) {
      const reply = await fetch(`${base}${mount}/v1/openapi.json`);
      expect(reply.status).toBe(200);
      const paths = Object.keys(((await reply.json()) as { paths: object }).paths);
      expect(paths).toContain(`${mount}/v1/admin/keys`);
      expect(paths).toContain(`${mount}/v1/openapi.json`);
      expect(paths.filter((path) => !path.startsWith(`${mount}/v1/`))).toEqual([]);
    }
    expect((await postKey(`${base}/other/v1/admin/keys`)).status).toBe(201);
  });

  it('an app-wide express.json() mounted before keyhook: core is told the body is unreadable, never handed a re-serialised one', async () => {
    const app = express();
    app.use(express.json());
    app.use(keyhookRouter(newKeyhook()));
    const reply = await postKey(`${await listen(app)}/api/v1/admin/keys`);
    expect(reply.status).toBe(400);
    expect(((await reply.json()) as { error: { code: string } }).error.code).toBe('invalid_json');
  });

  it('a host body parser mounted after keyhook leaves keyhook’s routes raw', async () => {
    const app = express();
    app.use(keyhookRouter(newKeyhook()));
    app.use(express.json());
    const reply = await postKey(`${await listen(app)}/api/v1/admin/keys`);
    expect(reply.status).toBe(201);
  });

  describe('the portal', () => {
    it('is served at <prefix>/portal by default, below the host mount path', async () => {
      const keyhook = newKeyhook();
      const app = express();
      app.use('/outer', keyhookRouter(keyhook, { prefix: '/v1', portal: keyhook.portal.api }));
      const base = await listen(app);
      expect(await portalCookiePath(keyhook, `${base}/outer/v1/portal`)).toBe('/outer/v1/portal');
    });

    it("is served at the portal's own path when it names one", async () => {
      const keyhook = newKeyhook();
      const app = express();
      app.use('/outer', keyhookRouter(keyhook, { portal: { ...keyhook.portal.api, path: '/developers' } }));
      const base = await listen(app);
      expect(await portalCookiePath(keyhook, `${base}/outer/developers`)).toBe('/outer/developers');
      expect((await fetch(`${base}/outer/api/v1/portal/api/session`)).status).toBe(404);
    });

    it('is served on its own by portalRouter, wherever the host mounts it', async () => {
      const keyhook = newKeyhook();
      const app = express();
      app.use(keyhookRouter(keyhook));
      app.use('/account/api-access', portalRouter(keyhook.portal.api));
      const base = await listen(app);
      expect(await portalCookiePath(keyhook, `${base}/account/api-access`)).toBe('/account/api-access');
    });
  });
});
