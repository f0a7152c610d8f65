import { createKeyhook, MemoryStore, silentLogger } from '@keyhook/core';
import type { KeyhookRequest } from '@keyhook/core/http';
import { FakeClock, TEST_ADMIN_SECRET, TEST_CATALOG } from '@keyhook/testing/support';
import { exportSPKI, generateKeyPair, type JWTPayload, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { AdminSessionRejected, createAdminSessionVerifier } from '../src/admin/session.js';

const HOUR = 60 * 60;
const DAY = 24 * HOUR;
const YEAR = 365 * DAY;

const clock = new FakeClock(new Date('2030-01-01T00:00:00Z'));
const now = () => Math.floor(clock.now().getTime() / 1000);
const secret = new TextEncoder().encode(TEST_ADMIN_SECRET);

/** A real jose-signed HS256 admin token with exactly the given time claims. */
function signed(times: { iat?: number; exp: number }): Promise<string> {
  const payload: JWTPayload = { sub: 'admin_1', tenant_id: 'tenant_a', exp: times.exp };
  if (times.iat !== undefined) payload.iat = times.iat;
  return new SignJWT(payload).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(secret);
}

describe('adminSession.maxTokenLifetimeSeconds', () => {
  it('without it (the default), a token valid for 100 years is still accepted: backward compatible', async () => {
    const verify = createAdminSessionVerifier({ secret: TEST_ADMIN_SECRET }, clock);
    await expect(verify(await signed({ iat: now(), exp: now() + 100 * YEAR }))).resolves.toMatchObject({
      tenantId: 'tenant_a',
    });
  });

  describe('set to 24 h', () => {
    const verify = createAdminSessionVerifier(
      { secret: TEST_ADMIN_SECRET, maxTokenLifetimeSeconds: DAY },
      clock,
    );

    it('accepts tokens whose exp - iat is at most the maximum', async () => {
      for (const lifetime of [60, HOUR, DAY]) {
        await expect(verify(await signed({ iat: now(), exp: now() + lifetime }))).resolves.toMatchObject({
          tenantId: 'tenant_a',
          subject: 'admin_1',
        });
      }
      // Issued a while ago, still within its (short) lifetime.
      await expect(verify(await signed({ iat: now() - HOUR, exp: now() + HOUR }))).resolves.toBeTruthy();
    });

    it.each([
      ['exp 100 years ahead', () => signed({ iat: now(), exp: now() + 100 * YEAR })],
      ['a lifetime one second over the maximum', () => signed({ iat: now(), exp: now() + DAY + 1 })],
      [
        'a long lifetime issued in the past, still unexpired',
        () => signed({ iat: now() - DAY, exp: now() + 60 }),
      ],
      ['no iat', () => signed({ exp: now() + 60 })],
      // A future iat would let exp - iat look short while exp lies far ahead.
      ['an iat in the future', () => signed({ iat: now() + 100 * YEAR, exp: now() + 100 * YEAR + 60 })],
    ])('refuses %s', async (_name, make) => {
      await expect(verify(await make())).rejects.toBeInstanceOf(AdminSessionRejected);
    });
  });

  it('applies to every key source: a public key too', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
    const verify = createAdminSessionVerifier(
      { publicKey: await exportSPKI(publicKey), maxTokenLifetimeSeconds: HOUR },
      clock,
    );
    const token = (lifetime: number) =>
      new SignJWT({ sub: 'admin_1', tenant_id: 'tenant_a' })
        .setProtectedHeader({ alg: 'ES256' })
        .setIssuedAt(now())
        .setExpirationTime(now() + lifetime)
        .sign(privateKey);
    await expect(verify(await token(HOUR))).resolves.toMatchObject({ tenantId: 'tenant_a' });
    await expect(verify(await token(HOUR + 1))).rejects.toBeInstanceOf(AdminSessionRejected);
  });

  it.each([0, -1, Number.NaN, Number.POSITIVE_INFINITY])('refuses a maximum of %s at start-up', (max) => {
    expect(() =>
      createAdminSessionVerifier({ secret: TEST_ADMIN_SECRET, maxTokenLifetimeSeconds: max }, clock),
    ).toThrow(/maxTokenLifetimeSeconds/);
  });

  it('over the HTTP core: a too-long token gets the same 401 invalid_admin_session as a bad one', async () => {
    const keyhook = createKeyhook({
      ...TEST_CATALOG,
      store: new MemoryStore(),
      clock,
      logger: silentLogger,
      adminSession: { secret: TEST_ADMIN_SECRET, maxTokenLifetimeSeconds: DAY },
    });
    const list = (token: string): KeyhookRequest => ({
      method: 'GET',
      path: '/admin/keys',
      headers: { authorization: `Bearer ${token}` },
      rawBody: null,
    });
    const ok = await keyhook.handle(list(await signed({ iat: now(), exp: now() + HOUR })));
    expect(ok.status).toBe(200);
    for (const token of [
      await signed({ iat: now(), exp: now() + 100 * YEAR }),
      await signed({ exp: now() + HOUR }),
      'not-a-token',
    ]) {
      const refused = await keyhook.handle(list(token));
      expect(refused.status).toBe(401);
      expect(JSON.parse(refused.body!).error.code).toBe('invalid_admin_session');
    }
    await keyhook.close();
  });
});
