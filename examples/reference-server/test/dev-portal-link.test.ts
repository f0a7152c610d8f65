import { createKeyhook, MemoryStore, PORTAL_PERMISSIONS } from '@keyhook/core';
import { FakeClock, TEST_ADMIN_SECRET } from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';
import { REFERENCE_SCOPES } from '../src/catalog.js';
import {
  DEV_PORTAL_LINK_MAX_SECONDS,
  DEV_TOKEN_TTL_SECONDS,
  devTokenBanner,
  mintDevPortalLink,
} from '../src/dev-token.js';
import { PORTAL_PATH } from '../src/server.js';

const HOUR = 60 * 60;
const BASE_URL = 'http://127.0.0.1:3000';

/** A keyhook whose portal mints links on a clock the test holds, at the server's portal path. */
function portalOnFakeClock() {
  const clock = new FakeClock('2026-03-01T12:00:00.000Z');
  const keyhook = createKeyhook({
    store: new MemoryStore(),
    clock,
    adminSession: { secret: TEST_ADMIN_SECRET },
    scopes: REFERENCE_SCOPES,
    portal: { url: PORTAL_PATH },
  });
  return { clock, portal: keyhook.portal };
}

describe('the development portal link', () => {
  it('lives an hour beside the 12 h token: tenant demo, every permission, any scope', async () => {
    const { clock, portal } = portalOnFakeClock();
    const link = await mintDevPortalLink(portal, DEV_TOKEN_TTL_SECONDS);
    expect(link).toBeDefined();
    expect(link!.ttlSeconds).toBe(DEV_PORTAL_LINK_MAX_SECONDS);
    expect(link!.expiresAt.getTime() - clock.now().getTime()).toBe(HOUR * 1000);
    expect(link!.url).toMatch(/^\/api\/v1\/portal#token=kpl_[\w-]{43}$/);

    // What the link opens, through the portal's own exchange, as the page posts it.
    const token = new URLSearchParams(link!.url.split('#')[1]).get('token');
    const opened = await portal.api.handle({
      method: 'POST',
      path: '/api/exchange',
      headers: { host: 'h', origin: 'http://h', 'content-type': 'application/json' },
      rawBody: Buffer.from(JSON.stringify({ token })),
      basePath: PORTAL_PATH,
    });
    expect(opened.status, opened.body ?? '').toBe(200);
    const { session } = JSON.parse(opened.body!);
    expect(session).toMatchObject({
      tenantId: 'demo',
      permissions: [...PORTAL_PERMISSIONS].sort(),
      expiresAt: link!.expiresAt.toISOString(),
    });
    expect(session.scopes.map((scope: { name: string }) => scope.name)).toEqual(
      REFERENCE_SCOPES.map((scope) => scope.name),
    );
  });

  it('lives as long as a shorter token (KEYHOOK_ADMIN_JWT_MAX_LIFETIME=30m), and the banner says so', async () => {
    const { clock, portal } = portalOnFakeClock();
    const link = await mintDevPortalLink(portal, 1800);
    expect(link!.ttlSeconds).toBe(1800);
    expect(link!.expiresAt.getTime() - clock.now().getTime()).toBe(1800 * 1000);
    const banner = devTokenBanner('eyJ.token', BASE_URL, 1800, link).split('\n');
    expect(banner.slice(-3)).toEqual([
      'Or in a browser: the customer portal (tenant "demo", every permission, valid 30 min; the link works once):',
      `  ${BASE_URL}${link!.url}`,
      '',
    ]);
  });

  it('is not minted for a token shorter than the shortest link core allows, and the banner has none', async () => {
    const { portal } = portalOnFakeClock();
    expect(await mintDevPortalLink(portal, 30)).toBeUndefined();
    const banner = devTokenBanner('eyJ.token', BASE_URL, 30, undefined);
    expect(banner).toContain('valid 30 s');
    expect(banner).not.toMatch(/portal|#token=/);
  });
});
