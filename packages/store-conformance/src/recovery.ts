import { randomBytes } from 'node:crypto';
import { newId } from '@keyhook/core/http';
import type { Store } from '@keyhook/core/store';
import {
  DELIVERY_RULES,
  type DeliveryRecord,
  type EventRecord,
  type LeasedDelivery,
  type WebhookRecord,
} from '@keyhook/core/store';
import { describe, expect, it } from 'vitest';
import { eventRecord, FAILED, retryAt, SUCCEEDED, type Verdict } from './delivery-cases.js';
import { T0, webhookRecord } from './fixtures.js';
import type { SuiteContext } from './store-harness.js';
import { checkTransitions } from './transitions.js';

const at = (ms: number) => new Date(T0.getTime() + ms);
const deliveryId = () => newId('dlv');

/** Core's rule with a threshold far above any count these cases reach: their failures never disable an endpoint. */
const NEVER_DISABLE = { ...DELIVERY_RULES.autoDisable, after: 1000 };

/**
 * Bulk recovery (Store.recoverFailedDeliveries): one batch queues the oldest failed deliveries of
 * one webhook created in [since, until) again, exactly as requeueDelivery queues one.
 */
export function recoveryCases(ctx: SuiteContext): void {
  /** A webhook subscribed to run.completed, inserted (tenant_a unless told otherwise). */
  async function subscribed(overrides: Partial<WebhookRecord> = {}) {
    const webhook = webhookRecord({ events: ['run.completed'], ...overrides });
    expect(await ctx.store.insertWebhook(webhook)).toBe('inserted');
    return webhook;
  }

  /** Publishes one event created (and so due) at `createdAt`; its deliveries, by webhook id. */
  async function publish(createdAt: Date, overrides: Partial<EventRecord> = {}) {
    const outcome = await ctx.store.publishEvent(eventRecord({ createdAt, ...overrides }), deliveryId);
    if (outcome.outcome !== 'published') throw new Error('expected a new event');
    return new Map(outcome.deliveries.map((d) => [d.webhookId, d]));
  }

  /** One delivery of `webhook`, published at `createdAt` (tenant_a's unless the webhook says). */
  async function deliveryOf(webhook: WebhookRecord, createdAt: Date): Promise<DeliveryRecord> {
    const published = await publish(createdAt, { tenantId: webhook.tenantId });
    const delivery = published.get(webhook.id);
    if (!delivery) throw new Error('expected a delivery to the webhook');
    return delivery;
  }

  async function leaseAll(now: Date, store: Store = ctx.store): Promise<LeasedDelivery[]> {
    return store.leaseDeliveries({
      now,
      limit: 1000,
      leaseMs: 30_000,
      leaseId: randomBytes(8).toString('hex'),
    });
  }

  async function complete(leased: LeasedDelivery, verdict: Verdict, now: Date) {
    const { delivery } = leased;
    const outcome = await ctx.store.completeAttempt({
      tenantId: delivery.tenantId,
      deliveryId: delivery.id,
      leaseId: delivery.leaseId!,
      attempt: {
        deliveryId: delivery.id,
        tenantId: delivery.tenantId,
        attempt: delivery.attempts + 1,
        startedAt: now,
        durationMs: 12,
        statusCode: verdict.status === 'succeeded' ? 200 : 500,
        error: verdict.status === 'succeeded' ? null : 'HTTP 500',
        responseBody: '',
      },
      ...verdict,
      autoDisable: NEVER_DISABLE,
      at: now,
    });
    if (outcome.outcome !== 'recorded') throw new Error('expected the attempt to be recorded');
    return outcome.delivery;
  }

  /**
   * Leases everything due at `now` and records one attempt of each: the verdict `verdictOf` gives
   * it, or none (`undefined`: the delivery stays in flight under its lease).
   */
  async function settle(now: Date, verdictOf: (delivery: DeliveryRecord) => Verdict | undefined) {
    for (const leased of await leaseAll(now)) {
      const verdict = verdictOf(leased.delivery);
      if (verdict) await complete(leased, verdict, now);
    }
  }

  /** `count` failed deliveries of `webhook`, created at `createdAt(i)`. */
  async function failed(webhook: WebhookRecord, createdAt: (i: number) => Date, count: number) {
    const deliveries: DeliveryRecord[] = [];
    for (let i = 0; i < count; i++) deliveries.push(await deliveryOf(webhook, createdAt(i)));
    await settle(at(100_000), () => FAILED);
    return deliveries;
  }

  /** Every delivery of the webhook as stored, by id. */
  async function stored(webhook: WebhookRecord): Promise<Map<string, DeliveryRecord>> {
    const list = await ctx.store.listDeliveries(webhook.tenantId, webhook.id, { limit: 1000 });
    return new Map(list.map((d) => [d.id, d]));
  }

  /** What requeueDelivery makes of `before` at `now`: pending and due then, or held since then. */
  const queued = (before: DeliveryRecord, now: Date, held = false): DeliveryRecord => ({
    ...before,
    status: held ? 'held' : 'pending',
    dueAt: held ? null : now,
    heldSince: held ? now : null,
    leaseId: null,
    updatedAt: now,
  });

  describe('bulk recovery of failed deliveries', () => {
    checkTransitions(ctx);
    it("queues exactly the webhook's failed deliveries created in [since, until), pending and due at `at`", async () => {
      const webhook = await subscribed();
      const sibling = await subscribed({ url: 'https://sibling.example.com/hook' });
      const foreign = await subscribed({ tenantId: 'tenant_b' });
      const since = at(1000);
      const until = at(5000);

      // One event per time reaches both of tenant_a's webhooks. Who gets which verdict is
      // decided by delivery id below.
      const times = [999, 1000, 2000, 3000, 3500, 4000, 4999, 5000].map(at);
      const published = new Map<number, Map<string, DeliveryRecord>>();
      for (const time of times) published.set(time.getTime(), await publish(time));
      const ofWebhook = (ms: number) => published.get(at(ms).getTime())!.get(webhook.id)!;
      const ofSibling = (ms: number) => published.get(at(ms).getTime())!.get(sibling.id)!;
      const foreignFailed = await deliveryOf(foreign, at(2000));

      const succeeded = ofWebhook(3000).id;
      const retrying = ofWebhook(3500).id;
      const inFlight = ofWebhook(4000).id;
      await settle(at(100_000), (delivery) => {
        if (delivery.id === succeeded) return SUCCEEDED;
        if (delivery.id === retrying) return retryAt(10_000_000);
        if (delivery.id === inFlight) return undefined;
        return FAILED;
      });
      // Published after the attempts: still pending, due in the window (on both webhooks).
      const pendingPublish = await publish(at(2500));
      const pending = pendingPublish.get(webhook.id)!.id;

      const before = await stored(webhook);
      const siblingBefore = await stored(sibling);
      const foreignBefore = await stored(foreign);
      expect(before.get(succeeded)!.status).toBe('succeeded');
      expect(before.get(retrying)!.status).toBe('retry_scheduled');
      expect(before.get(inFlight)!.status).toBe('in_flight');
      expect(before.get(pending)!.status).toBe('pending');
      expect(siblingBefore.get(ofSibling(2000).id)!.status).toBe('failed');
      expect(foreignBefore.get(foreignFailed.id)!.status).toBe('failed');

      // Before the in-flight delivery's lease runs out (at 130 000), so the lease below leaves it.
      const now = at(110_000);
      expect(
        await ctx.store.recoverFailedDeliveries('tenant_a', webhook.id, since, until, now, 100, now),
      ).toBe(3);

      // The boundary: `since` is in the window, `until` is not.
      const recovered = new Set([ofWebhook(1000).id, ofWebhook(2000).id, ofWebhook(4999).id]);
      const after = await stored(webhook);
      expect(after.size).toBe(before.size);
      for (const [id, was] of before) {
        expect(after.get(id)).toEqual(recovered.has(id) ? queued(was, now) : was);
      }
      expect(after.get(ofWebhook(999).id)!.status).toBe('failed');
      expect(after.get(ofWebhook(5000).id)!.status).toBe('failed');
      // Another webhook of the tenant, and another tenant's, are left as they were.
      expect(await stored(sibling)).toEqual(siblingBefore);
      expect(await stored(foreign)).toEqual(foreignBefore);

      // Due at `at`: a lease then takes the recovered ones (and those left pending), no others.
      const leased = await leaseAll(now);
      expect(leased.map((l) => l.delivery.id).sort()).toEqual(
        [...recovered, ...[...pendingPublish.values()].map((d) => d.id)].sort(),
      );
    });

    it('works in batches of at most `limit`, oldest first (created_at, then id): 2, 2, 1, then 0', async () => {
      const webhook = await subscribed();
      // Published out of order; two share a creation time, so the id decides between them.
      const offsets = [3000, 1000, 4000, 2000, 2000];
      const deliveries = await failed(webhook, (i) => at(offsets[i]!), offsets.length);
      const oldestFirst = [...deliveries].sort(
        (a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1),
      );
      const since = at(0);
      const until = at(10_000);

      const counts: number[] = [];
      const batches: string[][] = [];
      for (let round = 0; round < 4; round++) {
        const before = await stored(webhook);
        const now = at(200_000 + round * 1000);
        counts.push(
          await ctx.store.recoverFailedDeliveries('tenant_a', webhook.id, since, until, now, 2, now),
        );
        const after = await stored(webhook);
        const batch = [...after.values()]
          .filter((d) => before.get(d.id)!.status === 'failed' && d.status === 'pending')
          .map((d) => d.id);
        for (const id of batch) expect(after.get(id)).toEqual(queued(before.get(id)!, now));
        batches.push(batch.sort());
      }
      expect(counts).toEqual([2, 2, 1, 0]);
      const ids = oldestFirst.map((d) => d.id);
      expect(batches).toEqual([ids.slice(0, 2).sort(), ids.slice(2, 4).sort(), ids.slice(4), []]);
    });

    it('queues nothing twice: a second recovery, or one at once on another connection, finds none left', async () => {
      const webhook = await subscribed();
      await failed(webhook, (i) => at(i * 10), 5);
      const since = at(0);
      const until = at(10_000);
      const peer = await ctx.peer();
      // At the same time from two instances: each delivery is queued by one of them only.
      const counts = await Promise.all([
        ctx.store.recoverFailedDeliveries(
          'tenant_a',
          webhook.id,
          since,
          until,
          at(200_000),
          100,
          at(200_000),
        ),
        peer.recoverFailedDeliveries('tenant_a', webhook.id, since, until, at(200_000), 100, at(200_000)),
      ]);
      expect(counts[0]! + counts[1]!).toBe(5);
      const recovered = await stored(webhook);
      expect([...recovered.values()].map((d) => d.status)).toEqual(Array(5).fill('pending'));

      // Again later: nothing is failed any more, so nothing is written.
      expect(
        await ctx.store.recoverFailedDeliveries(
          'tenant_a',
          webhook.id,
          since,
          until,
          at(300_000),
          100,
          at(300_000),
        ),
      ).toBe(0);
      expect(await stored(webhook)).toEqual(recovered);
      // Each is leased once.
      expect(await leaseAll(at(300_000))).toHaveLength(5);
      expect(await leaseAll(at(300_000), peer)).toEqual([]);
    });

    it('one recovery never queues a delivery twice: one that failed again after it began stays failed', async () => {
      const webhook = await subscribed();
      const [first] = await failed(webhook, (i) => at(i * 10), 3);
      const began = at(200_000);
      // The first batch queues the oldest; it is attempted and fails again before the next batch.
      expect(
        await ctx.store.recoverFailedDeliveries('tenant_a', webhook.id, at(0), at(10_000), began, 1, began),
      ).toBe(1);
      await settle(at(200_500), (d) => (d.id === first!.id ? FAILED : undefined));
      expect((await stored(webhook)).get(first!.id)!.status).toBe('failed');
      // Later batches of the same recovery (same `failedBefore`) take the other two, not it.
      const later = at(201_000);
      expect(
        await ctx.store.recoverFailedDeliveries('tenant_a', webhook.id, at(0), at(10_000), later, 10, began),
      ).toBe(2);
      expect((await stored(webhook)).get(first!.id)!.status).toBe('failed');
      // A new recovery, begun after it failed again, takes it.
      expect(
        await ctx.store.recoverFailedDeliveries(
          'tenant_a',
          webhook.id,
          at(0),
          at(10_000),
          at(202_000),
          10,
          at(202_000),
        ),
      ).toBe(1);
    });

    it('holds them on a disabled endpoint (held since `at`, no due time), and leaves held ones as they were', async () => {
      const webhook = await subscribed();
      const deliveries = await failed(webhook, (i) => at(1000 + i), 2);
      await ctx.store.setWebhookStatus('tenant_a', webhook.id, 'disabled', 'manual', at(150_000));
      const alreadyHeld = await deliveryOf(webhook, at(2000));
      expect(alreadyHeld).toMatchObject({ status: 'held', heldSince: at(2000) });
      const before = await stored(webhook);

      const now = at(200_000);
      expect(
        await ctx.store.recoverFailedDeliveries('tenant_a', webhook.id, at(0), at(10_000), now, 100, now),
      ).toBe(2);
      const after = await stored(webhook);
      for (const delivery of deliveries) {
        expect(after.get(delivery.id)).toEqual(queued(before.get(delivery.id)!, now, true));
      }
      expect(after.get(alreadyHeld.id)).toEqual(before.get(alreadyHeld.id));
      expect(await leaseAll(at(10 * 86_400_000))).toEqual([]);

      // Enabling the endpoint releases them with the rest of its queue.
      await ctx.store.setWebhookStatus('tenant_a', webhook.id, 'active', null, at(300_000));
      const released = await leaseAll(at(300_000));
      expect(released.map((l) => l.delivery.id).sort()).toEqual(
        [...deliveries.map((d) => d.id), alreadyHeld.id].sort(),
      );
    });

    it("another tenant's webhook id, or an unknown one, queues nothing and changes nothing", async () => {
      const webhook = await subscribed();
      await subscribed({ tenantId: 'tenant_b' });
      const deliveries = await failed(webhook, (i) => at(i), 3);
      const before = await stored(webhook);
      const recover = (tenantId: string, webhookId: string) =>
        ctx.store.recoverFailedDeliveries(
          tenantId,
          webhookId,
          at(-1000),
          at(10_000),
          at(200_000),
          100,
          at(200_000),
        );
      expect(await recover('tenant_b', webhook.id)).toBe(0);
      expect(await recover('tenant_a', newId('wh'))).toBe(0);
      expect(await stored(webhook)).toEqual(before);
      expect([...before.values()].map((d) => d.status)).toEqual(Array(deliveries.length).fill('failed'));
      expect(await leaseAll(at(200_000))).toEqual([]);
    });

    it('keeps the attempts already made, and a recovered delivery is leased and attempted again', async () => {
      const webhook = await subscribed();
      const delivery = await deliveryOf(webhook, at(1000));
      // A retry, then a permanent failure: two attempts.
      await settle(at(1000), () => retryAt(60_000));
      await settle(at(60_000), () => FAILED);
      const failedDetail = await ctx.store.getDelivery('tenant_a', webhook.id, delivery.id);
      expect(failedDetail!.delivery).toMatchObject({
        status: 'failed',
        attempts: 2,
        lastAttemptAt: at(60_000),
      });

      const now = at(200_000);
      expect(
        await ctx.store.recoverFailedDeliveries('tenant_a', webhook.id, at(0), at(2000), now, 500, now),
      ).toBe(1);
      const detail = await ctx.store.getDelivery('tenant_a', webhook.id, delivery.id);
      expect(detail!.delivery).toEqual(queued(failedDetail!.delivery, now));
      expect(detail!.delivery.attempts).toBe(2);
      expect(detail!.attempts).toEqual(failedDetail!.attempts);
      expect(detail!.event).toEqual(failedDetail!.event);

      const [leased] = await leaseAll(now);
      expect(leased!.delivery).toMatchObject({ id: delivery.id, status: 'in_flight', attempts: 2 });
      expect(leased!.event).toEqual(failedDetail!.event);
      expect(await complete(leased!, SUCCEEDED, at(201_000))).toMatchObject({
        status: 'succeeded',
        attempts: 3,
      });
      const done = await ctx.store.getDelivery('tenant_a', webhook.id, delivery.id);
      expect(done!.attempts.map((a) => a.attempt)).toEqual([1, 2, 3]);
    });
  });
}
