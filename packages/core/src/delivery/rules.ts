import type { WebhookDisabledReason, WebhookStatus } from '../store/types.js';
import type { DeliveryStatus } from './states.js';

/** docs/decisions.md §10.1: what disables an endpoint that keeps failing, and what it records. */
export interface AutoDisableRule {
  /** The permanent failure that brings an endpoint's consecutive count to this disables it. */
  readonly after: number;
  /** The reason the disable records. */
  readonly reason: WebhookDisabledReason;
}

/** docs/decisions.md §10.2: which endpoints hold their deliveries, and in which state they wait. */
export interface HoldRule {
  /** An endpoint with this status holds its deliveries; a disable, manual or automatic, sets it. */
  readonly endpointStatus: WebhookStatus;
  /** The state a held delivery waits in. */
  readonly state: DeliveryStatus;
}

/**
 * The delivery rules a store applies but never decides (docs/decisions.md §10.4). Stores take
 * them from here as values, bound into their statements; the threshold and the reason also ride
 * in each completion (`AttemptCompletion.autoDisable`), so a caller can hand over another.
 */
export interface DeliveryRules {
  readonly autoDisable: AutoDisableRule;
  /** A 410 Gone disables the endpoint at once, with its own reason (docs/decisions.md §10.1). */
  readonly gone: AutoDisableRule;
  readonly hold: HoldRule;
  /** docs/http-api.md §6.3: an attempt answered with a status in `[min, max]` succeeded; any other answer, or none, failed. */
  readonly success: { readonly min: number; readonly max: number };
}

/**
 * The rules, once: five consecutive permanent failures, or one 410 Gone, disable an endpoint
 * (docs/http-api.md §6.5); a disabled endpoint's work is held.
 */
export const DELIVERY_RULES: DeliveryRules = Object.freeze({
  autoDisable: Object.freeze({ after: 5, reason: 'failures' }),
  gone: Object.freeze({ after: 1, reason: 'gone' }),
  hold: Object.freeze({ endpointStatus: 'disabled', state: 'held' }),
  success: Object.freeze({ min: 200, max: 299 }),
});

/** Whether an attempt answered with `status` (null: no answer) succeeded (DELIVERY_RULES.success). */
export function attemptSucceeded(status: number | null): boolean {
  return status !== null && status >= DELIVERY_RULES.success.min && status <= DELIVERY_RULES.success.max;
}

/** Whether an endpoint with this status holds its deliveries (docs/decisions.md §10.2). */
export function holdsDeliveries(status: WebhookStatus): boolean {
  return status === DELIVERY_RULES.hold.endpointStatus;
}

/**
 * Whether a permanent failure that brought an endpoint's consecutive count to `failures`
 * disables it (docs/decisions.md §10.1): only one that does not hold already, once the count
 * reaches the rule's threshold. Stores ask this inside the transaction that counted.
 */
export function autoDisables(failures: number, status: WebhookStatus, rule: AutoDisableRule): boolean {
  return !holdsDeliveries(status) && failures >= rule.after;
}
