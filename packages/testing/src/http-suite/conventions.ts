import { describe, expect, it } from 'vitest';
import { type ApiReply, admin, call, createKey } from './client.js';
import type { SuiteContext } from './suite-context.js';

const REQUEST_ID = /^req_[0-9a-z]{26}$/;

function expectRequestId(reply: ApiReply): string {
  const id = reply.headers.get('x-request-id');
  expect(id, `${reply.status} ${reply.text}`).toMatch(REQUEST_ID);
  return id!;
}

export function conventionCases(ctx: SuiteContext): void {
  describe('response conventions (docs/decisions.md §1)', () => {
    it('every keyhook response, success or error, has its own x-request-id', async () => {
      const token = await admin(ctx);
      const { key, secret } = await createKey(ctx);
      const replies = [
        await call(ctx, 'GET', '/admin/keys', { token }),
        await call(ctx, 'GET', `/admin/keys/${key.id}`, { token }),
        await call(ctx, 'GET', '/admin/keys/key_01jbz0000000000000000000zz', { token }),
        await call(ctx, 'GET', '/admin/keys'),
        await call(ctx, 'POST', '/admin/keys', { token, body: new Uint8Array(70_000), headers: {} }),
        await call(ctx, 'GET', '/whoami', { token: secret }),
        await call(ctx, 'GET', '/whoami'),
      ];
      const ids = replies.map(expectRequestId);
      expect(new Set(ids).size).toBe(ids.length);
    });

    it('host route refusals carry an x-request-id', async () => {
      const { secret } = await createKey(ctx, { scopes: ['items:read'] });
      expectRequestId(await call(ctx, 'GET', '/host/items'));
      expectRequestId(await call(ctx, 'GET', '/host/items', { token: 'sk_live_nope' }));
      expectRequestId(await call(ctx, 'POST', '/host/items', { token: secret, json: {} }));
    });

    it('a host route success is the host’s response: the guard adds no x-request-id and keeps the host’s', async () => {
      const { secret } = await createKey(ctx, { scopes: ['items:read'] });
      const reply = await call(ctx, 'GET', '/host/items', { token: secret });
      expect(reply.status).toBe(200);
      expect(reply.headers.get('x-request-id')).toBe('host-request-id');
      expectRequestId(await call(ctx, 'POST', '/host/items', { token: secret, json: {} })); // a refusal is keyhook's
      const { secret: writer } = await createKey(ctx, { scopes: ['items:write'] });
      const accepted = await call(ctx, 'POST', '/host/items', { token: writer, json: {} });
      expect(accepted.status).toBe(200);
      expect(accepted.headers.get('x-request-id')).toBeNull();
    });

    it('admin responses, success and error, have cache-control: no-store; data-plane ones carry JSON', async () => {
      const token = await admin(ctx);
      const { key, secret } = await createKey(ctx);
      const adminReplies = [
        await call(ctx, 'POST', '/admin/keys', { token, json: { name: 'x', scopes: ['items:read'] } }),
        await call(ctx, 'GET', '/admin/keys', { token }),
        await call(ctx, 'POST', `/admin/keys/${key.id}/rotate`, { token }),
        await call(ctx, 'DELETE', `/admin/keys/${key.id}`, { token }),
        await call(ctx, 'GET', '/admin/keys', { token: 'nope' }),
        await call(ctx, 'POST', '/admin/keys', { token, json: { name: '' } }),
        await call(ctx, 'GET', '/admin/keys/key_01jbz0000000000000000000zz', { token }),
      ];
      for (const reply of adminReplies) {
        expect(reply.headers.get('cache-control'), `${reply.status} ${reply.text}`).toBe('no-store');
        expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
      }
      const whoami = await call(ctx, 'GET', '/whoami', { token: secret });
      expect(whoami.headers.get('content-type')).toMatch(/^application\/json/);
    });

    it('error bodies have the envelope { error: { code, message, details? } } and nothing else', async () => {
      const token = await admin(ctx);
      const replies = [
        await call(ctx, 'GET', '/admin/keys'),
        await call(ctx, 'POST', '/admin/keys', { token, json: { name: '' } }),
        await call(ctx, 'GET', '/whoami', { token: 'sk_live_nope' }),
      ];
      for (const reply of replies) {
        expect(Object.keys(reply.body)).toEqual(['error']);
        expect(Object.keys(reply.body.error).every((k) => ['code', 'message', 'details'].includes(k))).toBe(
          true,
        );
      }
    });
  });
}

export function mountCases(ctx: SuiteContext): void {
  describe('mounting beside the host (docs/decisions.md §1.1)', () => {
    it('a path under the prefix that keyhook does not serve gets the host’s own 404', async () => {
      const token = await admin(ctx);
      for (const [method, path] of [
        ['GET', '/not-keyhook'],
        ['GET', '/admin/nothing-here'],
        ['PUT', '/admin/keys'],
        ['GET', '/admin/keys/a/b/c'],
      ] as const) {
        const reply = await call(ctx, method, path, { token });
        expect(reply.status, `${method} ${path}`).toBe(404);
        // keyhook stamps every answer it gives; the host's 404 has no such stamp.
        expect(reply.headers.get('x-request-id')).toBeNull();
        expect(reply.body?.error?.code).not.toBe('not_found');
      }
    });

    it('keyhook answers only at its prefix', async () => {
      const other = ctx.prefix === '/api/v1' ? '/developer/v2' : '/api/v1';
      const reply = await fetch(`${ctx.baseUrl}${other}/admin/keys`, {
        headers: { authorization: `Bearer ${await admin(ctx)}` },
      });
      await reply.arrayBuffer();
      expect(reply.status).toBe(404);
      expect(reply.headers.get('x-request-id')).toBeNull();
    });

    it('host routes under the same prefix keep their own JSON body parser', async () => {
      const { secret } = await createKey(ctx, { scopes: ['items:write'] });
      const reply = await call(ctx, 'POST', '/host/items', {
        token: secret,
        json: { title: 'from the host', tags: ['a', 'b'] },
      });
      expect(reply.status, reply.text).toBe(200);
      expect(reply.body.body).toEqual({ title: 'from the host', tags: ['a', 'b'] });
    });
  });
}
