import { createKeyhook, isKeyhookError, MemoryStore, silentLogger } from '@keyhook/core';
import type { KeyhookRequest } from '@keyhook/core/http';
import { adminToken, FakeClock, TEST_ADMIN_SECRET, TEST_CATALOG } from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';
import { RateLimits, WindowCounters } from '../src/keys/rate-limit.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');

describe('fixed-window counters', () => {
  it('admit exactly the limit in a window, count no refusal, and start again at the next window', () => {
    const counters = new WindowCounters();
    const limit = { limit: 3, window: 60 };
    const left = Array.from({ length: 5 }, (_, i) => counters.take('k', limit, T0 + i));
    expect(left).toEqual([2, 1, 0, -1, -1]);
    expect(counters.take('k', limit, T0 + 59_999)).toBe(-1);
    // Windows are aligned to the epoch: the next starts at T0 + 60 s whatever the first request's time.
    expect(counters.take('k', limit, T0 + 60_000)).toBe(2);
  });

  it('give a request back only within the window it was counted in', () => {
    const counters = new WindowCounters();
    const limit = { limit: 1, window: 60 };
    expect(counters.take('k', limit, T0)).toBe(0);
    counters.giveBack('k', T0);
    expect(counters.take('k', limit, T0 + 1)).toBe(0);
    // Taken in one window, given back in the next: the new window's count stays.
    expect(counters.take('k', limit, T0 + 60_000)).toBe(0);
    counters.giveBack('k', T0 + 1);
    expect(counters.take('k', limit, T0 + 60_001)).toBe(-1);
  });

  it('start a new count when the window length changes, even where both windows start together', () => {
    const counters = new WindowCounters();
    expect(counters.take('k', { limit: 2, window: 60 }, T0)).toBe(1);
    expect(counters.take('k', { limit: 2, window: 60 }, T0 + 1)).toBe(0);
    // T0 starts a 120 s window too.
    expect(counters.take('k', { limit: 2, window: 120 }, T0 + 2)).toBe(1);
  });

  it('count each name apart, and tell the seconds left in the window, rounded up', () => {
    const counters = new WindowCounters();
    const limit = { limit: 1, window: 10 };
    expect(counters.take('a', limit, T0 + 9_001)).toBe(0);
    expect(counters.take('b', limit, T0 + 9_001)).toBe(0);
    expect(counters.take('a', limit, T0 + 9_999)).toBe(-1);
    expect(WindowCounters.state(limit, 0, T0 + 9_001)).toEqual({
      limit: 1,
      remaining: 0,
      reset: 1,
      window: 10,
    });
    expect(WindowCounters.state(limit, 0, T0 + 2_500)).toEqual({
      limit: 1,
      remaining: 0,
      reset: 8,
      window: 10,
    });
    expect(WindowCounters.state(limit, 0, T0 + 10_000).reset).toBe(10);
  });

  it('keep a longer window counting while shorter ones are swept', () => {
    const counters = new WindowCounters();
    const day = { limit: 1, window: 86_400 };
    expect(counters.take('long', day, T0)).toBe(0);
    // Over 1,024 names with one-second windows, each ended before the next sweep.
    for (let i = 0; i < 5_000; i++) counters.take(`short-${i}`, { limit: 1, window: 1 }, T0 + 1_000 + i * 10);
    expect(counters.size).toBeLessThan(2_100);
    expect(counters.take('long', day, T0 + 60_000)).toBe(-1);
  });
});

describe('client addresses', () => {
  const failing = (limits: RateLimits, address: string, nowMs = T0) =>
    limits.reserve(address, 'guess', nowMs);

  it('remember the most recently verified keys, at most maxKnownKeys', () => {
    const limits = new RateLimits({ failedAuth: { limit: 1, window: 60 }, maxKnownKeys: 2 });
    failing(limits, '10.0.0.1');
    limits.verified('a');
    limits.verified('b');
    limits.verified('a'); // used again: now the most recent
    limits.verified('c'); // evicts b, the least recent
    expect(limits.reserve('10.0.0.1', 'a', T0)).toBeUndefined();
    expect(limits.reserve('10.0.0.1', 'c', T0)).toBeUndefined();
    expect(() => limits.reserve('10.0.0.1', 'b', T0)).toThrow(/Too many failed/);
  });

  it('count a verification ahead, and forget it when released', () => {
    const limits = new RateLimits({ failedAuth: { limit: 2, window: 60 } });
    const first = failing(limits, '10.0.0.1')!;
    failing(limits, '10.0.0.1');
    expect(() => failing(limits, '10.0.0.1')).toThrow(/Too many failed/);
    limits.release(first);
    expect(failing(limits, '10.0.0.1')).toBeDefined();
    expect(() => failing(limits, '10.0.0.1')).toThrow(/Too many failed/);
  });

  it('past the table size, count new addresses together, and make room again once windows end', () => {
    const limits = new RateLimits({ failedAuth: { limit: 2, window: 60 }, maxTrackedAddresses: 2 });
    failing(limits, '10.0.0.1');
    failing(limits, '10.0.0.2');
    // 10.0.0.3 and 10.0.0.4 share the overflow counter: two failures between them spend it.
    failing(limits, '10.0.0.3');
    failing(limits, '10.0.0.4');
    expect(() => failing(limits, '10.0.0.5')).toThrow(/Too many failed/);
    failing(limits, '10.0.0.1');
    expect(() => failing(limits, '10.0.0.1')).toThrow(/Too many failed/);
    expect(failing(limits, '10.0.0.2')).toBeDefined();
    // In the next window the ended counters are swept: a new address is counted on its own.
    expect(failing(limits, '10.0.0.5', T0 + 60_000)).toEqual({ name: '10.0.0.5', atMs: T0 + 60_000 });
    expect(failing(limits, '10.0.0.6', T0 + 60_000)).toEqual({ name: '10.0.0.6', atMs: T0 + 60_000 });
    expect(failing(limits, '10.0.0.7', T0 + 60_000)?.name).toBe('*');
  });
});

describe('rate-limit options', () => {
  it('refuse a limit or window that is not a positive integer in range, at setup', () => {
    for (const bad of [
      { limit: 0, window: 60 },
      { limit: 1.5, window: 60 },
      { limit: 10, window: 0 },
      { limit: 10, window: 86_401 },
      { limit: 10 },
    ]) {
      expect(() => new RateLimits({ default: bad as never }), JSON.stringify(bad)).toThrow(TypeError);
      expect(() => new RateLimits({ failedAuth: bad as never }), JSON.stringify(bad)).toThrow(TypeError);
    }
  });

  it("refuse a default function's result that is not a limit, naming the option", () => {
    const limits = new RateLimits({ default: () => ({ limit: 0, window: 60 }) });
    expect(() => limits.admit({ id: 'k', tenantId: 't', rateLimit: null }, T0)).toThrow(
      /rateLimit.default function’s result must be/,
    );
  });

  it('apply the default to a key without a limit, per tenant when it is a function', () => {
    const small = { limit: 1, window: 60 };
    const limits = new RateLimits({ default: (tenantId) => (tenantId === 'small' ? small : null) });
    const key = (tenantId: string, rateLimit: { limit: number; window: number } | null = null) => ({
      id: `key-${tenantId}`,
      tenantId,
      rateLimit,
    });
    expect(() => limits.admit(key('small'), T0)).not.toThrow();
    expect(() => limits.admit(key('small'), T0)).toThrow(/too many requests/);
    for (let i = 0; i < 100; i++) limits.admit(key('large'), T0);
    // A key's own limit wins over the default.
    expect(() => limits.admit(key('own', { limit: 2, window: 60 }), T0)).not.toThrow();
    expect(() => limits.admit(key('own', { limit: 2, window: 60 }), T0)).not.toThrow();
    expect(() => limits.admit(key('own', { limit: 2, window: 60 }), T0)).toThrow(/too many requests/);
    // The state of a success only when the fields are to be sent on successes.
    expect(limits.admit(key('other', { limit: 2, window: 60 }), T0)).toBeUndefined();
    const telling = new RateLimits({ successHeaders: true });
    expect(telling.admit(key('other', { limit: 2, window: 60 }), T0)).toEqual({
      limit: 2,
      remaining: 1,
      reset: 60,
      window: 60,
    });
  });
});

describe('rate limits through the HTTP core', () => {
  const setup = async (options: Parameters<typeof createKeyhook>[0]['rateLimit'], cacheEntries?: number) => {
    const clock = new FakeClock('2026-01-01T00:00:10.000Z');
    const keyhook = createKeyhook({
      ...TEST_CATALOG,
      store: new MemoryStore(),
      adminSession: { secret: TEST_ADMIN_SECRET },
      clock,
      logger: silentLogger,
      rateLimit: options,
      verifiedKeyCacheEntries: cacheEntries,
    });
    const token = await adminToken({ tenantId: 'tenant_a', now: clock.now() });
    const request = (over: Partial<KeyhookRequest>): ReturnType<typeof keyhook.handle> =>
      keyhook.handle({ method: 'GET', path: '/whoami', headers: {}, rawBody: null, ...over });
    return { clock, keyhook, token, request };
  };

  it('answers 429 with Retry-After and the RateLimit fields past a key’s limit, and sends the fields on each success', async () => {
    const { clock, keyhook, request } = await setup({ successHeaders: true });
    const { secret } = await keyhook.keys.create('tenant_a', {
      name: 'limited',
      scopes: ['items:read'],
      rateLimit: { limit: 2, window: 60 },
    });
    const headers = { authorization: `Bearer ${secret}` };
    const first = await request({ headers });
    expect(first.status).toBe(200);
    expect(first.headers).toMatchObject({
      'ratelimit-limit': '2',
      'ratelimit-remaining': '1',
      'ratelimit-reset': '50',
      'ratelimit-policy': '2;w=60',
    });
    expect((await request({ headers })).headers['ratelimit-remaining']).toBe('0');
    const refused = await request({ headers });
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.body!).error.code).toBe('rate_limited');
    expect(refused.headers).toMatchObject({
      'retry-after': '50',
      'ratelimit-limit': '2',
      'ratelimit-remaining': '0',
      'ratelimit-reset': '50',
    });
    // The guard counts the same key in the same counter.
    const guarded = await keyhook.guard('items:read')(headers);
    expect(guarded.ok).toBe(false);
    clock.advance(50_000);
    const next = await keyhook.guard('items:read')(headers);
    expect(next.ok && next.rateLimit).toEqual({ limit: 2, remaining: 1, reset: 60, window: 60 });
  });

  it('a changed limit applies from the key’s next request', async () => {
    const { keyhook, request, token } = await setup({ successHeaders: true });
    const { key, secret } = await keyhook.keys.create('tenant_a', { name: 'k', scopes: ['items:read'] });
    const headers = { authorization: `Bearer ${secret}` };
    expect((await request({ headers })).headers['ratelimit-limit']).toBeUndefined();
    const patched = await request({
      method: 'PATCH',
      path: `/admin/keys/${key.id}`,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      rawBody: Buffer.from(JSON.stringify({ rateLimit: { limit: 1, window: 60 } })),
    });
    expect(patched.status, patched.body!).toBe(200);
    expect(JSON.parse(patched.body!).key.rateLimit).toEqual({ limit: 1, window: 60 });
    expect((await request({ headers })).status).toBe(200);
    expect((await request({ headers })).status).toBe(429);
  });

  it.each([
    ['with', undefined],
    ['without', 0],
  ])(
    'limits failed verifications per address; a key verified before still passes from it (%s the key cache)',
    async (_, cacheEntries) => {
      const { keyhook } = await setup({ failedAuth: { limit: 3, window: 60 } }, cacheEntries);
      const { secret } = await keyhook.keys.create('tenant_a', { name: 'k', scopes: ['items:read'] });
      const { secret: unused } = await keyhook.keys.create('tenant_a', {
        name: 'cold',
        scopes: ['items:read'],
      });
      const good = { authorization: `Bearer ${secret}` };
      expect((await keyhook.guard('items:read')(good, '198.51.100.1')).ok).toBe(true);
      const wrong = { authorization: `Bearer ${secret.slice(0, -4)}beef` };
      for (let i = 0; i < 3; i++) {
        const result = await keyhook.guard('items:read')(wrong, '198.51.100.1');
        expect(!result.ok && result.response.status).toBe(401);
      }
      const refused = await keyhook.guard('items:read')(wrong, '198.51.100.1');
      expect(!refused.ok && refused.response.status).toBe(429);
      expect(!refused.ok && refused.response.headers['retry-after']).toBe('50');
      // A key never verified before is refused too, without a lookup: guessing one right tells nothing.
      const cold = await keyhook.guard('items:read')({ authorization: `Bearer ${unused}` }, '198.51.100.1');
      expect(!cold.ok && cold.response.status).toBe(429);
      expect((await keyhook.guard('items:read')(good, '198.51.100.1')).ok).toBe(true);
      // Revoked meanwhile, the known key is refused as revoked: it is verified, not waved through.
      await keyhook.keys.revoke('tenant_a', (await keyhook.keys.verify(secret)).id);
      const revoked = await keyhook.guard('items:read')(good, '198.51.100.1');
      expect(!revoked.ok && JSON.parse(revoked.response.body!).error.code).toBe('key_revoked');
      // Another address, and a caller the adapter gave no address for, are not touched.
      expect((await keyhook.guard('items:read')(wrong, '198.51.100.2')).ok).toBe(false);
      // A revoked key's failure is not a guess: it leaves the budget of 198.51.100.2 as it was.
      for (let i = 0; i < 3; i++) await keyhook.guard('items:read')(good, '198.51.100.2');
      const other = await keyhook.guard('items:read')({ authorization: `Bearer ${unused}` }, '198.51.100.2');
      expect(other.ok).toBe(true);
      const noAddress = await keyhook.guard('items:read')(wrong);
      expect(!noAddress.ok && noAddress.response.status).toBe(401);
    },
  );

  it('counts verifications in flight together: of 10 wrong keys sent at once, 3 are looked up and 7 refused', async () => {
    const { keyhook } = await setup({ failedAuth: { limit: 3, window: 60 } }, 0);
    const { secret } = await keyhook.keys.create('tenant_a', { name: 'k', scopes: ['items:read'] });
    const wrong = { authorization: `Bearer ${secret.slice(0, -4)}beef` };
    const results = await Promise.all(
      Array.from({ length: 10 }, () => keyhook.guard('items:read')(wrong, '198.51.100.9')),
    );
    const statuses = results.map((result) => (result.ok ? 200 : result.response.status)).sort();
    expect(statuses).toEqual([401, 401, 401, 429, 429, 429, 429, 429, 429, 429]);
  });

  it('a valid key counted ahead gives its count back: the failures left stay left', async () => {
    const { keyhook } = await setup({ failedAuth: { limit: 3, window: 60 } }, 0);
    const { secret } = await keyhook.keys.create('tenant_a', { name: 'k', scopes: ['items:read'] });
    const { secret: second } = await keyhook.keys.create('tenant_a', { name: 'k2', scopes: ['items:read'] });
    // Two keys never verified before, at once: both are counted ahead, then given back.
    const valid = await Promise.all(
      [secret, second].map((key) =>
        keyhook.guard('items:read')({ authorization: `Bearer ${key}` }, '198.51.100.9'),
      ),
    );
    expect(valid.every((result) => result.ok)).toBe(true);
    const wrong = { authorization: `Bearer ${secret.slice(0, -4)}beef` };
    const statuses = [];
    for (let i = 0; i < 4; i++) {
      const result = await keyhook.guard('items:read')(wrong, '198.51.100.9');
      statuses.push(result.ok ? 200 : result.response.status);
    }
    expect(statuses).toEqual([401, 401, 401, 429]);
  });

  it('refuses a rate limit out of range at create and update with validation_failed', async () => {
    const { keyhook } = await setup({});
    for (const rateLimit of [
      { limit: 0, window: 1 },
      { limit: 1, window: 86_401 },
      { limit: '5', window: 60 },
    ]) {
      const error = await keyhook.keys
        .create('tenant_a', { name: 'k', scopes: ['items:read'], rateLimit: rateLimit as never })
        .catch((e: unknown) => e);
      expect(isKeyhookError(error) && error.code).toBe('validation_failed');
    }
    const { key } = await keyhook.keys.create('tenant_a', { name: 'k', scopes: ['items:read'] });
    const empty = await keyhook.keys.update('tenant_a', key.id, {}).catch((e: unknown) => e);
    expect(isKeyhookError(empty) && empty.code).toBe('validation_failed');
    const missing = await keyhook.keys.update('tenant_b', key.id, { name: 'x' }).catch((e: unknown) => e);
    expect(isKeyhookError(missing) && missing.code).toBe('not_found');
  });
});
