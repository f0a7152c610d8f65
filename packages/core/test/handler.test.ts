import { createKeyhook, MemoryStore, silentLogger } from '@keyhook/core';
import type { KeyhookRequest } from '@keyhook/core/http';
import {
  adminToken,
  FakeClock,
  recordingLogger,
  TEST_ADMIN_SECRET,
  TEST_CATALOG,
} from '@keyhook/testing/support';
import { beforeEach, describe, expect, it } from 'vitest';
import { unavailableError } from '../src/errors.js';
import { REPEAT_WARNING_EVERY_MS } from '../src/repeated-warning.js';

describe('the HTTP core', () => {
  const clock = new FakeClock(new Date());
  let keyhook: ReturnType<typeof createKeyhook>;
  let admin: string;

  beforeEach(async () => {
    keyhook = createKeyhook({
      ...TEST_CATALOG,
      store: new MemoryStore(),
      clock,
      logger: silentLogger,
      adminSession: { secret: TEST_ADMIN_SECRET },
    });
    admin = await adminToken({ now: clock.now() });
  });

  const request = (overrides: Partial<KeyhookRequest>): KeyhookRequest => ({
    method: 'POST',
    path: '/admin/keys',
    headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
    rawBody: Buffer.from(JSON.stringify({ name: 'x', scopes: ['items:read'] })),
    ...overrides,
  });

  it('answers HEAD as GET (the server drops the body)', async () => {
    const response = await keyhook.handle(request({ method: 'HEAD', rawBody: null }));
    expect(response.status).toBe(200);
  });

  it('refuses a compressed body with 415, before and after the adapter could read it', async () => {
    for (const bodyError of [undefined, 'unreadable' as const]) {
      const response = await keyhook.handle(
        request({ headers: { ...request({}).headers, 'content-encoding': 'gzip' }, bodyError }),
      );
      expect(response.status).toBe(415);
      expect(JSON.parse(response.body!).error.code).toBe('unsupported_media_type');
    }
    const identity = await keyhook.handle(
      request({ headers: { ...request({}).headers, 'content-encoding': 'identity' } }),
    );
    expect(identity.status).toBe(201);
  });

  it('judges the media type even when the adapter could not read the body', async () => {
    const response = await keyhook.handle(
      request({ headers: { ...request({}).headers, 'content-type': 'json' }, bodyError: 'unreadable' }),
    );
    expect(response.status).toBe(415);
  });

  it('gives a guard refusal a request id, and a success none: that response is the host’s', async () => {
    const { secret } = await keyhook.keys.create('tenant_a', { name: 'x', scopes: ['items:read'] });
    const passed = await keyhook.guard('items:read')({ authorization: `Bearer ${secret}` });
    expect(passed).toEqual({ ok: true, apiKey: expect.objectContaining({ tenantId: 'tenant_a' }) });
    const refused = await keyhook.guard('items:write')({ authorization: `Bearer ${secret}` });
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.response.headers['x-request-id']).toMatch(/^req_/);
  });

  it('answers not_found for a route it does not serve', async () => {
    const response = await keyhook.handle(request({ method: 'GET', path: '/admin/nothing' }));
    expect(response.status).toBe(404);
  });
});

describe('bearer tokens', () => {
  it('reads the usual spelling and every other RFC 6750 spelling alike, and nothing else', async () => {
    const { bearerToken } = await import('../src/http/headers.js');
    const token = (authorization: string | undefined) => bearerToken({ authorization });
    expect(token('Bearer abc')).toBe('abc');
    expect(token('bearer abc')).toBe('abc');
    expect(token('BEARER \t abc  ')).toBe('abc');
    expect(bearerToken({ Authorization: 'Bearer abc' })).toBe('abc');
    for (const bad of [
      undefined,
      '',
      'Bearer',
      'Bearer ',
      'Bearer a b',
      'Basic abc',
      'Bearerabc',
      'Bearer a\tb',
    ]) {
      expect(token(bad), String(bad)).toBeUndefined();
    }
  });
});

describe('the guard’s shortcut for a key verified before', () => {
  it('changes no answer: other spellings, whitespace inside, revocation and scope', async () => {
    const store = new CountingStore();
    const keyhook = createKeyhook({
      ...TEST_CATALOG,
      store,
      logger: silentLogger,
      adminSession: { secret: TEST_ADMIN_SECRET },
    });
    const { key, secret } = await keyhook.keys.create('tenant_a', { name: 'x', scopes: ['items:read'] });
    const guard = async (headers: Record<string, string>, scope?: 'items:read' | 'items:write') => {
      const result = await keyhook.guard(scope)(headers);
      return result.ok ? 'ok' : (JSON.parse(result.response.body!).error.code as string);
    };
    expect(await guard({ authorization: `Bearer ${secret}` }, 'items:read')).toBe('ok');
    expect(store.reads).toBe(1);
    // The shortcut takes only `Bearer ` + a cached key; RFC 6750's other spellings of it are
    // read by the full path and hit the same cache entry.
    for (const authorization of [`bearer ${secret}`, `Bearer  ${secret}`, `BEARER \t${secret} `]) {
      expect(await guard({ authorization }, 'items:read'), authorization).toBe('ok');
    }
    expect(await guard({ Authorization: `Bearer ${secret}` })).toBe('ok');
    expect(store.reads).toBe(1);
    // A cached key followed by more is not that key.
    expect(await guard({ authorization: `Bearer ${secret} x` })).toBe('missing_credentials');
    expect(await guard({ authorization: `Bearer ${secret}x` })).toBe('invalid_api_key');
    expect(await guard({ authorization: `Bearer ${secret}` }, 'items:write')).toBe('insufficient_scope');
    await keyhook.keys.revoke('tenant_a', key.id);
    expect(await guard({ authorization: `Bearer ${secret}` }, 'items:read')).toBe('key_revoked');
    expect(await guard({ authorization: `bearer ${secret}` }, 'items:read')).toBe('key_revoked');
  });
});

/** A memory store that counts key reads by credential. */
class CountingStore extends MemoryStore {
  reads = 0;
  override async findApiKeyByCredential(keyLookup: string, keyHash: string) {
    this.reads++;
    return super.findApiKeyByCredential(keyLookup, keyHash);
  }
}

describe('lists (docs/decisions.md §1.6: ?limit= 1–100, default 20)', () => {
  it('returns 20 by default with a cursor for the rest, and accepts limit=100', async () => {
    const keyhook = createKeyhook({
      ...TEST_CATALOG,
      store: new MemoryStore(),
      logger: silentLogger,
      adminSession: { secret: TEST_ADMIN_SECRET },
    });
    for (let i = 0; i < 21; i++)
      await keyhook.keys.create('tenant_a', { name: `k${i}`, scopes: ['items:read'] });
    const headers = { authorization: `Bearer ${await adminToken()}` };
    const list = async (query?: string) =>
      JSON.parse(
        (await keyhook.handle({ method: 'GET', path: '/admin/keys', query, headers, rawBody: null })).body!,
      );
    const first = await list();
    expect(first.data).toHaveLength(20);
    expect(first.nextCursor).not.toBeNull();
    const all = await list('limit=100');
    expect(all.data).toHaveLength(21);
    expect(all.nextCursor).toBeNull();
  });
});

describe('logging refusals while the store is out of reach (docs/decisions.md §8.9)', () => {
  it('a 503 is one warn line without a stack, the repeats counted in the next line 10 s on; a 500 keeps its stack', async () => {
    const clock = new FakeClock(new Date());
    const logger = recordingLogger();
    const { lines } = logger;
    const store = new MemoryStore();
    const keyhook = createKeyhook({
      ...TEST_CATALOG,
      store,
      clock,
      logger,
      adminSession: { secret: TEST_ADMIN_SECRET },
    });
    const { secret } = await keyhook.keys.create('tenant_a', { name: 'x', scopes: ['items:read'] });
    const cause = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    store.findApiKeyByCredential = async () => {
      throw unavailableError('PostgreSQL is unreachable.', cause);
    };
    const guard = () => keyhook.guard('items:read')({ authorization: `Bearer ${secret}` });
    for (let i = 0; i < 50; i++) expect((await guard()).ok).toBe(false);
    expect(lines).toEqual([
      {
        level: 'warn',
        context: {
          requestId: expect.stringMatching(/^req_/),
          cause: 'ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:5432',
        },
        message: 'request refused: the store is unavailable',
      },
    ]);
    clock.advance(REPEAT_WARNING_EVERY_MS);
    await guard();
    expect(lines).toHaveLength(2);
    expect(lines[1]!.context).toMatchObject({ repeated: 49 });

    store.findApiKeyByCredential = async () => {
      throw new TypeError('a bug');
    };
    await guard();
    expect(lines[2]).toMatchObject({
      level: 'error',
      message: 'request failed',
      context: { code: 'internal_error' },
    });
    expect((lines[2]!.context.err as Error).stack).toContain('a bug');
  });
});
