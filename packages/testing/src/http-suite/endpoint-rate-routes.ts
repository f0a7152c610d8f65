import { describe, expect, it } from 'vitest';
import { type ApiReply, admin, call } from './client.js';
import type { SuiteContext } from './suite-context.js';

let counter = 0;
const uniqueUrl = () => `https://hooks.example.com/rate/${++counter}`;

/** An endpoint's deliveryRate over HTTP (docs/http-api.md §4.3; docs/decisions.md §8.18). */
export function endpointRateCases(ctx: SuiteContext): void {
  describe('webhook deliveryRate (docs/decisions.md §8.18)', () => {
    it('create without one → null; with { perSecond } → shown by create, GET and the list', async () => {
      const token = await admin(ctx);
      const plain = await call(ctx, 'POST', '/admin/webhooks', {
        token,
        json: { url: uniqueUrl(), events: ['run.completed'] },
      });
      expect(plain.status, plain.text).toBe(201);
      expect(plain.body.webhook.deliveryRate).toBeNull();
      const limited = await call(ctx, 'POST', '/admin/webhooks', {
        token,
        json: { url: uniqueUrl(), events: ['run.completed'], deliveryRate: { perSecond: 2.5 } },
      });
      expect(limited.status, limited.text).toBe(201);
      expect(limited.body.webhook.deliveryRate).toEqual({ perSecond: 2.5 });
      const none = await call(ctx, 'POST', '/admin/webhooks', {
        token,
        json: { url: uniqueUrl(), events: ['run.completed'], deliveryRate: null },
      });
      expect(none.status, none.text).toBe(201);
      expect(none.body.webhook.deliveryRate).toBeNull();
      const id = limited.body.webhook.id;
      const read = await call(ctx, 'GET', `/admin/webhooks/${id}`, { token });
      expect(read.body.webhook).toEqual(limited.body.webhook);
      const list = await call(ctx, 'GET', '/admin/webhooks', { token });
      const rates = new Map(
        list.body.data.map((w: { id: string; deliveryRate: unknown }) => [w.id, w.deliveryRate]),
      );
      expect(rates.get(id)).toEqual({ perSecond: 2.5 });
      expect(rates.get(plain.body.webhook.id)).toBeNull();
    });

    it('PATCH deliveryRate → 200, alone or with url and events; null removes it; a change without it keeps it', async () => {
      const token = await admin(ctx);
      const url = uniqueUrl();
      const created = await call(ctx, 'POST', '/admin/webhooks', {
        token,
        json: { url, events: ['run.completed'] },
      });
      const id = created.body.webhook.id;
      const patch = (json: unknown) => call(ctx, 'PATCH', `/admin/webhooks/${id}`, { token, json });
      const limited = await patch({ deliveryRate: { perSecond: 50 } });
      expect(limited.status, limited.text).toBe(200);
      expect(limited.body.webhook).toMatchObject({
        url,
        events: ['run.completed'],
        status: 'active',
        deliveryRate: { perSecond: 50 },
      });
      const evented = await patch({ events: ['run.failed'] });
      expect(evented.body.webhook).toMatchObject({ events: ['run.failed'], deliveryRate: { perSecond: 50 } });
      const both = await patch({ url: uniqueUrl(), deliveryRate: { perSecond: 0.01 } });
      expect(both.status, both.text).toBe(200);
      expect(both.body.webhook.deliveryRate).toEqual({ perSecond: 0.01 });
      const removed = await patch({ deliveryRate: null });
      expect(removed.status, removed.text).toBe(200);
      expect(removed.body.webhook.deliveryRate).toBeNull();
      const read = await call(ctx, 'GET', `/admin/webhooks/${id}`, { token });
      expect(read.body.webhook).toEqual(removed.body.webhook);
    });

    it('a rate out of bounds, of the wrong type, with another field, or beside a status → 400 validation_failed naming deliveryRate; nothing changes', async () => {
      const token = await admin(ctx);
      const bad = [
        { perSecond: 0 },
        { perSecond: -1 },
        { perSecond: 0.001 },
        { perSecond: 1001 },
        { perSecond: '10' },
        { perSecond: 10, burst: 2 },
        {},
        10,
        'fast',
      ];
      for (const deliveryRate of bad) {
        const reply = await call(ctx, 'POST', '/admin/webhooks', {
          token,
          json: { url: uniqueUrl(), events: ['run.completed'], deliveryRate },
        });
        expect(reply.status, JSON.stringify(deliveryRate)).toBe(400);
        expect(reply.body.error.code).toBe('validation_failed');
        const paths = reply.body.error.details.map((d: { path: string }) => d.path);
        expect(
          paths.some((path: string) => path.startsWith('deliveryRate')),
          JSON.stringify(paths),
        ).toBe(true);
      }
      const created = await call(ctx, 'POST', '/admin/webhooks', {
        token,
        json: { url: uniqueUrl(), events: ['run.completed'], deliveryRate: { perSecond: 5 } },
      });
      const id = created.body.webhook.id;
      for (const deliveryRate of bad) {
        const reply = await call(ctx, 'PATCH', `/admin/webhooks/${id}`, { token, json: { deliveryRate } });
        expect(reply.status, JSON.stringify(deliveryRate)).toBe(400);
        expect(reply.body.error.code).toBe('validation_failed');
      }
      const beside = await call(ctx, 'PATCH', `/admin/webhooks/${id}`, {
        token,
        json: { status: 'disabled', deliveryRate: null },
      });
      expect(beside.status).toBe(400);
      expect(beside.body.error.code).toBe('validation_failed');
      expect(beside.body.error.message).toMatch(/deliveryRate and description, in separate requests/);
      const after = await call(ctx, 'GET', `/admin/webhooks/${id}`, { token });
      expect(after.body.webhook).toEqual(created.body.webhook);
    });

    it('the old name, rateLimit (deprecated), on create and PATCH: the same rate, answered as deliveryRate', async () => {
      const token = await admin(ctx);
      const created = await call(ctx, 'POST', '/admin/webhooks', {
        token,
        json: { url: uniqueUrl(), events: ['run.completed'], rateLimit: { perSecond: 3 } },
      });
      expect(created.status, created.text).toBe(201);
      expect(created.body.webhook.deliveryRate).toEqual({ perSecond: 3 });
      expect(created.body.webhook).not.toHaveProperty('rateLimit');
      const id = created.body.webhook.id;
      const patch = (json: unknown) => call(ctx, 'PATCH', `/admin/webhooks/${id}`, { token, json });
      const raised = await patch({ rateLimit: { perSecond: 8 } });
      expect(raised.status, raised.text).toBe(200);
      expect(raised.body.webhook.deliveryRate).toEqual({ perSecond: 8 });
      expect(raised.body.webhook).not.toHaveProperty('rateLimit');
      const removed = await patch({ url: uniqueUrl(), rateLimit: null });
      expect(removed.status, removed.text).toBe(200);
      expect(removed.body.webhook.deliveryRate).toBeNull();
      // A refusal names the field as the client sent it.
      const bad = await patch({ rateLimit: { perSecond: 0 } });
      expect(bad.status).toBe(400);
      expect(bad.body.error.details.map((d: { path: string }) => d.path)).toEqual(['rateLimit.perSecond']);
      const beside = await patch({ status: 'disabled', rateLimit: null });
      expect(beside.status).toBe(400);
      expect(beside.body.error.message).toMatch(/rateLimit and description, in separate requests/);
      const read = await call(ctx, 'GET', `/admin/webhooks/${id}`, { token });
      expect(read.body.webhook).toEqual(removed.body.webhook);
    });

    it('deliveryRate and rateLimit both in one body → 400 validation_failed naming both; nothing changes', async () => {
      const token = await admin(ctx);
      const both = { deliveryRate: { perSecond: 2 }, rateLimit: { perSecond: 2 } };
      const namesBoth = (reply: ApiReply) => {
        expect(reply.status, reply.text).toBe(400);
        expect(reply.body.error.code).toBe('validation_failed');
        const paths = reply.body.error.details.map((d: { path: string }) => d.path);
        expect(paths.sort()).toEqual(['deliveryRate', 'rateLimit']);
      };
      const url = uniqueUrl();
      namesBoth(
        await call(ctx, 'POST', '/admin/webhooks', {
          token,
          json: { url, events: ['run.completed'], ...both },
        }),
      );
      const list = await call(ctx, 'GET', '/admin/webhooks', { token });
      expect(list.body.data.map((w: { url: string }) => w.url)).not.toContain(url);
      const created = await call(ctx, 'POST', '/admin/webhooks', {
        token,
        json: { url, events: ['run.completed'] },
      });
      const id = created.body.webhook.id;
      namesBoth(await call(ctx, 'PATCH', `/admin/webhooks/${id}`, { token, json: both }));
      namesBoth(
        await call(ctx, 'PATCH', `/admin/webhooks/${id}`, {
          token,
          json: { deliveryRate: null, rateLimit: null },
        }),
      );
      const after = await call(ctx, 'GET', `/admin/webhooks/${id}`, { token });
      expect(after.body.webhook).toEqual(created.body.webhook);
    });

    it("another tenant's PATCH of the rate → 404 not_found; the endpoint keeps its rate", async () => {
      const token = await admin(ctx);
      const created = await call(ctx, 'POST', '/admin/webhooks', {
        token,
        json: { url: uniqueUrl(), events: ['run.completed'], deliveryRate: { perSecond: 5 } },
      });
      const id = created.body.webhook.id;
      const other = await admin(ctx, 'tenant_b');
      const reply = await call(ctx, 'PATCH', `/admin/webhooks/${id}`, {
        token: other,
        json: { deliveryRate: null },
      });
      expect(reply.status).toBe(404);
      expect(reply.body.error.code).toBe('not_found');
      const after = await call(ctx, 'GET', `/admin/webhooks/${id}`, { token });
      expect(after.body.webhook.deliveryRate).toEqual({ perSecond: 5 });
    });
  });
}
