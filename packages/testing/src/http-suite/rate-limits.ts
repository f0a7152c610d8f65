import { describe, expect, it } from 'vitest';
import { type ApiReply, admin, call, createKey, randomHex } from './client.js';
import type { SuiteContext } from './suite-context.js';

/** The suite clock starts on a minute boundary: 60-second windows end 60 s after it. */
const WINDOW = 60;

function expectLimited(reply: ApiReply, limit: number, reset: number): void {
  expect(reply.status, reply.text).toBe(429);
  expect(reply.body.error.code).toBe('rate_limited');
  expect(reply.headers.get('x-request-id')).toMatch(/^req_/);
  expect(reply.headers.get('retry-after')).toBe(String(reset));
  expect(reply.headers.get('ratelimit-limit')).toBe(String(limit));
  expect(reply.headers.get('ratelimit-remaining')).toBe('0');
  expect(reply.headers.get('ratelimit-reset')).toBe(String(reset));
  expect(reply.headers.get('ratelimit-policy')).toBe(`${limit};w=${WINDOW}`);
}

function expectFields(reply: ApiReply, limit: number, remaining: number, reset: number): void {
  expect(reply.status, reply.text).toBe(200);
  expect(reply.headers.get('ratelimit-limit')).toBe(String(limit));
  expect(reply.headers.get('ratelimit-remaining')).toBe(String(remaining));
  expect(reply.headers.get('ratelimit-reset')).toBe(String(reset));
}

/**
 * Rate limits through the adapter: a key's own limit, the app's default, a limit changed by
 * PATCH, and failed verifications per client address (all clients here are 127.0.0.1).
 */
export function rateLimitCases(ctx: SuiteContext): void {
  describe('rate limits', () => {
    it("a key's own limit: 429 with Retry-After and the RateLimit fields past it; successes carry no field by default", async () => {
      const { secret } = await createKeyWithLimit(ctx, { limit: 2, window: WINDOW });
      ctx.clock.advance(15_000);
      for (const path of ['/host/items', '/whoami']) {
        const reply = await call(ctx, 'GET', path, { token: secret });
        expect(reply.status).toBe(200);
        expect([...reply.headers.keys()].filter((name) => name.startsWith('ratelimit'))).toEqual([]);
      }
      expectLimited(await call(ctx, 'GET', '/host/items', { token: secret }), 2, 45);
      expectLimited(await call(ctx, 'GET', '/whoami', { token: secret }), 2, 45);
      ctx.clock.advance(45_000);
      expect((await call(ctx, 'GET', '/host/items', { token: secret })).status).toBe(200);
    });

    it('with successHeaders, the RateLimit fields on each success too, on a host route and /whoami alike', async () => {
      const served = await ctx.serve({ rateLimit: { successHeaders: true } });
      const { secret } = await createKeyWithLimit(served, { limit: 3, window: WINDOW });
      served.clock.advance(15_000);
      expectFields(await call(served, 'GET', '/host/items', { token: secret }), 3, 2, 45);
      expectFields(await call(served, 'GET', '/whoami', { token: secret }), 3, 1, 45);
      expectFields(await call(served, 'GET', '/host/items', { token: secret }), 3, 0, 45);
      expectLimited(await call(served, 'GET', '/host/items', { token: secret }), 3, 45);
      expectLimited(await call(served, 'GET', '/whoami', { token: secret }), 3, 45);
      // A refused request is not counted: the next window starts full.
      served.clock.advance(45_000);
      expectFields(await call(served, 'GET', '/host/items', { token: secret }), 3, 2, 60);
    });

    it("another key's requests never spend this key's limit", async () => {
      const { secret: busy } = await createKeyWithLimit(ctx, { limit: 1, window: WINDOW });
      const { secret: quiet } = await createKeyWithLimit(ctx, { limit: 1, window: WINDOW });
      expect((await call(ctx, 'GET', '/host/items', { token: busy })).status).toBe(200);
      expect((await call(ctx, 'GET', '/host/items', { token: busy })).status).toBe(429);
      expect((await call(ctx, 'GET', '/host/items', { token: quiet })).status).toBe(200);
    });

    it('PATCH /admin/keys/{id} sets, changes and clears the limit; it applies from the next request', async () => {
      const served = await ctx.serve({ rateLimit: { successHeaders: true } });
      const { key, secret } = await createKey(served);
      const token = await admin(served);
      const unlimited = await call(served, 'GET', '/host/items', { token: secret });
      expect(unlimited.status).toBe(200);
      expect(unlimited.headers.get('ratelimit-limit')).toBeNull();

      const set = await call(served, 'PATCH', `/admin/keys/${key.id}`, {
        token,
        json: { rateLimit: { limit: 1, window: WINDOW } },
      });
      expect(set.status, set.text).toBe(200);
      expect(set.body.key.rateLimit).toEqual({ limit: 1, window: WINDOW });
      expect(set.body.key.name).toBe('test key');
      expectFields(await call(served, 'GET', '/host/items', { token: secret }), 1, 0, 60);
      expectLimited(await call(served, 'GET', '/host/items', { token: secret }), 1, 60);

      const raised = await call(served, 'PATCH', `/admin/keys/${key.id}`, {
        token,
        json: { rateLimit: { limit: 2, window: WINDOW }, name: 'renamed' },
      });
      expect(raised.body.key).toMatchObject({ name: 'renamed', rateLimit: { limit: 2, window: WINDOW } });
      // The same window goes on counting: one request made, one left.
      expectFields(await call(served, 'GET', '/host/items', { token: secret }), 2, 0, 60);

      const cleared = await call(served, 'PATCH', `/admin/keys/${key.id}`, {
        token,
        json: { rateLimit: null },
      });
      expect(cleared.body.key.rateLimit).toBeNull();
      expect((await call(served, 'GET', '/host/items', { token: secret })).status).toBe(200);
      const read = await call(served, 'GET', `/admin/keys/${key.id}`, { token });
      expect(read.body.key).toMatchObject({ name: 'renamed', rateLimit: null });
    });

    it("PATCH refuses bad limits with validation_failed, and another tenant's key with 404", async () => {
      const { key } = await createKey(ctx);
      const token = await admin(ctx);
      for (const json of [
        {},
        { rateLimit: { limit: 0, window: 60 } },
        { rateLimit: { limit: 1.5, window: 60 } },
        { rateLimit: { limit: 10, window: 86_401 } },
        { rateLimit: { limit: '10', window: 60 } },
        { rateLimit: { limit: 10 } },
        { rateLimit: { limit: 10, window: 60, burst: 5 } },
        { name: '' },
        { scopes: ['items:write'] },
      ]) {
        const reply = await call(ctx, 'PATCH', `/admin/keys/${key.id}`, { token, json });
        expect(reply.status, JSON.stringify(json)).toBe(400);
        expect(reply.body.error.code).toBe('validation_failed');
      }
      const foreign = await call(ctx, 'PATCH', `/admin/keys/${key.id}`, {
        token: await admin(ctx, 'tenant_b'),
        json: { rateLimit: { limit: 1, window: 60 } },
      });
      expect(foreign.status).toBe(404);
      expect((await call(ctx, 'GET', `/admin/keys/${key.id}`, { token })).body.key.rateLimit).toBeNull();
    });

    it('a limit at create is refused out of range, and shown once set', async () => {
      const token = await admin(ctx);
      const bad = await call(ctx, 'POST', '/admin/keys', {
        token,
        json: { name: 'k', scopes: ['items:read'], rateLimit: { limit: -1, window: 60 } },
      });
      expect(bad.status).toBe(400);
      expect(bad.body.error.code).toBe('validation_failed');
      const { key } = await createKeyWithLimit(ctx, { limit: 7, window: 3_600 });
      expect((await call(ctx, 'GET', '/admin/keys', { token })).body.data[0].rateLimit).toEqual({
        limit: 7,
        window: 3_600,
      });
      expect(key.rateLimit).toEqual({ limit: 7, window: 3_600 });
    });

    it("the app's default limits a key without its own; a key's own limit wins", async () => {
      const served = await ctx.serve({
        rateLimit: { default: { limit: 1, window: WINDOW }, successHeaders: true },
      });
      const { secret } = await createKey(served);
      const { secret: own } = await createKeyWithLimit(served, { limit: 2, window: WINDOW });
      expectFields(await call(served, 'GET', '/host/items', { token: secret }), 1, 0, 60);
      expectLimited(await call(served, 'GET', '/host/items', { token: secret }), 1, 60);
      expectFields(await call(served, 'GET', '/host/items', { token: own }), 2, 1, 60);
    });

    it('failed verifications are limited per address; a key verified before still passes, a new one waits', async () => {
      const served = await ctx.serve({ rateLimit: { failedAuth: { limit: 3, window: WINDOW } } });
      const { secret: known } = await createKey(served);
      const { secret: fresh } = await createKey(served);
      expect((await call(served, 'GET', '/host/items', { token: known })).status).toBe(200);
      const guess = () => `sk_live_${randomHex(16)}_${randomHex(48)}`;
      for (let i = 0; i < 3; i++) {
        const reply = await call(served, 'GET', i % 2 ? '/whoami' : '/host/items', { token: guess() });
        expect(reply.status).toBe(401);
      }
      expectLimited(await call(served, 'GET', '/host/items', { token: guess() }), 3, 60);
      expectLimited(await call(served, 'GET', '/whoami', { token: guess() }), 3, 60);
      // Valid traffic already verified is untouched; a key never verified from anywhere waits
      // with the guesses (its lookup would tell a guesser it is right).
      expect((await call(served, 'GET', '/host/items', { token: known })).status).toBe(200);
      expectLimited(await call(served, 'GET', '/host/items', { token: fresh }), 3, 60);
      // The admin API is not behind this limit.
      expect((await call(served, 'GET', '/admin/keys', { token: await admin(served) })).status).toBe(200);
      served.clock.advance(60_000);
      expect((await call(served, 'GET', '/host/items', { token: fresh })).status).toBe(200);
      expect((await call(served, 'GET', '/host/items', { token: guess() })).status).toBe(401);
    });
  });
}

async function createKeyWithLimit(ctx: SuiteContext, rateLimit: { limit: number; window: number }) {
  const reply = await call(ctx, 'POST', '/admin/keys', {
    token: await admin(ctx),
    json: { name: 'limited', scopes: ['items:read'], rateLimit },
  });
  expect(reply.status, reply.text).toBe(201);
  return reply.body as { key: { id: string; rateLimit: unknown }; secret: string };
}
