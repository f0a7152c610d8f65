import { z } from 'zod';
import { KeyhookError } from '../errors.js';
import { clientAddressName } from '../http/client-address.js';

/** At most `limit` requests in each window of `window` seconds. */
export interface RateLimit {
  limit: number;
  /** Seconds, 1 to 86,400. */
  window: number;
}

export const MAX_RATE_LIMIT = 1_000_000_000;
export const MAX_RATE_LIMIT_WINDOW = 86_400;

/** `{ limit, window }` as the admin API takes it, and as `createKeyhook({ rateLimit })` is checked. */
export const rateLimitSchema = z
  .object({
    limit: z.int().min(1).max(MAX_RATE_LIMIT).meta({ description: 'Requests allowed in each window.' }),
    window: z
      .int()
      .min(1)
      .max(MAX_RATE_LIMIT_WINDOW)
      .meta({ description: 'The window in seconds. Windows start at multiples of it since the Unix epoch.' }),
  })
  .strict();

/** Where a caller stands in its window, as the `RateLimit-*` fields tell it. */
export interface RateLimitState {
  limit: number;
  /** Requests left in this window after this one. */
  remaining: number;
  /** Whole seconds until the window ends, at least 1. */
  reset: number;
  /** The window in seconds. */
  window: number;
}

/**
 * The fields of draft-ietf-httpapi-ratelimit-headers-06: `RateLimit-Limit`, `-Remaining`,
 * `-Reset` (delta seconds) and `RateLimit-Policy` (`limit;w=window`). Adapters put them on a
 * guarded success; core puts them on its own answers and on every 429.
 */
export function rateLimitHeaders(state: RateLimitState): Record<string, string> {
  return {
    'ratelimit-limit': String(state.limit),
    'ratelimit-remaining': String(state.remaining),
    'ratelimit-reset': String(state.reset),
    'ratelimit-policy': `${state.limit};w=${state.window}`,
  };
}

/** 429 `rate_limited`, with `Retry-After` and the `RateLimit-*` fields. */
export function rateLimited(state: RateLimitState, message: string): KeyhookError {
  return new KeyhookError('rate_limited', message, {
    retryAfter: state.reset,
    headers: rateLimitHeaders(state),
  });
}

interface Counter {
  /** The window's start, epoch ms. */
  start: number;
  windowMs: number;
  count: number;
}

/** Whole seconds from `nowMs` to the end of its window of `windowMs`: 1 at least. */
const secondsLeft = (nowMs: number, windowMs: number) => Math.ceil((windowMs - (nowMs % windowMs)) / 1000);

/**
 * Fixed windows, aligned to the Unix epoch, counted in this process's memory.
 *
 * - Exact on one instance: of the requests in one window, the first `limit` pass and every
 *   later one is refused. Refused requests are not counted.
 * - Every instance's windows start at the same instants, so N instances together admit at
 *   most N × `limit` in a window.
 * - A client that spends its whole limit at the end of one window and again at the start of the
 *   next sends 2 × `limit` within one window's length: the price of a counter per name instead
 *   of a log of every request.
 *
 * Counters whose window has ended are dropped once the table has doubled since its last sweep,
 * so it holds about twice the names active in their windows.
 */
export class WindowCounters {
  private readonly counters = new Map<string, Counter>();
  private sweepAt = 1024;

  /** Counts one request for `name`: the requests left in its window after it, or -1 when the limit is spent. */
  take(name: string, limit: RateLimit, nowMs: number): number {
    const windowMs = limit.window * 1000;
    const start = nowMs - (nowMs % windowMs);
    let counter = this.counters.get(name);
    if (counter === undefined) {
      if (this.counters.size >= this.sweepAt) this.sweep(nowMs);
      counter = { start, windowMs, count: 0 };
      this.counters.set(name, counter);
    } else if (counter.start !== start || counter.windowMs !== windowMs) {
      // A new window, or a new window length: a new count.
      counter.start = start;
      counter.windowMs = windowMs;
      counter.count = 0;
    }
    if (counter.count >= limit.limit) return -1;
    counter.count++;
    return limit.limit - counter.count;
  }

  /**
   * Takes back one request counted by `take` at `takenAtMs`, if its window is still the current
   * one: a request counted before it was known whether it should count.
   */
  giveBack(name: string, takenAtMs: number): void {
    const counter = this.counters.get(name);
    if (
      counter !== undefined &&
      counter.count > 0 &&
      takenAtMs - (takenAtMs % counter.windowMs) === counter.start
    ) {
      counter.count--;
    }
  }

  /** Drops every counter whose window has ended. */
  sweep(nowMs: number): void {
    // A counter whose own window has ended counts nothing any more.
    for (const [name, counter] of this.counters) {
      if (counter.start + counter.windowMs <= nowMs) this.counters.delete(name);
    }
    this.sweepAt = Math.max(1024, this.counters.size * 2);
  }

  /** Where a request at `nowMs` stands: `remaining` left until its window ends. */
  static state(limit: RateLimit, remaining: number, nowMs: number): RateLimitState {
    return {
      limit: limit.limit,
      remaining,
      reset: secondsLeft(nowMs, limit.window * 1000),
      window: limit.window,
    };
  }

  has(name: string): boolean {
    return this.counters.has(name);
  }

  get size(): number {
    return this.counters.size;
  }
}

/** `createKeyhook({ rateLimit })`. */
export interface RateLimitOptions {
  /**
   * The limit of a key that has none of its own: one for every key, or one per tenant (called
   * on every verified request, so keep it a lookup). `null` or left out: such keys are not limited.
   */
  default?: RateLimit | ((tenantId: string) => RateLimit | null) | null;
  /**
   * Failed key verifications (401 `invalid_api_key`) allowed per client address in each window.
   * Past it, that address gets 429 for any key this instance has not verified before, without a
   * lookup; a key it has verified before is verified as usual. Left out or `null`: no limit.
   * Needs the client address from the adapter, so set the framework's proxy trust (`trustProxy`,
   * `trust proxy`) behind a load balancer: otherwise every client shares the balancer's address.
   * An address is read without its port or brackets, an IPv4-mapped IPv6 address as its IPv4;
   * spellings that are not an address share one counter (docs/decisions.md §12.6).
   */
  failedAuth?: RateLimit | null;
  /**
   * Addresses whose failures are counted apart, at most (default 100,000). Past it, new
   * addresses share one counter until counters of ended windows make room, so a flood from
   * many addresses cannot grow the table without bound.
   */
  maxTrackedAddresses?: number;
  /**
   * Send the `RateLimit-*` fields on every answer to a limited key, not only on its 429s
   * (default false). Each answer then carries about 100 bytes more; on a bare Fastify route that
   * cost 10 % of its throughput (docs/decisions.md §12.5). When on, `GuardResult.rateLimit`
   * holds them.
   */
  successHeaders?: boolean;
  /**
   * Keys remembered as verified, which pass an address's spent budget (default 10,000, the
   * most recently verified).
   */
  maxKnownKeys?: number;
}

export const DEFAULT_MAX_TRACKED_ADDRESSES = 100_000;
export const DEFAULT_MAX_KNOWN_KEYS = 10_000;

/** The name every address past `maxTrackedAddresses` is counted under. */
const OVERFLOW = '*';

/** A failure counted ahead of a verification (`RateLimits.reserve`). */
export interface FailureReservation {
  name: string;
  atMs: number;
}

const checked = (limit: RateLimit, option: string): RateLimit => {
  const result = rateLimitSchema.safeParse(limit);
  if (!result.success) {
    throw new TypeError(
      `keyhook: ${option} must be { limit: 1–${MAX_RATE_LIMIT}, window: 1–${MAX_RATE_LIMIT_WINDOW} seconds }, both integers.`,
    );
  }
  return result.data;
};

/** The rate limits of the data plane: one counter per key, and one per client address for failures. */
export class RateLimits {
  private readonly perKey = new WindowCounters();
  private readonly failures = new WindowCounters();
  private readonly defaultLimit: RateLimit | ((tenantId: string) => RateLimit | null) | null;
  private readonly failedAuth: RateLimit | null;
  private readonly maxTrackedAddresses: number;
  /** Digests (keys/hash.ts cacheDigest) of keys the store verified, oldest first. */
  private readonly known = new Set<string>();
  private readonly maxKnownKeys: number;
  private readonly successHeaders: boolean;
  /** The objects a default function returned that passed the check. */
  private readonly checkedDefaults = new WeakSet<RateLimit>();
  /** The failures window in which the full table was last swept. */
  private lastFullSweep = -1;

  constructor(
    options: RateLimitOptions = {},
    /** Told of every 429: a key's limit, or an address's failed verifications. */
    private readonly onRefused: (reason: 'key' | 'address') => void = () => {},
  ) {
    const fallback = options.default ?? null;
    this.defaultLimit =
      fallback === null || typeof fallback === 'function' ? fallback : checked(fallback, 'rateLimit.default');
    this.failedAuth = options.failedAuth ? checked(options.failedAuth, 'rateLimit.failedAuth') : null;
    this.maxTrackedAddresses = options.maxTrackedAddresses ?? DEFAULT_MAX_TRACKED_ADDRESSES;
    this.maxKnownKeys = options.maxKnownKeys ?? DEFAULT_MAX_KNOWN_KEYS;
    this.successHeaders = options.successHeaders === true;
  }

  /**
   * Counts one request of a verified key against its limit (its own, else the default): the
   * state to tell the caller when `successHeaders` is on, else `undefined`, as for a key
   * without a limit. Throws 429 past the limit.
   */
  admit(
    key: { id: string; tenantId: string; rateLimit: RateLimit | null },
    nowMs: number,
  ): RateLimitState | undefined {
    const limit = key.rateLimit ?? this.defaultFor(key.tenantId);
    if (limit === null) return undefined;
    const remaining = this.perKey.take(key.id, limit, nowMs);
    if (remaining < 0) {
      this.onRefused('key');
      throw rateLimited(
        WindowCounters.state(limit, 0, nowMs),
        'This API key has made too many requests; retry after the time in Retry-After.',
      );
    }
    return this.successHeaders ? WindowCounters.state(limit, remaining, nowMs) : undefined;
  }

  /**
   * Counts a verification from `address` as failed before the store is asked, so requests in
   * flight together cannot pass the limit; throws 429 when the address has no failure left in
   * this window. A key verified before (its `digest` is remembered) is not counted: it is
   * verified as usual, so a guesser learns nothing, and a valid client sharing the guesser's
   * address is not refused. Returns the reservation to `release` unless the verification
   * failed as `invalid_api_key`; `undefined` when nothing was counted.
   */
  reserve(address: string | undefined, digest: string, nowMs: number): FailureReservation | undefined {
    if (this.failedAuth === null || address === undefined || this.known.has(digest)) return undefined;
    const name = this.counted(clientAddressName(address), nowMs);
    if (this.failures.take(name, this.failedAuth, nowMs) < 0) {
      this.onRefused('address');
      throw rateLimited(
        WindowCounters.state(this.failedAuth, 0, nowMs),
        'Too many failed authentications from this address; retry after the time in Retry-After.',
      );
    }
    return { name, atMs: nowMs };
  }

  /** Gives back a reservation whose verification did not fail as `invalid_api_key`. */
  release(reservation: FailureReservation): void {
    this.failures.giveBack(reservation.name, reservation.atMs);
  }

  /** Remembers a key the store verified (by its digest), so a spent address budget lets it through. */
  verified(digest: string): void {
    if (this.failedAuth === null) return;
    // Delete and add again: a Set iterates in insertion order, so the first is the least recent.
    if (!this.known.delete(digest) && this.known.size >= this.maxKnownKeys) {
      const oldest = this.known.values().next();
      if (!oldest.done) this.known.delete(oldest.value);
    }
    this.known.add(digest);
  }

  /** The host's default for the tenant's keys without a limit of their own: its plan; null when none. */
  defaultFor(tenantId: string): RateLimit | null {
    const fallback = this.defaultLimit;
    if (typeof fallback !== 'function') return fallback;
    const limit = fallback(tenantId);
    if (limit === null || this.checkedDefaults.has(limit)) return limit;
    // A host's function, checked once per object it returns: a bad one is the host's bug.
    this.checkedDefaults.add(checked(limit, 'the rateLimit.default function’s result'));
    return limit;
  }

  /** The name `name`'s failures are counted under: its own while the table has room. */
  private counted(name: string, nowMs: number): string {
    if (this.failures.has(name) || this.failures.size < this.maxTrackedAddresses) return name;
    // Full: drop the counters of ended windows (at most once a window), then look again.
    const windowStart = nowMs - (nowMs % (this.failedAuth!.window * 1000));
    if (windowStart !== this.lastFullSweep) {
      this.lastFullSweep = windowStart;
      this.failures.sweep(nowMs);
      if (this.failures.size < this.maxTrackedAddresses) return name;
    }
    return OVERFLOW;
  }
}
