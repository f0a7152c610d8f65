import type { Keyhook } from '@keyhook/core';
import { adminToken, TestReceiver, VirtualClock } from '@keyhook/testing/support';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startedKeyhook } from './worker-harness.js';

const TENANT = 'tenant_a';

/** Bulk recovery: an endpoint's failed deliveries of a window, queued again over real HTTP. */
describe('POST /admin/webhooks/{id}/recover', () => {
  let receiver: TestReceiver;
  let keyhook: Keyhook;
  let clock: VirtualClock;
  let up = false;

  beforeEach(async () => {
    up = false;
    receiver = await TestReceiver.start();
    // Down (500, with no retries: failed for good at once) until the test brings it up.
    for (const path of ['/a', '/b'])
      receiver.on(path, (_request, _index, res) => res.writeHead(up ? 200 : 500).end());
    // Nothing here waits for a retry or a poll: a failure is for good at once, and a recovery or
    // an enable wakes the worker. The clock moves only where a test moves it; each expect.poll
    // below waits for the store to record answers just sent over HTTP.
    ({ keyhook, clock } = startedKeyhook({
      clock: new VirtualClock(new Date()),
      delivery: { retentionMs: 24 * 3_600_000, retrySchedule: [] },
    }));
  });

  afterEach(async () => {
    await keyhook.close();
    await receiver.close();
  });

  const recover = async (webhookId: string, body: unknown, tenantId = TENANT) =>
    keyhook.handle({
      method: 'POST',
      path: `/admin/webhooks/${webhookId}/recover`,
      headers: {
        authorization: `Bearer ${await adminToken({ tenantId, now: clock.now() })}`,
        'content-type': 'application/json',
      },
      rawBody: Buffer.from(JSON.stringify(body)),
    });
  const statuses = async (webhookId: string) =>
    (await keyhook.deliveries.list(TENANT, webhookId, 100, undefined, null)).map((d) => d.status).sort();

  it("queues again exactly that endpoint's failed deliveries in the window, each with its event id, once", async () => {
    const a = await keyhook.webhooks.create(TENANT, { url: receiver.url('/a'), events: ['run.completed'] });
    const b = await keyhook.webhooks.create(TENANT, { url: receiver.url('/b'), events: ['run.failed'] });
    const start = clock.now().toISOString();
    const ids: string[] = [];
    for (let n = 0; n < 3; n++) {
      if (n === 1) await clock.advance(1_000);
      ids.push(
        (await keyhook.events.publish({ tenantId: TENANT, type: 'run.completed', data: { n } })).event.id,
      );
    }
    await keyhook.events.publish({ tenantId: TENANT, type: 'run.failed', data: {} });
    await receiver.waitFor((requests) => requests.length === 4);
    await expect.poll(() => statuses(a.webhook.id)).toEqual(['failed', 'failed', 'failed']);
    await expect.poll(() => statuses(b.webhook.id)).toEqual(['failed']);
    up = true;

    // The window starts after the first event: the other two come back, b's stays failed.
    const since = new Date(Date.parse(start) + 1_000).toISOString();
    const reply = await recover(a.webhook.id, { since });
    expect(reply.status, reply.body!).toBe(202);
    expect(JSON.parse(reply.body!)).toEqual({ queued: 2 });
    await receiver.waitFor((requests) => requests.length === 6);
    const resent = receiver.requests.slice(4).map((request) => request.headers[keyhook.headerNames.eventId]);
    expect(resent.sort()).toEqual([ids[1], ids[2]].sort());
    await expect.poll(() => statuses(a.webhook.id)).toEqual(['failed', 'succeeded', 'succeeded']);
    expect(await statuses(b.webhook.id)).toEqual(['failed']);
    // Nothing failed is left in the window: a second recovery queues nothing.
    expect(JSON.parse((await recover(a.webhook.id, { since })).body!)).toEqual({ queued: 0 });
    // The first event, with a window that holds it.
    expect(JSON.parse((await recover(a.webhook.id, { since: start, until: since })).body!)).toEqual({
      queued: 1,
    });
  });

  it('on a disabled endpoint the recovered deliveries are held until it is enabled', async () => {
    const a = await keyhook.webhooks.create(TENANT, { url: receiver.url('/a'), events: ['run.completed'] });
    const since = clock.now().toISOString();
    await keyhook.events.publish({ tenantId: TENANT, type: 'run.completed', data: {} });
    await expect.poll(() => statuses(a.webhook.id)).toEqual(['failed']);
    await keyhook.webhooks.update(TENANT, a.webhook.id, { status: 'disabled' });
    expect(JSON.parse((await recover(a.webhook.id, { since })).body!)).toEqual({ queued: 1 });
    expect(await statuses(a.webhook.id)).toEqual(['held']);
    up = true;
    await keyhook.webhooks.update(TENANT, a.webhook.id, { status: 'active' });
    await expect.poll(() => statuses(a.webhook.id)).toEqual(['succeeded']);
  });

  it("refuses bad or inverted dates and windows past the retention with 400, another tenant's id with 404", async () => {
    const a = await keyhook.webhooks.create(TENANT, { url: receiver.url('/a'), events: ['run.completed'] });
    const now = clock.now().getTime();
    const iso = (ms: number) => new Date(ms).toISOString();
    for (const body of [
      {},
      { since: 'yesterday' },
      { since: '2026-01-01' },
      { since: iso(now - 1_000), until: iso(now - 2_000) },
      { since: iso(now - 1_000), until: iso(now - 1_000) },
      { since: iso(now - 25 * 3_600_000) },
      { since: iso(now + 60_000) },
      { since: iso(now - 1_000), extra: true },
      { since: 5 },
    ]) {
      const reply = await recover(a.webhook.id, body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect(JSON.parse(reply.body!).error.code).toBe('validation_failed');
    }
    const foreign = await recover(a.webhook.id, { since: iso(now - 1_000) }, 'tenant_b');
    expect(foreign.status).toBe(404);
    expect((await recover('wh_00000000000000000000000000', { since: iso(now - 1_000) })).status).toBe(404);
  });
});
