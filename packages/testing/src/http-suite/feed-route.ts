import { newId } from '@keyhook/core/http';
import { describe, expect, it } from 'vitest';
import { type ApiReply, admin, call, createKey } from './client.js';
import type { SuiteContext } from './suite-context.js';

const DAY = 24 * 60 * 60 * 1000;

/** GET /events (docs/http-api.md §4.8, docs/decisions.md §8.17), on every adapter. */
export function feedRouteCases(ctx: SuiteContext): void {
  const reader = async (tenantId = 'tenant_a') =>
    (await createKey(ctx, { name: 'feed reader', scopes: ['events:read'] }, tenantId)).secret;

  const feed = (token: string, query = '') =>
    call(ctx, 'GET', `/events${query ? `?${query}` : ''}`, { token });

  const publish = async (type: string, tenantId = 'tenant_a') =>
    (await ctx.keyhook.events.publish({ tenantId, type, data: { n: type } } as never)).event.id;

  const ids = (reply: ApiReply) => reply.body.data.map((event: { id: string }) => event.id);

  const expectRefused = (reply: ApiReply, status: number, code: string) => {
    expect(reply.status, reply.text).toBe(status);
    expect(reply.body.error.code).toBe(code);
  };

  describe('the events feed (docs/http-api.md §4.8)', () => {
    it('GET /events pages the tenant’s events oldest first with after and hasMore, each with its deliveries', async () => {
      const hook = await call(ctx, 'POST', '/admin/webhooks', {
        token: await admin(ctx),
        json: { url: 'https://hooks.example.com/feed', events: ['run.completed'] },
      });
      expect(hook.status, hook.text).toBe(201);
      const written: string[] = [];
      for (const type of ['run.completed', 'run.failed', 'run.completed', 'run.failed', 'run.completed']) {
        ctx.clock.advance(1000);
        written.push(await publish(type));
      }
      await publish('run.completed', 'tenant_b');
      const token = await reader();

      const seen: string[] = [];
      const more: boolean[] = [];
      let after: string | undefined;
      for (let page = 0; page < 5; page++) {
        const reply = await feed(token, `limit=2${after ? `&after=${after}` : ''}`);
        expect(reply.status, reply.text).toBe(200);
        seen.push(...ids(reply));
        more.push(reply.body.hasMore);
        if (!reply.body.hasMore) break;
        after = seen[seen.length - 1];
      }
      expect(seen).toEqual(written);
      expect(more).toEqual([true, true, false]);

      const first = await feed(token, 'limit=1');
      expect(first.body.data[0]).toEqual({
        id: written[0],
        type: 'run.completed',
        createdAt: expect.any(String),
        data: { n: 'run.completed' },
        deliveries: [
          {
            webhookId: hook.body.webhook.id,
            status: 'pending',
            delivered: false,
            attempts: 0,
            lastAttemptAt: null,
          },
        ],
      });
      const failed = await feed(token, 'type=run.failed');
      expect(ids(failed)).toEqual([written[1], written[3]]);
      expect(failed.body.data[0].deliveries).toEqual([]);
    });

    it('a key without the scope is refused 403 insufficient_scope; no key is 401', async () => {
      const other = await createKey(ctx, { scopes: ['items:read'] });
      expectRefused(await feed(other.secret), 403, 'insufficient_scope');
      expectRefused(await call(ctx, 'GET', '/events'), 401, 'missing_credentials');
    });

    it('400 validation_failed for a malformed after, an unknown type, a limit out of range', async () => {
      const token = await reader();
      for (const query of [
        'after=evt_',
        'after=wh_00000000000000000000000000',
        'type=run.unknown',
        'limit=0',
        'limit=101',
      ]) {
        expectRefused(await feed(token, query), 400, 'validation_failed');
      }
    });

    it("404 not_found for an after within the window that is no event of the key's tenant", async () => {
      const theirs = await publish('run.completed', 'tenant_b');
      const token = await reader();
      expectRefused(await feed(token, `after=${theirs}`), 404, 'not_found');
      // Minted now: well formed and within the window, and no event of anyone's.
      expectRefused(await feed(token, `after=${newId('evt', ctx.clock)}`), 404, 'not_found');
    });

    it('410 feed_expired for an after older than the window (the retention), saying to start again', async () => {
      const old = await publish('run.completed');
      ctx.clock.advance(31 * DAY);
      const token = await reader();
      const fresh = await publish('run.failed');
      const reply = await feed(token, `after=${old}`);
      expectRefused(reply, 410, 'feed_expired');
      expect(reply.body.error.message).toContain('without after');
      // Started again without after: the window, and nothing older.
      expect(ids(await feed(token))).toEqual([fresh]);
    });
    it('since starts at the first event created at or after a time; beside after, or not a time, 400; before the window, 410', async () => {
      const written: string[] = [];
      for (let i = 0; i < 3; i++) {
        ctx.clock.advance(1000);
        written.push(await publish('run.completed'));
      }
      const token = await reader();
      const all = (await feed(token)).body.data as { id: string; createdAt: string }[];
      const second = all.find((event) => event.id === written[1])!;
      const from = await feed(token, `since=${encodeURIComponent(second.createdAt)}`);
      expect(from.status, from.text).toBe(200);
      expect(ids(from)).toEqual(written.slice(1));
      // The same instant with an offset, and a page of it.
      const offset = new Date(second.createdAt).toISOString().replace('Z', '+00:00');
      expect(ids(await feed(token, `since=${encodeURIComponent(offset)}&limit=1`))).toEqual([written[1]]);

      for (const query of [
        `since=${encodeURIComponent(second.createdAt)}&after=${written[0]}`,
        'since=yesterday',
        'since=2026-13-01T00:00:00Z',
        'since=',
      ]) {
        const reply = await feed(token, query);
        expectRefused(reply, 400, 'validation_failed');
        expect(reply.body.error.details.map((d: { path: string }) => d.path)).toEqual(['since']);
      }
      const long = new Date(ctx.clock.now().getTime() - 31 * DAY).toISOString();
      const old = await feed(token, `since=${encodeURIComponent(long)}`);
      expectRefused(old, 410, 'feed_expired');
      expect(old.body.error.message).toContain('without since');
    });
  });
}
