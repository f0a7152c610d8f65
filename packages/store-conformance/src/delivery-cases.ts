import { randomBytes } from 'node:crypto';
import { newId } from '@keyhook/core/http';
import type {
  AttemptCompletion,
  AttemptRecord,
  DeliveryListPage,
  DeliveryRecord,
  EventRecord,
  PublishLease,
  Store,
  WebhookRecord,
} from '@keyhook/core/store';
import { DELIVERY_RULES, leasedSubscribers, newDeliveryRecord } from '@keyhook/core/store';
import { describe, expect, it } from 'vitest';
import { orderedIds, T0, webhookRecord } from './fixtures.js';
import type { SuiteContext } from './store-harness.js';
import { checkTransitions } from './transitions.js';

const at = (ms: number) => new Date(T0.getTime() + ms);
const deliveryId = () => newId('dlv');

/** An event as core would write it, created at `T0` unless told otherwise. */
export function eventRecord(overrides: Partial<EventRecord> = {}): EventRecord {
  const id = overrides.id ?? newId('evt');
  const type = overrides.type ?? 'run.completed';
  const createdAt = overrides.createdAt ?? T0;
  return {
    id,
    tenantId: 'tenant_a',
    type,
    payload: JSON.stringify({ id, type, createdAt: createdAt.toISOString(), data: { runId: 'run_1' } }),
    createdAt,
    traceContext: null,
    ...overrides,
  };
}

function attemptOf(deliveryId: string, attempt: number, statusCode: number | null): AttemptRecord {
  return {
    deliveryId,
    tenantId: 'tenant_a',
    attempt,
    startedAt: at(attempt * 1000),
    durationMs: 12,
    statusCode,
    error:
      statusCode === null
        ? 'connect ECONNREFUSED 127.0.0.1:9'
        : statusCode < 300
          ? null
          : `HTTP ${statusCode}`,
    responseBody: statusCode === null ? null : 'ok ✓',
  };
}

/** What an attempt makes of its delivery, as completeAttempt takes it: shared by the delivery suites. */
export type Verdict = Pick<AttemptCompletion, 'status' | 'dueAt' | 'endpointFailures'>;
export const SUCCEEDED: Verdict = { status: 'succeeded', dueAt: null, endpointFailures: 'reset' };
export const FAILED: Verdict = { status: 'failed', dueAt: null, endpointFailures: 'increment' };
export const retryAt = (ms: number): Verdict => ({
  status: 'retry_scheduled',
  dueAt: at(ms),
  endpointFailures: 'unchanged',
});

export function deliveryCases(ctx: SuiteContext): void {
  /** A webhook of tenant_a subscribed to run.completed, inserted. */
  async function subscribed(store: Store = ctx.store, overrides = {}) {
    const webhook = webhookRecord({ events: ['run.completed'], ...overrides });
    expect(await store.insertWebhook(webhook)).toBe('inserted');
    return webhook;
  }

  async function publishOne(
    store: Store = ctx.store,
    overrides: Partial<EventRecord> = {},
    newDeliveryId: () => string = deliveryId,
  ) {
    const outcome = await store.publishEvent(eventRecord(overrides), newDeliveryId);
    if (outcome.outcome !== 'published') throw new Error('expected a new event');
    return outcome;
  }

  async function leaseAll(store: Store = ctx.store, now = T0, leaseMs = 30_000, limit = 100) {
    return store.leaseDeliveries({ now, limit, leaseMs, leaseId: randomBytes(8).toString('hex') });
  }

  /** Leases the oldest due delivery at `now` and records an attempt with `verdict`. */
  async function attempt(
    statusCode: number | null,
    verdict: Verdict,
    now = T0,
    autoDisable = DELIVERY_RULES.autoDisable,
  ) {
    const [leased] = await leaseAll(ctx.store, now, 30_000, 1);
    if (!leased) throw new Error(`nothing due at ${now.toISOString()}`);
    const outcome = await ctx.store.completeAttempt({
      tenantId: leased.delivery.tenantId,
      deliveryId: leased.delivery.id,
      leaseId: leased.delivery.leaseId!,
      attempt: attemptOf(leased.delivery.id, leased.delivery.attempts + 1, statusCode),
      ...verdict,
      autoDisable,
      at: now,
    });
    return { leased, outcome };
  }

  describe('events and deliveries', () => {
    checkTransitions(ctx);
    it('publish writes the event and one delivery per subscribed endpoint: pending if active, held if disabled', async () => {
      const active = await subscribed();
      const disabled = await subscribed(ctx.store, { status: 'disabled', disabledReason: 'manual' });
      await subscribed(ctx.store, { events: ['run.failed'] }); // another kind
      await subscribed(ctx.store, { tenantId: 'tenant_b' }); // another tenant
      const event = eventRecord();
      const outcome = await ctx.store.publishEvent(event, deliveryId);
      expect(outcome.outcome).toBe('published');
      if (outcome.outcome !== 'published') return;
      expect(outcome.event).toEqual(event);
      const byWebhook = new Map(outcome.deliveries.map((d) => [d.webhookId, d]));
      expect([...byWebhook.keys()].sort()).toEqual([active.id, disabled.id].sort());
      expect(byWebhook.get(active.id)).toMatchObject({
        tenantId: 'tenant_a',
        eventId: event.id,
        eventType: 'run.completed',
        status: 'pending',
        attempts: 0,
        dueAt: T0,
        leaseId: null,
        heldSince: null,
        lastAttemptAt: null,
        createdAt: T0,
      });
      expect(byWebhook.get(disabled.id)).toMatchObject({ status: 'held', dueAt: null, heldSince: T0 });
      const stored = await ctx.store.getDelivery('tenant_a', active.id, byWebhook.get(active.id)!.id);
      expect(stored).toEqual({ delivery: byWebhook.get(active.id), event, attempts: [] });
    });

    it('publish is idempotent on the event id, per tenant', async () => {
      await subscribed();
      await subscribed(ctx.store, { tenantId: 'tenant_b' });
      const event = eventRecord();
      await publishOne(ctx.store, event);
      const again = await ctx.store.publishEvent({ ...event, payload: '{"other":true}' }, deliveryId);
      expect(again).toEqual({ outcome: 'duplicate', event });
      // The same id in another tenant is that tenant's own event.
      const other = await ctx.store.publishEvent({ ...event, tenantId: 'tenant_b' }, deliveryId);
      expect(other.outcome).toBe('published');
      expect(await leaseAll()).toHaveLength(2);
    });

    it('of 20 concurrent publishes of one event id over two connections, exactly one writes', async () => {
      await subscribed();
      const peer = await ctx.peer();
      const event = eventRecord();
      const outcomes = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 ? peer : ctx.store).publishEvent(event, deliveryId)),
      );
      expect(outcomes.filter((o) => o.outcome === 'published')).toHaveLength(1);
      expect(await leaseAll()).toHaveLength(1);
    });

    it('publish with no subscriber still records the event', async () => {
      const outcome = await ctx.store.publishEvent(eventRecord(), deliveryId);
      expect(outcome).toMatchObject({ outcome: 'published', deliveries: [], leased: [] });
    });

    it('publish with a lease writes the first `limit` active deliveries in flight under it, and returns them with event and webhook', async () => {
      const first = await subscribed();
      const second = await subscribed();
      const third = await subscribed();
      const disabled = await subscribed(ctx.store, { status: 'disabled', disabledReason: 'manual' });
      const event = eventRecord();
      const outcome = await ctx.store.publishEvent(event, deliveryId, undefined, {
        limit: 2,
        leaseId: 'handoff-1',
        leaseMs: 30_000,
      });
      if (outcome.outcome !== 'published') throw new Error('expected a new event');
      // Webhook id order: the first two active subscribers are leased, the third stays pending,
      // the disabled one is held and never leased.
      const ordered = [first, second, third].map((w) => w.id).sort();
      const byWebhook = new Map(outcome.deliveries.map((d) => [d.webhookId, d]));
      expect(outcome.leased.map((l) => l.webhook.id)).toEqual(ordered.slice(0, 2));
      for (const leased of outcome.leased) {
        expect(leased.delivery).toMatchObject({
          status: 'in_flight',
          leaseId: 'handoff-1',
          dueAt: at(30_000),
          attempts: 0,
        });
        expect(leased.delivery).toEqual(byWebhook.get(leased.webhook.id));
        expect(leased.event).toEqual(event);
        expect(leased.webhook).toEqual([first, second, third].find((w) => w.id === leased.webhook.id));
      }
      expect(byWebhook.get(ordered[2]!)).toMatchObject({ status: 'pending', leaseId: null, dueAt: T0 });
      expect(byWebhook.get(disabled.id)).toMatchObject({ status: 'held', leaseId: null });
      // As stored: the leased ones are not leasable while the lease lives, the pending one is.
      const stored = await ctx.store.getDelivery('tenant_a', ordered[0]!, byWebhook.get(ordered[0]!)!.id);
      expect(stored!.delivery).toEqual(byWebhook.get(ordered[0]!));
      const due = await leaseAll(ctx.store, at(29_999));
      expect(due.map((l) => l.delivery.webhookId)).toEqual([ordered[2]]);
    });

    it("publish to many endpoints writes what core's rule says for each, however many subscribe", async () => {
      // Every third endpoint disabled, so the lease's `limit` counts active ones only.
      const webhooks: WebhookRecord[] = [];
      for (let i = 0; i < 25; i++) {
        webhooks.push(
          await subscribed(ctx.store, i % 3 === 1 ? { status: 'disabled', disabledReason: 'manual' } : {}),
        );
      }
      const expected = async (lease?: PublishLease) => {
        const event = eventRecord();
        const outcome = await ctx.store.publishEvent(event, deliveryId, undefined, lease);
        if (outcome.outcome !== 'published') throw new Error('expected a new event');
        const ordered = [...webhooks].sort((a, b) => (a.id < b.id ? -1 : 1));
        const chosen = leasedSubscribers(ordered, lease);
        const byWebhook = new Map(outcome.deliveries.map((d) => [d.webhookId, d]));
        expect(byWebhook.size).toBe(ordered.length);
        expect(new Set(outcome.deliveries.map((d) => d.id)).size).toBe(ordered.length);
        for (const webhook of ordered) {
          const delivery = byWebhook.get(webhook.id)!;
          const rule = newDeliveryRecord(
            event,
            webhook,
            delivery.id,
            chosen.has(webhook) ? lease : undefined,
          );
          expect(delivery).toEqual(rule);
          expect((await ctx.store.getDelivery('tenant_a', webhook.id, delivery.id))!.delivery).toEqual(rule);
        }
        expect(outcome.leased.map((l) => l.webhook.id)).toEqual([...chosen].map((w) => w.id));
      };
      await expected();
      await expected({ limit: 5, leaseId: 'handoff-many', leaseMs: 30_000 });
      // One more subscriber than the store saw last time.
      webhooks.push(await subscribed());
      await expected({ limit: 100, leaseId: 'handoff-all', leaseMs: 30_000 });
    });

    it('a delivery leased in its publish is recorded by that lease, and leased again by anyone once the lease runs out', async () => {
      await subscribed();
      const lease = { limit: 4, leaseId: 'handoff-2', leaseMs: 1000 };
      const recorded = await ctx.store.publishEvent(eventRecord(), deliveryId, undefined, lease);
      const lost = await ctx.store.publishEvent(eventRecord(), deliveryId, undefined, lease);
      if (recorded.outcome !== 'published' || lost.outcome !== 'published')
        throw new Error('expected new events');
      const [kept] = recorded.leased;
      const outcome = await ctx.store.completeAttempt({
        tenantId: 'tenant_a',
        deliveryId: kept!.delivery.id,
        leaseId: 'handoff-2',
        attempt: attemptOf(kept!.delivery.id, 1, 200),
        ...SUCCEEDED,
        autoDisable: DELIVERY_RULES.autoDisable,
        at: at(500),
      });
      expect(outcome).toMatchObject({ outcome: 'recorded', delivery: { status: 'succeeded', attempts: 1 } });
      // The worker that took the other one died: after its lease, another worker has it.
      expect(await leaseAll(ctx.store, at(999))).toEqual([]);
      const again = await leaseAll(ctx.store, at(1000));
      expect(again.map((l) => l.delivery.id)).toEqual([lost.leased[0]!.delivery.id]);
    });

    it('a replayed event id takes no lease and writes nothing', async () => {
      await subscribed();
      const event = eventRecord();
      await publishOne(ctx.store, event);
      const again = await ctx.store.publishEvent(event, deliveryId, undefined, {
        limit: 4,
        leaseId: 'handoff-3',
        leaseMs: 30_000,
      });
      expect(again).toEqual({ outcome: 'duplicate', event });
      const pending = await leaseAll();
      expect(pending).toHaveLength(1);
      expect(pending[0]!.delivery.leaseId).not.toBe('handoff-3');
    });

    it('leases due deliveries oldest first, at most `limit`, each in_flight until the lease ends', async () => {
      const webhook = await subscribed();
      const early = await publishOne(ctx.store, { createdAt: at(-2000) });
      const late = await publishOne(ctx.store, { createdAt: at(-1000) });
      await publishOne(ctx.store, { createdAt: at(60_000) }); // not due yet
      const leased = await ctx.store.leaseDeliveries({
        now: T0,
        limit: 1,
        leaseMs: 5000,
        leaseId: 'lease-1',
      });
      expect(leased).toHaveLength(1);
      expect(leased[0]!.delivery).toMatchObject({
        id: early.deliveries[0]!.id,
        status: 'in_flight',
        leaseId: 'lease-1',
        dueAt: at(5000),
      });
      expect(leased[0]!.event).toEqual(early.event);
      expect(leased[0]!.webhook).toEqual(webhook);
      const next = await leaseAll();
      expect(next.map((l) => l.delivery.id)).toEqual([late.deliveries[0]!.id]);
      expect(await leaseAll()).toEqual([]);
    });

    it('a leased delivery carries its webhook’s signature scheme, which the sender signs by', async () => {
      const webhook = await subscribed(ctx.store, { signatureScheme: 'standard-webhooks' });
      await publishOne();
      const [leased] = await leaseAll();
      expect(leased!.webhook).toEqual(webhook);
      expect(leased!.webhook.signatureScheme).toBe('standard-webhooks');
    });

    it('an expired lease is leased again, and its old holder can no longer record', async () => {
      await subscribed();
      await publishOne();
      const [first] = await leaseAll(ctx.store, T0, 1000);
      expect(await leaseAll(ctx.store, at(999))).toEqual([]);
      const [second] = await leaseAll(ctx.store, at(1000));
      expect(second!.delivery.id).toBe(first!.delivery.id);
      expect(second!.delivery.attempts).toBe(0); // the lost attempt is not counted
      const stale = await ctx.store.completeAttempt({
        tenantId: 'tenant_a',
        deliveryId: first!.delivery.id,
        leaseId: first!.delivery.leaseId!,
        attempt: attemptOf(first!.delivery.id, 1, 200),
        ...SUCCEEDED,
        autoDisable: DELIVERY_RULES.autoDisable,
        at: at(1500),
      });
      expect(stale).toEqual({ outcome: 'lease_lost' });
      const detail = await ctx.store.getDelivery('tenant_a', first!.delivery.webhookId, first!.delivery.id);
      expect(detail!.delivery).toMatchObject({ status: 'in_flight', leaseId: second!.delivery.leaseId });
      expect(detail!.attempts).toEqual([]);
    });

    it('a lease given up (endLeases) ends at once: its deliveries are due now, attempts unchanged; one delivery alone, or the whole lease', async () => {
      await subscribed();
      const ids = [];
      for (let i = 0; i < 3; i++)
        ids.push((await publishOne(ctx.store, { createdAt: at(-3 + i) })).deliveries[0]!.id);
      const lost = await ctx.store.leaseDeliveries({ now: T0, limit: 2, leaseMs: 30_000, leaseId: 'lost' });
      expect(lost.map((l) => l.delivery.id)).toEqual(ids.slice(0, 2));
      const single = await ctx.store.leaseDeliveries({
        now: T0,
        limit: 1,
        leaseMs: 30_000,
        leaseId: 'single',
      });
      expect(single.map((l) => l.delivery.id)).toEqual([ids[2]]);
      // Every delivery of `lost` (a claim whose answer never came), by a claim of none: a worker
      // that stops gives its leases back so.
      expect(
        await ctx.store.leaseDeliveries({
          now: at(10),
          limit: 0,
          leaseMs: 30_000,
          leaseId: 'none',
          endLeases: [{ leaseId: 'lost' }],
        }),
      ).toEqual([]);
      // And one delivery of the lease `single`, in the claim that takes them all again.
      const again = await ctx.store.leaseDeliveries({
        now: at(10),
        limit: 10,
        leaseMs: 30_000,
        leaseId: 'again',
        endLeases: [{ leaseId: 'single', deliveryId: ids[2]! }],
      });
      expect(again.map((l) => l.delivery.id).sort()).toEqual([...ids].sort());
      expect(again.every((l) => l.delivery.attempts === 0 && l.delivery.leaseId === 'again')).toBe(true);
      // The old holders can no longer record; the new one can.
      const completion = (leaseId: string, id: string): AttemptCompletion => ({
        tenantId: 'tenant_a',
        deliveryId: id,
        leaseId,
        attempt: attemptOf(id, 1, 200),
        ...SUCCEEDED,
        autoDisable: DELIVERY_RULES.autoDisable,
        at: at(20),
      });
      expect(await ctx.store.completeAttempt(completion('lost', ids[0]!))).toEqual({ outcome: 'lease_lost' });
      expect(await ctx.store.completeAttempt(completion('again', ids[0]!))).toMatchObject({
        outcome: 'recorded',
      });
      // Ending a lease that holds nothing any more (recorded, or taken) changes nothing.
      expect(
        await ctx.store.leaseDeliveries({
          now: at(30),
          limit: 10,
          leaseMs: 30_000,
          leaseId: 'late',
          endLeases: [{ leaseId: 'lost' }, { leaseId: 'single', deliveryId: ids[2]! }],
        }),
      ).toEqual([]);
      const detail = await ctx.store.getDelivery('tenant_a', again[0]!.delivery.webhookId, ids[0]!);
      expect(detail!.delivery.status).toBe('succeeded');
    });

    it('a claim leaves the endpoints it is told to skip, and leases the due deliveries of others behind them', async () => {
      const capped = await subscribed();
      const other = await subscribed(ctx.store, { events: ['run.failed'] });
      const older = [];
      for (let i = 0; i < 5; i++)
        older.push((await publishOne(ctx.store, { createdAt: at(-100 + i) })).deliveries[0]!.id);
      const newer = (await publishOne(ctx.store, { type: 'run.failed', createdAt: at(-1) })).deliveries[0]!
        .id;
      // An endpoint with a rate, so the pacing claim skips too (its first delivery has a slot now).
      const limited = await subscribed(ctx.store, {
        events: ['apply.failed'],
        deliveryRate: { perSecond: 1 },
      });
      const paced = (await publishOne(ctx.store, { type: 'apply.failed', createdAt: at(-2) })).deliveries[0]!
        .id;
      const leased = await ctx.store.leaseDeliveries({
        now: T0,
        limit: 3,
        leaseMs: 30_000,
        leaseId: 'skipping',
        skipEndpoints: [capped.id],
      });
      expect(new Map(leased.map((l) => [l.delivery.id, l.webhook.id]))).toEqual(
        new Map([
          [paced, limited.id],
          [newer, other.id],
        ]),
      );
      // Not skipped, they are next, oldest first.
      const next = await leaseAll(ctx.store, T0, 30_000, 2);
      expect(next.map((l) => l.delivery.id)).toEqual(older.slice(0, 2));
    });

    it('two connections leasing at once never share a delivery', async () => {
      await subscribed();
      const ids = new Set<string>();
      for (let i = 0; i < 60; i++) {
        const outcome = await publishOne(ctx.store, { createdAt: at(-i) });
        ids.add(outcome.deliveries[0]!.id);
      }
      const peer = await ctx.peer();
      const batches = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          (i % 2 ? peer : ctx.store).leaseDeliveries({
            now: T0,
            limit: 7,
            leaseMs: 30_000,
            leaseId: `lease-${i}`,
          }),
        ),
      );
      const leased = batches.flat().map((l) => l.delivery.id);
      expect(new Set(leased).size).toBe(leased.length);
      expect(leased.length).toBe(60);
      expect(new Set(leased)).toEqual(ids);
    });

    it('records a success: attempt logged, delivery succeeded, never leased again', async () => {
      await subscribed();
      await publishOne();
      const { leased, outcome } = await attempt(200, SUCCEEDED);
      expect(outcome).toMatchObject({
        outcome: 'recorded',
        delivery: { status: 'succeeded', attempts: 1, dueAt: null, leaseId: null, lastAttemptAt: at(1000) },
        disabledWebhook: null,
      });
      const detail = await ctx.store.getDelivery('tenant_a', leased.webhook.id, leased.delivery.id);
      expect(detail!.attempts).toEqual([attemptOf(leased.delivery.id, 1, 200)]);
      expect(await leaseAll(ctx.store, at(10 * 86_400_000))).toEqual([]);
    });

    it('a scheduled retry comes due at its time and keeps every attempt, oldest first', async () => {
      await subscribed();
      await publishOne();
      await attempt(500, retryAt(60_000));
      expect(await leaseAll(ctx.store, at(59_999))).toEqual([]);
      const { leased, outcome } = await attempt(null, retryAt(360_000), at(60_000));
      expect(leased.delivery.attempts).toBe(1);
      expect(outcome).toMatchObject({
        delivery: { status: 'retry_scheduled', attempts: 2, dueAt: at(360_000) },
      });
      const detail = await ctx.store.getDelivery('tenant_a', leased.webhook.id, leased.delivery.id);
      expect(detail!.attempts.map((a) => [a.attempt, a.statusCode])).toEqual([
        [1, 500],
        [2, null],
      ]);
    });

    it('five consecutive permanent failures disable the endpoint and hold its other deliveries; a success resets the count', async () => {
      const webhook = await subscribed();
      const failOne = async (now: Date) => {
        await publishOne(ctx.store, { createdAt: now });
        return attempt(500, FAILED, now);
      };
      for (let i = 0; i < 4; i++) await failOne(at(i));
      await publishOne(ctx.store, { createdAt: at(10) });
      await attempt(200, SUCCEEDED, at(10)); // resets to 0
      for (let i = 0; i < 4; i++) {
        const { outcome } = await failOne(at(20 + i));
        expect(outcome).toMatchObject({ outcome: 'recorded', disabledWebhook: null });
      }
      // A retry waiting when the endpoint is disabled is held with the rest.
      const waiting = await publishOne(ctx.store, { createdAt: at(30) });
      await attempt(503, retryAt(90_000), at(30));
      const fifth = await failOne(at(40));
      expect(fifth.outcome).toMatchObject({
        outcome: 'recorded',
        delivery: { status: 'failed' },
        disabledWebhook: {
          id: webhook.id,
          status: 'disabled',
          disabledReason: 'failures',
          disabledAt: at(40),
          updatedAt: at(40),
        },
      });
      expect(await ctx.store.getWebhook('tenant_a', webhook.id)).toMatchObject({
        status: 'disabled',
        disabledReason: 'failures',
        disabledAt: at(40),
      });
      const held = await ctx.store.listDeliveries('tenant_a', webhook.id, { limit: 100, status: 'held' });
      expect(held.map((d) => d.id)).toEqual([waiting.deliveries[0]!.id]);
      expect(held[0]).toMatchObject({ heldSince: at(40), dueAt: null });
      expect(await leaseAll(ctx.store, at(10 * 86_400_000))).toEqual([]);
    });

    it('auto-disables at the threshold and with the reason each completion hands over (core decides them, docs/decisions.md §10.4)', async () => {
      // Two, and a reason other than core's own: a store that kept a number or a reason of its own fails here.
      const early = { after: 2, reason: 'manual' } as const;
      const webhook = await subscribed();
      await publishOne(ctx.store, { createdAt: at(0) });
      expect((await attempt(500, FAILED, at(0), early)).outcome).toMatchObject({ disabledWebhook: null });
      await publishOne(ctx.store, { createdAt: at(1) });
      expect((await attempt(500, FAILED, at(1), early)).outcome).toMatchObject({
        outcome: 'recorded',
        disabledWebhook: { id: webhook.id, status: 'disabled', disabledReason: 'manual', updatedAt: at(1) },
      });
      // The disable gave up the twin claim: an active twin may be registered beside it, and the
      // disabled one cannot be enabled while that twin is active.
      const twin = webhookRecord({ url: webhook.url, events: webhook.events });
      expect(await ctx.store.insertWebhook(twin)).toBe('inserted');
      expect(await ctx.store.setWebhookStatus('tenant_a', webhook.id, 'active', null, at(2))).toEqual({
        outcome: 'active_twin',
      });
      // Seven: five failures, and a sixth, leave the endpoint active; the seventh disables it.
      const late = { ...DELIVERY_RULES.autoDisable, after: 7 };
      for (let i = 1; i <= 7; i++) {
        await publishOne(ctx.store, { createdAt: at(10 + i) });
        const { leased, outcome } = await attempt(500, FAILED, at(10 + i), late);
        expect(leased.webhook.id).toBe(twin.id);
        expect(outcome).toMatchObject(
          i < 7
            ? { outcome: 'recorded', disabledWebhook: null }
            : { disabledWebhook: { id: twin.id, status: 'disabled', disabledReason: late.reason } },
        );
      }
    });

    it("a 410's rule (DELIVERY_RULES.gone) disables at the first failure, with the reason gone, and holds the rest", async () => {
      const webhook = await subscribed();
      await publishOne(ctx.store, { createdAt: at(0) });
      const waiting = await publishOne(ctx.store, { createdAt: at(1) });
      const { outcome } = await attempt(410, FAILED, at(2), DELIVERY_RULES.gone);
      expect(outcome).toMatchObject({
        outcome: 'recorded',
        delivery: { status: 'failed', attempts: 1 },
        disabledWebhook: { id: webhook.id, status: 'disabled', disabledReason: 'gone', updatedAt: at(2) },
      });
      expect(await ctx.store.getWebhook('tenant_a', webhook.id)).toMatchObject({ disabledReason: 'gone' });
      const held = await ctx.store.listDeliveries('tenant_a', webhook.id, { limit: 100, status: 'held' });
      expect(held.map((d) => d.id)).toEqual([waiting.deliveries[0]!.id]);
    });

    it('a lease that runs out while its endpoint is disabled is not taken again until the endpoint is enabled', async () => {
      const webhook = await subscribed();
      await publishOne();
      const [leased] = await leaseAll(ctx.store, T0, 1000);
      const disabled = await ctx.store.setWebhookStatus('tenant_a', webhook.id, 'disabled', 'manual', at(10));
      expect(disabled).toMatchObject({ webhook: { disabledReason: 'manual', disabledAt: at(10) } });
      // In flight is not held: the lease's holder may still record. Once it runs out, nobody leases it.
      expect(await leaseAll(ctx.store, at(5000))).toEqual([]);
      const enabled = await ctx.store.setWebhookStatus('tenant_a', webhook.id, 'active', null, at(6000));
      expect(enabled).toMatchObject({ webhook: { disabledReason: null, disabledAt: null } });
      expect(await ctx.store.getWebhook('tenant_a', webhook.id)).toMatchObject({ disabledAt: null });
      const again = await leaseAll(ctx.store, at(6000));
      expect(again.map((l) => l.delivery.id)).toEqual([leased!.delivery.id]);
    });

    it('re-enabling releases held deliveries at once and starts the failure count again', async () => {
      const webhook = await subscribed();
      for (let i = 0; i < 4; i++) {
        await publishOne(ctx.store, { createdAt: at(i) });
        await attempt(500, FAILED, at(i));
      }
      await ctx.store.setWebhookStatus('tenant_a', webhook.id, 'disabled', 'manual', at(100));
      const queued = await publishOne(ctx.store, { createdAt: at(200) });
      expect(queued.deliveries[0]).toMatchObject({ status: 'held', heldSince: at(200) });
      expect(await leaseAll(ctx.store, at(300))).toEqual([]);
      await ctx.store.setWebhookStatus('tenant_a', webhook.id, 'active', null, at(400));
      const released = await leaseAll(ctx.store, at(400));
      expect(released.map((l) => l.delivery.id)).toEqual([queued.deliveries[0]!.id]);
      expect(released[0]!.delivery.heldSince).toBeNull();
      // The count restarted: one more permanent failure does not disable.
      const outcome = await ctx.store.completeAttempt({
        tenantId: 'tenant_a',
        deliveryId: released[0]!.delivery.id,
        leaseId: released[0]!.delivery.leaseId!,
        attempt: attemptOf(released[0]!.delivery.id, 1, 410),
        ...FAILED,
        autoDisable: DELIVERY_RULES.autoDisable,
        at: at(500),
      });
      expect(outcome).toMatchObject({ outcome: 'recorded', disabledWebhook: null });
    });

    it('a manual disable holds pending and scheduled deliveries; an in-flight retry is held when recorded', async () => {
      const webhook = await subscribed();
      const pending = await publishOne(ctx.store, { createdAt: at(60_000) });
      await publishOne(ctx.store, { createdAt: T0 });
      const [inFlight] = await leaseAll(ctx.store, T0);
      await ctx.store.setWebhookStatus('tenant_a', webhook.id, 'disabled', 'manual', at(10));
      const outcome = await ctx.store.completeAttempt({
        tenantId: 'tenant_a',
        deliveryId: inFlight!.delivery.id,
        leaseId: inFlight!.delivery.leaseId!,
        attempt: attemptOf(inFlight!.delivery.id, 1, 500),
        ...retryAt(70_000),
        autoDisable: DELIVERY_RULES.autoDisable,
        at: at(20),
      });
      expect(outcome).toMatchObject({ delivery: { status: 'held', heldSince: at(20), dueAt: null } });
      const held = await ctx.store.listDeliveries('tenant_a', webhook.id, { limit: 10, status: 'held' });
      expect(held.map((d) => d.id).sort()).toEqual([pending.deliveries[0]!.id, inFlight!.delivery.id].sort());
    });

    it('held deliveries past the retention become failed', async () => {
      const webhook = await subscribed(ctx.store, { status: 'disabled', disabledReason: 'manual' });
      const old = await publishOne(ctx.store, { createdAt: T0 });
      const recent = await publishOne(ctx.store, { createdAt: at(5000) });
      expect(await ctx.store.expireHeldDeliveries(at(1000), at(9000))).toBe(1);
      const failed = await ctx.store.listDeliveries('tenant_a', webhook.id, { limit: 10, status: 'failed' });
      expect(failed.map((d) => d.id)).toEqual([old.deliveries[0]!.id]);
      expect(failed[0]).toMatchObject({ heldSince: null, updatedAt: at(9000) });
      const held = await ctx.store.listDeliveries('tenant_a', webhook.id, { limit: 10, status: 'held' });
      expect(held.map((d) => d.id)).toEqual([recent.deliveries[0]!.id]);
    });

    it('deleting a webhook cancels its deliveries and their attempts', async () => {
      const webhook = await subscribed();
      const keep = await subscribed(ctx.store, { url: 'https://keep.example.com/hook' });
      await publishOne();
      await attempt(500, retryAt(1000));
      expect(await ctx.store.deleteWebhook('tenant_a', webhook.id)).toBe(true);
      expect(await ctx.store.listDeliveries('tenant_a', webhook.id, { limit: 10 })).toEqual([]);
      const leased = await leaseAll(ctx.store, at(5000));
      expect(leased.map((l) => l.webhook.id)).toEqual([keep.id]);
    });

    it('lists newest first, pages with `before`, filters by status, and keeps tenants apart', async () => {
      const webhook = await subscribed();
      const ids: string[] = [];
      for (const [i, id] of orderedIds('dlv', 5).entries()) {
        ids.push((await publishOne(ctx.store, { createdAt: at(i) }, () => id)).deliveries[0]!.id);
      }
      await attempt(200, SUCCEEDED, at(0)); // the oldest succeeds
      const newest = [...ids].reverse();
      const first = await ctx.store.listDeliveries('tenant_a', webhook.id, { limit: 3 });
      expect(first.map((d) => d.id)).toEqual(newest.slice(0, 3));
      const second = await ctx.store.listDeliveries('tenant_a', webhook.id, {
        limit: 3,
        before: first[2]!.id,
      });
      expect(second.map((d) => d.id)).toEqual(newest.slice(3));
      const succeeded = await ctx.store.listDeliveries('tenant_a', webhook.id, {
        limit: 10,
        status: 'succeeded',
      });
      expect(succeeded.map((d) => d.id)).toEqual([ids[0]]);
      expect(await ctx.store.listDeliveries('tenant_b', webhook.id, { limit: 10 })).toEqual([]);
      expect(await ctx.store.getDelivery('tenant_b', webhook.id, ids[0]!)).toBeNull();
      const other = await subscribed(ctx.store, { url: 'https://other.example.com/hook' });
      expect(await ctx.store.getDelivery('tenant_a', other.id, ids[0]!)).toBeNull();
      expect(await ctx.store.requeueDelivery('tenant_b', webhook.id, ids[0]!, ['succeeded'], T0)).toEqual({
        outcome: 'not_found',
      });
    });

    it('narrows the list by event type, event id and creation time, with the state and the page', async () => {
      const webhook = await subscribed(ctx.store, { events: ['run.completed', 'run.failed'] });
      const made = [];
      for (const [i, type] of ['run.completed', 'run.failed', 'run.completed', 'run.failed'].entries()) {
        // Ids sort by their clock's time: each delivery's is its event's.
        const clock = { now: () => at(i * 1_000) };
        const outcome = await ctx.store.publishEvent(eventRecord({ type, createdAt: clock.now() }), () =>
          newId('dlv', clock),
        );
        if (outcome.outcome !== 'published') throw new Error('expected a new event');
        made.push(outcome.deliveries[0]!);
      }
      const [a, b, c, d] = made as [DeliveryRecord, DeliveryRecord, DeliveryRecord, DeliveryRecord];
      const list = async (narrow: Omit<DeliveryListPage, 'limit'>, limit = 10) =>
        (await ctx.store.listDeliveries('tenant_a', webhook.id, { limit, ...narrow })).map((x) => x.id);
      expect(await list({ eventType: 'run.failed' })).toEqual([d.id, b.id]);
      expect(await list({ eventType: 'run.started' })).toEqual([]);
      expect(await list({ eventId: c.eventId })).toEqual([c.id]);
      expect(await list({ createdFrom: at(1_000), createdBefore: at(3_000) })).toEqual([c.id, b.id]);
      expect(await list({ createdFrom: at(2_000) })).toEqual([d.id, c.id]);
      expect(await list({ createdBefore: at(1_000) })).toEqual([a.id]);
      expect(await list({ eventType: 'run.completed', createdFrom: at(1) })).toEqual([c.id]);
      expect(await list({ eventType: 'run.failed', status: 'failed' })).toEqual([]);
      expect(await list({ eventType: 'run.failed', status: 'pending' })).toEqual([d.id, b.id]);
      expect(await list({ eventType: 'run.failed' }, 1)).toEqual([d.id]);
      expect(await list({ eventType: 'run.failed', before: d.id }, 1)).toEqual([b.id]);
      expect(
        await ctx.store.listDeliveries('tenant_b', webhook.id, { limit: 10, eventId: c.eventId }),
      ).toEqual([]);
    });

    it('requeue moves a delivery from an allowed state to pending now, and holds it on a disabled endpoint', async () => {
      const webhook = await subscribed();
      await publishOne();
      const { leased } = await attempt(410, FAILED);
      const id = leased.delivery.id;
      expect(
        await ctx.store.requeueDelivery('tenant_a', webhook.id, id, ['succeeded'], at(10)),
      ).toMatchObject({
        outcome: 'wrong_state',
        delivery: { status: 'failed' },
      });
      const queued = await ctx.store.requeueDelivery('tenant_a', webhook.id, id, ['failed'], at(10));
      expect(queued).toMatchObject({
        outcome: 'queued',
        delivery: { status: 'pending', dueAt: at(10), attempts: 1 },
      });
      const [again] = await leaseAll(ctx.store, at(10));
      expect(again!.delivery).toMatchObject({ id, attempts: 1 });
      await ctx.store.completeAttempt({
        tenantId: 'tenant_a',
        deliveryId: id,
        leaseId: again!.delivery.leaseId!,
        attempt: attemptOf(id, 2, 500),
        ...FAILED,
        autoDisable: DELIVERY_RULES.autoDisable,
        at: at(20),
      });
      await ctx.store.setWebhookStatus('tenant_a', webhook.id, 'disabled', 'manual', at(30));
      expect(await ctx.store.requeueDelivery('tenant_a', webhook.id, id, ['failed'], at(40))).toMatchObject({
        outcome: 'queued',
        delivery: { status: 'held', heldSince: at(40), dueAt: null },
      });
    });

    it('requeue resends a succeeded delivery and brings a scheduled retry forward: pending now, attempts kept', async () => {
      const webhook = await subscribed();
      await publishOne(ctx.store, { createdAt: at(0) });
      const sent = (await attempt(200, SUCCEEDED, at(1))).leased.delivery.id;
      await publishOne(ctx.store, { createdAt: at(2) });
      const waiting = (await attempt(503, retryAt(3_600_000), at(3))).leased.delivery.id;
      for (const id of [sent, waiting]) {
        expect(
          await ctx.store.requeueDelivery(
            'tenant_a',
            webhook.id,
            id,
            ['succeeded', 'retry_scheduled'],
            at(10),
          ),
        ).toMatchObject({
          outcome: 'queued',
          delivery: { id, status: 'pending', dueAt: at(10), attempts: 1 },
        });
      }
      const due = await leaseAll(ctx.store, at(10));
      expect(due.map((leased) => leased.delivery.id).sort()).toEqual([sent, waiting].sort());
    });

    it('retention deletes finished deliveries past the cutoff with their attempts, then events left without deliveries', async () => {
      const webhook = await subscribed();
      const paused = await subscribed(ctx.store, {
        url: 'https://paused.example.com/hook',
        events: ['run.failed'],
        status: 'disabled',
        disabledReason: 'manual',
      });
      const succeeded = await publishOne();
      await attempt(200, SUCCEEDED, at(0));
      const failed = await publishOne();
      await attempt(null, FAILED, at(1));
      const retrying = await publishOne();
      await attempt(500, retryAt(100_000), at(2));
      const recent = await publishOne();
      await attempt(200, SUCCEEDED, at(20_000));
      const pending = await publishOne();
      const held = await publishOne(ctx.store, { type: 'run.failed' });
      const unsubscribed = await ctx.store.publishEvent(
        eventRecord({ type: 'generation.published' }),
        deliveryId,
      );

      expect(await ctx.store.purgeFinishedDeliveries(at(10_000), 100)).toEqual({
        deliveries: 2,
        events: 3,
        skipped: false,
      });
      for (const gone of [succeeded, failed]) {
        expect(await ctx.store.getDelivery('tenant_a', webhook.id, gone.deliveries[0]!.id)).toBeNull();
        // The event went with its last delivery: its id is free again.
        expect((await ctx.store.publishEvent(gone.event, deliveryId)).outcome).toBe('published');
      }
      expect((await ctx.store.publishEvent(unsubscribed.event, deliveryId)).outcome).toBe('published');
      const left = await ctx.store.listDeliveries('tenant_a', webhook.id, { limit: 100 });
      expect(left.map((d) => [d.eventId, d.status]).sort()).toEqual(
        [
          [retrying.event.id, 'retry_scheduled'],
          [recent.event.id, 'succeeded'],
          [pending.event.id, 'pending'],
          [succeeded.event.id, 'pending'],
          [failed.event.id, 'pending'],
        ].sort(),
      );
      const stillHeld = await ctx.store.listDeliveries('tenant_a', paused.id, { limit: 10 });
      expect(stillHeld.map((d) => [d.eventId, d.status])).toEqual([[held.event.id, 'held']]);
      // The retrying delivery keeps its attempt log.
      const detail = await ctx.store.getDelivery('tenant_a', webhook.id, retrying.deliveries[0]!.id);
      expect(detail?.attempts.map((a) => a.statusCode)).toEqual([500]);
      // Again: nothing finished is left, only the unsubscribed event published once more above.
      expect(await ctx.store.purgeFinishedDeliveries(at(10_000), 100)).toEqual({
        deliveries: 0,
        events: 1,
        skipped: false,
      });
    });

    it('retention deletes at most `limit` rows per call, and list pages stay right as their rows go', async () => {
      const webhook = await subscribed();
      for (const [i, id] of orderedIds('dlv', 5).entries()) {
        await publishOne(ctx.store, { createdAt: at(i) }, () => id);
        await attempt(200, SUCCEEDED, at(i));
      }
      const firstPage = await ctx.store.listDeliveries('tenant_a', webhook.id, { limit: 2 });
      const cursor = firstPage[1]!.id;
      const counts: number[] = [];
      for (let round = 0; round < 4; round++) {
        const purged = await ctx.store.purgeFinishedDeliveries(at(10), 2);
        expect(purged.events).toBe(purged.deliveries);
        counts.push(purged.deliveries);
        const all = await ctx.store.listDeliveries('tenant_a', webhook.id, { limit: 10 });
        const nextPage = await ctx.store.listDeliveries('tenant_a', webhook.id, {
          limit: 10,
          before: cursor,
        });
        expect(nextPage.map((d) => d.id)).toEqual(all.filter((d) => d.id < cursor).map((d) => d.id));
      }
      expect(counts).toEqual([2, 2, 1, 0]);
      expect(await ctx.store.listDeliveries('tenant_a', webhook.id, { limit: 10, before: cursor })).toEqual(
        [],
      );
    });

    it('an event keeps the trace context it was published with, through lease, detail and replay', async () => {
      const webhook = await subscribed();
      const traceContext = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      const traced = await publishOne(ctx.store, { traceContext, createdAt: at(-2000) });
      await publishOne(ctx.store, { createdAt: at(-1000) });
      expect(traced.event.traceContext).toBe(traceContext);
      const leased = await leaseAll();
      expect(leased.map((l) => l.event.traceContext)).toEqual([traceContext, null]);
      const detail = await ctx.store.getDelivery('tenant_a', webhook.id, traced.deliveries[0]!.id);
      expect(detail!.event.traceContext).toBe(traceContext);
      const replay = await ctx.store.publishEvent(eventRecord({ id: traced.event.id }), deliveryId);
      expect(replay).toMatchObject({ outcome: 'duplicate', event: { traceContext } });
      // Leased in the publish itself (the handoff), the event comes back with it too.
      const lease: PublishLease = { limit: 1, leaseId: 'handoff', leaseMs: 30_000 };
      const handedOver = await ctx.store.publishEvent(
        eventRecord({ traceContext }),
        deliveryId,
        undefined,
        lease,
      );
      expect(handedOver.outcome === 'published' && handedOver.leased[0]!.event.traceContext).toBe(
        traceContext,
      );
    });

    it('counts queued deliveries of every tenant by where they wait, and nothing finished', async () => {
      const empty = { due: 0, scheduled: 0, inFlight: 0, held: 0 };
      expect(await ctx.store.countQueuedDeliveries(T0)).toEqual(empty);
      await subscribed();
      await subscribed(ctx.store, { status: 'disabled', disabledReason: 'manual' });
      await subscribed(ctx.store, { tenantId: 'tenant_b' });
      // Each of these five events goes to both tenant_a webhooks: one pending, one held.
      for (const ms of [-5000, -4000, -3000, -2000, 60_000])
        await publishOne(ctx.store, { createdAt: at(ms) });
      await publishOne(ctx.store, { tenantId: 'tenant_b', createdAt: at(-1000) });
      await attempt(200, SUCCEEDED); // -5000: finished, not counted
      await attempt(null, FAILED); // -4000: finished
      await attempt(503, retryAt(30_000)); // -3000: scheduled
      await leaseAll(ctx.store, T0, 30_000, 1); // -2000: in flight
      expect(await ctx.store.countQueuedDeliveries(T0)).toEqual({
        due: 1, // tenant_b's
        scheduled: 2, // the retry, and the event published at +60 s
        inFlight: 1,
        held: 5,
      });
      // Later, the retry and the later event are due; the lease ran out, but the delivery is in
      // flight until it is leased again.
      expect(await ctx.store.countQueuedDeliveries(at(60_000))).toEqual({
        due: 3,
        scheduled: 0,
        inFlight: 1,
        held: 5,
      });
    });

    it('an event payload with any unicode comes back byte for byte', async () => {
      await subscribed();
      const payload = JSON.stringify({ id: 'evt_x', data: { text: 'naïve — 😀 \u2028 "quoted" \\ \u0000' } });
      const outcome = await publishOne(ctx.store, { payload });
      const [leased] = await leaseAll();
      expect(leased!.event.payload).toBe(payload);
      expect(outcome.event.payload).toBe(payload);
    });
  });
}
