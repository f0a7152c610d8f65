/**
 * docs/http-api.md §6.5, docs/decisions.md §9: after the first attempt, retries at about 1 min,
 * 5 min, 15 min, 1 h, 3 h, 6 h, 12 h and 24 h: nine attempts over about 46 h 21 min.
 */
export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = [
  60_000,
  5 * 60_000,
  15 * 60_000,
  60 * 60_000,
  3 * 60 * 60_000,
  6 * 60 * 60_000,
  12 * 60 * 60_000,
  24 * 60 * 60_000,
];

/** The most retries a schedule may list (`delivery.retrySchedule`). */
export const MAX_RETRY_STEPS = 12;

/** `delivery.retrySchedule` as given, checked: up to MAX_RETRY_STEPS positive, finite waits in ms. */
export function checkRetrySchedule(schedule: readonly number[] | undefined): readonly number[] {
  if (schedule === undefined) return DEFAULT_RETRY_SCHEDULE_MS;
  if (
    !Array.isArray(schedule) ||
    schedule.length > MAX_RETRY_STEPS ||
    !schedule.every((wait) => typeof wait === 'number' && Number.isFinite(wait) && wait > 0)
  ) {
    throw new TypeError(
      `keyhook: delivery.retrySchedule must list up to ${MAX_RETRY_STEPS} positive waits in ms (got ${JSON.stringify(schedule)})`,
    );
  }
  return [...schedule];
}

/** docs/decisions.md §9: ±10 % around each scheduled delay, so receivers are not hit in lockstep. */
export const RETRY_JITTER = 0.1;

/** A receiver's Retry-After counts up to a day: past that, one answer could park a delivery for years. */
export const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000;

export interface RetryPlan {
  /** Delays after each failure; its length is the number of retries. */
  schedule: readonly number[];
  /** A number in [0, 1), as Math.random gives. Injected so tests pin the jitter. */
  random: () => number;
}

/**
 * When the next attempt goes out after attempt number `attempt` (1 = the first) failed at
 * `failedAt`, or null when that was the last one and the delivery fails permanently. A
 * `retryAfterMs` from the receiver (429/503) may push the retry later, never earlier, and by
 * at most MAX_RETRY_AFTER_MS.
 */
export function nextAttemptAt(
  attempt: number,
  failedAt: Date,
  plan: RetryPlan,
  retryAfterMs?: number | null,
): Date | null {
  if (!Number.isSafeInteger(attempt) || attempt < 1)
    throw new RangeError(`attempt must be ≥ 1, got ${attempt}`);
  const delay = plan.schedule[attempt - 1];
  if (delay === undefined) return null;
  const jittered = delay * (1 - RETRY_JITTER + 2 * RETRY_JITTER * plan.random());
  const wait = Math.max(jittered, Math.min(retryAfterMs ?? 0, MAX_RETRY_AFTER_MS));
  return new Date(failedAt.getTime() + Math.round(wait));
}

/** The most attempts a delivery gets: the first plus one per scheduled retry. */
export function maxAttempts(schedule: readonly number[]): number {
  return schedule.length + 1;
}

/**
 * A `Retry-After` value in ms: delay-seconds or an HTTP date (RFC 9110 §10.2.3), relative to
 * `now`. Null when absent or unreadable; a date in the past is 0.
 */
export function parseRetryAfter(value: string | null | undefined, now: Date): number | null {
  if (value === null || value === undefined) return null;
  const text = value.trim();
  if (/^\d{1,9}$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  if (!/[a-z]/i.test(text) || Number.isNaN(at)) return null;
  return Math.max(0, at - now.getTime());
}
