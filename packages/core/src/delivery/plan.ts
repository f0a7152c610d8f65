import type { AttemptVerdict } from './outcome.js';
import { type AutoDisableRule, DELIVERY_RULES } from './rules.js';
import { nextAttemptAt, type RetryPlan } from './schedule.js';
import { assertTransition, type DeliveryStatus } from './states.js';

/** docs/decisions.md §10.2: held deliveries fail after this long. */
export const DEFAULT_HELD_RETENTION_MS = 3 * 24 * 60 * 60 * 1000;

/** What an attempt's verdict makes of a delivery, decided in one place for every store. */
export interface AttemptPlan {
  status: Extract<DeliveryStatus, 'succeeded' | 'retry_scheduled' | 'failed'>;
  /** When the next attempt is due; null unless a retry is scheduled. */
  nextAttemptAt: Date | null;
  /** The endpoint's consecutive-failure count moves: reset on success, +1 on a permanent failure. */
  endpointFailures: 'reset' | 'increment' | 'unchanged';
  /** Which rule an increment is judged by: one 410 Gone disables at once (DELIVERY_RULES.gone). */
  autoDisable: AutoDisableRule;
}

/**
 * The next state of a delivery whose attempt number `attempt` (1 = the first) ended at
 * `finishedAt` with `verdict`: succeeded; a retry at the schedule's next step (Retry-After
 * may push it later); or failed for good, at once on 410 (which also disables the endpoint) or
 * when no retry is left.
 */
export function planAfterAttempt(
  attempt: number,
  verdict: AttemptVerdict,
  finishedAt: Date,
  retry: RetryPlan,
): AttemptPlan {
  const autoDisable =
    verdict.verdict === 'failed_permanently' ? DELIVERY_RULES.gone : DELIVERY_RULES.autoDisable;
  if (verdict.verdict === 'succeeded') {
    return { status: 'succeeded', nextAttemptAt: null, endpointFailures: 'reset', autoDisable };
  }
  const next =
    verdict.verdict === 'retry' ? nextAttemptAt(attempt, finishedAt, retry, verdict.retryAfterMs) : null;
  const plan: AttemptPlan = next
    ? { status: 'retry_scheduled', nextAttemptAt: next, endpointFailures: 'unchanged', autoDisable }
    : { status: 'failed', nextAttemptAt: null, endpointFailures: 'increment', autoDisable };
  assertTransition('in_flight', plan.status);
  return plan;
}
