// keyhookPortal() over a real keyhook: the pages beside keyhook.portal.api.
import { createKeyhook, MemoryStore, silentLogger } from '@keyhook/core';
import type { KeyhookRequest } from '@keyhook/core/http';
import { TEST_ADMIN_SECRET, TEST_CATALOG, TEST_ENCRYPTION_KEY } from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';
import { keyhookPortal } from '../src/index.js';
import { PAGE_ROUTES } from '../src/portal-pages.js';

function realKeyhook() {
  return createKeyhook({
    ...TEST_CATALOG,
    store: new MemoryStore(),
    adminSession: { secret: TEST_ADMIN_SECRET },
    encryptionKey: TEST_ENCRYPTION_KEY,
    logger: silentLogger,
  });
}

// As a browser sends them from the portal's own page: the API refuses a change from elsewhere.
const SAME_ORIGIN = { host: 'app.example', origin: 'http://app.example', 'sec-fetch-site': 'same-origin' };

const request = (method: string, path: string, body?: unknown): KeyhookRequest => ({
  method,
  path,
  headers: body === undefined ? { ...SAME_ORIGIN } : { ...SAME_ORIGIN, 'content-type': 'application/json' },
  rawBody: body === undefined ? null : new TextEncoder().encode(JSON.stringify(body)),
  basePath: '/api/v1/portal',
});

describe('keyhookPortal over a real keyhook', () => {
  it("lists the page routes and every route of keyhook.portal.api, and takes the API's body limit", () => {
    const keyhook = realKeyhook();
    const portal = keyhookPortal(keyhook, { path: '/portal/' });
    expect(portal.path).toBe('/portal');
    expect(portal.routes).toEqual([...PAGE_ROUTES, ...keyhook.portal.api.routes]);
    expect(keyhook.portal.api.routes.every((route) => route.path.startsWith('/api/'))).toBe(true);
    expect(portal.maxBodyBytes).toBe(keyhook.portal.api.maxBodyBytes);
  });

  it('hands every path under /api/ to keyhook.portal.api: a link is exchanged once, then refused', async () => {
    const keyhook = realKeyhook();
    const portal = keyhookPortal(keyhook);
    const link = await keyhook.portal.createSession({ tenantId: 'tenant_a', permissions: ['keys:read'] });

    const first = await portal.handle(
      request('POST', '/api/exchange', { token: link.token, embedded: true }),
    );
    expect(first.status).toBe(200);
    const answer = JSON.parse(first.body!) as {
      csrfToken: string;
      sessionToken?: string;
      session: { id: string };
    };
    expect(answer.session.id).toBe(link.id);
    expect(typeof answer.csrfToken).toBe('string');
    expect(typeof answer.sessionToken).toBe('string');

    const again = await portal.handle(request('POST', '/api/exchange', { token: link.token }));
    expect(again.status).toBe(401);
    expect(JSON.parse(again.body!).error.code).toBe('invalid_portal_link');
  });

  it('answers GET /api/session without a session as the API does (401), and still serves the page', async () => {
    const portal = keyhookPortal(realKeyhook());
    const session = await portal.handle(request('GET', '/api/session'));
    expect(session.status).toBe(401);
    expect(JSON.parse(session.body!).error.code).toBe('invalid_portal_session');
    const page = await portal.handle(request('GET', '/'));
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
  });

  it('refuses a bad accent colour or logo URL when it is called, before any request', () => {
    const keyhook = realKeyhook();
    expect(() => keyhookPortal(keyhook, { brand: { name: 'Acme', accentColor: 'tomato' } })).toThrow(
      /^keyhookPortal: brand\.accentColor must be a hex colour/,
    );
    expect(() => keyhookPortal(keyhook, { brand: { name: 'Acme', logoUrl: 'javascript:alert(1)' } })).toThrow(
      /^keyhookPortal: brand\.logoUrl must be/,
    );
  });

  it('refuses a keyhook whose store keeps no portal sessions, before any request', () => {
    // A store of a third party's that leaves the portal's capability out (docs/decisions.md §20.5).
    const whole = new MemoryStore();
    const store = Object.create(whole, {
      insertPortalSession: { value: undefined },
      exchangePortalLink: { value: undefined },
      findPortalSession: { value: undefined },
      revokePortalSessions: { value: undefined },
    }) as MemoryStore;
    const keyhook = createKeyhook({
      ...TEST_CATALOG,
      store,
      adminSession: { secret: TEST_ADMIN_SECRET },
      encryptionKey: TEST_ENCRYPTION_KEY,
      logger: silentLogger,
    });
    expect(() => keyhookPortal(keyhook)).toThrow(/^keyhookPortal: keyhook's store keeps no portal sessions/);
  });
});
