import { newId } from '@keyhook/core/http';
import { type CompleteStore, DELIVERY_RULES, type EventRecord } from '@keyhook/core/store';
import { describe, expect, it } from 'vitest';
import { eventRecord, SUCCEEDED } from './delivery-cases.js';
import { T0, webhookRecord } from './fixtures.js';
import type { SuiteContext } from './store-harness.js';

const at = (ms: number) => new Date(T0.getTime() + ms);
const deliveryId = () => newId('dlv');
/** Every event of the cases below is created at or after T0: the window starts there. */
const WINDOW = { createdSince: T0 };

/**
 * The events feed (Store.listFeedEvents, docs/decisions.md §8.17): a tenant's events in the order
 * they were written, paged after an event, with their deliveries; test events have no place in it.
 */
export function eventsFeedCases(ctx: SuiteContext): void {
  async function publish(overrides: Partial<EventRecord> = {}, store: CompleteStore = ctx.store) {
    const outcome = await store.publishEvent(eventRecord(overrides), deliveryId);
    if (outcome.outcome !== 'published') throw new Error('expected a new event');
    return outcome;
  }

  /** One page of the feed, once it shows what committed before (StoreHarness.settleFeed). */
  async function list(tenantId: string, query: Parameters<CompleteStore['listFeedEvents']>[1]) {
    await ctx.settleFeed();
    return ctx.store.listFeedEvents(tenantId, query);
  }

  /** Every page of the tenant's feed, `limit` at a time, as the reader pages with `after`. */
  async function readAll(tenantId: string, limit: number, type?: string) {
    const seen: string[] = [];
    let after: string | undefined;
    for (let pages = 0; pages < 100; pages++) {
      const page = await list(tenantId, { after, type, limit, ...WINDOW });
      seen.push(...page.events.map((entry) => entry.event.id));
      if (page.events.length < limit) return seen;
      after = page.events[page.events.length - 1]!.event.id;
    }
    throw new Error('the feed did not end');
  }

  describe('events feed', () => {
    it('lists the tenant’s events in the order they were written, not by id, each as published', async () => {
      // Caller-chosen ids that sort against the order of writing.
      const ids = ['evt_c', 'evt_a', 'evt_b', 'evt_0'];
      const events = [];
      for (const [index, id] of ids.entries())
        events.push((await publish({ id, createdAt: at(index) })).event);
      const page = await list('tenant_a', { limit: 10, ...WINDOW });
      expect(page.after).toBeUndefined();
      expect(page.events.map((entry) => entry.event)).toEqual(events);
      expect(page.events.every((entry) => entry.deliveries.length === 0)).toBe(true);
    });

    it('pages after an event: no event missed, none twice, and the after event is returned', async () => {
      const written: string[] = [];
      for (let i = 0; i < 7; i++) written.push((await publish({ createdAt: at(i) })).event.id);
      expect(await readAll('tenant_a', 3)).toEqual(written);
      expect(await readAll('tenant_a', 1)).toEqual(written);
      const page = await list('tenant_a', { after: written[4], limit: 10, ...WINDOW });
      expect(page.after).toMatchObject({ id: written[4], tenantId: 'tenant_a', createdAt: at(4) });
      expect(page.events.map((entry) => entry.event.id)).toEqual(written.slice(5));
      const last = await list('tenant_a', { after: written[6], limit: 10, ...WINDOW });
      expect(last.events).toEqual([]);
      expect(last.after?.id).toBe(written[6]);
    });

    it('an event written after a page is read comes after it, on the next page', async () => {
      const first = await publish();
      const page = await list('tenant_a', { limit: 10, ...WINDOW });
      expect(page.events.map((entry) => entry.event.id)).toEqual([first.event.id]);
      const peer = await ctx.peer();
      const later = await publish({ id: 'evt_0000_sorts_first' }, peer);
      const next = await list('tenant_a', {
        after: first.event.id,
        limit: 10,
        ...WINDOW,
      });
      expect(next.events.map((entry) => entry.event.id)).toEqual([later.event.id]);
    });

    it('filters by type, and pages after an event of another type', async () => {
      const completed1 = await publish({ type: 'run.completed' });
      const failed = await publish({ type: 'run.failed' });
      const completed2 = await publish({ type: 'run.completed' });
      expect(await readAll('tenant_a', 1, 'run.completed')).toEqual([
        completed1.event.id,
        completed2.event.id,
      ]);
      const page = await list('tenant_a', {
        after: failed.event.id,
        type: 'run.completed',
        limit: 10,
        ...WINDOW,
      });
      expect(page.events.map((entry) => entry.event.id)).toEqual([completed2.event.id]);
    });

    it('leaves out events created before the window', async () => {
      await publish({ createdAt: at(-1) });
      const inside = await publish({ createdAt: T0 });
      const page = await list('tenant_a', { limit: 10, ...WINDOW });
      expect(page.events.map((entry) => entry.event.id)).toEqual([inside.event.id]);
    });

    it('a byte budget stops the read: the first two events always, then each whose earlier payloads total at most the budget', async () => {
      const payload = (i: number) => JSON.stringify({ i, pad: 'x'.repeat(100_000) });
      const written: string[] = [];
      for (let i = 0; i < 5; i++)
        written.push((await publish({ createdAt: at(i), payload: payload(i) })).event.id);
      const size = Buffer.byteLength(payload(0), 'utf8');
      const read = async (byteBudget: number | undefined, more: { after?: string; type?: string } = {}) =>
        (await list('tenant_a', { limit: 10, byteBudget, ...more, ...WINDOW })).events.map(
          (entry) => entry.event.id,
        );
      expect(await read(undefined)).toEqual(written);
      expect(await read(1)).toEqual(written.slice(0, 2));
      expect(await read(2 * size - 1)).toEqual(written.slice(0, 2));
      expect(await read(2 * size)).toEqual(written.slice(0, 3));
      expect(await read(4 * size)).toEqual(written);
      expect(await read(1, { after: written[1] })).toEqual(written.slice(2, 4));
      expect(await read(1, { type: 'run.completed' })).toEqual(written.slice(0, 2));
      const [first] = (await list('tenant_a', { limit: 1, byteBudget: 1, ...WINDOW })).events;
      expect(first!.event.payload).toBe(payload(0));
    });

    it('each event carries its deliveries as they stand, by webhook id', async () => {
      const active = webhookRecord({ events: ['run.completed'] });
      const disabled = webhookRecord({
        events: ['run.completed'],
        status: 'disabled',
        disabledReason: 'manual',
      });
      for (const webhook of [active, disabled])
        expect(await ctx.store.insertWebhook(webhook)).toBe('inserted');
      const { event } = await publish();
      const [leased] = await ctx.store.leaseDeliveries({
        now: T0,
        limit: 1,
        leaseMs: 30_000,
        leaseId: 'lease_1',
      });
      const recorded = await ctx.store.completeAttempt({
        tenantId: 'tenant_a',
        deliveryId: leased!.delivery.id,
        leaseId: 'lease_1',
        attempt: {
          deliveryId: leased!.delivery.id,
          tenantId: 'tenant_a',
          attempt: 1,
          startedAt: at(10),
          durationMs: 5,
          statusCode: 200,
          error: null,
          responseBody: 'ok',
        },
        ...SUCCEEDED,
        autoDisable: DELIVERY_RULES.autoDisable,
        at: at(20),
      });
      if (recorded.outcome !== 'recorded') throw new Error('expected the attempt to be recorded');
      const page = await list('tenant_a', { limit: 10, ...WINDOW });
      expect(page.events).toHaveLength(1);
      const { deliveries } = page.events[0]!;
      expect(deliveries.map((delivery) => delivery.webhookId)).toEqual([active.id, disabled.id].sort());
      const byWebhook = new Map(deliveries.map((delivery) => [delivery.webhookId, delivery]));
      expect(byWebhook.get(active.id)).toEqual(recorded.delivery);
      expect(byWebhook.get(active.id)).toMatchObject({
        status: 'succeeded',
        attempts: 1,
        lastAttemptAt: at(10),
      });
      expect(byWebhook.get(disabled.id)).toMatchObject({ status: 'held', attempts: 0, lastAttemptAt: null });
      expect(page.events[0]!.event).toEqual(event);
    });

    it("shows only the tenant's own events; another tenant's event id as after is not found", async () => {
      const ours = await publish();
      const theirs = await publish({ tenantId: 'tenant_b' });
      expect(await readAll('tenant_a', 10)).toEqual([ours.event.id]);
      expect(await readAll('tenant_b', 10)).toEqual([theirs.event.id]);
      expect(await list('tenant_a', { after: theirs.event.id, limit: 10, ...WINDOW })).toEqual({
        after: null,
        events: [],
      });
      // The same id in two tenants is two events, each in its own feed.
      const twin = await publish({ tenantId: 'tenant_b', id: ours.event.id });
      const page = await list('tenant_b', {
        after: theirs.event.id,
        limit: 10,
        ...WINDOW,
      });
      expect(page.events.map((entry) => entry.event)).toEqual([twin.event]);
    });

    it('an unknown after is not found, and nothing is read', async () => {
      await publish();
      expect(await list('tenant_a', { after: newId('evt'), limit: 10, ...WINDOW })).toEqual({
        after: null,
        events: [],
      });
    });

    it('test events have no place in the feed: left out, and their id as after is not found', async () => {
      const webhook = webhookRecord({ events: ['run.completed'] });
      expect(await ctx.store.insertWebhook(webhook)).toBe('inserted');
      const before = await publish();
      const test = eventRecord();
      expect((await ctx.store.publishTestEvent(test, webhook.id, deliveryId())).outcome).toBe('published');
      const after = await publish();
      expect(await readAll('tenant_a', 10)).toEqual([before.event.id, after.event.id]);
      expect(await list('tenant_a', { after: test.id, limit: 10, ...WINDOW })).toEqual({
        after: null,
        events: [],
      });
    });

    it('concurrent publishes each take one place: paging reads every one exactly once', async () => {
      const peer = await ctx.peer();
      const written = await Promise.all(
        Array.from({ length: 40 }, (_, i) => publish({ createdAt: at(i) }, i % 2 === 0 ? ctx.store : peer)),
      );
      const read = await readAll('tenant_a', 7);
      expect(read).toHaveLength(40);
      expect(new Set(read)).toEqual(new Set(written.map((outcome) => outcome.event.id)));
    });
  });
}
