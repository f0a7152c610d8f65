import { createHmac } from 'node:crypto';
import { TEST_EVENTS, TestReceiver, waitUntil } from '@keyhook/store-conformance/support';
import { describe, expect, it } from 'vitest';
import { type ApiReply, admin, call, createKey } from './client.js';
import { DELIVERY_VIEW_FIELDS } from './delivery-routes.js';
import type { SuiteContext } from './suite-context.js';

/** A well-formed webhook id that no store holds. */
const UNKNOWN_WEBHOOK_ID = 'wh_00000000000000000000000000';

/** The host's example for run.completed in the served keyhook that delivers for real. */
const RUN_EXAMPLE = { runId: 'run_example', items: 3 };

let counter = 0;

/** POST /admin/webhooks/{id}/test (docs/http-api.md §4.2, docs/decisions.md §8.16), on every adapter. */
export function testEventCases(ctx: SuiteContext): void {
  const createWebhook = async (
    on: SuiteContext = ctx,
    tenantId = 'tenant_a',
    events = ['run.completed'],
    url = `https://hooks.example.com/tests/${++counter}`,
  ) => {
    const reply = await call(on, 'POST', '/admin/webhooks', {
      token: await admin(on, tenantId),
      json: { url, events },
    });
    expect(reply.status, reply.text).toBe(201);
    return reply.body as { webhook: { id: string }; secret: string };
  };

  const sendTest = async (webhookId: string, json: unknown, tenantId = 'tenant_a', on: SuiteContext = ctx) =>
    call(on, 'POST', `/admin/webhooks/${webhookId}/test`, { token: await admin(on, tenantId), json });

  const deliveriesOf = async (webhookId: string, tenantId = 'tenant_a', on: SuiteContext = ctx) =>
    call(on, 'GET', `/admin/webhooks/${webhookId}/deliveries`, { token: await admin(on, tenantId) });

  const expectRefused = (reply: ApiReply, status: number, code: string, path?: string) => {
    expect(reply.status, reply.text).toBe(status);
    expect(reply.body.error.code).toBe(code);
    if (path !== undefined) {
      expect(reply.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    }
  };

  describe('test events (docs/http-api.md §4.2, docs/decisions.md §8.16)', () => {
    it('POST …/test → 202 { event, delivery }: one pending delivery to that endpoint, in its list, though others subscribe', async () => {
      const { webhook } = await createWebhook();
      const { webhook: sibling } = await createWebhook();
      const reply = await sendTest(webhook.id, { type: 'run.completed' });
      expect(reply.status, reply.text).toBe(202);
      expect(Object.keys(reply.body).sort()).toEqual(['delivery', 'event']);
      expect(reply.body.event).toEqual({
        // Its id marks it a test, in the log and to the receiver.
        id: expect.stringMatching(/^evt_test_[0-9a-z]{26}$/),
        type: 'run.completed',
        createdAt: ctx.clock.now().toISOString(),
      });
      expect(Object.keys(reply.body.delivery).sort()).toEqual(DELIVERY_VIEW_FIELDS);
      expect(reply.body.delivery).toMatchObject({
        webhookId: webhook.id,
        eventId: reply.body.event.id,
        eventType: 'run.completed',
        test: true,
        status: 'pending',
        attemptCount: 0,
      });
      const list = await deliveriesOf(webhook.id);
      expect(list.body.data).toEqual([reply.body.delivery]);
      expect((await deliveriesOf(sibling.id)).body.data).toEqual([]);
      // The suite's catalog declares no schema and no example: the data sent is {}.
      const detail = await call(
        ctx,
        'GET',
        `/admin/webhooks/${webhook.id}/deliveries/${reply.body.delivery.id}`,
        {
          token: await admin(ctx),
        },
      );
      expect(detail.body.event).toEqual({ ...reply.body.event, data: {} });
    });

    it('any type of the catalog, whatever the endpoint subscribes to; given data is what is sent', async () => {
      const { webhook } = await createWebhook(ctx, 'tenant_a', ['run.failed']);
      const data = { runId: 'run_7', note: 'from the portal' };
      const reply = await sendTest(webhook.id, { type: 'generation.published', data });
      expect(reply.status, reply.text).toBe(202);
      const detail = await call(
        ctx,
        'GET',
        `/admin/webhooks/${webhook.id}/deliveries/${reply.body.delivery.id}`,
        {
          token: await admin(ctx),
        },
      );
      expect(detail.body.event).toMatchObject({ type: 'generation.published', data });
    });

    it('each call is a new test: the same request twice, Idempotency-Key and all, writes two events', async () => {
      const { webhook } = await createWebhook();
      const send = async () =>
        call(ctx, 'POST', `/admin/webhooks/${webhook.id}/test`, {
          token: await admin(ctx),
          json: { type: 'run.completed' },
          headers: { 'idempotency-key': 'test-once' },
        });
      const first = await send();
      const second = await send();
      expect([first.status, second.status]).toEqual([202, 202]);
      expect(second.headers.get('idempotent-replayed')).toBeNull();
      expect(second.body.event.id).not.toBe(first.body.event.id);
      expect((await deliveriesOf(webhook.id)).body.data).toHaveLength(2);
    });

    it('on a disabled endpoint → 202 with the delivery held', async () => {
      const { webhook } = await createWebhook();
      const disabled = await call(ctx, 'PATCH', `/admin/webhooks/${webhook.id}`, {
        token: await admin(ctx),
        json: { status: 'disabled' },
      });
      expect(disabled.status, disabled.text).toBe(200);
      const reply = await sendTest(webhook.id, { type: 'run.completed' });
      expect(reply.status, reply.text).toBe(202);
      expect(reply.body.delivery).toMatchObject({
        status: 'held',
        nextAttemptAt: null,
        heldSince: ctx.clock.now().toISOString(),
      });
    });

    it('a type outside the catalog, data that is not an object, or a field the body does not take → 400, nothing written', async () => {
      const { webhook } = await createWebhook();
      expectRefused(await sendTest(webhook.id, { type: 'invoice.paid' }), 400, 'validation_failed', 'type');
      expectRefused(await sendTest(webhook.id, {}), 400, 'validation_failed', 'type');
      expectRefused(
        await sendTest(webhook.id, { type: 'run.completed', data: ['run_1'] }),
        400,
        'validation_failed',
        'data',
      );
      expectRefused(
        await sendTest(webhook.id, { type: 'run.completed', data: 'run_1' }),
        400,
        'validation_failed',
        'data',
      );
      expectRefused(
        await sendTest(webhook.id, { type: 'run.completed', id: 'evt_mine' }),
        400,
        'validation_failed',
      );
      expectRefused(await sendTest(webhook.id, 'run.completed'), 400, 'validation_failed');
      expect((await deliveriesOf(webhook.id)).body.data).toEqual([]);
    });

    it('an unknown webhook, a malformed id, or another tenant’s webhook → 404 not_found, and nothing is written', async () => {
      const { webhook: theirs } = await createWebhook(ctx, 'tenant_b');
      for (const id of [UNKNOWN_WEBHOOK_ID, 'not-a-webhook', theirs.id]) {
        expectRefused(await sendTest(id, { type: 'run.completed' }), 404, 'not_found');
      }
      expect((await deliveriesOf(theirs.id, 'tenant_b')).body.data).toEqual([]);
      // Their own session reaches it.
      expect((await sendTest(theirs.id, { type: 'run.completed' }, 'tenant_b')).status).toBe(202);
    });

    it('needs an admin session: none, or an API key → 401 invalid_admin_session, nothing written', async () => {
      const { webhook } = await createWebhook();
      const apiKey = (await createKey(ctx, { scopes: ['items:read'] })).secret;
      for (const token of [undefined, apiKey]) {
        const reply = await call(ctx, 'POST', `/admin/webhooks/${webhook.id}/test`, {
          token,
          json: { type: 'run.completed' },
        });
        expectRefused(reply, 401, 'invalid_admin_session');
      }
      expect((await deliveriesOf(webhook.id)).body.data).toEqual([]);
    });

    it("is delivered to a real receiver: the type, the host's example as data, a valid signature; then succeeded", async () => {
      const receiver = await TestReceiver.start();
      try {
        const served = await ctx.serve({
          mode: 'development',
          eventCatalog: {
            ...TEST_EVENTS,
            'run.completed': { description: 'A run completed.', example: RUN_EXAMPLE },
          },
        });
        // A poll far off: the test event's own wake-up sends it.
        served.keyhook.createWorker({ pollIntervalMs: 60_000 }).start();
        const { webhook, secret } = await createWebhook(
          served,
          'tenant_a',
          ['run.failed'],
          receiver.url('/hooks'),
        );
        const reply = await sendTest(webhook.id, { type: 'run.completed' }, 'tenant_a', served);
        expect(reply.status, reply.text).toBe(202);

        await receiver.waitFor((requests) => requests.length === 1);
        const [request] = receiver.requests;
        expect(JSON.parse(request!.body)).toEqual({ ...reply.body.event, data: RUN_EXAMPLE });
        expect(request!.headers[served.keyhook.headerNames.eventId]).toBe(reply.body.event.id);
        const signature = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(
          String(request!.headers[served.keyhook.headerNames.signature]),
        );
        expect(signature).not.toBeNull();
        const expected = createHmac('sha256', secret)
          .update(`${signature![1]}.`)
          .update(request!.body)
          .digest('hex');
        expect(signature![2]).toBe(expected);

        let status = '';
        await waitUntil(
          async () => {
            status = (await deliveriesOf(webhook.id, 'tenant_a', served)).body.data[0]?.status;
            return status === 'succeeded';
          },
          10_000,
          () => `the delivery stayed ${status}`,
        );
      } finally {
        await receiver.close();
      }
    });
  });
}
