import { deliveryViewSchema } from '@keyhook/core/http';
import {
  type AttemptRecord,
  DELIVERY_RULES,
  type DeliveryRecord,
  type EventRecord,
} from '@keyhook/core/store';
import { describe, expect, it } from 'vitest';
import { type ApiReply, admin, call, createKey } from './client.js';
import type { SuiteContext } from './suite-context.js';

/** The fields of a delivery's view, sorted: every route that answers with one gives exactly these. */
export const DELIVERY_VIEW_FIELDS = [
  'attemptCount',
  'createdAt',
  'eventId',
  'eventType',
  'heldSince',
  'id',
  'lastAttemptAt',
  'nextAttemptAt',
  'status',
  'test',
  'updatedAt',
  'webhookId',
];
const ATTEMPT_VIEW_FIELDS = ['attempt', 'durationMs', 'error', 'responseBody', 'startedAt', 'statusCode'];
/** Every state a delivery's view may name, as the view's schema (and the OpenAPI document) has them. */
const DELIVERY_STATUSES = deliveryViewSchema.shape.status.options;

/** Written on every delivery the suite leases: it must never reach a response. */
const LEASE_ID = 'lease_suite_must_not_leak_7f3a';
/** A well-formed delivery id that no store holds. */
const UNKNOWN_DELIVERY_ID = 'dlv_00000000000000000000000000';

interface Created {
  webhook: { id: string; url: string; events: string[]; status: string };
  secret: string;
}

interface Published {
  event: EventRecord;
  delivery: DeliveryRecord;
}

type Outcome = 'succeeded' | 'retry_scheduled' | 'failed';

let counter = 0;
const uniqueUrl = () => `https://hooks.example.com/deliveries/${++counter}`;

export function deliveryCases(ctx: SuiteContext): void {
  const createWebhook = async (tenantId = 'tenant_a', events = ['run.completed']): Promise<Created> => {
    const reply = await call(ctx, 'POST', '/admin/webhooks', {
      token: await admin(ctx, tenantId),
      json: { url: uniqueUrl(), events },
    });
    expect(reply.status, reply.text).toBe(201);
    return reply.body as Created;
  };

  /**
   * Publishes one run.completed event and returns it with its delivery to `webhookId`. The
   * clock then moves on a second, so the next id sorts after this one.
   */
  const publish = async (
    webhookId: string,
    tenantId = 'tenant_a',
    data: Record<string, unknown> = { runId: `run_${++counter}` },
  ): Promise<Published> => {
    const published = await ctx.keyhook.events.publish({ tenantId, type: 'run.completed', data });
    const delivery = published.deliveries.find((d) => d.webhookId === webhookId);
    expect(delivery, 'the webhook is subscribed to run.completed').toBeDefined();
    ctx.clock.advance(1_000);
    return { event: published.event, delivery: delivery! };
  };

  /** Leases what is due, which must be exactly `deliveryId`, as a worker would: it is then in_flight. */
  const lease = async (deliveryId: string) => {
    const leased = await ctx.keyhook.store.leaseDeliveries({
      now: ctx.clock.now(),
      limit: 10,
      leaseMs: 30_000,
      leaseId: LEASE_ID,
    });
    expect(leased.map((l) => l.delivery.id)).toEqual([deliveryId]);
    return leased[0]!.delivery;
  };

  /** Leases `deliveryId` and records one finished attempt that leaves it in `status`. */
  const settle = async (
    deliveryId: string,
    status: Outcome,
    attempt: Partial<Omit<AttemptRecord, 'deliveryId' | 'tenantId'>> = {},
    tenantId = 'tenant_a',
    autoDisable = DELIVERY_RULES.autoDisable,
  ): Promise<AttemptRecord> => {
    const leased = await lease(deliveryId);
    const record: AttemptRecord = {
      deliveryId,
      tenantId,
      attempt: leased.attempts + 1,
      startedAt: ctx.clock.now(),
      durationMs: 120,
      statusCode: status === 'succeeded' ? 200 : 500,
      error: status === 'succeeded' ? null : 'receiver answered 500',
      responseBody: status === 'succeeded' ? 'ok' : 'upstream exploded',
      ...attempt,
    };
    const outcome = await ctx.keyhook.store.completeAttempt({
      tenantId,
      deliveryId,
      leaseId: LEASE_ID,
      attempt: record,
      status,
      dueAt: status === 'retry_scheduled' ? new Date(ctx.clock.now().getTime() + 3_600_000) : null,
      endpointFailures: status === 'succeeded' ? 'reset' : status === 'failed' ? 'increment' : 'unchanged',
      autoDisable,
      at: ctx.clock.now(),
    });
    expect(outcome.outcome).toBe('recorded');
    return record;
  };

  const fail = (deliveryId: string, tenantId = 'tenant_a') => settle(deliveryId, 'failed', {}, tenantId);

  const listPath = (webhookId: string, query = '') => `/admin/webhooks/${webhookId}/deliveries${query}`;
  const onePath = (webhookId: string, deliveryId: string) =>
    `/admin/webhooks/${webhookId}/deliveries/${deliveryId}`;
  const retryPath = (webhookId: string, deliveryId: string) => `${onePath(webhookId, deliveryId)}/retry`;

  const list = async (webhookId: string, query = '', tenantId = 'tenant_a') =>
    call(ctx, 'GET', listPath(webhookId, query), { token: await admin(ctx, tenantId) });
  const get = async (webhookId: string, deliveryId: string, tenantId = 'tenant_a') =>
    call(ctx, 'GET', onePath(webhookId, deliveryId), { token: await admin(ctx, tenantId) });
  const retry = async (webhookId: string, deliveryId: string, tenantId = 'tenant_a') =>
    call(ctx, 'POST', retryPath(webhookId, deliveryId), { token: await admin(ctx, tenantId) });

  const ids = (reply: ApiReply): string[] => reply.body.data.map((d: { id: string }) => d.id);

  const expectNotFound = (reply: ApiReply, label: string) => {
    expect(reply.status, `${label}: ${reply.text}`).toBe(404);
    expect(reply.body.error.code, label).toBe('not_found');
  };

  /** No lease id and no signing secret, in any form, in anything the endpoints answered. */
  const expectNothingInternal = (replies: ApiReply[], secret: string) => {
    for (const reply of replies) {
      expect(reply.text).not.toMatch(/leaseId|lease_id/i);
      expect(reply.text).not.toContain(LEASE_ID);
      expect(reply.text).not.toContain('whsec_');
      expect(reply.text).not.toContain(secret);
      expect(reply.text).not.toMatch(/secretSealed|secret_sealed/i);
    }
  };

  describe('delivery endpoints (docs/http-api.md §4.4, docs/decisions.md §8)', () => {
    it('all three need an admin session: none, or an API key → 401 invalid_admin_session', async () => {
      const { webhook } = await createWebhook();
      const { delivery } = await publish(webhook.id);
      await fail(delivery.id);
      const apiKey = (await createKey(ctx, { scopes: ['items:read'] })).secret;
      for (const token of [undefined, apiKey]) {
        const replies = [
          await call(ctx, 'GET', listPath(webhook.id), { token }),
          await call(ctx, 'GET', onePath(webhook.id, delivery.id), { token }),
          await call(ctx, 'POST', retryPath(webhook.id, delivery.id), { token }),
        ];
        for (const reply of replies) {
          expect(reply.status, reply.text).toBe(401);
          expect(reply.body.error.code).toBe('invalid_admin_session');
        }
      }
      // The refused retry changed nothing.
      expect((await get(webhook.id, delivery.id)).body.delivery.status).toBe('failed');
    });

    it('GET list → 200 { data, nextCursor }: this webhook’s deliveries only, newest first', async () => {
      const { webhook } = await createWebhook();
      const { webhook: sibling } = await createWebhook('tenant_a', ['run.completed', 'run.failed']);
      const { webhook: unsubscribed } = await createWebhook('tenant_a', ['run.failed']);
      const published: Published[] = [];
      for (let i = 0; i < 3; i++) published.unshift(await publish(webhook.id));

      const reply = await list(webhook.id);
      expect(reply.status, reply.text).toBe(200);
      expect(reply.headers.get('cache-control')).toBe('no-store');
      expect(Object.keys(reply.body).sort()).toEqual(['data', 'nextCursor']);
      expect(reply.body.nextCursor).toBeNull();
      expect(ids(reply)).toEqual(published.map((p) => p.delivery.id));
      for (const view of reply.body.data) expect(Object.keys(view).sort()).toEqual(DELIVERY_VIEW_FIELDS);
      const oldest = published[2]!;
      expect(reply.body.data[2]).toEqual({
        id: oldest.delivery.id,
        webhookId: webhook.id,
        eventId: oldest.event.id,
        eventType: 'run.completed',
        test: false,
        status: 'pending',
        attemptCount: 0,
        nextAttemptAt: '2026-01-01T00:00:00.000Z',
        heldSince: null,
        lastAttemptAt: null,
        createdAt: '2026-01-01T00:00:00.000Z',
        updatedAt: '2026-01-01T00:00:00.000Z',
      });
      expect(reply.body.data[0].createdAt).toBe('2026-01-01T00:00:02.000Z');
      expect(reply.body.data[0].id).toMatch(/^dlv_[0-9a-z]{26}$/);

      // The sibling got its own deliveries of the same events; the unsubscribed one none.
      const siblings = await list(sibling.id);
      expect(siblings.body.data).toHaveLength(3);
      expect(ids(siblings)).not.toContain(published[0]!.delivery.id);
      expect(siblings.body.data.map((d: { eventId: string }) => d.eventId)).toEqual(
        published.map((p) => p.event.id),
      );
      const none = await list(unsubscribed.id);
      expect(none.status).toBe(200);
      expect(none.body).toEqual({ data: [], nextCursor: null });
    });

    it('pages with ?limit and ?cursor; a bad limit or cursor → 400 naming it', async () => {
      const { webhook } = await createWebhook();
      const all: string[] = [];
      for (let i = 0; i < 5; i++) all.unshift((await publish(webhook.id)).delivery.id);

      const seen: string[] = [];
      let cursor: string | null = null;
      const pages: number[] = [];
      do {
        const reply = await list(webhook.id, `?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        expect(reply.status, reply.text).toBe(200);
        pages.push(reply.body.data.length);
        seen.push(...ids(reply));
        cursor = reply.body.nextCursor;
      } while (cursor !== null && pages.length < 10);
      expect(pages).toEqual([2, 2, 1]);
      expect(seen).toEqual(all);

      // Exactly one page's worth: no cursor to an empty page.
      expect((await list(webhook.id, '?limit=5')).body.nextCursor).toBeNull();

      for (const [query, path] of [
        ['?limit=0', 'limit'],
        ['?limit=101', 'limit'],
        ['?limit=two', 'limit'],
        ['?cursor=not-a-cursor-we-made', 'cursor'],
        // A cursor of another list (a webhook id) is not a delivery cursor.
        [`?cursor=${Buffer.from(webhook.id).toString('base64url')}`, 'cursor'],
      ] as const) {
        const reply = await list(webhook.id, query);
        expect(reply.status, query).toBe(400);
        expect(reply.body.error.code).toBe('validation_failed');
        expect(reply.body.error.details[0].path, query).toBe(path);
      }
    });

    it('?status= keeps one state (and pages within it); any other value → 400 naming status', async () => {
      const token = await admin(ctx);
      const { webhook } = await createWebhook();
      const failed = (await publish(webhook.id)).delivery.id;
      await fail(failed);
      const succeeded = (await publish(webhook.id)).delivery.id;
      await settle(succeeded, 'succeeded');
      const scheduled = (await publish(webhook.id)).delivery.id;
      await settle(scheduled, 'retry_scheduled');
      const inFlight = (await publish(webhook.id)).delivery.id;
      await lease(inFlight);
      const pending = [(await publish(webhook.id)).delivery.id, (await publish(webhook.id)).delivery.id];

      const expected: Record<string, string[]> = {
        pending: [pending[1]!, pending[0]!],
        in_flight: [inFlight],
        retry_scheduled: [scheduled],
        succeeded: [succeeded],
        failed: [failed],
        held: [],
      };
      for (const status of DELIVERY_STATUSES) {
        const reply = await list(webhook.id, `?status=${status}`);
        expect(reply.status, `${status}: ${reply.text}`).toBe(200);
        expect(ids(reply), status).toEqual(expected[status]);
        for (const view of reply.body.data) expect(view.status).toBe(status);
      }
      expect(ids(await list(webhook.id))).toHaveLength(6);

      // In flight: the lease's end is no attempt anyone should wait for.
      const flying = (await list(webhook.id, '?status=in_flight')).body.data[0];
      expect(flying.nextAttemptAt).toBeNull();
      const waiting = (await list(webhook.id, '?status=retry_scheduled')).body.data[0];
      expect(waiting).toMatchObject({ attemptCount: 1, lastAttemptAt: '2026-01-01T00:00:03.000Z' });
      expect(waiting.nextAttemptAt).toBe('2026-01-01T01:00:03.000Z');

      // The filter and the cursor together.
      const first = await list(webhook.id, '?status=pending&limit=1');
      expect(ids(first)).toEqual([pending[1]]);
      const second = await list(webhook.id, `?status=pending&limit=1&cursor=${first.body.nextCursor}`);
      expect(ids(second)).toEqual([pending[0]]);
      expect(second.body.nextCursor).toBeNull();

      // Disabling the endpoint holds its pending and scheduled deliveries: ?status=held finds them.
      const off = await call(ctx, 'PATCH', `/admin/webhooks/${webhook.id}`, {
        token,
        json: { status: 'disabled' },
      });
      expect(off.status).toBe(200);
      const held = await list(webhook.id, '?status=held');
      expect(ids(held)).toEqual([pending[1], pending[0], scheduled]);
      for (const view of held.body.data) {
        expect(view).toMatchObject({ nextAttemptAt: null, heldSince: '2026-01-01T00:00:06.000Z' });
      }
      expect(ids(await list(webhook.id, '?status=pending'))).toEqual([]);

      for (const status of ['bogus', 'FAILED', 'pending,failed', 'done']) {
        const reply = await list(webhook.id, `?status=${encodeURIComponent(status)}`);
        expect(reply.status, status).toBe(400);
        expect(reply.body.error.code).toBe('validation_failed');
        expect(reply.body.error.details[0].path).toBe('status');
      }
    });

    it('narrows by ?type=, ?eventId=, ?since= and ?until=, with ?status= and the cursor; bad values → 400 naming them', async () => {
      const { webhook } = await createWebhook('tenant_a', ['run.completed', 'run.failed']);
      const completed = [(await publish(webhook.id)).delivery, (await publish(webhook.id)).delivery];
      const failedEvent = await ctx.keyhook.events.publish({
        tenantId: 'tenant_a',
        type: 'run.failed',
        data: { runId: 'run_f' },
      });
      ctx.clock.advance(1_000);
      const failed = failedEvent.deliveries.find((d) => d.webhookId === webhook.id)!;
      const third = (await publish(webhook.id)).delivery;

      expect(ids(await list(webhook.id, '?type=run.failed'))).toEqual([failed.id]);
      expect(ids(await list(webhook.id, '?type=run.completed'))).toEqual([
        third.id,
        completed[1]!.id,
        completed[0]!.id,
      ]);
      expect(ids(await list(webhook.id, '?type=run.started'))).toEqual([]);
      expect(ids(await list(webhook.id, `?eventId=${completed[0]!.eventId}`))).toEqual([completed[0]!.id]);
      // since is inclusive, until exclusive: the window holds the second and the failed one.
      const window = `?since=${completed[1]!.createdAt.toISOString()}&until=${third.createdAt.toISOString()}`;
      expect(ids(await list(webhook.id, window))).toEqual([failed.id, completed[1]!.id]);
      const offset = encodeURIComponent(completed[1]!.createdAt.toISOString().replace('Z', '+00:00'));
      expect(ids(await list(webhook.id, `?since=${offset}`))).toEqual([
        third.id,
        failed.id,
        completed[1]!.id,
      ]);
      expect(ids(await list(webhook.id, '?type=run.failed&status=pending'))).toEqual([failed.id]);
      expect(ids(await list(webhook.id, '?type=run.failed&status=failed'))).toEqual([]);
      const first = await list(webhook.id, '?type=run.completed&limit=2');
      expect(ids(first)).toEqual([third.id, completed[1]!.id]);
      const second = await list(webhook.id, `?type=run.completed&limit=2&cursor=${first.body.nextCursor}`);
      expect(ids(second)).toEqual([completed[0]!.id]);
      // Another tenant's event id finds nothing of this endpoint's.
      const theirs = await createWebhook('tenant_b');
      const other = await publish(theirs.webhook.id, 'tenant_b');
      expect(ids(await list(webhook.id, `?eventId=${other.event.id}`))).toEqual([]);

      for (const [query, path] of [
        ['?since=yesterday', 'since'],
        ['?until=2026-01-01', 'until'],
        ['?since=2026-01-01T00:00:00', 'since'],
        [`?since=${third.createdAt.toISOString()}&until=${completed[0]!.createdAt.toISOString()}`, 'until'],
        ['?type=', 'type'],
        [`?eventId=${'e'.repeat(256)}`, 'eventId'],
      ] as const) {
        const reply = await list(webhook.id, query);
        expect(reply.status, query).toBe(400);
        expect(reply.body.error).toMatchObject({ code: 'validation_failed', details: [{ path }] });
      }
    });

    it('GET one → 200 { delivery, event, attempts }: the event as sent, attempts oldest first', async () => {
      const { webhook } = await createWebhook();
      const data = { runId: 'run_42', nested: { ok: false, list: [1, 'two', null] }, note: 'caf\u00e9' };
      const { event, delivery } = await publish(webhook.id, 'tenant_a', data);
      const first = await settle(delivery.id, 'retry_scheduled', {
        durationMs: 1_234,
        statusCode: 503,
        error: 'receiver answered 503',
        responseBody: 'try later',
      });
      ctx.clock.advance(3_600_000);
      const second = await settle(delivery.id, 'failed', {
        durationMs: 10_000,
        statusCode: null,
        error: 'timed out after 10000 ms',
        responseBody: null,
      });
      ctx.clock.advance(1_000);

      const reply = await get(webhook.id, delivery.id);
      expect(reply.status, reply.text).toBe(200);
      expect(reply.headers.get('cache-control')).toBe('no-store');
      expect(Object.keys(reply.body).sort()).toEqual(['attempts', 'delivery', 'event']);
      expect(Object.keys(reply.body.delivery).sort()).toEqual(DELIVERY_VIEW_FIELDS);
      expect(reply.body.delivery).toEqual({
        id: delivery.id,
        webhookId: webhook.id,
        eventId: event.id,
        eventType: 'run.completed',
        test: false,
        status: 'failed',
        attemptCount: 2,
        nextAttemptAt: null,
        heldSince: null,
        lastAttemptAt: second.startedAt.toISOString(),
        createdAt: '2026-01-01T00:00:00.000Z',
        updatedAt: '2026-01-01T01:00:01.000Z',
      });
      expect(reply.body.event).toEqual({
        id: event.id,
        type: 'run.completed',
        createdAt: '2026-01-01T00:00:00.000Z',
        data,
      });
      expect(reply.body.event).toEqual(JSON.parse(event.payload));
      expect(reply.body.attempts).toHaveLength(2);
      for (const attempt of reply.body.attempts) {
        expect(Object.keys(attempt).sort()).toEqual(ATTEMPT_VIEW_FIELDS);
      }
      expect(reply.body.attempts).toEqual([
        {
          attempt: 1,
          startedAt: first.startedAt.toISOString(),
          durationMs: 1_234,
          statusCode: 503,
          error: 'receiver answered 503',
          responseBody: 'try later',
        },
        {
          attempt: 2,
          startedAt: second.startedAt.toISOString(),
          durationMs: 10_000,
          statusCode: null,
          error: 'timed out after 10000 ms',
          responseBody: null,
        },
      ]);

      // A fresh delivery has no attempts yet.
      const fresh = await publish(webhook.id);
      const untried = await get(webhook.id, fresh.delivery.id);
      expect(untried.body.attempts).toEqual([]);
      expect(untried.body.delivery).toMatchObject({
        status: 'pending',
        attemptCount: 0,
        lastAttemptAt: null,
      });
    });

    it('no response carries a lease id or a signing secret, an in-flight delivery’s included', async () => {
      const { webhook, secret } = await createWebhook();
      const rotated = await call(ctx, 'POST', `/admin/webhooks/${webhook.id}/rotate`, {
        token: await admin(ctx),
      });
      expect(rotated.status).toBe(200);
      const failed = (await publish(webhook.id)).delivery.id;
      await fail(failed);
      const flying = (await publish(webhook.id)).delivery.id;
      const leased = await lease(flying);
      expect(leased.leaseId).toBe(LEASE_ID);
      const replies = [
        await list(webhook.id),
        await list(webhook.id, '?status=in_flight'),
        await get(webhook.id, flying),
        await get(webhook.id, failed),
        await retry(webhook.id, failed),
        await retry(webhook.id, flying),
      ];
      expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200, 202, 409]);
      expect(replies[2]!.body.delivery.status).toBe('in_flight');
      expectNothingInternal(replies, secret);
      expectNothingInternal(replies, rotated.body.secret);
    });

    it('POST retry of a failed delivery → 202 { delivery } pending, due now; GET and the list then show it pending', async () => {
      const { webhook } = await createWebhook();
      const { delivery } = await publish(webhook.id);
      await fail(delivery.id);
      ctx.clock.advance(60_000);

      const reply = await retry(webhook.id, delivery.id);
      expect(reply.status, reply.text).toBe(202);
      expect(reply.headers.get('cache-control')).toBe('no-store');
      expect(Object.keys(reply.body)).toEqual(['delivery']);
      expect(Object.keys(reply.body.delivery).sort()).toEqual(DELIVERY_VIEW_FIELDS);
      const now = ctx.clock.now().toISOString();
      expect(reply.body.delivery).toMatchObject({
        id: delivery.id,
        status: 'pending',
        // Attempts already made are kept and counted.
        attemptCount: 1,
        nextAttemptAt: now,
        heldSince: null,
        updatedAt: now,
      });

      const after = await get(webhook.id, delivery.id);
      expect(after.status).toBe(200);
      expect(after.body.delivery).toEqual(reply.body.delivery);
      expect(after.body.attempts).toHaveLength(1);
      expect(ids(await list(webhook.id, '?status=failed'))).toEqual([]);
      expect(ids(await list(webhook.id, '?status=pending'))).toEqual([delivery.id]);

      // Queued again: a second retry is refused, and a worker would take it now.
      const again = await retry(webhook.id, delivery.id);
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe('delivery_not_retryable');
      await lease(delivery.id);
    });

    it('POST recover → 202 { queued }: the failed deliveries of the window, pending again; once', async () => {
      const { webhook } = await createWebhook();
      const since = ctx.clock.now().toISOString();
      const failed = [];
      for (let n = 0; n < 3; n++) {
        const { delivery } = await publish(webhook.id);
        await fail(delivery.id);
        failed.push(delivery.id);
      }
      const token = await admin(ctx);
      const recover = (json: unknown, tenant = token) =>
        call(ctx, 'POST', `/admin/webhooks/${webhook.id}/recover`, { token: tenant, json });
      const reply = await recover({ since });
      expect(reply.status, reply.text).toBe(202);
      expect(reply.body).toEqual({ queued: 3 });
      expect(ids(await list(webhook.id, '?status=pending')).sort()).toEqual([...failed].sort());
      expect((await recover({ since })).body).toEqual({ queued: 0 });
      const bad = await recover({ since: 'soon' });
      expect(bad.status).toBe(400);
      expect(bad.body.error.code).toBe('validation_failed');
      expect((await recover({ since }, await admin(ctx, 'tenant_b'))).status).toBe(404);
    });

    it('POST retry of a succeeded delivery resends it, and of a scheduled one brings it forward: 202 pending, due now, same event', async () => {
      const { webhook } = await createWebhook();
      const succeeded = await publish(webhook.id);
      await settle(succeeded.delivery.id, 'succeeded');
      const scheduled = await publish(webhook.id);
      await settle(scheduled.delivery.id, 'retry_scheduled');
      expect((await get(webhook.id, scheduled.delivery.id)).body.delivery.nextAttemptAt).not.toBe(
        ctx.clock.now().toISOString(),
      );
      ctx.clock.advance(60_000);
      const now = ctx.clock.now().toISOString();
      for (const { delivery, event } of [succeeded, scheduled]) {
        const reply = await retry(webhook.id, delivery.id);
        expect(reply.status, reply.text).toBe(202);
        expect(reply.body.delivery).toMatchObject({
          id: delivery.id,
          eventId: event.id,
          status: 'pending',
          attemptCount: 1,
          nextAttemptAt: now,
          updatedAt: now,
        });
        // A worker takes it now (settle leases exactly it), and its next attempt is the second, of the same event.
        await settle(delivery.id, 'succeeded');
        const detail = (await get(webhook.id, delivery.id)).body;
        expect(detail.event.id).toBe(event.id);
        expect(detail.attempts.map((a: { attempt: number }) => a.attempt)).toEqual([1, 2]);
      }
    });

    it('a 410 Gone answer shows in reads: the endpoint disabled, with the reason gone', async () => {
      const token = await admin(ctx);
      const { webhook } = await createWebhook();
      const { delivery } = await publish(webhook.id);
      await settle(delivery.id, 'failed', { statusCode: 410, error: null }, 'tenant_a', DELIVERY_RULES.gone);
      const read = await call(ctx, 'GET', `/admin/webhooks/${webhook.id}`, { token });
      expect(read.body.webhook).toMatchObject({ status: 'disabled', disabledReason: 'gone' });
      const listed = await call(ctx, 'GET', '/admin/webhooks', { token });
      expect(listed.body.data).toEqual([expect.objectContaining({ id: webhook.id, disabledReason: 'gone' })]);
    });

    it('POST retry of a delivery pending, in flight or held → 409 delivery_not_retryable, and it stays as it was', async () => {
      const token = await admin(ctx);
      const { webhook } = await createWebhook();
      const inFlight = (await publish(webhook.id)).delivery.id;
      await lease(inFlight);
      const pending = (await publish(webhook.id)).delivery.id;

      const cases: [string, string][] = [
        [pending, 'pending'],
        [inFlight, 'in_flight'],
      ];
      for (const [id, status] of cases) {
        const before = (await get(webhook.id, id)).body.delivery;
        expect(before.status).toBe(status);
        const reply = await retry(webhook.id, id);
        expect(reply.status, `${status}: ${reply.text}`).toBe(409);
        expect(reply.body.error.code).toBe('delivery_not_retryable');
        expect((await get(webhook.id, id)).body.delivery).toEqual(before);
      }

      // Held (endpoint disabled) waits for the endpoint: not queued again either.
      await call(ctx, 'PATCH', `/admin/webhooks/${webhook.id}`, { token, json: { status: 'disabled' } });
      expect((await get(webhook.id, pending)).body.delivery.status).toBe('held');
      const held = await retry(webhook.id, pending);
      expect(held.status).toBe(409);
      expect(held.body.error.code).toBe('delivery_not_retryable');
      expect((await get(webhook.id, pending)).body.delivery.status).toBe('held');
    });

    it('POST retry while the webhook is disabled → 202 with status held; enabling releases it', async () => {
      const token = await admin(ctx);
      const { webhook } = await createWebhook();
      const { delivery } = await publish(webhook.id);
      await fail(delivery.id);
      ctx.clock.advance(5_000);
      const off = await call(ctx, 'PATCH', `/admin/webhooks/${webhook.id}`, {
        token,
        json: { status: 'disabled' },
      });
      expect(off.status).toBe(200);
      // Disabling leaves a failed delivery failed.
      expect((await get(webhook.id, delivery.id)).body.delivery.status).toBe('failed');
      ctx.clock.advance(5_000);

      const reply = await retry(webhook.id, delivery.id);
      expect(reply.status, reply.text).toBe(202);
      const now = ctx.clock.now().toISOString();
      expect(reply.body.delivery).toMatchObject({
        id: delivery.id,
        status: 'held',
        heldSince: now,
        nextAttemptAt: null,
        attemptCount: 1,
      });
      expect((await get(webhook.id, delivery.id)).body.delivery).toEqual(reply.body.delivery);
      // Held: no worker takes it while the endpoint is off.
      expect(
        await ctx.keyhook.store.leaseDeliveries({
          now: ctx.clock.now(),
          limit: 10,
          leaseMs: 30_000,
          leaseId: LEASE_ID,
        }),
      ).toEqual([]);

      ctx.clock.advance(5_000);
      const on = await call(ctx, 'PATCH', `/admin/webhooks/${webhook.id}`, {
        token,
        json: { status: 'active' },
      });
      expect(on.status).toBe(200);
      expect((await get(webhook.id, delivery.id)).body.delivery).toMatchObject({
        status: 'pending',
        heldSince: null,
        nextAttemptAt: ctx.clock.now().toISOString(),
      });
    });

    it('unknown and malformed ids → 404 not_found; a delivery under another webhook’s path → 404', async () => {
      const { webhook } = await createWebhook();
      const { webhook: other } = await createWebhook('tenant_a', ['run.failed']);
      const { delivery } = await publish(webhook.id);
      await fail(delivery.id);

      for (const id of [
        UNKNOWN_DELIVERY_ID,
        'nope',
        'dlv_123',
        delivery.id.toUpperCase(),
        `${delivery.id}x`,
        webhook.id,
        delivery.id.replace(/^dlv_/, 'evt_'),
      ]) {
        expectNotFound(await get(webhook.id, id), `GET ${id}`);
        expectNotFound(await retry(webhook.id, id), `retry ${id}`);
      }
      for (const id of ['wh_00000000000000000000000000', 'nope', delivery.id]) {
        expectNotFound(await list(id), `list ${id}`);
        expectNotFound(await get(id, delivery.id), `GET under ${id}`);
        expectNotFound(await retry(id, delivery.id), `retry under ${id}`);
      }
      // The right delivery id under the tenant's other webhook.
      expectNotFound(await get(other.id, delivery.id), 'GET under the other webhook');
      expectNotFound(await retry(other.id, delivery.id), 'retry under the other webhook');
      expect((await get(webhook.id, delivery.id)).body.delivery.status).toBe('failed');
    });

    it('tenant isolation: tenant_b gets 404 on list, GET and retry of tenant_a’s, which stay as they were', async () => {
      const { webhook } = await createWebhook('tenant_a');
      const { delivery } = await publish(webhook.id, 'tenant_a');
      await fail(delivery.id, 'tenant_a');
      const { webhook: theirs } = await createWebhook('tenant_b');
      const { delivery: theirDelivery } = await publish(theirs.id, 'tenant_b');

      expectNotFound(await list(webhook.id, '', 'tenant_b'), 'list');
      expectNotFound(await list(webhook.id, '?status=failed', 'tenant_b'), 'list ?status=failed');
      expectNotFound(await get(webhook.id, delivery.id, 'tenant_b'), 'GET');
      expectNotFound(await retry(webhook.id, delivery.id, 'tenant_b'), 'retry');
      // tenant_a's delivery id under tenant_b's own webhook.
      expectNotFound(await get(theirs.id, delivery.id, 'tenant_b'), 'GET under their webhook');
      expectNotFound(await retry(theirs.id, delivery.id, 'tenant_b'), 'retry under their webhook');
      // And the other way round.
      expectNotFound(await get(theirs.id, theirDelivery.id, 'tenant_a'), 'tenant_a reading tenant_b');

      const mine = await get(webhook.id, delivery.id, 'tenant_a');
      expect(mine.status).toBe(200);
      expect(mine.body.delivery).toMatchObject({ status: 'failed', attemptCount: 1 });
      expect(ids(await list(theirs.id, '', 'tenant_b'))).toEqual([theirDelivery.id]);
      // tenant_a's event made no delivery for tenant_b's webhook, and the other way round.
      expect(ids(await list(webhook.id, '', 'tenant_a'))).toEqual([delivery.id]);
    });

    it('after DELETE of the webhook its deliveries → 404 on list, GET and retry', async () => {
      const token = await admin(ctx);
      const { webhook } = await createWebhook();
      const failed = (await publish(webhook.id)).delivery.id;
      await fail(failed);
      const pending = (await publish(webhook.id)).delivery.id;
      expect((await get(webhook.id, failed)).status).toBe(200);

      const deleted = await call(ctx, 'DELETE', `/admin/webhooks/${webhook.id}`, { token });
      expect(deleted.status).toBe(204);
      expectNotFound(await list(webhook.id), 'list');
      for (const id of [failed, pending]) {
        expectNotFound(await get(webhook.id, id), `GET ${id}`);
        expectNotFound(await retry(webhook.id, id), `retry ${id}`);
      }
      // Cancelled: no worker sends them.
      expect(
        await ctx.keyhook.store.leaseDeliveries({
          now: ctx.clock.now(),
          limit: 10,
          leaseMs: 30_000,
          leaseId: LEASE_ID,
        }),
      ).toEqual([]);
    });
  });
}
