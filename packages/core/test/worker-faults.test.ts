import type { ServerResponse } from 'node:http';
import { type Keyhook, KeyhookError, MemoryStore, type WebhookView } from '@keyhook/core';
import { recordingLogger, TestReceiver } from '@keyhook/testing/support';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EVENT_ID_HEADER } from '../src/delivery/signature.js';
import { eventually, startedKeyhook } from './worker-harness.js';

const TENANT = 'tenant_a';

let receiver: TestReceiver;
let close: (() => Promise<void>) | undefined;
beforeEach(async () => {
  receiver = await TestReceiver.start();
});
afterEach(async () => {
  await close?.();
  close = undefined;
  await receiver.close();
});

/**
 * A receiver path whose requests are held open until the test lets them go (or the attempt times
 * out); once `done`, it answers at once, so the worker's stop does not wait on the attempt timeout.
 */
function hangAt(path: string) {
  const held: ServerResponse[] = [];
  let answering = false;
  receiver.on(path, (_request, _index, res) => (answering ? res.writeHead(200).end() : held.push(res)));
  const release = () => {
    for (const res of held.splice(0)) if (!res.destroyed) res.writeHead(200).end();
  };
  return {
    get open() {
      return held.filter((res) => !res.writableEnded && !res.destroyed).length;
    },
    release,
    done: () => {
      answering = true;
      release();
    },
  };
}

const webhookTo = (keyhook: Keyhook, path: string, events: string[]) =>
  keyhook.webhooks.create(TENANT, { url: receiver.url(path), events: events as ['run.completed'] });

describe('an endpoint that hangs holds its own slots, never the others’ (docs/decisions.md §8.20)', () => {
  it('at most endpointConcurrency attempts to it at once; another endpoint’s deliveries go out beside them at once', async () => {
    const { keyhook, clock, worker } = startedKeyhook(
      { delivery: { timeoutMs: 10_000 } },
      { concurrency: 4, endpointConcurrency: 2, pollIntervalMs: 50 },
    );
    const hung = hangAt('/hang');
    close = async () => {
      hung.done();
      await keyhook.close();
    };
    await webhookTo(keyhook, '/hang', ['run.completed']);
    await webhookTo(keyhook, '/ok', ['run.failed']);
    for (let i = 0; i < 6; i++)
      await keyhook.events.publish({ tenantId: TENANT, type: 'run.completed', data: { i } });
    await receiver.waitFor((requests) => requests.filter((r) => r.path === '/hang').length === 2, 5000);
    // Polls come due: the hung endpoint gets no third slot, though two of the four are free.
    await clock.advance(200);
    expect(hung.open).toBe(2);
    // The healthy endpoint's deliveries go out at once, beside the two hung attempts.
    for (let i = 0; i < 5; i++)
      await keyhook.events.publish({ tenantId: TENANT, type: 'run.failed', data: { i } });
    await receiver.waitFor((requests) => requests.filter((r) => r.path === '/ok').length === 5, 5000);
    expect(hung.open).toBe(2);
    // Answered, the hung endpoint's slots take the next of its deliveries, two at a time.
    hung.release();
    await receiver.waitFor((requests) => requests.filter((r) => r.path === '/hang').length === 4, 5000);
    expect(hung.open).toBe(2);
    hung.release();
    await receiver.waitFor((requests) => requests.filter((r) => r.path === '/hang').length === 6, 5000);
    hung.release();
    await worker.stop();
    expect(new Set(receiver.requests.map((r) => r.headers[EVENT_ID_HEADER])).size).toBe(11);
  });

  it('without a cap of its own, one endpoint may take every slot, and the others’ deliveries stay queued: what the cap prevents', async () => {
    const { keyhook, clock } = startedKeyhook(
      { delivery: { timeoutMs: 10_000 } },
      { concurrency: 2, endpointConcurrency: 2, pollIntervalMs: 50 },
    );
    close = async () => {
      hung.done();
      await keyhook.close();
    };
    const hung = hangAt('/hang');
    await webhookTo(keyhook, '/hang', ['run.completed']);
    await webhookTo(keyhook, '/ok', ['run.failed']);
    for (let i = 0; i < 2; i++)
      await keyhook.events.publish({ tenantId: TENANT, type: 'run.completed', data: { i } });
    await receiver.waitFor((requests) => requests.length === 2, 5000);
    await keyhook.events.publish({ tenantId: TENANT, type: 'run.failed', data: {} });
    await clock.advance(200);
    expect(receiver.requests.filter((r) => r.path === '/ok')).toHaveLength(0);
  });

  it('a function gives each endpoint its own cap, by its view and tenant; one that throws gets the default', async () => {
    const logger = recordingLogger();
    const { lines } = logger;
    const asked: [string, string][] = [];
    const { keyhook, clock } = startedKeyhook(
      { logger, delivery: { timeoutMs: 10_000 } },
      {
        concurrency: 10,
        pollIntervalMs: 50,
        endpointConcurrency: (webhook: WebhookView, tenantId: string) => {
          asked.push([webhook.url, tenantId]);
          if (webhook.url.endsWith('/broken')) throw new Error('no plan for this one');
          return webhook.url.endsWith('/one') ? 1 : 3;
        },
      },
    );
    const one = hangAt('/one');
    const three = hangAt('/three');
    const broken = hangAt('/broken');
    close = async () => {
      for (const endpoint of [one, three, broken]) endpoint.done();
      await keyhook.close();
    };
    await webhookTo(keyhook, '/one', ['run.completed']);
    await webhookTo(keyhook, '/three', ['run.completed']);
    await webhookTo(keyhook, '/broken', ['run.completed']);
    for (let i = 0; i < 4; i++)
      await keyhook.events.publish({ tenantId: TENANT, type: 'run.completed', data: { i } });
    // The default is min(16, concurrency): 10, more than the four deliveries the broken one has.
    // A poll's claim brings what the publishes did not hand over.
    await eventually(async () => {
      await clock.advance(50);
      expect([one.open, three.open, broken.open]).toEqual([1, 3, 4]);
    });
    expect(asked).toContainEqual([receiver.url('/one'), TENANT]);
    expect(lines.filter((line) => line.level === 'error').map((line) => line.message)).toEqual([
      'keyhook: endpointConcurrency failed; the endpoint gets 10',
    ]);
  });

  it('a delivery that waited for its endpoint’s slot until its lease could not hold an attempt is given back, and goes with the next claim', async () => {
    const { keyhook, clock } = startedKeyhook(
      { delivery: { timeoutMs: 1000 } },
      { concurrency: 2, endpointConcurrency: 1, leaseMs: 2500, pollIntervalMs: 50 },
    );
    const hung = hangAt('/hang');
    close = async () => {
      hung.done();
      await keyhook.close();
    };
    const { webhook } = await webhookTo(keyhook, '/hang', ['run.completed']);
    const published: Awaited<ReturnType<typeof keyhook.events.publish>>[] = [];
    for (let i = 0; i < 2; i++)
      published.push(await keyhook.events.publish({ tenantId: TENANT, type: 'run.completed', data: { i } }));
    await receiver.waitFor((requests) => requests.length === 1, 5000);
    // The first attempt takes 1.6 s of the clock; the second waited for the one slot all along,
    // and its lease (2.5 s from its publish) could no longer hold a 1 s attempt.
    await clock.advance(1600);
    hung.done();
    await clock.advance(50); // a poll: not the lease's end, 900 ms away
    await receiver.waitFor((requests) => requests.length === 2, 5000);
    await eventually(async () => {
      const detail = await keyhook.deliveries.get(TENANT, webhook.id, published[1]!.deliveries[0]!.id);
      expect(detail.delivery.status).toBe('succeeded');
      expect(detail.attempts).toHaveLength(1);
    });
  });

  it('a worker that stops gives back what waited for its endpoint’s slot: another worker sends it at once', async () => {
    const store = new MemoryStore();
    const { keyhook, clock, worker } = startedKeyhook(
      { store, delivery: { timeoutMs: 1000 } },
      { concurrency: 2, endpointConcurrency: 1, pollIntervalMs: 50 },
    );
    const hung = hangAt('/hang');
    let next: ReturnType<typeof keyhook.createWorker> | undefined;
    const published: Awaited<ReturnType<typeof keyhook.events.publish>>[] = [];
    close = async () => {
      hung.done();
      await next?.stop();
      await keyhook.close();
    };
    const { webhook } = await webhookTo(keyhook, '/hang', ['run.completed']);
    for (let i = 0; i < 2; i++)
      published.push(await keyhook.events.publish({ tenantId: TENANT, type: 'run.completed', data: { i } }));
    await receiver.waitFor((requests) => requests.length === 1, 5000);
    // The second waits in the worker for the endpoint's one slot; the worker stops.
    const stopping = worker.stop();
    hung.done();
    await stopping;
    const second = await keyhook.deliveries.get(TENANT, webhook.id, published[1]!.deliveries[0]!.id);
    expect(second.delivery.status).toBe('in_flight');
    expect(second.delivery.dueAt).toEqual(clock.now());
    // Due now, not at its lease's end 31 s away: the next worker's first claim sends it.
    next = keyhook.createWorker({ pollIntervalMs: 50 });
    next.start();
    await receiver.waitFor((requests) => requests.length === 2, 5000);
    await eventually(async () => {
      const detail = await keyhook.deliveries.get(TENANT, webhook.id, published[1]!.deliveries[0]!.id);
      expect(detail.delivery.status).toBe('succeeded');
    });
  });

  it('refuses a cap that is not a positive whole number', () => {
    const { keyhook } = startedKeyhook();
    close = () => keyhook.close();
    for (const bad of [0, -1, 1.5, Number.NaN]) {
      expect(() => keyhook.createWorker({ endpointConcurrency: bad })).toThrow(RangeError);
    }
  });
});

describe('answers the store never gave (docs/decisions.md §8.4)', () => {
  it('a claim whose answer was lost: what it leased goes out at the next claim, not when its lease runs out', async () => {
    const store = new MemoryStore();
    const { keyhook, clock, worker } = startedKeyhook(
      { store, delivery: { timeoutMs: 1000 } },
      { pollIntervalMs: 50 },
    );
    close = () => keyhook.close();
    receiver.on('/ok', (_request, _index, res) => res.writeHead(200).end());
    await worker.stop();
    const { webhook } = await webhookTo(keyhook, '/ok', ['run.completed']);
    const published = await keyhook.events.publish({ tenantId: TENANT, type: 'run.completed', data: {} });
    // The store commits the first claim, and its answer is lost.
    const lease = store.leaseDeliveries.bind(store);
    let lost = 0;
    store.leaseDeliveries = async (request) => {
      const leased = await lease(request);
      if (lost++ === 0) throw new KeyhookError('unavailable', 'PostgreSQL is unreachable.');
      return leased;
    };
    const next = keyhook.createWorker({ pollIntervalMs: 50 });
    close = async () => {
      await next.stop();
      await keyhook.close();
    };
    next.start();
    // The first backoff is 100 ms; the lease (the timeout + 30 s) would run out only at 31 s.
    await clock.advance(100);
    await receiver.waitFor((requests) => requests.length === 1, 5000);
    await eventually(async () => {
      const detail = await keyhook.deliveries.get(TENANT, webhook.id, published.deliveries[0]!.id);
      expect(detail.delivery.status).toBe('succeeded');
    });
    expect(clock.now().getTime() - published.event.createdAt.getTime()).toBeLessThan(1000);
  });

  it('a success recorded by a try whose answer was lost is told apart: no "lease ran out" warning, nothing sent again', async () => {
    const store = new MemoryStore();
    const logger = recordingLogger();
    const { lines } = logger;
    const { keyhook, clock } = startedKeyhook({ store, logger }, { pollIntervalMs: 50 });
    close = () => keyhook.close();
    receiver.on('/ok', (_request, _index, res) => res.writeHead(200).end());
    const { webhook } = await webhookTo(keyhook, '/ok', ['run.completed']);
    // The store writes the first record, and its answer is lost.
    const complete = store.completeAttempt.bind(store);
    let tries = 0;
    store.completeAttempt = async (completion) => {
      const outcome = await complete(completion);
      if (tries++ === 0) throw new KeyhookError('unavailable', 'PostgreSQL is unreachable.');
      return outcome;
    };
    const published = await keyhook.events.publish({ tenantId: TENANT, type: 'run.completed', data: {} });
    await receiver.waitFor((requests) => requests.length === 1, 5000);
    await eventually(() => expect(tries).toBe(1));
    await clock.advance(100); // the record's first backoff
    await eventually(() => expect(tries).toBe(2));
    await eventually(() =>
      expect(lines.map((line) => line.message)).toContain(
        'keyhook: an attempt was recorded by a try whose answer was lost; it is not sent again',
      ),
    );
    expect(lines.filter((line) => line.message.includes('lease ran out'))).toEqual([]);
    const detail = await keyhook.deliveries.get(TENANT, webhook.id, published.deliveries[0]!.id);
    expect(detail.delivery.status).toBe('succeeded');
    expect(detail.attempts).toHaveLength(1);
    await clock.advance(60_000);
    expect(receiver.requests).toHaveLength(1);
  });
});
