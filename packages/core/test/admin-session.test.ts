import { createHmac, generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { adminToken, FakeClock, TEST_ADMIN_SECRET } from '@keyhook/testing/support';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminSessionRejected, createAdminSessionVerifier } from '../src/admin/session.js';

const clock = new FakeClock(new Date());
const b64 = (value: object | string) =>
  Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
const now = () => Math.floor(clock.now().getTime() / 1000);
const claims = () => ({ sub: 'admin_1', tenant_id: 'tenant_a', exp: now() + 600 });

function hs256(header: object, payload: object, secret: string | Buffer): string {
  const signingInput = `${b64(header)}.${b64(payload)}`;
  return `${signingInput}.${createHmac('sha256', secret).update(signingInput).digest('base64url')}`;
}

describe('admin sessions (docs/decisions.md §2)', () => {
  const verify = createAdminSessionVerifier({ secret: TEST_ADMIN_SECRET }, clock);

  it('accepts a valid HS256 token and yields tenant and subject', async () => {
    const session = await verify(await adminToken({ now: clock.now() }));
    expect(session).toMatchObject({ tenantId: 'tenant_a', subject: 'admin_1' });
  });

  it.each([
    ['alg none', () => `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims())}.`],
    [
      'wrong secret',
      () => adminToken({ now: clock.now(), secret: 'another-secret-that-is-long-enough-000' }),
    ],
    ['expired', () => adminToken({ now: clock.now(), expiresIn: -1 })],
    ['missing tenant claim', () => adminToken({ now: clock.now(), tenantId: null })],
    ['empty tenant claim', () => adminToken({ now: clock.now(), tenantId: '' })],
    ['numeric tenant claim', () => hs256({ alg: 'HS256' }, { ...claims(), tenant_id: 7 }, TEST_ADMIN_SECRET)],
    ['missing exp', () => hs256({ alg: 'HS256' }, { sub: 'a', tenant_id: 't' }, TEST_ADMIN_SECRET)],
    ['missing sub', () => hs256({ alg: 'HS256' }, { tenant_id: 't', exp: now() + 60 }, TEST_ADMIN_SECRET)],
    ['HS512 not on the allow-list', () => hs256({ alg: 'HS512' }, claims(), TEST_ADMIN_SECRET)],
    ['an API key', () => `sk_live_${'a'.repeat(16)}_${'b'.repeat(48)}`],
    ['garbage', () => 'a.b.c'],
  ])('rejects %s', async (_name, make) => {
    await expect(verify(await make())).rejects.toBeInstanceOf(AdminSessionRejected);
  });

  it('checks iss and aud when configured', async () => {
    const strict = createAdminSessionVerifier(
      { secret: TEST_ADMIN_SECRET, issuer: 'https://portal.example', audience: 'keyhook' },
      clock,
    );
    const good = await adminToken({
      now: clock.now(),
      issuer: 'https://portal.example',
      audience: 'keyhook',
    });
    await expect(strict(good)).resolves.toMatchObject({ tenantId: 'tenant_a' });
    for (const token of [
      await adminToken({ now: clock.now(), issuer: 'https://evil.example', audience: 'keyhook' }),
      await adminToken({ now: clock.now(), issuer: 'https://portal.example', audience: 'other' }),
      await adminToken({ now: clock.now() }),
    ]) {
      await expect(strict(token)).rejects.toBeInstanceOf(AdminSessionRejected);
    }
  });

  it('reads the tenant from a configured claim', async () => {
    const custom = createAdminSessionVerifier({ secret: TEST_ADMIN_SECRET, tenantClaim: 'org' }, clock);
    const token = await adminToken({ now: clock.now(), tenantId: null, extraClaims: { org: 'org_9' } });
    await expect(custom(token)).resolves.toMatchObject({ tenantId: 'org_9' });
    await expect(custom(await adminToken({ now: clock.now() }))).rejects.toBeInstanceOf(AdminSessionRejected);
  });

  it('uses the injected clock for exp', async () => {
    const token = await adminToken({ now: clock.now(), expiresIn: 60 });
    await expect(verify(token)).resolves.toBeTruthy();
    clock.advance(61_000);
    await expect(verify(token)).rejects.toBeInstanceOf(AdminSessionRejected);
  });

  describe('PEM public key', () => {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    const verifyRsa = createAdminSessionVerifier({ publicKey: pem }, clock);

    it('accepts RS256 signed by the private key', async () => {
      const token = await new SignJWT(claims()).setProtectedHeader({ alg: 'RS256' }).sign(privateKey);
      await expect(verifyRsa(token)).resolves.toMatchObject({ tenantId: 'tenant_a' });
    });

    it('rejects HS/RS confusion: an HS256 token keyed with the public key PEM', async () => {
      const forged = hs256({ alg: 'HS256', typ: 'JWT' }, claims(), pem);
      await expect(verifyRsa(forged)).rejects.toBeInstanceOf(AdminSessionRejected);
    });

    it('refuses a configuration that would allow HMAC or none with a public key', () => {
      expect(() => createAdminSessionVerifier({ publicKey: pem, algorithms: ['HS256'] }, clock)).toThrow(
        TypeError,
      );
      expect(() => createAdminSessionVerifier({ publicKey: pem, algorithms: ['none'] }, clock)).toThrow(
        TypeError,
      );
      expect(() => createAdminSessionVerifier({ publicKey: 'not a pem' }, clock)).toThrow();
    });
  });

  it('refuses ambiguous or weak configuration', () => {
    expect(() => createAdminSessionVerifier({}, clock)).toThrow(TypeError);
    expect(() => createAdminSessionVerifier({ secret: 'short' }, clock)).toThrow(TypeError);
    expect(() =>
      createAdminSessionVerifier({ secret: TEST_ADMIN_SECRET, jwksUrl: 'https://x.example/jwks' }, clock),
    ).toThrow(TypeError);
    expect(() =>
      createAdminSessionVerifier({ secret: TEST_ADMIN_SECRET, algorithms: ['none'] }, clock),
    ).toThrow(TypeError);
  });

  describe('JWKS URL (a real server on 127.0.0.1)', () => {
    let server: Server;
    let url: string;
    let fetches = 0;
    const keys: { kid: string; privateKey: Parameters<SignJWT['sign']>[0]; jwk: object }[] = [];
    let published = 1;

    beforeAll(async () => {
      for (const kid of ['k1', 'k2']) {
        const pair = await generateKeyPair('ES256', { extractable: true });
        keys.push({
          kid,
          privateKey: pair.privateKey,
          jwk: { ...(await exportJWK(pair.publicKey)), kid, alg: 'ES256' },
        });
      }
      server = createServer((_req, res) => {
        fetches++;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ keys: keys.slice(0, published).map((k) => k.jwk) }));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
    });

    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    const sign = (index: number) =>
      new SignJWT(claims())
        .setProtectedHeader({ alg: 'ES256', kid: keys[index]!.kid })
        .sign(keys[index]!.privateKey);

    it('verifies with the published key, caches, and refetches once for an unknown kid', async () => {
      published = 1;
      fetches = 0;
      const verifyJwks = createAdminSessionVerifier({ jwksUrl: url, jwksCooldownSeconds: 0 }, clock);
      await expect(verifyJwks(await sign(0))).resolves.toMatchObject({ tenantId: 'tenant_a' });
      await expect(verifyJwks(await sign(0))).resolves.toBeTruthy();
      expect(fetches).toBe(1);
      published = 2; // the portal rotates its signing key
      await expect(verifyJwks(await sign(1))).resolves.toBeTruthy();
      expect(fetches).toBe(2);
      await expect(verifyJwks(await sign(1))).resolves.toBeTruthy();
      expect(fetches).toBe(2);
    });

    it('fetches at most once per cooldown however many unknown kids arrive', async () => {
      published = 1;
      fetches = 0;
      const verifyJwks = createAdminSessionVerifier({ jwksUrl: url }, clock);
      await expect(verifyJwks(await sign(0))).resolves.toBeTruthy();
      for (let i = 0; i < 5; i++) {
        const forged = await new SignJWT(claims())
          .setProtectedHeader({ alg: 'ES256', kid: `random-${i}` })
          .sign(keys[0]!.privateKey);
        await expect(verifyJwks(forged)).rejects.toBeInstanceOf(AdminSessionRejected);
      }
      expect(fetches).toBe(1);
    });
  });
});
