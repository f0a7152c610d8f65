import { FakeClock, recordingLogger, TEST_ADMIN_SECRET, TEST_CATALOG } from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';
import {
  type CreatePortalSessionInput,
  createKeyhook,
  isKeyhookError,
  MemoryStore,
  silentLogger,
} from '../src/index.js';

function keyhookWith(store = new MemoryStore(), clock = new FakeClock()) {
  return createKeyhook({
    ...TEST_CATALOG,
    store,
    clock,
    adminSession: { secret: TEST_ADMIN_SECRET },
    portal: { url: 'https://app.example.com/developers' },
  });
}

const valid: CreatePortalSessionInput<'items:read'> = { tenantId: 'tenant_a', permissions: ['keys:read'] };

describe('portal.createSession', () => {
  it('mints a link at the configured URL, with the default hour and a sorted record', async () => {
    const store = new MemoryStore();
    const clock = new FakeClock('2026-03-01T00:00:00.000Z');
    const keyhook = keyhookWith(store, clock);
    const link = await keyhook.portal.createSession({
      tenantId: 'tenant_a',
      permissions: ['webhooks:write', 'keys:read'],
      scopes: ['items:write', 'items:read', 'items:read'],
    });
    expect(link.url).toBe(`https://app.example.com/developers#token=${link.token}`);
    expect(link.id).toMatch(/^ps_[0-9a-z]{26}$/);
    expect(link.expiresAt.toISOString()).toBe('2026-03-01T01:00:00.000Z');
    const exchanged = await store.exchangePortalLink(
      (await import('node:crypto')).hash('sha256', link.token, 'hex'),
      'f'.repeat(64),
      clock.now(),
    );
    expect(exchanged).toMatchObject({
      outcome: 'exchanged',
      session: { permissions: ['keys:read', 'webhooks:write'], scopes: ['items:read', 'items:write'] },
    });
  });

  const refused: [string, Partial<CreatePortalSessionInput> & Record<string, unknown>, string][] = [
    ['no tenant', { tenantId: '' }, 'tenantId'],
    ['no permission', { permissions: [] }, 'permissions'],
    ['an unknown permission', { permissions: ['keys:admin' as never] }, 'permissions.0'],
    ['a repeated permission', { permissions: ['keys:read', 'keys:read'] }, 'permissions'],
    ['a life under a minute', { expiresIn: 59 }, 'expiresIn'],
    ['a life over a day', { expiresIn: 86_401 }, 'expiresIn'],
    ['a fractional life', { expiresIn: 90.5 }, 'expiresIn'],
    ['a scope the host does not declare', { scopes: ['items:delete'] }, 'scopes.0'],
    ['an unknown option', { admin: true }, ''],
  ];
  for (const [name, change, path] of refused) {
    it(`refuses ${name} with validation_failed naming ${path || 'the option'}`, async () => {
      const keyhook = keyhookWith();
      const error = await keyhook.portal
        .createSession({ ...valid, ...change } as CreatePortalSessionInput<'items:read'>)
        .catch((e: unknown) => e);
      expect(isKeyhookError(error) && error.code).toBe('validation_failed');
      if (path) expect(isKeyhookError(error) && error.details?.map((d) => d.path)).toContain(path);
    });
  }

  it('deletes sessions a day past their expiry when it mints, and keeps the rest', async () => {
    const store = new MemoryStore();
    const clock = new FakeClock('2026-03-01T00:00:00.000Z');
    const keyhook = keyhookWith(store, clock);
    const old = await keyhook.portal.createSession({ ...valid, expiresIn: 60 });
    const recent = await keyhook.portal.createSession({ ...valid, expiresIn: 86_400 });
    clock.advance(24 * 3_600_000 + 61_000);
    await keyhook.portal.createSession(valid);
    const origin = { origin: 'https://app.example.com', host: 'app.example.com' };
    const exchange = (token: string) =>
      keyhook.portal.api.handle({
        method: 'POST',
        path: '/api/exchange',
        headers: { ...origin, 'content-type': 'application/json' },
        rawBody: Buffer.from(JSON.stringify({ token })),
      });
    const gone = JSON.parse((await exchange(old.token)).body!);
    expect(gone.error.details[0].reason).toBe('unknown');
    const expired = JSON.parse((await exchange(recent.token)).body!);
    expect(expired.error.details[0].reason).toBe('expired');
  });
});

describe('the portal API', () => {
  it("is a route table of its own: keyhook's routes, which adapters always mount, hold none of it", () => {
    const keyhook = keyhookWith();
    const mounted = new Set(keyhook.routes.map((route) => `${route.method} ${route.path}`));
    expect(keyhook.portal.api.routes.length).toBeGreaterThan(20);
    for (const route of keyhook.portal.api.routes) {
      expect(route.path.startsWith('/api/')).toBe(true);
      expect(mounted.has(`${route.method} ${route.path}`)).toBe(false);
    }
  });

  it('names a permission for every admin route it serves: one without refuses to start', async () => {
    const { portalApi } = await import('../src/portal/portal-api.js');
    const keyhook = keyhookWith();
    const unnamed = {
      method: 'GET' as const,
      path: '/admin/tenants',
      auth: 'admin' as const,
      body: 'none' as const,
      doc: { summary: 'a route added later', success: 200 },
      run: async () => ({ status: 200, headers: {}, body: null }),
    };
    expect(() =>
      portalApi({
        sessions: undefined as never,
        store: new MemoryStore(),
        clock: new FakeClock(),
        scopes: undefined as never,
        adminRoutes: [unnamed],
        events: () => [],
        headers: keyhook.headerNames,
        developmentUrls: false,
        secureCookie: true,
        cookiePath: '/api/v1/portal',
        origins: undefined,
        rateCeiling: () => null,
        logger: silentLogger,
      }),
    ).toThrow('the portal names no permission for GET /admin/tenants');
  });

  it('warns once when it is mounted at another path than its links point to', async () => {
    const logger = recordingLogger();
    const keyhook = createKeyhook({
      ...TEST_CATALOG,
      store: new MemoryStore(),
      adminSession: { secret: TEST_ADMIN_SECRET },
      logger,
    });
    for (let i = 0; i < 2; i++) {
      const { token } = await keyhook.portal.createSession({
        tenantId: 'tenant_a',
        permissions: ['keys:read'],
      });
      const reply = await keyhook.portal.api.handle({
        method: 'POST',
        path: '/api/exchange',
        basePath: '/developers',
        headers: {
          origin: 'https://app.example.com',
          host: 'app.example.com',
          'content-type': 'application/json',
        },
        rawBody: Buffer.from(JSON.stringify({ token })),
      });
      expect(reply.status).toBe(200);
    }
    const warnings = logger.lines.filter((line) => line.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.context).toEqual({ mountedAt: '/developers', linksTo: '/api/v1/portal' });
  });
});
