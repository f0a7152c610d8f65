import { describe, expect, it } from 'vitest';
import { admin, call, createKey, sha256Hex } from './client.js';
import type { SuiteContext } from './suite-context.js';

const KEY_VIEW_FIELDS = [
  'createdAt',
  'expiresAt',
  'id',
  'keyLookup',
  'lastUsedAt',
  'name',
  'rateLimit',
  'revokedAt',
  'scopes',
  'status',
];

export function createAndReadCases(ctx: SuiteContext): void {
  describe('create, read and list keys (docs/http-api.md §2, §4.1)', () => {
    it('POST /admin/keys → 201 with the key view and the full secret, shown once', async () => {
      const reply = await call(ctx, 'POST', '/admin/keys', {
        token: await admin(ctx),
        json: { name: 'ingest worker', scopes: ['items:read', 'items:write'] },
      });
      expect(reply.status).toBe(201);
      expect(Object.keys(reply.body).sort()).toEqual(['key', 'secret']);
      const { key, secret } = reply.body;
      expect(Object.keys(key).sort()).toEqual(KEY_VIEW_FIELDS);
      expect(key).toMatchObject({
        name: 'ingest worker',
        scopes: ['items:read', 'items:write'],
        status: 'active',
        expiresAt: null,
        createdAt: '2026-01-01T00:00:00.000Z',
        lastUsedAt: null,
        revokedAt: null,
      });
      expect(key.id).toMatch(/^key_[0-9a-z]{26}$/);
      expect(key.keyLookup).toMatch(/^sk_live_[0-9a-f]{16}$/);
      expect(secret).toMatch(/^sk_live_[0-9a-f]{16}_[0-9a-f]{48}$/);
      expect(secret.startsWith(`${key.keyLookup}_`)).toBe(true);
    });

    it('keeps expiresAt as a UTC timestamp with milliseconds', async () => {
      const { key } = await createKey(ctx, { expiresAt: '2026-03-01T12:00:00+02:00' });
      expect(key).toMatchObject({ expiresAt: '2026-03-01T10:00:00.000Z' });
    });

    it('GET one key and the list never carry the secret or its hash', async () => {
      const token = await admin(ctx);
      const { key, secret } = await createKey(ctx);
      const one = await call(ctx, 'GET', `/admin/keys/${key.id}`, { token });
      expect(one.status).toBe(200);
      expect(Object.keys(one.body)).toEqual(['key']);
      expect(Object.keys(one.body.key).sort()).toEqual(KEY_VIEW_FIELDS);
      expect(one.body.key).toMatchObject({ id: key.id, keyLookup: key.keyLookup, status: 'active' });
      const list = await call(ctx, 'GET', '/admin/keys', { token });
      expect(list.status).toBe(200);
      expect(list.body.data.map((k: { id: string }) => k.id)).toEqual([key.id]);
      for (const reply of [one, list]) {
        expect(reply.text).not.toContain(secret);
        expect(reply.text).not.toContain(secret.slice(-48));
        expect(reply.text).not.toContain(sha256Hex(secret));
        expect(reply.text).not.toMatch(/"secret"|"keyHash"|"hash"/i);
      }
    });

    it('pages the list with limit and nextCursor, newest first, each key once', async () => {
      const token = await admin(ctx);
      const created: string[] = [];
      for (let i = 0; i < 5; i++) {
        created.push((await createKey(ctx, { name: `key ${i}` })).key.id);
        ctx.clock.advance(1);
      }
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const query: string = cursor === null ? '?limit=2' : `?limit=2&cursor=${encodeURIComponent(cursor)}`;
        const page = await call(ctx, 'GET', `/admin/keys${query}`, { token });
        expect(page.status).toBe(200);
        expect(Object.keys(page.body).sort()).toEqual(['data', 'nextCursor']);
        expect(page.body.data.length).toBeLessThanOrEqual(2);
        seen.push(...page.body.data.map((k: { id: string }) => k.id));
        cursor = page.body.nextCursor;
        pages++;
      } while (cursor !== null && pages < 10);
      expect(pages).toBe(3);
      expect(seen).toEqual([...created].reverse());
    });

    it('lists 20 keys by default', async () => {
      for (let i = 0; i < 21; i++) await createKey(ctx, { name: `key ${i}` });
      const list = await call(ctx, 'GET', '/admin/keys', { token: await admin(ctx) });
      expect(list.body.data).toHaveLength(20);
      expect(typeof list.body.nextCursor).toBe('string');
    });

    it.each([
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=-1', 'limit'],
      ['cursor=!!!', 'cursor'],
      ['cursor=bm90LWFuLWlk', 'cursor'],
    ])('GET /admin/keys?%s → 400 validation_failed naming %s', async (query, path) => {
      const reply = await call(ctx, 'GET', `/admin/keys?${query}`, { token: await admin(ctx) });
      expect(reply.status).toBe(400);
      expect(reply.body.error.code).toBe('validation_failed');
      expect(reply.body.error.details).toContainEqual(expect.objectContaining({ path }));
    });
  });
}

export function revokeCases(ctx: SuiteContext): void {
  describe('revoke (docs/http-api.md §3: DELETE → revoked)', () => {
    it('DELETE → 200 { key } revoked; again → 200 with the first revokedAt; rotate → 409 key_revoked', async () => {
      const token = await admin(ctx);
      const { key } = await createKey(ctx);
      const first = await call(ctx, 'DELETE', `/admin/keys/${key.id}`, { token });
      expect(first.status).toBe(200);
      expect(Object.keys(first.body)).toEqual(['key']);
      expect(first.body.key).toMatchObject({
        id: key.id,
        status: 'revoked',
        revokedAt: '2026-01-01T00:00:00.000Z',
      });

      ctx.clock.advance(60_000);
      const again = await call(ctx, 'DELETE', `/admin/keys/${key.id}`, { token: await admin(ctx) });
      expect(again.status).toBe(200);
      expect(again.body.key).toMatchObject({ status: 'revoked', revokedAt: '2026-01-01T00:00:00.000Z' });

      const rotate = await call(ctx, 'POST', `/admin/keys/${key.id}/rotate`, { token: await admin(ctx) });
      expect(rotate.status).toBe(409);
      expect(rotate.body.error.code).toBe('key_revoked');
      expect(rotate.text).not.toMatch(/sk_live_[0-9a-f]{16}_/);
    });
  });
}

export function rotateCases(ctx: SuiteContext): void {
  describe('rotate (docs/http-api.md §3, §5.7)', () => {
    it('POST rotate → 200 with a new secret for the same id and keyLookup; the old one fails at once', async () => {
      const { key, secret: old } = await createKey(ctx);
      const reply = await call(ctx, 'POST', `/admin/keys/${key.id}/rotate`, { token: await admin(ctx) });
      expect(reply.status).toBe(200);
      expect(Object.keys(reply.body).sort()).toEqual(['key', 'secret']);
      expect(reply.body.key).toMatchObject({ id: key.id, keyLookup: key.keyLookup, status: 'active' });
      const fresh: string = reply.body.secret;
      expect(fresh).toMatch(/^sk_live_[0-9a-f]{16}_[0-9a-f]{48}$/);
      expect(fresh.startsWith(`${key.keyLookup}_`)).toBe(true);
      expect(fresh).not.toBe(old);

      const withOld = await call(ctx, 'GET', '/whoami', { token: old });
      expect(withOld.status).toBe(401);
      expect(withOld.body.error.code).toBe('invalid_api_key');
      const withNew = await call(ctx, 'GET', '/whoami', { token: fresh });
      expect(withNew.status).toBe(200);
      expect(withNew.body.key.id).toBe(key.id);
    });

    it('two rotations at once → exactly one 200 and one 409 rotation_conflict; only the 200’s secret works', async () => {
      const { key, secret: old } = await createKey(ctx);
      const token = await admin(ctx);
      ctx.rotations.hold(2);
      const replies = await Promise.all([
        call(ctx, 'POST', `/admin/keys/${key.id}/rotate`, { token }),
        call(ctx, 'POST', `/admin/keys/${key.id}/rotate`, { token }),
      ]);
      const statuses = replies.map((r) => r.status).sort();
      expect(statuses).toEqual([200, 409]);
      const winner = replies.find((r) => r.status === 200)!;
      const loser = replies.find((r) => r.status === 409)!;
      expect(loser.body.error.code).toBe('rotation_conflict');
      expect(loser.text).not.toMatch(/sk_live_[0-9a-f]{16}_/);

      expect((await call(ctx, 'GET', '/whoami', { token: winner.body.secret })).status).toBe(200);
      const withOld = await call(ctx, 'GET', '/whoami', { token: old });
      expect(withOld.status).toBe(401);
      expect(withOld.body.error.code).toBe('invalid_api_key');
    });

    it('rotating an expired key → 409 key_expired', async () => {
      const { key } = await createKey(ctx, { expiresAt: '2026-01-01T01:00:00.000Z' });
      ctx.clock.advance(3_600_000);
      const reply = await call(ctx, 'POST', `/admin/keys/${key.id}/rotate`, { token: await admin(ctx) });
      expect(reply.status).toBe(409);
      expect(reply.body.error.code).toBe('key_expired');
    });
  });
}
