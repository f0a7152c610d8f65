/**
 * A delivery's life, as one table (STYLE.md: state machines are written as data).
 *
 * pending ──lease──▶ in_flight ──2xx──▶ succeeded
 *    ▲                   │ ├──fail, retries left──▶ retry_scheduled ──due──▶ in_flight
 *    │                   │ └──410, or the last retry failed──▶ failed
 *    └──release── held ◀─┘ (endpoint disabled)
 */
export const DELIVERY_STATES = [
  'pending',
  'in_flight',
  'retry_scheduled',
  'succeeded',
  'failed',
  'held',
] as const;

export type DeliveryState = (typeof DELIVERY_STATES)[number];

export const DELIVERY_TRANSITIONS: Readonly<Record<DeliveryState, readonly DeliveryState[]>> = {
  // Due now: a worker leases it; a disabled endpoint holds it; a held retention can fail it.
  pending: ['in_flight', 'held', 'failed'],
  // Leased: the attempt's outcome decides; an expired lease puts it back in line.
  in_flight: ['succeeded', 'retry_scheduled', 'failed', 'pending', 'held'],
  retry_scheduled: ['in_flight', 'held', 'failed'],
  // Re-enabled endpoint: released at once. Held past the retention: failed.
  held: ['pending', 'failed'],
  succeeded: [],
  // An admin retry queues a failed delivery again (DESIGN.md §2).
  failed: ['pending'],
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
