import type { DeliveryRate, RateWait } from '../store/types.js';

/** docs/http-api.md §4.3: the bounds of `deliveryRate.perSecond`, deliveries per second. */
export const ENDPOINT_RATE_BOUNDS = Object.freeze({ min: 0.01, max: 1000 });

/**
 * docs/decisions.md §8.18: how a store paces an endpoint with a delivery rate, as data. `early`
 * and `late` are fractions of the endpoint's interval: a slot may be taken up to `early` before
 * it (a timer's or a clock's jitter), and a claim up to `late` after it still keeps the pace
 * rather than restart it from now (a worker woken late, a slow statement). `early + late` stays
 * below one interval: one claim then leases at most one delivery per endpoint, and no second
 * holds more than `perSecond` + 1 leases. `spread` is how many more due deliveries of each
 * limited endpoint a claim gives slots to, beyond its `limit`, so a backlog leaves the head of
 * the due order in a few claims rather than taking the room of every claim.
 */
export interface EndpointRateRule {
  readonly early: number;
  readonly late: number;
  readonly spread: number;
}

/** The rule, once. */
export const ENDPOINT_RATE_RULE: EndpointRateRule = Object.freeze({ early: 0.05, late: 0.2, spread: 1000 });

/**
 * An endpoint's two pointers, in milliseconds since the epoch (fractions kept): `nextAt`, the
 * earliest time of its next send (advanced by each lease), and `queueAt`, the last slot already
 * given to a delivery that waits (advanced by each deferral). Null: none yet.
 */
export interface RateSlots {
  nextAt: number | null;
  queueAt: number | null;
}

/** What the rule makes of one due delivery: leased now, or due again at its slot (whole ms). */
export type RateDecision = { lease: true } | { lease: false; dueAt: number };

/** Milliseconds between two sends to an endpoint limited to `perSecond`. */
export function rateIntervalMs(limit: DeliveryRate): number {
  return 1000 / limit.perSecond;
}

/**
 * What one claim makes of `count` due deliveries of a limited endpoint at `now`, in due order
 * (docs/decisions.md §8.18). The endpoint's slot is `now` when it has none yet, else
 * max(nextAt, now − late); when it is at most now + early, the first delivery is leased and
 * nextAt moves one interval past the slot. The others wait, still queued: the first of them
 * takes the endpoint's next slot unless a waiting delivery of the endpoint is due at it already
 * (`slotTaken`, asked with the slot's due time), so no slot is left idle when a late worker moved
 * the pace; the rest, one interval apart, from the slot after both the next one and queueAt, so
 * no slot is given twice and each one's due time is when it goes. queueAt moves to the last slot
 * given. Due times are rounded up to the millisecond. `slots` is updated in place. The SQL
 * stores express the same arithmetic in their claim.
 */
export function paceEndpoint(
  slots: RateSlots,
  limit: DeliveryRate,
  now: number,
  rule: EndpointRateRule,
  count: number,
  slotTaken: (dueAt: number) => boolean,
): RateDecision[] {
  const interval = rateIntervalMs(limit);
  const slot = slots.nextAt === null ? now : Math.max(slots.nextAt, now - rule.late * interval);
  const decisions: RateDecision[] = [];
  let next = slot;
  if (count > 0 && slot <= now + rule.early * interval) {
    next = slot + interval;
    slots.nextAt = next;
    decisions.push({ lease: true });
  }
  let waiting = count - decisions.length;
  if (waiting === 0) return decisions;
  let last = slots.queueAt ?? Number.NEGATIVE_INFINITY;
  if (!slotTaken(Math.ceil(next))) {
    decisions.push({ lease: false, dueAt: Math.ceil(next) });
    last = Math.max(last, next);
    waiting -= 1;
  }
  const base = Math.max(next, slots.queueAt ?? Number.NEGATIVE_INFINITY) + interval;
  for (let j = 0; j < waiting; j++) {
    decisions.push({ lease: false, dueAt: Math.ceil(base + j * interval) });
    last = base + j * interval;
  }
  slots.queueAt = last;
  return decisions;
}

/**
 * The host's `delivery.deliveryRate`, or its deprecated name `endpointRateLimit`, checked at
 * start; null when absent. Both given is a TypeError.
 */
export function deliveryRateOption(
  delivery: {
    deliveryRate?: DeliveryRate | null | undefined;
    endpointRateLimit?: DeliveryRate | null | undefined;
  } = {},
): DeliveryRate | null {
  const { deliveryRate, endpointRateLimit } = delivery;
  if (deliveryRate !== undefined && endpointRateLimit !== undefined) {
    throw new TypeError(
      'keyhook: give delivery.deliveryRate or delivery.endpointRateLimit (its deprecated name), not both',
    );
  }
  const name = deliveryRate !== undefined ? 'deliveryRate' : 'endpointRateLimit';
  const limit = deliveryRate ?? endpointRateLimit;
  if (limit === undefined || limit === null) return null;
  const perSecond = (limit as { perSecond?: unknown }).perSecond;
  if (
    typeof perSecond !== 'number' ||
    !Number.isFinite(perSecond) ||
    perSecond < ENDPOINT_RATE_BOUNDS.min ||
    perSecond > ENDPOINT_RATE_BOUNDS.max
  ) {
    throw new TypeError(
      `keyhook: delivery.${name}.perSecond must be a number from ${ENDPOINT_RATE_BOUNDS.min} to ${ENDPOINT_RATE_BOUNDS.max} (got ${JSON.stringify(perSecond)})`,
    );
  }
  return { perSecond };
}

/**
 * What a claim tells its worker (LeaseRequest.onRateWait) when it met limited endpoints: how many
 * it deferred, and the next slot of each (ms since the epoch), the earliest as nextSlotAt.
 */
export function rateWaitOf(deferred: number, nextSlots: readonly number[]): RateWait {
  return {
    deferred,
    nextSlotAt: new Date(Math.min(...nextSlots)),
    nextSlots: nextSlots.map((at) => new Date(at)),
  };
}
