import { newId } from '@keyhook/core/http';
import type { Store } from '@keyhook/core/store';
import {
  DELIVERY_RULES,
  ENDPOINT_RATE_RULE,
  type LeasedDelivery,
  type RateWait,
  type WebhookRecord,
} from '@keyhook/core/store';
import { describe, expect, it } from 'vitest';
import { eventRecord } from './delivery-cases.js';
import { subscriptionOf, T0, webhookRecord } from './fixtures.js';
import type { SuiteContext } from './store-harness.js';

const at = (ms: number) => new Date(T0.getTime() + ms);
const deliveryId = () => newId('dlv');

/**
 * An endpoint's delivery rate (docs/decisions.md §8.18): each store applies core's paceEndpoint
 * in its lease claim. At 10/s the interval is 100 ms (ENDPOINT_RATE_RULE: a slot may be taken
 * 5 ms early, kept 20 ms late), so the first lease at T0 sets the next slot to T0 + 100 and the
 * deliveries over the rate get the slots T0 + 100, + 200, + 300, … (the same on every store).
 */
export function endpointRateCases(ctx: SuiteContext): void {
  const TEN_PER_SECOND = { perSecond: 10 };

  async function inserted(overrides: Partial<WebhookRecord> = {}, store: Store = ctx.store) {
    const webhook = webhookRecord({ events: ['run.completed'], ...overrides });
    expect(await store.insertWebhook(webhook)).toBe('inserted');
    return webhook;
  }

  /** `count` events, the first the oldest (T0 − count ms … T0 − 1 ms), each to every subscriber. */
  async function publish(count: number, store: Store = ctx.store): Promise<void> {
    for (let i = 0; i < count; i++) {
      const outcome = await store.publishEvent(eventRecord({ createdAt: at(i - count) }), deliveryId);
      expect(outcome.outcome).toBe('published');
    }
  }

  /** A claim at `now` with core's rule, and what it told of the rates. */
  async function lease(now: Date, store: Store = ctx.store, limit = 100) {
    const waits: RateWait[] = [];
    const leased = await store.leaseDeliveries({
      now,
      limit,
      leaseMs: 30_000,
      leaseId: newId('dlv'),
      rate: ENDPOINT_RATE_RULE,
      onRateWait: (wait) => waits.push(wait),
    });
    return { leased, waits };
  }

  const of = (leased: LeasedDelivery[], webhook: WebhookRecord) =>
    leased.filter((l) => l.webhook.id === webhook.id);

  /** The webhook's queued deliveries, oldest due first, as [due ms after T0, status, attempts]. */
  async function waiting(webhook: WebhookRecord, store: Store = ctx.store) {
    const all = await store.listDeliveries(webhook.tenantId, webhook.id, { limit: 100 });
    return all
      .filter((d) => d.status === 'pending' || d.status === 'retry_scheduled')
      .map((d) => [d.dueAt!.getTime() - T0.getTime(), d.status, d.attempts] as const)
      .sort((a, b) => a[0] - b[0]);
  }

  describe('endpoint delivery rates (docs/decisions.md §8.18)', () => {
    it('stores the rate, reads it back, and an endpoint without one reads null', async () => {
      const limited = await inserted({ deliveryRate: { perSecond: 0.5 } });
      const free = await inserted();
      expect((await ctx.store.getWebhook('tenant_a', limited.id))!.deliveryRate).toEqual({ perSecond: 0.5 });
      expect((await ctx.store.getWebhook('tenant_a', free.id))!.deliveryRate).toBeNull();
      const listed = await ctx.store.listWebhooks('tenant_a', { limit: 10 });
      expect(listed.find((w) => w.id === limited.id)!.deliveryRate).toEqual({ perSecond: 0.5 });
      expect(listed.find((w) => w.id === free.id)!.deliveryRate).toBeNull();
    });

    it("leases a limited endpoint's due deliveries at most at its rate; the rest wait, attempts unchanged, until their slot; an unlimited endpoint's go beside them", async () => {
      const limited = await inserted({ deliveryRate: TEN_PER_SECOND });
      const free = await inserted();
      await publish(4);

      const first = await lease(T0);
      expect(of(first.leased, free)).toHaveLength(4);
      expect(of(first.leased, limited)).toHaveLength(1);
      expect(first.waits).toEqual([{ deferred: 3, nextSlotAt: at(100), nextSlots: [at(100)] }]);
      expect(await waiting(limited)).toEqual([
        [100, 'pending', 0],
        [200, 'pending', 0],
        [300, 'pending', 0],
      ]);

      // Before its slot, nothing; at each slot, one.
      expect((await lease(at(99))).leased).toEqual([]);
      const times: number[] = [0];
      for (const slot of [100, 200, 300]) {
        const claim = await lease(at(slot));
        expect(of(claim.leased, limited)).toHaveLength(1);
        expect(claim.waits).toEqual([
          { deferred: 0, nextSlotAt: at(slot + 100), nextSlots: [at(slot + 100)] },
        ]);
        times.push(slot);
      }
      expect(await waiting(limited)).toEqual([]);
      expect((await lease(at(10_000))).leased).toEqual([]);
      // Never two leases closer than an interval less what the rule allows early and late (100 − 25 ms).
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(75);
    });

    it('a claim that meets several limited endpoints tells the next slot of each, the earliest as nextSlotAt', async () => {
      const ten = await inserted({ deliveryRate: TEN_PER_SECOND });
      const two = await inserted({ deliveryRate: { perSecond: 2 } });
      await publish(3);
      const claim = await lease(T0);
      expect(of(claim.leased, ten)).toHaveLength(1);
      expect(of(claim.leased, two)).toHaveLength(1);
      expect(claim.waits).toHaveLength(1);
      const [wait] = claim.waits;
      expect(wait!.deferred).toBe(4);
      expect(wait!.nextSlotAt).toEqual(at(100));
      expect([...wait!.nextSlots].sort((a, b) => a.getTime() - b.getTime())).toEqual([at(100), at(500)]);
    });

    it("a claim gives slots to the due deliveries of a limited endpoint it meets beyond its limit, up to the rule's spread", async () => {
      const limited = await inserted({ deliveryRate: TEN_PER_SECOND });
      await publish(5);
      const first = await lease(T0, ctx.store, 2);
      expect(first.leased).toHaveLength(1);
      expect(first.waits).toEqual([{ deferred: 4, nextSlotAt: at(100), nextSlots: [at(100)] }]);
      expect((await waiting(limited)).map(([due]) => due)).toEqual([100, 200, 300, 400]);
      expect(await lease(T0, ctx.store, 2)).toEqual({ leased: [], waits: [] });
      // At the slot, one goes; the rest keep theirs.
      const atSlot = await lease(at(100));
      expect(atSlot.leased).toHaveLength(1);
      expect(atSlot.waits).toEqual([{ deferred: 0, nextSlotAt: at(200), nextSlots: [at(200)] }]);
      expect((await waiting(limited)).map(([due]) => due)).toEqual([200, 300, 400]);
    });

    it('with a spread of 1, a claim gives a slot to one more only; the next claim continues after the slots given', async () => {
      const limited = await inserted({ deliveryRate: TEN_PER_SECOND });
      await publish(5);
      const rate = { ...ENDPOINT_RATE_RULE, spread: 1 };
      const claim = (limit: number) =>
        ctx.store.leaseDeliveries({ now: T0, limit, leaseMs: 30_000, leaseId: newId('dlv'), rate });
      expect(await claim(2)).toHaveLength(1);
      // The oldest refused takes the next slot, one more the one after; two are still due.
      expect((await waiting(limited)).map(([due]) => due)).toEqual([-2, -1, 100, 200]);
      expect(await claim(1)).toEqual([]);
      expect((await waiting(limited)).map(([due]) => due)).toEqual([100, 200, 300, 400]);
    });

    it('deliveries published one at a time, each paced by a claim of its own, get a slot each: their due time is when they go', async () => {
      const limited = await inserted({ deliveryRate: TEN_PER_SECOND });
      for (const ms of [0, 1, 2, 3]) {
        await ctx.store.publishEvent(eventRecord({ createdAt: at(ms) }), deliveryId);
        await lease(at(ms));
      }
      expect((await waiting(limited)).map(([due]) => due)).toEqual([100, 200, 300]);
      // Each goes at its due time, and not before.
      for (const slot of [100, 200, 300]) {
        expect((await lease(at(slot - 6))).leased).toEqual([]);
        expect(of((await lease(at(slot))).leased, limited)).toHaveLength(1);
      }
    });

    it('a retry over the rate stays retry_scheduled with its attempt count', async () => {
      const limited = await inserted({ deliveryRate: TEN_PER_SECOND });
      await publish(2);
      const { leased } = await lease(T0);
      expect(leased).toHaveLength(1);
      const recorded = await ctx.store.completeAttempt({
        tenantId: 'tenant_a',
        deliveryId: leased[0]!.delivery.id,
        leaseId: leased[0]!.delivery.leaseId!,
        attempt: {
          deliveryId: leased[0]!.delivery.id,
          tenantId: 'tenant_a',
          attempt: 1,
          startedAt: T0,
          durationMs: 5,
          statusCode: 500,
          error: null,
          responseBody: null,
        },
        status: 'retry_scheduled',
        dueAt: at(105),
        endpointFailures: 'increment',
        autoDisable: DELIVERY_RULES.autoDisable,
        at: at(10),
      });
      expect(recorded).toMatchObject({ outcome: 'recorded', delivery: { status: 'retry_scheduled' } });
      // At T0 + 110 both are due (the waiting one since 100); one slot: the older due goes, the retry waits.
      const claim = await lease(at(110));
      expect(claim.leased).toHaveLength(1);
      expect(claim.waits).toEqual([{ deferred: 1, nextSlotAt: at(200), nextSlots: [at(200)] }]);
      expect(await waiting(limited)).toEqual([[200, 'retry_scheduled', 1]]);
    });

    it('slots are shared by every connection: a claim on another one continues the same pace', async () => {
      const limited = await inserted({ deliveryRate: TEN_PER_SECOND });
      await publish(1);
      expect((await lease(T0)).leased).toHaveLength(1);
      const peer = await ctx.peer();
      await publish(2, peer);
      const claim = await lease(at(10), peer);
      expect(claim.leased).toEqual([]);
      expect(claim.waits).toEqual([{ deferred: 2, nextSlotAt: at(100), nextSlots: [at(100)] }]);
      expect((await waiting(limited)).map(([due]) => due)).toEqual([100, 200]);
    });

    it('a publish that leases for its worker (the handoff) leaves a limited endpoint its delivery pending', async () => {
      const limited = await inserted({ deliveryRate: TEN_PER_SECOND });
      const free = await inserted();
      const outcome = await ctx.store.publishEvent(eventRecord(), deliveryId, undefined, {
        limit: 10,
        leaseId: 'handoff',
        leaseMs: 30_000,
      });
      if (outcome.outcome !== 'published') throw new Error('expected a publish');
      expect(outcome.leased.map((l) => l.webhook.id)).toEqual([free.id]);
      expect(outcome.deliveries.find((d) => d.webhookId === limited.id)).toMatchObject({
        status: 'pending',
        dueAt: T0,
      });
    });

    it('a PATCH of the rate makes what the old rate made wait due at once and paces afresh; null removes the limit', async () => {
      const slow = await inserted({ deliveryRate: { perSecond: 1 } });
      await publish(5);
      expect((await lease(T0)).leased).toHaveLength(1);
      // 1/s: slots T0 + 1000, 2000, 3000, 4000.
      expect((await waiting(slow)).map(([due]) => due)).toEqual([1000, 2000, 3000, 4000]);

      const faster = await ctx.store.updateWebhookSubscription(
        'tenant_a',
        slow.id,
        { ...subscriptionOf(slow.url, slow.events, slow), deliveryRate: TEN_PER_SECOND },
        at(100),
      );
      expect(faster).toMatchObject({ outcome: 'updated', webhook: { deliveryRate: TEN_PER_SECOND } });
      expect((await waiting(slow)).map(([due]) => due)).toEqual([100, 100, 100, 100]);
      const claim = await lease(at(100));
      expect(claim.leased).toHaveLength(1);
      expect(claim.waits).toEqual([{ deferred: 3, nextSlotAt: at(200), nextSlots: [at(200)] }]);
      expect((await waiting(slow)).map(([due]) => due)).toEqual([200, 300, 400]);

      // A change that names no rate keeps it and its slots.
      const renamed = await ctx.store.updateWebhookSubscription(
        'tenant_a',
        slow.id,
        subscriptionOf('https://example.com/renamed', slow.events, slow),
        at(110),
      );
      expect(renamed).toMatchObject({ outcome: 'updated', webhook: { deliveryRate: TEN_PER_SECOND } });
      expect((await waiting(slow)).map(([due]) => due)).toEqual([200, 300, 400]);
      const current = (await ctx.store.getWebhook('tenant_a', slow.id))!;

      const unlimited = await ctx.store.updateWebhookSubscription(
        'tenant_a',
        slow.id,
        { ...subscriptionOf(current.url, current.events, current), deliveryRate: null },
        at(120),
      );
      expect(unlimited).toMatchObject({ outcome: 'updated', webhook: { deliveryRate: null } });
      const all = await lease(at(120));
      expect(all.leased).toHaveLength(3);
      expect(all.waits).toEqual([]);
    });

    it('a PATCH of a rate whose slots are not whole milliseconds makes every waiting one due, the last too', async () => {
      const thirds = await inserted({ deliveryRate: { perSecond: 3 } });
      await publish(3);
      await lease(T0);
      // 333⅓ ms apart, rounded up: the last slot given ends 666⅔ ms on, its due time at 667.
      expect((await waiting(thirds)).map(([due]) => due)).toEqual([334, 667]);
      await ctx.store.updateWebhookSubscription(
        'tenant_a',
        thirds.id,
        { ...subscriptionOf(thirds.url, thirds.events, thirds), deliveryRate: TEN_PER_SECOND },
        at(50),
      );
      expect((await waiting(thirds)).map(([due]) => due)).toEqual([50, 50]);
    });

    it("another tenant's PATCH of the rate is not_found and moves nothing", async () => {
      const limited = await inserted({ deliveryRate: TEN_PER_SECOND });
      await publish(3);
      await lease(T0);
      const before = await waiting(limited);
      expect(
        await ctx.store.updateWebhookSubscription(
          'tenant_b',
          limited.id,
          { ...subscriptionOf(limited.url, limited.events, limited), deliveryRate: null },
          at(10),
        ),
      ).toEqual({ outcome: 'not_found' });
      expect(await waiting(limited)).toEqual(before);
      expect((await ctx.store.getWebhook('tenant_a', limited.id))!.deliveryRate).toEqual(TEN_PER_SECOND);
    });

    it('enabling an endpoint again gives up the slots its held deliveries had: they are paced from the release', async () => {
      const limited = await inserted({ deliveryRate: TEN_PER_SECOND });
      await publish(4);
      await lease(T0);
      await ctx.store.setWebhookStatus('tenant_a', limited.id, 'disabled', 'manual', at(10));
      await ctx.store.setWebhookStatus('tenant_a', limited.id, 'active', null, at(1000));
      const claim = await lease(at(1000));
      expect(claim.leased).toHaveLength(1);
      expect(claim.waits).toEqual([{ deferred: 2, nextSlotAt: at(1100), nextSlots: [at(1100)] }]);
      expect((await waiting(limited)).map(([due]) => due)).toEqual([1100, 1200]);
    });
  });
}
