/**
 * A delivery's life, as one table (CONTRIBUTING.md "Code conventions": state machines are written
 * as data).
 *
 * pending ──lease──▶ in_flight ──2xx──▶ succeeded
 *    ▲                   │ ├──fail, retries left──▶ retry_scheduled ──due──▶ in_flight
 *    │                   │ └──410, or the last retry failed──▶ failed ──admin retry, recovery──▶ pending
 *    └──release── held ◀─┘ (endpoint disabled)
 *
 * Every status change a store makes is one of these: the store conformance suite records the
 * changes of its delivery cases and fails on any other (packages/testing, store-suite/transitions.ts).
 */
export type DeliveryState = 'pending' | 'in_flight' | 'retry_scheduled' | 'succeeded' | 'failed' | 'held';

/** Every state, in the order lists and messages give them (the table below has each as a key). */
export const DELIVERY_STATES = [
  'pending',
  'in_flight',
  'retry_scheduled',
  'succeeded',
  'failed',
  'held',
] as const satisfies readonly DeliveryState[];

export const DELIVERY_TRANSITIONS: Readonly<Record<DeliveryState, readonly DeliveryState[]>> = {
  // Due now: a worker leases it; a disabled endpoint holds it.
  pending: ['in_flight', 'held'],
  // Leased: the attempt's outcome decides (a retry of an endpoint disabled meanwhile is held). A
  // lease that ran out is leased again as it is: in_flight to in_flight, under a new lease.
  in_flight: ['succeeded', 'retry_scheduled', 'failed', 'held', 'in_flight'],
  // Due at its time: leased; a disabled endpoint holds it.
  retry_scheduled: ['in_flight', 'held'],
  // Re-enabled endpoint: released at once. Held past the retention: failed.
  held: ['pending', 'failed'],
  succeeded: [],
  // An admin retry or a recovery queues a failed delivery again, or holds it while its endpoint
  // is disabled.
  failed: ['pending', 'held'],
};

export const TERMINAL_STATES: readonly DeliveryState[] = DELIVERY_STATES.filter(
  (state) => DELIVERY_TRANSITIONS[state].length === 0,
);

/**
 * What retention deletes once it is old enough: deliveries that nothing will move again unless
 * an admin retries a failed one. Pending, in-flight, retrying and held ones are never deleted.
 */
export const FINISHED_STATES: readonly DeliveryState[] = ['succeeded', 'failed'];

export function canTransition(from: DeliveryState, to: DeliveryState): boolean {
  return DELIVERY_TRANSITIONS[from].includes(to);
}

export function assertTransition(from: DeliveryState, to: DeliveryState): void {
  if (!canTransition(from, to)) throw new Error(`keyhook: a delivery cannot go from ${from} to ${to}`);
}
