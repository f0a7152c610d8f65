import type { Keyhook } from '@keyhook/core';
import type { Store } from '@keyhook/core/store';
import { postgresAvailable } from '@keyhook/testing/postgres';
import { type TestReceiver, waitUntil } from '@keyhook/testing/support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  allDeliveries,
  type Backend,
  countBy,
  publishMany,
  receivedCounts,
  recordingLogger,
  type SharedSchema,
  sharedPostgresSchema,
  TENANT,
  testKeyhook,
} from './delivery-load.js';

const withPostgres = await postgresAvailable();

const EVENTS = 2000;
const CONCURRENCY = 16;
const LEASE_MS = 60_000;
/** Every send must be the only one: no attempt may time out (delivery-load.ts, testKeyhook). */
const ONLY_SEND_TIMEOUT_MS = 30_000;

/** What one instance's store was asked to do: deliveries leased (by a lease query, or in the publish for its worker), attempts recorded. */
interface Tally {
  leased: number;
  leaseCalls: number;
  handedOff: number;
  completed: number;
  lost: number;
}

/** The store as it is, but counting what its worker leases and records. */
function counting(store: Store, tally: Tally): Store {
  return new Proxy(store, {
    get(target, property) {
      if (property === 'leaseDeliveries') {
        return async (...args: Parameters<Store['leaseDeliveries']>) => {
          const leased = await target.leaseDeliveries(...args);
          tally.leaseCalls++;
          tally.leased += leased.length;
          return leased;
        };
      }
      if (property === 'publishEvent') {
        return async (...args: Parameters<Store['publishEvent']>) => {
          const outcome = await target.publishEvent(...args);
          if (outcome.outcome === 'published') tally.handedOff += outcome.leased.length;
          return outcome;
        };
      }
      if (property === 'completeAttempt') {
        return async (...args: Parameters<Store['completeAttempt']>) => {
          const outcome = await target.completeAttempt(...args);
          if (outcome.outcome === 'recorded') tally.completed++;
          else tally.lost++;
          return outcome;
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/**
 * docs/decisions.md §8.4: any number of workers, leases keep them apart. Two workers, each on its
 * own store object and pool, share one schema and one webhook; every delivery is sent exactly once.
 * The events are published through a third instance that runs no worker, as an API process beside
 * two worker processes would: nothing is handed over in a publish, so every delivery goes through
 * the two workers' competing leases (FOR UPDATE SKIP LOCKED).
 */
describe.skipIf(!withPostgres)('two workers on one Postgres schema', () => {
  let shared: SharedSchema;
  let backend: Backend;
  let second: Store;
  let third: Store;
  let receiver: TestReceiver;
  const keyhooks: Keyhook[] = [];

  beforeAll(async () => {
    shared = await sharedPostgresSchema('ref_2w');
    ({ backend, second, third, receiver } = shared);
  });

  afterAll(async () => {
    for (const keyhook of keyhooks) await keyhook.close();
    await shared?.close();
  });

  it(`${EVENTS} deliveries, published while both run: each sent exactly once, both send a share`, async () => {
    const tallies: [Tally, Tally] = [
      { leased: 0, leaseCalls: 0, handedOff: 0, completed: 0, lost: 0 },
      { leased: 0, leaseCalls: 0, handedOff: 0, completed: 0, lost: 0 },
    ];
    const logger = recordingLogger();
    const a = testKeyhook(counting(backend.store, tallies[0]), logger, ONLY_SEND_TIMEOUT_MS);
    const b = testKeyhook(counting(second, tallies[1]), logger, ONLY_SEND_TIMEOUT_MS);
    const publisher = testKeyhook(third, logger);
    keyhooks.push(a, b, publisher);
    const { webhook } = await a.webhooks.create(TENANT, {
      url: receiver.url('/hook'),
      events: ['run.completed'],
    });

    const started = performance.now();
    const workers = [a, b].map((keyhook) =>
      keyhook.createWorker({ concurrency: CONCURRENCY, leaseMs: LEASE_MS }),
    );
    for (const worker of workers) worker.start();
    // The workers hear of every publish through the store (NOTIFY), as workers in other processes do.
    const published = await publishMany([publisher], EVENTS, 'two', 8);
    const publishedIn = performance.now() - started;
    const eventIds = published.map((p) => p.event.id);
    expect(new Set(eventIds).size).toBe(EVENTS);

    await waitUntil(
      () => receivedCounts(receiver, '/hook').size === EVENTS,
      45_000,
      () =>
        `${receivedCounts(receiver, '/hook').size}/${EVENTS} event ids arrived; tallies ${JSON.stringify(tallies)}`,
    );
    const allIn = performance.now() - started;
    await waitUntil(
      () => tallies[0].completed + tallies[1].completed >= EVENTS,
      10_000,
      () => `attempts recorded: ${JSON.stringify(tallies)}`,
    );
    // A stop waits for the attempts in flight: after it, the receiver has every send there was,
    // and what could be sent again would be a delivery not final in the store (checked below).
    await Promise.all(workers.map((worker) => worker.stop()));

    const counts = receivedCounts(receiver, '/hook');
    const deliveries = await allDeliveries(backend.store, webhook.id);
    console.log(
      `[two workers, Postgres] ${EVENTS} deliveries, concurrency ${CONCURRENCY} each: ` +
        `worker A leased ${tallies[0].leased} (${tallies[0].leaseCalls} leases) and was handed ${tallies[0].handedOff} ` +
        `in publishes, ${tallies[0].completed} recorded; worker B leased ${tallies[1].leased} ` +
        `(${tallies[1].leaseCalls} leases) and was handed ${tallies[1].handedOff}, ${tallies[1].completed} recorded; ` +
        `${receiver.to('/hook').length} requests for ${counts.size} event ids; published in ` +
        `${publishedIn.toFixed(0)} ms, all received in ${allIn.toFixed(0)} ms`,
    );

    expect(eventIds.filter((id) => counts.get(id) !== 1)).toEqual([]);
    expect(receiver.to('/hook')).toHaveLength(EVENTS);
    // Nothing leased twice, whether by a lease query or in its publish.
    const leasedInAll = tallies.reduce((sum, tally) => sum + tally.leased + tally.handedOff, 0);
    expect(leasedInAll).toBe(EVENTS);
    expect(tallies[0].completed + tallies[1].completed).toBe(EVENTS);
    expect(tallies[0].lost + tallies[1].lost).toBe(0);
    expect(tallies[0].completed).toBeGreaterThan(0);
    expect(tallies[1].completed).toBeGreaterThan(0);
    expect(deliveries).toHaveLength(EVENTS);
    expect(countBy(deliveries, (d) => d.status)).toEqual({ succeeded: EVENTS });
    expect(deliveries.filter((d) => d.attempts !== 1)).toEqual([]);
    expect(logger.lines.filter((line) => line.level !== 'info')).toEqual([]);
  }, 60_000);
});
