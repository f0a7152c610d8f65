import { describe, expect, it } from 'vitest';
import { type ApiReply, admin, call, createKey, randomHex } from './client.js';
import type { SuiteContext } from './suite-context.js';

/** The guarded paths every auth case runs on: a host route and keyhook's own /whoami. */
const GUARDED = [
  ['host route', 'GET', '/host/items'],
  ['/whoami', 'GET', '/whoami'],
] as const;

function expectAuthFailure(reply: ApiReply, code: string): void {
  expect(reply.status, reply.text).toBe(401);
  expect(reply.body.error.code).toBe(code);
  expect(typeof reply.body.error.message).toBe('string');
  const challenge = reply.headers.get('www-authenticate') ?? '';
  expect(challenge).toMatch(/^Bearer\b/);
  // RFC 6750 §3.1: no error code when no credentials were sent at all.
  if (code === 'missing_credentials') expect(challenge).not.toContain('error=');
  else expect(challenge).toContain('error="invalid_token"');
}

export function dataPlaneAuthCases(ctx: SuiteContext): void {
  describe.each(GUARDED)(
    'data-plane auth on the %s (docs/http-api.md §5, docs/decisions.md §1.8)',
    (_label, method, path) => {
      it('no Authorization header → 401 missing_credentials', async () => {
        expectAuthFailure(await call(ctx, method, path), 'missing_credentials');
        expectAuthFailure(
          await call(ctx, method, path, { headers: { authorization: 'Basic dXNlcjpwYXNz' } }),
          'missing_credentials',
        );
      });

      it('malformed, unknown id, wrong secret, rotated-out secret → the same 401 invalid_api_key', async () => {
        const { key, secret } = await createKey(ctx, { scopes: ['items:read'] });
        const rotated = await call(ctx, 'POST', `/admin/keys/${key.id}/rotate`, { token: await admin(ctx) });
        expect(rotated.status).toBe(200);
        const presented = {
          malformed: 'sk_live_not-a-key',
          truncated: secret.slice(0, -1),
          unknownId: `sk_live_${randomHex(16)}_${randomHex(48)}`,
          wrongSecret: `${key.keyLookup}_${randomHex(48)}`,
          rotatedOut: secret,
        };
        const replies: ApiReply[] = [];
        for (const token of Object.values(presented)) {
          const reply = await call(ctx, method, path, { token });
          expectAuthFailure(reply, 'invalid_api_key');
          replies.push(reply);
        }
        // docs/http-api.md §5.3: nothing tells which part was wrong — byte-identical error and
        // challenge.
        const errors = new Set(replies.map((r) => JSON.stringify(r.body.error)));
        expect(errors.size).toBe(1);
        expect(new Set(replies.map((r) => r.headers.get('www-authenticate'))).size).toBe(1);
      });

      it('a key past its expiresAt → 401 key_expired', async () => {
        const { secret } = await createKey(ctx, { expiresAt: '2026-01-01T01:00:00.000Z' });
        expect((await call(ctx, method, path, { token: secret })).status).toBe(200);
        ctx.clock.advance(3_600_000);
        expectAuthFailure(await call(ctx, method, path, { token: secret }), 'key_expired');
      });

      it('a revoked key → 401 key_revoked on every later request (docs/http-api.md §5.5)', async () => {
        const { key, secret } = await createKey(ctx);
        expect((await call(ctx, method, path, { token: secret })).status).toBe(200);
        const revoked = await call(ctx, 'DELETE', `/admin/keys/${key.id}`, { token: await admin(ctx) });
        expect(revoked.status).toBe(200);
        for (let i = 0; i < 3; i++) {
          expectAuthFailure(await call(ctx, method, path, { token: secret }), 'key_revoked');
          ctx.clock.advance(120_000);
        }
      });

      it('an admin JWT sent as an API key → 401 invalid_api_key', async () => {
        expectAuthFailure(await call(ctx, method, path, { token: await admin(ctx) }), 'invalid_api_key');
      });
    },
  );

  describe('scopes on host routes (docs/http-api.md §5.4)', () => {
    it('a key without the route’s scope → 403 insufficient_scope naming it in details and WWW-Authenticate', async () => {
      const { secret } = await createKey(ctx, { scopes: ['items:read'] });
      const reply = await call(ctx, 'POST', '/host/items', { token: secret, json: { title: 'x' } });
      expect(reply.status).toBe(403);
      expect(reply.body.error.code).toBe('insufficient_scope');
      expect(reply.body.error.details).toContainEqual(expect.objectContaining({ scope: 'items:write' }));
      const challenge = reply.headers.get('www-authenticate') ?? '';
      expect(challenge).toMatch(/^Bearer\b/);
      expect(challenge).toContain('error="insufficient_scope"');
      expect(challenge).toContain('scope="items:write"');
    });

    it('a valid key with the scope → 200, and the host sees tenantId, keyId and scopes', async () => {
      const { key, secret } = await createKey(ctx, {
        scopes: ['items:read', 'items:write'],
        expiresAt: '2026-06-01T00:00:00.000Z',
      });
      for (const [method, json] of [
        ['GET', undefined],
        ['POST', { title: 'x' }],
      ] as const) {
        const reply = await call(ctx, method, '/host/items', { token: secret, json });
        expect(reply.status, reply.text).toBe(200);
        expect(reply.body.apiKey).toEqual({
          tenantId: 'tenant_a',
          keyId: key.id,
          keyLookup: key.keyLookup,
          scopes: ['items:read', 'items:write'],
          expiresAt: '2026-06-01T00:00:00.000Z',
        });
      }
    });

    it('another tenant’s key passes the guard with its own tenantId', async () => {
      const { secret } = await createKey(ctx, { scopes: ['items:read'] }, 'tenant_b');
      const reply = await call(ctx, 'GET', '/host/items', { token: secret });
      expect(reply.status).toBe(200);
      expect(reply.body.apiKey.tenantId).toBe('tenant_b');
    });
  });
}

export function whoamiCases(ctx: SuiteContext): void {
  describe('GET /whoami (docs/http-api.md §4.5)', () => {
    it('any valid key, whatever its scopes → 200 { key: { id, keyLookup, scopes, expiresAt } }', async () => {
      const plain = await createKey(ctx, { scopes: ['runs:apply'] });
      const expiring = await createKey(ctx, {
        scopes: ['sources:read', 'runs:read'],
        expiresAt: '2026-02-01T00:00:00.000Z',
      });
      const first = await call(ctx, 'GET', '/whoami', { token: plain.secret });
      expect(first.status).toBe(200);
      expect(first.body).toEqual({
        key: { id: plain.key.id, keyLookup: plain.key.keyLookup, scopes: ['runs:apply'], expiresAt: null },
      });
      const second = await call(ctx, 'GET', '/whoami', { token: expiring.secret });
      expect(second.status).toBe(200);
      expect(second.body).toEqual({
        key: {
          id: expiring.key.id,
          keyLookup: expiring.key.keyLookup,
          scopes: ['sources:read', 'runs:read'],
          expiresAt: '2026-02-01T00:00:00.000Z',
        },
      });
      expect(first.text).not.toContain(plain.secret);
    });
  });
}
