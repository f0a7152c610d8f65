import { TEST_ADMIN_SECRET } from '@keyhook/store-conformance/support';
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { adminToken } from '../support/credentials.js';
import { type ApiReply, admin, call, createKey, UNKNOWN_KEY_ID } from './client.js';
import type { SuiteContext } from './suite-context.js';

const base64url = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
const secretBytes = (secret: string) => new TextEncoder().encode(secret);

/** Each bad admin session, built at the suite clock's time. */
const BAD_SESSIONS: [string, (ctx: SuiteContext) => Promise<string | undefined>][] = [
  ['no Authorization header', async () => undefined],
  [
    'alg none (unsigned)',
    async (ctx) => {
      const now = Math.floor(ctx.clock.now().getTime() / 1000);
      const claims = { sub: 'admin_1', tenant_id: 'tenant_a', iat: now, exp: now + 3600 };
      return `${base64url({ alg: 'none', typ: 'JWT' })}.${base64url(claims)}.`;
    },
  ],
  [
    'HS256 signed with another secret',
    (ctx) => adminToken({ now: ctx.clock.now(), secret: 'some-other-secret-0123456789abcdef!!' }),
  ],
  ['expired', (ctx) => adminToken({ now: ctx.clock.now(), expiresIn: -1 })],
  ['no tenant claim', (ctx) => adminToken({ now: ctx.clock.now(), tenantId: null })],
  [
    'no sub claim',
    (ctx) => {
      const now = Math.floor(ctx.clock.now().getTime() / 1000);
      return new SignJWT({ tenant_id: 'tenant_a' })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuedAt(now)
        .setExpirationTime(now + 3600)
        .sign(secretBytes(TEST_ADMIN_SECRET));
    },
  ],
  [
    'no exp claim',
    (ctx) => {
      const now = Math.floor(ctx.clock.now().getTime() / 1000);
      return new SignJWT({ tenant_id: 'tenant_a' })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject('admin_1')
        .setIssuedAt(now)
        .sign(secretBytes(TEST_ADMIN_SECRET));
    },
  ],
  ['not a JWT at all', async () => 'not.a.jwt'],
  ['an API key', async (ctx) => (await createKey(ctx, { scopes: ['items:read'] })).secret],
];

function expectInvalidSession(reply: ApiReply): void {
  expect(reply.status, reply.text).toBe(401);
  expect(reply.body.error.code).toBe('invalid_admin_session');
  expect(reply.headers.get('www-authenticate') ?? '').toContain('error="invalid_token"');
  expect(reply.headers.get('cache-control')).toBe('no-store');
}

export function adminSessionCases(ctx: SuiteContext): void {
  describe('admin sessions (docs/decisions.md §2) → 401 invalid_admin_session', () => {
    it.each(BAD_SESSIONS)('%s', async (_label, build) => {
      const token = await build(ctx);
      const list = await call(ctx, 'GET', '/admin/keys', token === undefined ? {} : { token });
      expectInvalidSession(list);
      const create = await call(ctx, 'POST', '/admin/keys', {
        ...(token !== undefined && { token }),
        json: { name: 'should not exist', scopes: ['items:read'] },
      });
      expectInvalidSession(create);
      // The client is told nothing about why (docs/decisions.md §2.4).
      expect(create.body.error).toEqual(list.body.error);
      const all = await call(ctx, 'GET', '/admin/keys', { token: await admin(ctx) });
      expect(all.body.data.map((k: { name: string }) => k.name)).not.toContain('should not exist');
    });

    it('the session check comes before the body: a bad session with a bad body is still 401', async () => {
      const reply = await call(ctx, 'POST', '/admin/keys', {
        body: new TextEncoder().encode('{"name":'),
        headers: { 'content-type': 'application/json' },
      });
      expectInvalidSession(reply);
    });
  });
}

export function tenantIsolationCases(ctx: SuiteContext): void {
  describe('tenant isolation (docs/decisions.md §2.5) → 404 not_found, never revealing which', () => {
    it('tenant_b cannot read, rotate or revoke tenant_a’s key, and cannot tell it exists', async () => {
      const { key, secret } = await createKey(ctx, {}, 'tenant_a');
      const other = await admin(ctx, 'tenant_b');
      for (const [method, suffix] of [
        ['GET', ''],
        ['POST', '/rotate'],
        ['DELETE', ''],
      ] as const) {
        const theirs = await call(ctx, method, `/admin/keys/${key.id}${suffix}`, { token: other });
        const madeUp = await call(ctx, method, `/admin/keys/${UNKNOWN_KEY_ID}${suffix}`, { token: other });
        expect(theirs.status).toBe(404);
        expect(theirs.body.error.code).toBe('not_found');
        expect(theirs.text).toBe(madeUp.text);
        expect(madeUp.status).toBe(404);
      }
      const list = await call(ctx, 'GET', '/admin/keys', { token: other });
      expect(list.status).toBe(200);
      expect(list.body).toEqual({ data: [], nextCursor: null });

      // tenant_a's key is untouched: same secret, still active.
      expect((await call(ctx, 'GET', '/whoami', { token: secret })).status).toBe(200);
      const own = await call(ctx, 'GET', `/admin/keys/${key.id}`, { token: await admin(ctx, 'tenant_a') });
      expect(own.body.key.status).toBe('active');
    });

    it('an id that is not even well-formed → the same 404', async () => {
      const token = await admin(ctx);
      const wellFormed = await call(ctx, 'GET', `/admin/keys/${UNKNOWN_KEY_ID}`, { token });
      const odd = await call(ctx, 'GET', '/admin/keys/..%2F..%2Fsecrets', { token });
      expect(odd.status).toBe(404);
      expect(odd.text).toBe(wellFormed.text);
    });
  });
}
