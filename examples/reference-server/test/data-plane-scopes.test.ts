import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATA_PLANE_ROUTES, SCOPES, scopeFor } from '../src/data-plane/index.js';
import { type Backend, backends, DataPlaneClient, startDataPlane } from './data-plane.js';

/**
 * data-plane.md §2.1 and §3 for the whole data plane: every route (the same table the server registers)
 * refuses a key that holds every scope but its own with 403 insufficient_scope naming that
 * scope, and lets through a key that holds only its own.
 */
describe.each(backends)('data-plane scopes on $name (data-plane.md §2.1, §3)', (backend: Backend) => {
  let plane: Awaited<ReturnType<typeof startDataPlane>>;
  const paths = { sourceId: '', runId: '', key: 'a' };

  beforeAll(async () => {
    if (!backend.available) return;
    plane = await startDataPlane(backend);
    // A source with an active generation, and a completed run on it for the apply route.
    const { api } = plane;
    paths.sourceId = await api.createSource();
    await api.put(paths.sourceId, 'a', 'Alpha.');
    await api.runAndApply(paths.sourceId);
    await api.put(paths.sourceId, 'b', 'Bravo.');
    paths.runId = (await api.startRun(paths.sourceId)).id;
    await api.settled(paths.sourceId, paths.runId);
  });
  afterAll(async () => {
    await plane?.close();
  });

  const pathOf = (template: string, own: Partial<typeof paths> = {}) =>
    template.replace(/:(\w+)/g, (_, name: keyof typeof paths) => own[name] ?? paths[name]);
  const bodyOf = (operation: string) =>
    ({
      'sources.create': { name: 'scoped' },
      'sources.update': { name: 'renamed' },
      'items.upsert': { content: 'Alpha.' },
      'items.batch': { upsert: [{ key: 'a', content: 'Alpha.' }] },
      'items.snapshot': { items: [{ key: 'a', content: 'Alpha.' }] },
    })[operation];

  it.skipIf(!backend.available)(
    'guards each route with the scope data-plane.md §3 gives its operation, all seven in use',
    () => {
      const guarded = Object.fromEntries(
        DATA_PLANE_ROUTES.map((route) => [`${route.method} ${route.path}`, scopeFor(route.operation)]),
      );
      expect(guarded).toEqual({
        'GET /sources': 'sources:read',
        'GET /sources/:sourceId': 'sources:read',
        'POST /sources': 'sources:write',
        'PATCH /sources/:sourceId': 'sources:write',
        'POST /sources/:sourceId/deactivate': 'sources:write',
        'GET /sources/:sourceId/items': 'items:read',
        'PUT /sources/:sourceId/items/:key': 'items:write',
        'POST /sources/:sourceId/items/batch': 'items:write',
        'PUT /sources/:sourceId/items': 'items:write',
        'DELETE /sources/:sourceId/items/:key': 'items:write',
        'GET /sources/:sourceId/runs': 'runs:read',
        'GET /sources/:sourceId/runs/:runId': 'runs:read',
        'GET /sources/:sourceId/runs/:runId/diff': 'runs:read',
        'GET /sources/:sourceId/generations': 'runs:read',
        'GET /sources/:sourceId/generations/active': 'runs:read',
        'POST /sources/:sourceId/runs': 'runs:execute',
        'POST /sources/:sourceId/runs/:runId/apply': 'runs:apply',
      });
      expect(new Set(Object.values(guarded))).toEqual(new Set(SCOPES));
    },
  );

  for (const route of DATA_PLANE_ROUTES) {
    const scope = scopeFor(route.operation);
    it.skipIf(!backend.available)(`${route.method} ${route.path} needs ${scope}`, async () => {
      const { client, admin } = { client: plane.running.client, admin: plane.admin };
      const without = await client.createKey(admin, { scopes: SCOPES.filter((s) => s !== scope) });
      const only = await client.createKey(admin, { scopes: [scope] });
      // Deactivation would lock the shared source for the routes after it: it gets a source of its own.
      const own =
        route.operation === 'sources.deactivate' ? { sourceId: await plane.api.createSource('mine') } : {};
      const path = pathOf(route.path, own);
      const refused = await new DataPlaneClient(client, without.secret).call(
        route.method,
        path,
        bodyOf(route.operation),
      );
      expect(refused.status).toBe(403);
      expect(refused.body.error).toMatchObject({ code: 'insufficient_scope', details: [{ scope }] });
      expect(refused.headers.get('www-authenticate')).toContain(`scope="${scope}"`);
      const accepted = await new DataPlaneClient(client, only.secret).call(
        route.method,
        path,
        bodyOf(route.operation),
      );
      expect(accepted.status, JSON.stringify(accepted.body)).toBe(route.status);
    });
  }
});
