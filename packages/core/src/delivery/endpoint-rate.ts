import type { EndpointRateLimit } from '../store/types.js';

/** docs/http-api.md §4.3: the bounds of `rateLimit.perSecond`, deliveries per second. */
export const ENDPOINT_RATE_BOUNDS = Object.freeze({ min: 0.01, max: 1000 });

/**
 * docs/decisions.md §8.18: how a store paces an endpoint with a `rateLimit`, as data. A slot
 * may be taken `tolerance` of an interval early or late (a timer's or a statement's jitter),
 * never more: below half an interval, so one claim leases at most one delivery per endpoint.
 */
export interface EndpointRateRule {
  readonly tolerance: number;
}

/** The rule, once. */
export const ENDPOINT_RATE_RULE: EndpointRateRule = Object.freeze({ tolerance: 0.25 });

/**
 * An endpoint's two pointers, in milliseconds since the epoch (fractions kept): `nextAt`, the
 * earliest time of its next send (advanced by each lease), and `queueAt`, the end of the slots
 * already given to deliveries that wait (advanced by each deferral). Null: none yet.
 */
export interface RateSlots {
  nextAt: number | null;
  queueAt: number | null;
}

/** What the rule makes of one due delivery: leased now, or due again at its own slot (whole ms). */
export type RateDecision = { lease: true } | { lease: false; dueAt: number };

/** Milliseconds between two sends to an endpoint limited to `perSecond`. */
export function rateIntervalMs(limit: EndpointRateLimit): number {
  return 1000 / limit.perSecond;
}

/**
 * One due delivery of a limited endpoint, at `now`, in due order (docs/decisions.md §8.18): it is
 * leased when the endpoint's slot, max(nextAt, now − tolerance), is at most now + tolerance, and
 * the slot moves one interval on; otherwise it waits, still queued, until the first slot after
 * those already given out (rounded up to the millisecond), and that slot is given to it.
 * `slots` is updated in place. The SQL stores express the same arithmetic in their claim.
 */
export function takeRateSlot(
  slots: RateSlots,
  limit: EndpointRateLimit,
  now: number,
  rule: EndpointRateRule,
): RateDecision {
  const interval = rateIntervalMs(limit);
  const tolerance = rule.tolerance * interval;
  const slot = Math.max(slots.nextAt ?? Number.NEGATIVE_INFINITY, now - tolerance);
  if (slot <= now + tolerance) {
    slots.nextAt = slot + interval;
    return { lease: true };
  }
  const queued = Math.max(slots.queueAt ?? Number.NEGATIVE_INFINITY, slot);
  slots.queueAt = queued + interval;
  return { lease: false, dueAt: Math.ceil(queued) };
}

/** The host's `delivery.endpointRateLimit`, checked at start; null when absent. */
export function endpointRateLimitOption(
  limit: EndpointRateLimit | null | undefined,
): EndpointRateLimit | null {
  if (limit === undefined || limit === null) return null;
  const perSecond = (limit as { perSecond?: unknown }).perSecond;
  if (
    typeof perSecond !== 'number' ||
    !Number.isFinite(perSecond) ||
    perSecond < ENDPOINT_RATE_BOUNDS.min ||
    perSecond > ENDPOINT_RATE_BOUNDS.max
  ) {
    throw new TypeError(
      `keyhook: delivery.endpointRateLimit.perSecond must be a number from ${ENDPOINT_RATE_BOUNDS.min} to ${ENDPOINT_RATE_BOUNDS.max} (got ${JSON.stringify(perSecond)})`,
    );
  }
  return { perSecond };
}
