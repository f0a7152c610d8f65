import type { CompleteStore } from '@keyhook/core/store';
import { canTransition, type DeliveryStatus } from '@keyhook/core/store';
import { afterEach, beforeEach, expect } from 'vitest';
import type { SuiteContext } from './store-harness.js';

/** The tenants the suite's delivery cases write. */
const TENANTS = ['tenant_a', 'tenant_b'];

/** The states a delivery may be written in: what a publish writes (newDeliveryRecord, leasedSubscribers). */
const CREATED_IN: readonly DeliveryStatus[] = ['pending', 'in_flight', 'held'];

/** One status change a store made, seen around the call that made it. */
export interface SeenTransition {
  call: string;
  deliveryId: string;
  /** null: the delivery did not exist before the call. */
  from: DeliveryStatus | null;
  to: DeliveryStatus;
}

/**
 * Wraps a store so that the status changes its calls make during a test are recorded: the
 * statuses of every delivery of the suite's tenants are read (through the unwrapped store)
 * before and after each call, and compared. A lease that runs out and is leased again stays
 * in_flight: a delivery keeping its status is not a transition. Not seen: a change inside one
 * call that it undoes, calls made through another connection (a peer), and `publishEventSync`,
 * which must stay synchronous (publishEvent's creations are checked instead).
 */
export function recordTransitions(store: CompleteStore): { store: CompleteStore; seen: SeenTransition[] } {
  const seen: SeenTransition[] = [];
  const statuses = async () => {
    const byId = new Map<string, DeliveryStatus>();
    for (const tenant of TENANTS) {
      for (const webhook of await store.listWebhooks(tenant, { limit: 1000 })) {
        for (const delivery of await store.listDeliveries(tenant, webhook.id, { limit: 1000 })) {
          byId.set(delivery.id, delivery.status);
        }
      }
    }
    return byId;
  };
  // One call at a time is observed: a call made while another is observed runs as it would
  // unwrapped (the concurrency cases keep their races), and what it changed is folded into the
  // next observed call's "before", unchecked.
  let observing = false;
  const wrapped = new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || typeof property !== 'string') return value;
      if (!WRITES.has(property)) return value.bind(target);
      return async (...args: unknown[]) => {
        if (observing) return value.apply(target, args);
        observing = true;
        try {
          const before = await statuses();
          try {
            return await value.apply(target, args);
          } finally {
            for (const [deliveryId, to] of await statuses()) {
              const from = before.get(deliveryId) ?? null;
              if (from !== to) seen.push({ call: property, deliveryId, from, to });
            }
          }
        } finally {
          observing = false;
        }
      };
    },
  });
  return { store: wrapped, seen };
}

/** The Store methods that may change a delivery's status. */
const WRITES = new Set([
  'publishEvent',
  'leaseDeliveries',
  'completeAttempt',
  'expireHeldDeliveries',
  'setWebhookStatus',
  'deleteWebhook',
  'requeueDelivery',
  'recoverFailedDeliveries',
  'purgeFinishedDeliveries',
]);

/** The transitions seen that core's table (delivery/states.ts) does not list, as readable lines. */
export function unlistedTransitions(seen: readonly SeenTransition[]): string[] {
  return seen
    .filter(({ from, to }) => (from === null ? !CREATED_IN.includes(to) : !canTransition(from, to)))
    .map(({ call, deliveryId, from, to }) => `${call}: ${deliveryId} ${from ?? '(new)'} → ${to}`);
}

/** The store a recording wraps, for harness functions keyed by the store they opened. */
const unwrapped = new WeakMap<CompleteStore, CompleteStore>();
export const originalOf = (store: CompleteStore): CompleteStore => unwrapped.get(store) ?? store;

/**
 * In the describe block it is called in: each test's store records its status changes, and the
 * test fails on one that core's transition table does not list (delivery/states.ts).
 */
export function checkTransitions(ctx: SuiteContext): void {
  let original: CompleteStore;
  let seen: SeenTransition[];
  beforeEach(() => {
    original = ctx.store;
    const recording = recordTransitions(original);
    unwrapped.set(recording.store, original);
    ctx.store = recording.store;
    seen = recording.seen;
  });
  afterEach(() => {
    ctx.store = original;
    expect(unlistedTransitions(seen), 'status changes the transition table does not list').toEqual([]);
  });
}
