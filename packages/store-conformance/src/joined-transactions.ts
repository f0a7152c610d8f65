import { randomBytes } from 'node:crypto';
import { newId } from '@keyhook/core/http';
import {
  type CompleteStore,
  type EventRecord,
  newDeliveryRecord,
  type PublishOutcome,
} from '@keyhook/core/store';
import { describe, expect, it } from 'vitest';
import { eventRecord } from './delivery-cases.js';
import { T0, webhookRecord } from './fixtures.js';
import type { StoreHarness, SuiteContext } from './store-harness.js';
import { originalOf } from './transitions.js';

const deliveryId = () => newId('dlv');

/** Thrown from a transaction's work so that the harness rolls it back. */
class HostRollback extends Error {
  constructor() {
    super('the host changed its mind');
  }
}

/** A kind of host transaction the harness offers, as the cases below use it. */
interface TransactionKind {
  /** Publishes `events` in order inside one transaction of this kind, committed or rolled back; their outcomes. */
  publishIn(events: readonly EventRecord[], ending: 'commit' | 'rollback'): Promise<PublishOutcome[]>;
}

/**
 * Publishing inside a host's own transaction (the `transaction` of publishEvent and
 * publishEventSync, docs in core's store/types.ts): for each kind the harness offers, what the
 * publish wrote commits or rolls back with the host, is out of another connection's reach until
 * then, and answers a replay as outside; a store that joins no transaction of a kind refuses one.
 */
export function joinedTransactionCases(ctx: SuiteContext, harness: StoreHarness): void {
  const feed = !harness.without?.includes('eventFeed');

  /** An active and a disabled webhook of tenant_a subscribed to run.completed, in id order. */
  async function subscribers() {
    const webhooks = [webhookRecord({ events: ['run.completed'] })];
    webhooks.push(webhookRecord({ events: ['run.completed'], status: 'disabled', disabledReason: 'manual' }));
    for (const webhook of webhooks) expect(await ctx.store.insertWebhook(webhook)).toBe('inserted');
    return webhooks.sort((a, b) => (a.id < b.id ? -1 : 1));
  }

  const leaseAll = (store: CompleteStore) =>
    store.leaseDeliveries({ now: T0, limit: 100, leaseMs: 30_000, leaseId: randomBytes(8).toString('hex') });

  /** tenant_a's feed, once it shows what committed before (StoreHarness.settleFeed). */
  async function feedEntries() {
    await ctx.settleFeed();
    return (await ctx.store.listFeedEvents('tenant_a', { limit: 10, createdSince: T0 })).events;
  }

  function casesOf(kind: TransactionKind): void {
    it('commits with the host: the event and its deliveries as published, then read, in the feed, and leased by another connection', async () => {
      const webhooks = await subscribers();
      const event = eventRecord();
      const [outcome] = await kind.publishIn([event], 'commit');
      if (outcome?.outcome !== 'published') throw new Error('expected a new event');
      // Written as core's rule says, and none leased: a lease is never taken in a host's transaction.
      expect(outcome.event).toEqual(event);
      expect(outcome.leased).toEqual([]);
      expect(outcome.deliveries).toEqual(
        webhooks.map((webhook, i) => newDeliveryRecord(event, webhook, outcome.deliveries[i]!.id)),
      );
      for (const delivery of outcome.deliveries) {
        const stored = await ctx.store.getDelivery('tenant_a', delivery.webhookId, delivery.id);
        expect(stored).toEqual({ delivery, event, attempts: [] });
      }
      if (feed) expect(await feedEntries()).toEqual([{ event, deliveries: outcome.deliveries }]);
      const pending = outcome.deliveries.filter((delivery) => delivery.status === 'pending');
      expect((await leaseAll(await ctx.peer())).map((l) => l.delivery.id)).toEqual(pending.map((d) => d.id));
      expect(await ctx.store.publishEvent(event, deliveryId)).toEqual({ outcome: 'duplicate', event });
    });

    it('rolls back with the host: no event, no delivery, no feed entry, and the id is free again', async () => {
      const webhooks = await subscribers();
      const event = eventRecord();
      const [outcome] = await kind.publishIn([event], 'rollback');
      if (outcome?.outcome !== 'published') throw new Error('expected a new event');
      expect(outcome.deliveries).toHaveLength(webhooks.length);
      for (const delivery of outcome.deliveries)
        expect(await ctx.store.getDelivery('tenant_a', delivery.webhookId, delivery.id)).toBeNull();
      for (const webhook of webhooks)
        expect(await ctx.store.listDeliveries('tenant_a', webhook.id, { limit: 10 })).toEqual([]);
      expect(await leaseAll(await ctx.peer())).toEqual([]);
      if (feed) expect(await feedEntries()).toEqual([]);
      expect((await ctx.store.publishEvent(event, deliveryId)).outcome).toBe('published');
    });

    it('a replayed event id answers as outside a transaction: duplicate, the event as first published, nothing written', async () => {
      await subscribers();
      const earlier = eventRecord();
      expect((await ctx.store.publishEvent(earlier, deliveryId)).outcome).toBe('published');
      const fresh = eventRecord();
      const outcomes = await kind.publishIn(
        [{ ...earlier, payload: '{"other":true}' }, fresh, { ...fresh, payload: '{"again":true}' }],
        'commit',
      );
      expect(outcomes[0]).toEqual({ outcome: 'duplicate', event: earlier });
      expect(outcomes[1]).toMatchObject({ outcome: 'published', event: fresh });
      expect(outcomes[2]).toEqual({ outcome: 'duplicate', event: fresh });
      // One pending delivery of each event, to the active webhook.
      const leased = await leaseAll(ctx.store);
      expect(leased.map((l) => l.event.id).sort()).toEqual([earlier.id, fresh.id].sort());
    });
  }

  describe('publishing inside a host’s transaction', () => {
    const { hostTransaction, syncTransaction } = harness;
    describe('publishEvent, in an async one (harness.hostTransaction)', () => {
      if (!hostTransaction) {
        it('refuses a transaction, joining none: a TypeError, and nothing written', async () => {
          await subscribers();
          await expect(ctx.store.publishEvent(eventRecord(), deliveryId, {})).rejects.toThrow(TypeError);
          expect(await leaseAll(ctx.store)).toEqual([]);
        });
        return;
      }
      casesOf({
        async publishIn(events, ending) {
          const outcomes: PublishOutcome[] = [];
          const run = hostTransaction(originalOf(ctx.store), async (transaction) => {
            for (const event of events)
              outcomes.push(await ctx.store.publishEvent(event, deliveryId, transaction));
            if (ending === 'rollback') throw new HostRollback();
          });
          if (ending === 'rollback') await expect(run).rejects.toThrow(HostRollback);
          else await run;
          return outcomes;
        },
      });

      it('what the publish wrote is out of another connection’s reach until the host commits', async () => {
        const active = (await subscribers()).find((webhook) => webhook.status === 'active')!;
        const peer = await ctx.peer();
        const outcome = await hostTransaction(originalOf(ctx.store), async (transaction) => {
          const published = await ctx.store.publishEvent(eventRecord(), deliveryId, transaction);
          if (published.outcome !== 'published') throw new Error('expected a new event');
          expect(await leaseAll(peer)).toEqual([]);
          const pending = published.deliveries.find((delivery) => delivery.webhookId === active.id)!;
          expect(await peer.getDelivery('tenant_a', active.id, pending.id)).toBeNull();
          return pending;
        });
        expect((await leaseAll(peer)).map((l) => l.delivery.id)).toEqual([outcome.id]);
      });
    });

    describe('publishEventSync, in a synchronous one (harness.syncTransaction)', () => {
      if (!syncTransaction) {
        it('refuses a transaction, joining none: a TypeError, and nothing written', async () => {
          await subscribers();
          expect(() => ctx.store.publishEventSync(eventRecord(), deliveryId, {})).toThrow(TypeError);
          expect(await leaseAll(ctx.store)).toEqual([]);
        });
        return;
      }
      casesOf({
        async publishIn(events, ending) {
          const outcomes: PublishOutcome[] = [];
          const run = () =>
            syncTransaction(originalOf(ctx.store), (transaction) => {
              for (const event of events)
                outcomes.push(ctx.store.publishEventSync(event, deliveryId, transaction));
              if (ending === 'rollback') throw new HostRollback();
            });
          if (ending === 'rollback') expect(run).toThrow(HostRollback);
          else run();
          return outcomes;
        },
      });

      it('refuses to publish outside a transaction, with nothing to join: a TypeError, and nothing written', async () => {
        await subscribers();
        expect(() => ctx.store.publishEventSync(eventRecord(), deliveryId, undefined)).toThrow(TypeError);
        expect(await leaseAll(ctx.store)).toEqual([]);
      });
    });
  });
}
