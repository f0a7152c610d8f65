/**
 * A delivery's life, as one table (CONTRIBUTING.md "Code conventions": state machines are written
 * as data).
 *
 * pending ──lease──▶ in_flight ──2xx──▶ succeeded ──admin resend──▶ pending
 *    ▲                   │ ├──fail, retries left──▶ retry_scheduled ──due──▶ in_flight
 *    │                   │ │                                   └──admin retry now──▶ pending
 *    │                   │ └──410, or the last retry failed──▶ failed ──admin retry, recovery──▶ pending
 *    └──release── held ◀─┘ (endpoint disabled)
 *
 * Every status change a store makes is one of these: the store conformance suite records the
 * changes of its delivery cases and fails on any other (packages/store-conformance/src/transitions.ts).
 */
export type DeliveryStatus = 'pending' | 'in_flight' | 'retry_scheduled' | 'succeeded' | 'failed' | 'held';

/** Every status, in the order lists and messages give them (the table below has each as a key). */
export const DELIVERY_STATUSES = [
  'pending',
  'in_flight',
  'retry_scheduled',
  'succeeded',
  'failed',
  'held',
] as const satisfies readonly DeliveryStatus[];

export const DELIVERY_TRANSITIONS: Readonly<Record<DeliveryStatus, readonly DeliveryStatus[]>> = {
  // Due now: a worker leases it; a disabled endpoint holds it.
  pending: ['in_flight', 'held'],
  // Leased: the attempt's outcome decides (a retry of an endpoint disabled meanwhile is held). A
  // lease that ran out is leased again as it is: in_flight to in_flight, under a new lease.
  in_flight: ['succeeded', 'retry_scheduled', 'failed', 'held', 'in_flight'],
  // Due at its time: leased; a disabled endpoint holds it; an admin retry brings it forward to now.
  retry_scheduled: ['in_flight', 'held', 'pending'],
  // Re-enabled endpoint: released at once. Held past the retention: failed.
  held: ['pending', 'failed'],
  // An admin resend queues it again (held while its endpoint is disabled), with the same event.
  succeeded: ['pending', 'held'],
  // An admin retry or a recovery queues a failed delivery again, or holds it while its endpoint
  // is disabled.
  failed: ['pending', 'held'],
};

/**
 * What retention deletes once it is old enough: deliveries that nothing will move again unless an
 * admin retries or resends one. Pending, in-flight, retrying and held ones are never deleted.
 */
export const FINISHED_STATES: readonly DeliveryStatus[] = ['succeeded', 'failed'];

/**
 * What an admin retry (`POST …/deliveries/{id}/retry`) queues again, due now: a failed delivery, a
 * succeeded one (a resend, with the same event id), and one waiting for its next retry (brought
 * forward). Pending, in-flight and held ones are refused (docs/http-api.md §4.4).
 */
export const ADMIN_RETRYABLE_STATES: readonly DeliveryStatus[] = ['failed', 'succeeded', 'retry_scheduled'];

export function canTransition(from: DeliveryStatus, to: DeliveryStatus): boolean {
  return DELIVERY_TRANSITIONS[from].includes(to);
}

export function assertTransition(from: DeliveryStatus, to: DeliveryStatus): void {
  if (!canTransition(from, to)) throw new Error(`keyhook: a delivery cannot go from ${from} to ${to}`);
}
