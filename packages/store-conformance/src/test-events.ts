import { randomBytes } from 'node:crypto';
import { newId } from '@keyhook/core/http';
import type { Store } from '@keyhook/core/store';
import { DELIVERY_RULES, type EventRecord, newDeliveryRecord, type WebhookRecord } from '@keyhook/core/store';
import { describe, expect, it } from 'vitest';
import { eventRecord } from './delivery-cases.js';
import { T0, webhookRecord } from './fixtures.js';
import type { SuiteContext } from './store-harness.js';

const at = (ms: number) => new Date(T0.getTime() + ms);
const deliveryId = () => newId('dlv');

/**
 * Test events (Store.publishTestEvent, docs/decisions.md §8.16): one event and one delivery, to
 * the one webhook named, whatever it subscribes to; nothing for another tenant's webhook.
 */
export function testEventCases(ctx: SuiteContext): void {
  /** A webhook of tenant_a subscribed to run.completed unless told otherwise, inserted. */
  async function inserted(overrides: Partial<WebhookRecord> = {}, store: Store = ctx.store) {
    const webhook = webhookRecord({ events: ['run.completed'], ...overrides });
    expect(await store.insertWebhook(webhook)).toBe('inserted');
    return webhook;
  }

  async function published(webhook: WebhookRecord, event: EventRecord = eventRecord(), store = ctx.store) {
    const id = deliveryId();
    const outcome = await store.publishTestEvent(event, webhook.id, id);
    if (outcome.outcome !== 'published') throw new Error('expected the test event to be written');
    return { given: event, id, event: outcome.event, delivery: outcome.delivery };
  }

  const leaseAll = (now: Date, store: Store = ctx.store) =>
    store.leaseDeliveries({ now, limit: 100, leaseMs: 30_000, leaseId: randomBytes(8).toString('hex') });

  describe('test events', () => {
    it('writes the event and one delivery to that webhook only, pending and due at once, though others subscribe', async () => {
      const target = await inserted();
      const other = await inserted();
      const elsewhere = await inserted({ tenantId: 'tenant_b' });
      const { given, event, id, delivery } = await published(target);
      expect(event).toEqual(given);
      // Core's record for a publish to this endpoint (newDeliveryRecord), no store's own.
      expect(delivery).toEqual(newDeliveryRecord(event, target, id));
      expect(delivery).toMatchObject({ status: 'pending', dueAt: T0, heldSince: null, attempts: 0 });
      expect(await ctx.store.getDelivery('tenant_a', target.id, id)).toEqual({
        delivery,
        event,
        attempts: [],
      });
      expect(await ctx.store.listDeliveries('tenant_a', other.id, { limit: 10 })).toEqual([]);
      expect(await ctx.store.listDeliveries('tenant_b', elsewhere.id, { limit: 10 })).toEqual([]);
      const leased = await leaseAll(T0);
      expect(leased.map((l) => l.delivery.id)).toEqual([id]);
    });

    it('a webhook not subscribed to the type still gets it', async () => {
      const target = await inserted({ events: ['run.failed'] });
      const { event, id, delivery } = await published(target, eventRecord({ type: 'run.completed' }));
      expect(delivery).toEqual(newDeliveryRecord(event, target, id));
      expect(delivery).toMatchObject({ eventType: 'run.completed', status: 'pending' });
      expect(await ctx.store.listDeliveries('tenant_a', target.id, { limit: 10 })).toEqual([delivery]);
    });

    it('is held since the event on a disabled webhook, never leased, and released when it is enabled', async () => {
      const target = await inserted({ status: 'disabled', disabledReason: 'manual' });
      const { event, id, delivery } = await published(target, eventRecord({ createdAt: at(1000) }));
      expect(delivery).toEqual(newDeliveryRecord(event, target, id));
      expect(delivery).toMatchObject({ status: DELIVERY_RULES.hold.state, dueAt: null, heldSince: at(1000) });
      expect(await leaseAll(at(60_000))).toEqual([]);
      await ctx.store.setWebhookStatus('tenant_a', target.id, 'active', null, at(2000));
      const released = await leaseAll(at(2000));
      expect(released.map((l) => l.delivery.id)).toEqual([id]);
    });

    it("another tenant's webhook, or an unknown id, is not_found and writes nothing", async () => {
      const theirs = await inserted({ tenantId: 'tenant_b' });
      const event = eventRecord();
      const id = deliveryId();
      expect(await ctx.store.publishTestEvent(event, theirs.id, id)).toEqual({ outcome: 'not_found' });
      expect(await ctx.store.publishTestEvent(event, newId('wh'), id)).toEqual({ outcome: 'not_found' });
      expect(await ctx.store.listDeliveries('tenant_b', theirs.id, { limit: 10 })).toEqual([]);
      expect(await ctx.store.listDeliveries('tenant_a', theirs.id, { limit: 10 })).toEqual([]);
      expect(await ctx.store.getDelivery('tenant_a', theirs.id, id)).toBeNull();
      expect(await ctx.store.getDelivery('tenant_b', theirs.id, id)).toBeNull();
      expect(await leaseAll(at(60_000))).toEqual([]);
      // The event was not written either: its id publishes as new, not as a replay.
      expect((await ctx.store.publishEvent(event, deliveryId)).outcome).toBe('published');
    });

    it('its delivery is leased with its event and webhook, and completed, as any delivery is', async () => {
      const target = await inserted();
      const { event, id } = await published(target);
      const [leased, ...rest] = await leaseAll(T0);
      expect(rest).toEqual([]);
      expect(leased!.delivery).toMatchObject({ id, status: 'in_flight', attempts: 0 });
      expect(leased!.event).toEqual(event);
      expect(leased!.webhook).toEqual(target);
      const outcome = await ctx.store.completeAttempt({
        tenantId: 'tenant_a',
        deliveryId: id,
        leaseId: leased!.delivery.leaseId!,
        attempt: {
          deliveryId: id,
          tenantId: 'tenant_a',
          attempt: 1,
          startedAt: at(10),
          durationMs: 7,
          statusCode: 200,
          error: null,
          responseBody: 'ok',
        },
        status: 'succeeded',
        dueAt: null,
        endpointFailures: 'reset',
        autoDisable: DELIVERY_RULES.autoDisable,
        at: at(20),
      });
      expect(outcome).toMatchObject({ outcome: 'recorded', delivery: { status: 'succeeded', attempts: 1 } });
      const detail = await ctx.store.getDelivery('tenant_a', target.id, id);
      expect(detail!.delivery.status).toBe('succeeded');
      expect(detail!.attempts.map((a) => a.statusCode)).toEqual([200]);
    });

    it('racing a disable on another connection, the delivery always ends held, never pending on a disabled webhook', async () => {
      const peer = await ctx.peer();
      for (let round = 0; round < 10; round++) {
        const target = await inserted({ url: `https://hooks.example.com/race-${round}` });
        const [, outcome] = await Promise.all([
          peer.setWebhookStatus('tenant_a', target.id, 'disabled', 'manual', at(round)),
          ctx.store.publishTestEvent(eventRecord(), target.id, deliveryId()),
        ]);
        if (outcome.outcome !== 'published') throw new Error('expected the test event to be written');
        const [stored] = await ctx.store.listDeliveries('tenant_a', target.id, { limit: 10 });
        expect(stored).toMatchObject({
          id: outcome.delivery.id,
          status: DELIVERY_RULES.hold.state,
          dueAt: null,
        });
      }
      expect(await leaseAll(at(60_000))).toEqual([]);
    });
  });
}
