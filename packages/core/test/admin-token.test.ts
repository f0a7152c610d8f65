import { createAdminToken, createKeyhook, MemoryStore, silentLogger } from '@keyhook/core';
import { FakeClock, TEST_ADMIN_SECRET, TEST_CATALOG } from '@keyhook/testing/support';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { describe, expect, it } from 'vitest';
import { createAdminSessionVerifier } from '../src/admin/session.js';

const clock = new FakeClock('2026-11-24T12:00:00.000Z');

describe('createAdminToken (a development admin JWT)', () => {
  it('mints an HS256 token the admin-session verifier accepts, for the tenant asked', async () => {
    const token = await createAdminToken({ secret: TEST_ADMIN_SECRET, tenantId: 'acme', now: clock.now() });
    expect(decodeProtectedHeader(token)).toEqual({ alg: 'HS256', typ: 'JWT' });
    expect(decodeJwt(token)).toMatchObject({ tenant_id: 'acme', sub: 'dev-admin', exp: 1795521600 + 3600 });
    const verify = createAdminSessionVerifier({ secret: TEST_ADMIN_SECRET }, clock);
    await expect(verify(token)).resolves.toMatchObject({ tenantId: 'acme', subject: 'dev-admin' });
  });

  it('carries issuer, audience and a custom tenant claim, so a verifier configured with them accepts it', async () => {
    const options = { secret: TEST_ADMIN_SECRET, issuer: 'https://portal.example', audience: 'keyhook' };
    const token = await createAdminToken({
      ...options,
      tenantId: 'acme',
      tenantClaim: 'org',
      subject: 'alice',
      now: clock.now(),
    });
    const verify = createAdminSessionVerifier({ ...options, tenantClaim: 'org' }, clock);
    await expect(verify(token)).resolves.toMatchObject({ tenantId: 'acme', subject: 'alice' });
  });

  it('is refused once expired, and by a verifier with another secret', async () => {
    const token = await createAdminToken({
      secret: TEST_ADMIN_SECRET,
      tenantId: 'acme',
      expiresInSeconds: 60,
      now: clock.now(),
    });
    const later = new FakeClock(new Date(clock.now().getTime() + 61_000));
    await expect(createAdminSessionVerifier({ secret: TEST_ADMIN_SECRET }, later)(token)).rejects.toThrow();
    const other = createAdminSessionVerifier({ secret: 'another-secret-of-at-least-32-bytes!!' }, clock);
    await expect(other(token)).rejects.toThrow();
  });

  it('opens the admin endpoints of a keyhook', async () => {
    const keyhook = createKeyhook({
      ...TEST_CATALOG,
      store: new MemoryStore(),
      adminSession: { secret: TEST_ADMIN_SECRET },
      logger: silentLogger,
    });
    const token = await createAdminToken({ secret: TEST_ADMIN_SECRET, tenantId: 'acme' });
    const response = await keyhook.handle({
      method: 'GET',
      path: '/admin/keys',
      headers: { authorization: `Bearer ${token}` },
      rawBody: null,
    });
    expect(response.status).toBe(200);
  });

  it('refuses a short secret, an empty tenant and a lifetime over a day', async () => {
    await expect(createAdminToken({ secret: 'short', tenantId: 'acme' })).rejects.toThrow(
      /at least 32 bytes/,
    );
    await expect(createAdminToken({ secret: TEST_ADMIN_SECRET, tenantId: '' })).rejects.toThrow(/tenantId/);
    await expect(
      createAdminToken({ secret: TEST_ADMIN_SECRET, tenantId: 'acme', expiresInSeconds: 86_401 }),
    ).rejects.toThrow(/expiresInSeconds/);
  });
});
