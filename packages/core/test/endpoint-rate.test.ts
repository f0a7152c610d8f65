import {
  type CreateWebhookInput,
  createKeyhook,
  type DeliveryWorker,
  type Keyhook,
  MemoryStore,
  toDeliveryView,
  toWebhookView,
} from '@keyhook/core';
import {
  TEST_ADMIN_SECRET,
  TEST_CATALOG,
  TEST_ENCRYPTION_KEY,
  TestReceiver,
  VirtualClock,
} from '@keyhook/testing/support';
import { afterEach, describe, expect, it } from 'vitest';
import { ENDPOINT_RATE_RULE, paceEndpoint, type RateSlots } from '../src/delivery/endpoint-rate.js';

const TENANT = 'tenant_a';
const TEN = { perSecond: 10 }; // 100 ms apart; a slot taken 5 ms early or kept 20 ms late

describe('paceEndpoint (docs/decisions.md §8.18)', () => {
  const fresh = (): RateSlots => ({ nextAt: null, queueAt: null });
  const nothingWaits = () => false;

  /** An endpoint's queue as a store keeps it: each claim's deferrals wait at their due times until leased. */
  function queue(slots: RateSlots = fresh()) {
    const waiting = new Set<number>();
    return {
      slots,
      waiting,
      claim(now: number, count: number, oldestDue?: number) {
        // The oldest due first: a delivery already waiting leaves its slot when it is claimed.
        if (oldestDue !== undefined) waiting.delete(oldestDue);
        const decisions = paceEndpoint(slots, TEN, now, ENDPOINT_RATE_RULE, count, (at) => waiting.has(at));
        for (const decision of decisions) if (!decision.lease) waiting.add(decision.dueAt);
        return decisions;
      },
    };
  }

  it('an endpoint without slots leases its first due delivery now; the next takes the next slot, the rest queue after it', () => {
    const endpoint = queue();
    expect(endpoint.claim(1000, 4)).toEqual([
      { lease: true },
      { lease: false, dueAt: 1100 },
      { lease: false, dueAt: 1200 },
      { lease: false, dueAt: 1300 },
    ]);
    expect(endpoint.slots).toEqual({ nextAt: 1100, queueAt: 1300 });
    // A later claim queues after the last slot given out: the next one has its delivery already.
    expect(endpoint.claim(1010, 2)).toEqual([
      { lease: false, dueAt: 1400 },
      { lease: false, dueAt: 1500 },
    ]);
    expect(endpoint.slots).toEqual({ nextAt: 1100, queueAt: 1500 });
  });

  it('one delivery at a time, each published after the last was paced, takes the next free slot, and goes then', () => {
    const endpoint = queue();
    const claims = [1000, 1001, 1002, 1003].map((now) => endpoint.claim(now, 1));
    expect(claims).toEqual([
      [{ lease: true }],
      [{ lease: false, dueAt: 1100 }],
      [{ lease: false, dueAt: 1200 }],
      [{ lease: false, dueAt: 1300 }],
    ]);
    for (const at of [1100, 1200, 1300]) expect(endpoint.claim(at, 1, at)).toEqual([{ lease: true }]);
    // Once the slots given are behind the endpoint's next one, a wait starts from that again.
    expect(endpoint.claim(1350, 1)).toEqual([{ lease: false, dueAt: 1400 }]);
  });

  it('after a late worker moved the pace, the delivery due at the old slot takes the new one: no slot idle, none sent to the end', () => {
    const endpoint = queue();
    endpoint.claim(1000, 4); // leased now; 1100, 1200, 1300 wait
    // 50 ms late, more than the 20 ms kept: the pace restarts from 1130, the next slot at 1230.
    expect(endpoint.claim(1150, 1, 1100)).toEqual([{ lease: true }]);
    expect(endpoint.slots.nextAt).toBe(1230);
    // The one due at 1200 comes due before that slot, and takes it.
    expect(endpoint.claim(1200, 1, 1200)).toEqual([{ lease: false, dueAt: 1230 }]);
    expect(endpoint.claim(1230, 1, 1230)).toEqual([{ lease: true }]);
    expect(endpoint.slots.queueAt).toBe(1300);
  });

  it('takes a slot up to 5 % of an interval early, never more', () => {
    const early = { nextAt: 1100, queueAt: null };
    expect(paceEndpoint(early, TEN, 1095, ENDPOINT_RATE_RULE, 1, nothingWaits)).toEqual([{ lease: true }]);
    expect(early.nextAt).toBe(1200);
    const tooEarly = { nextAt: 1100, queueAt: null };
    expect(paceEndpoint(tooEarly, TEN, 1094, ENDPOINT_RATE_RULE, 1, nothingWaits)).toEqual([
      { lease: false, dueAt: 1100 },
    ]);
    expect(tooEarly.nextAt).toBe(1100);
  });

  it('keeps the pace when a claim is up to 20 % of an interval late, and restarts it from there when later', () => {
    const late = { nextAt: 1100, queueAt: null };
    paceEndpoint(late, TEN, 1120, ENDPOINT_RATE_RULE, 1, nothingWaits);
    expect(late.nextAt).toBe(1200);
    const later = { nextAt: 1100, queueAt: null };
    paceEndpoint(later, TEN, 1150, ENDPOINT_RATE_RULE, 1, nothingWaits);
    expect(later.nextAt).toBe(1230);
  });

  it('rounds a slot up to the millisecond, and never leases two in one claim', () => {
    const slots = fresh();
    const decisions = paceEndpoint(slots, { perSecond: 3 }, 0, ENDPOINT_RATE_RULE, 3, nothingWaits);
    expect(decisions).toEqual([{ lease: true }, { lease: false, dueAt: 334 }, { lease: false, dueAt: 667 }]);
    for (const perSecond of [0.01, 1, 7, 50, 1000]) {
      const many = paceEndpoint(fresh(), { perSecond }, 5, ENDPOINT_RATE_RULE, 20, nothingWaits);
      expect(many.filter((d) => d.lease)).toHaveLength(1);
    }
  });
});

describe('the host default, delivery.deliveryRate', () => {
  const keyhookWith = (delivery: Record<string, unknown>) =>
    createKeyhook({
      ...TEST_CATALOG,
      store: new MemoryStore(),
      adminSession: { secret: TEST_ADMIN_SECRET },
      mode: 'development',
      encryptionKey: TEST_ENCRYPTION_KEY,
      delivery: delivery as { deliveryRate: { perSecond: number } },
    });

  it('gives new endpoints its rate; an endpoint that names one, or null, keeps its own', async () => {
    const keyhook = keyhookWith({ deliveryRate: { perSecond: 5 } });
    try {
      const url = 'https://hooks.example.com/default';
      const rateOf = async (input: Partial<CreateWebhookInput>, n: number) =>
        toWebhookView(
          (await keyhook.webhooks.create(TENANT, { url: `${url}/${n}`, events: ['run.completed'], ...input }))
            .webhook,
        ).deliveryRate;
      expect(await rateOf({}, 1)).toEqual({ perSecond: 5 });
      expect(await rateOf({ deliveryRate: { perSecond: 2 } }, 2)).toEqual({ perSecond: 2 });
      expect(await rateOf({ deliveryRate: null }, 3)).toBeNull();
      // The input's old name, deprecated, means the same.
      expect(await rateOf({ rateLimit: { perSecond: 3 } }, 4)).toEqual({ perSecond: 3 });
      expect(await rateOf({ rateLimit: null }, 5)).toBeNull();
    } finally {
      await keyhook.close();
    }
  });

  it('the input under both names → validation_failed naming both; an update takes either name', async () => {
    const keyhook = keyhookWith({});
    try {
      const input = { url: 'https://hooks.example.com/both', events: ['run.completed'] };
      const both = { deliveryRate: { perSecond: 1 }, rateLimit: { perSecond: 1 } };
      const refusal = (error: unknown) => {
        expect(error).toMatchObject({ code: 'validation_failed' });
        return (error as { details: { path: string }[] }).details.map((detail) => detail.path).sort();
      };
      const created = await keyhook.webhooks.create(TENANT, { ...input, ...both }).catch(refusal);
      expect(created).toEqual(['deliveryRate', 'rateLimit']);
      const { webhook } = await keyhook.webhooks.create(TENANT, input);
      const updated = await keyhook.webhooks.update(TENANT, webhook.id, both).catch(refusal);
      expect(updated).toEqual(['deliveryRate', 'rateLimit']);
      const old = await keyhook.webhooks.update(TENANT, webhook.id, { rateLimit: { perSecond: 7 } });
      expect(toWebhookView(old).deliveryRate).toEqual({ perSecond: 7 });
      const renamed = await keyhook.webhooks.update(TENANT, webhook.id, { deliveryRate: null });
      expect(toWebhookView(renamed).deliveryRate).toBeNull();
    } finally {
      await keyhook.close();
    }
  });

  it('its old name, endpointRateLimit, still sets it; both names at once is a TypeError', async () => {
    const keyhook = keyhookWith({ endpointRateLimit: { perSecond: 4 } });
    try {
      const { webhook } = await keyhook.webhooks.create(TENANT, {
        url: 'https://hooks.example.com/old-option',
        events: ['run.completed'],
      });
      expect(toWebhookView(webhook).deliveryRate).toEqual({ perSecond: 4 });
    } finally {
      await keyhook.close();
    }
    for (const endpointRateLimit of [{ perSecond: 4 }, null]) {
      expect(() => keyhookWith({ deliveryRate: { perSecond: 4 }, endpointRateLimit })).toThrow(
        /delivery\.deliveryRate or delivery\.endpointRateLimit/,
      );
    }
  });

  it('out of bounds, or not a number, is a TypeError at createKeyhook naming the option given', () => {
    for (const bad of [
      { perSecond: 0 },
      { perSecond: 1001 },
      { perSecond: '5' },
      { perSecond: Number.NaN },
      {},
    ]) {
      expect(() => keyhookWith({ deliveryRate: bad }), JSON.stringify(bad)).toThrow(
        /deliveryRate\.perSecond/,
      );
      expect(() => keyhookWith({ endpointRateLimit: bad }), JSON.stringify(bad)).toThrow(
        /endpointRateLimit\.perSecond/,
      );
    }
  });
});

describe('the worker paces a limited endpoint (docs/decisions.md §8.18)', () => {
  let receiver: TestReceiver;
  let keyhook: Keyhook;
  let worker: DeliveryWorker;

  afterEach(async () => {
    await keyhook?.close();
    await receiver?.close();
  });

  /** A receiver, and a keyhook on `store` whose clock and timers move only when the test moves them. */
  async function startOnVirtualClock(store: MemoryStore): Promise<VirtualClock> {
    receiver = await TestReceiver.start();
    const clock = new VirtualClock();
    keyhook = createKeyhook({
      ...TEST_CATALOG,
      store,
      adminSession: { secret: TEST_ADMIN_SECRET },
      mode: 'development',
      encryptionKey: TEST_ENCRYPTION_KEY,
      clock,
      timers: clock,
    });
    return clock;
  }

  it('sends one per slot, waking at each slot rather than at its poll; an unlimited endpoint gets all at once; none waits with an attempt', async () => {
    const store = new MemoryStore();
    const clock = await startOnVirtualClock(store);
    const { webhook: limited } = await keyhook.webhooks.create(TENANT, {
      url: receiver.url('/slow'),
      events: ['run.completed'],
      deliveryRate: TEN,
    });
    await keyhook.webhooks.create(TENANT, { url: receiver.url('/fast'), events: ['run.completed'] });
    for (let i = 0; i < 4; i++) {
      await keyhook.events.publish({ tenantId: TENANT, type: 'run.completed', data: { runId: `run_${i}` } });
    }
    // A poll far away: only the slot's timer can send the next one on time.
    worker = keyhook.createWorker({ pollIntervalMs: 600_000 });
    worker.start();
    await receiver.waitFor(
      (r) => r.filter((q) => q.path === '/fast').length === 4 && r.some((q) => q.path === '/slow'),
    );
    const waiting = async () =>
      (await store.listDeliveries(TENANT, limited.id, { limit: 10 })).filter((d) => d.status === 'pending');
    expect(receiver.to('/slow')).toHaveLength(1);
    expect((await waiting()).map((d) => d.attempts)).toEqual([0, 0, 0]);

    const start = clock.now().getTime();
    for (let sent = 2; sent <= 4; sent++) {
      // Slot n is n × 100 ms after the first send; the worker wakes a millisecond after it.
      const slot = start + (sent - 1) * 100;
      await clock.advance(slot - clock.now().getTime());
      expect(await waiting()).toHaveLength(4 - sent + 1);
      await clock.advance(1);
      await receiver.waitFor((r) => r.filter((q) => q.path === '/slow').length === sent);
    }
    expect(await waiting()).toEqual([]);
  });
  it('at 0.01/s, events published one by one with the worker running: each delivery shows the time it is sent', async () => {
    const clock = await startOnVirtualClock(new MemoryStore());
    const { webhook } = await keyhook.webhooks.create(TENANT, {
      url: receiver.url('/slow'),
      events: ['run.completed'],
      deliveryRate: { perSecond: 0.01 },
    });
    worker = keyhook.createWorker({ pollIntervalMs: 600_000 });
    worker.start();
    /** The delivery as the API answers it: nextAttemptAt in ms, and its attempts. */
    const shown = async (id: string) => {
      const view = toDeliveryView((await keyhook.deliveries.get(TENANT, webhook.id, id)).delivery);
      return { at: view.nextAttemptAt ? Date.parse(view.nextAttemptAt) : null, attempts: view.attemptCount };
    };
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const published = await keyhook.events.publish({
        tenantId: TENANT,
        type: 'run.completed',
        data: { runId: `run_${i}` },
      });
      const id = published.deliveries[0]!.id;
      ids.push(id);
      // The publish wakes the worker: the first is sent; each later one is paced, its time moved on.
      if (i === 0) await receiver.waitFor((r) => r.length === 1);
      else await expect.poll(async () => (await shown(id)).at).toBeGreaterThan(clock.now().getTime());
      await clock.advance(1);
    }
    const sentFirst = clock.now().getTime();
    // What the API shows each waiting delivery, read before any of them goes: 100 s apart.
    const times = await Promise.all(ids.slice(1).map(async (id) => (await shown(id)).at!));
    expect(times.map((at) => Math.round((at - sentFirst) / 1000))).toEqual([100, 200]);
    // Then each is sent at the time shown: the clock moves there and the worker's timer sends it.
    for (const [n, id] of ids.slice(1).entries()) {
      await clock.advance(times[n]! - clock.now().getTime());
      expect(receiver.requests).toHaveLength(n + 1);
      await clock.advance(1);
      await receiver.waitFor((r) => r.length === n + 2);
      expect(clock.now().getTime() - times[n]!).toBeLessThanOrEqual(1000);
      await expect.poll(async () => (await shown(id)).attempts).toBe(1);
    }
  });

  it('several limited endpoints side by side: each is sent at its own slots, none left to the poll', async () => {
    const clock = await startOnVirtualClock(new MemoryStore());
    // 100 ms and 500 ms apart: the faster endpoint's timer is always the earlier one.
    const rates = { '/ten': 100, '/two': 500 } as const;
    for (const [path, intervalMs] of Object.entries(rates)) {
      await keyhook.webhooks.create(TENANT, {
        url: receiver.url(path),
        events: ['run.completed'],
        deliveryRate: { perSecond: 1000 / intervalMs },
      });
    }
    for (let i = 0; i < 4; i++) {
      await keyhook.events.publish({ tenantId: TENANT, type: 'run.completed', data: { runId: `run_${i}` } });
    }
    worker = keyhook.createWorker({ pollIntervalMs: 600_000 });
    worker.start();
    await receiver.waitFor((r) => r.some((q) => q.path === '/ten') && r.some((q) => q.path === '/two'));
    const start = clock.now().getTime();
    // Every slot of both, in time order: at each, that endpoint's next delivery goes, a millisecond after it.
    const slots = Object.entries(rates)
      .flatMap(([path, intervalMs]) =>
        [1, 2, 3].map((n) => ({ path, at: start + n * intervalMs, sent: n + 1 })),
      )
      .sort((a, b) => a.at - b.at);
    for (const { path, at, sent } of slots) {
      await clock.advance(at + 1 - clock.now().getTime());
      await receiver.waitFor((r) => r.filter((q) => q.path === path).length === sent);
    }
    expect(receiver.to('/ten')).toHaveLength(4);
    expect(receiver.to('/two')).toHaveLength(4);
  });
});
