import { randomFillSync } from 'node:crypto';

/** Time is injected so that expiry, retries and throttles are tested without sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** The clock's time in epoch milliseconds, without a Date to collect when it is the system clock (hot paths). */
export function epochMs(clock: Clock): number {
  return clock === systemClock ? Date.now() : clock.now().getTime();
}

/** A timer as the `Timers` that set it knows it: passed back to that `Timers` only, to clear it. */
export type TimerHandle = object;

/** How a timer is set. */
export interface TimerOptions {
  /**
   * The timer alone does not keep the process alive (Node's `unref()`): for background work,
   * such as a retry or a purge, that must not hold up a host's exit.
   */
  unref?: boolean | undefined;
}

/**
 * The delivery worker's waits (its poll, a scheduled retry, the backoff through an outage, the
 * retention purge) are set on timers injected beside the clock, so a test's virtual clock runs
 * them as its time moves, without real sleeps. Production uses the system's, `systemTimers`.
 */
export interface Timers {
  /** Calls `callback` once, `ms` from now. */
  setTimeout(callback: () => void, ms: number, options?: TimerOptions): TimerHandle;
  /** Cancels a timeout not yet run; undefined, or one already run, is ignored. */
  clearTimeout(handle: TimerHandle | undefined): void;
  /** Calls `callback` every `ms` until cleared. */
  setInterval(callback: () => void, ms: number, options?: TimerOptions): TimerHandle;
  /** Cancels an interval; undefined is ignored. */
  clearInterval(handle: TimerHandle | undefined): void;
}

/** Node's timers, the default: `unref` is Node's `timer.unref()`. */
export const systemTimers: Timers = {
  setTimeout: (callback, ms, options) => unrefIf(setTimeout(callback, ms), options),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout | undefined),
  setInterval: (callback, ms, options) => unrefIf(setInterval(callback, ms), options),
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout | undefined),
};

function unrefIf(timer: NodeJS.Timeout, options: TimerOptions | undefined): NodeJS.Timeout {
  if (options?.unref === true) timer.unref();
  return timer;
}

/** Randomness is injected like time, so tests can pin it; production uses the CSPRNG. */
export type RandomBytes = (size: number) => Uint8Array;

const POOL_SIZE = 4096;
const pool = new Uint8Array(POOL_SIZE);
let poolOffset = POOL_SIZE;

/**
 * CSPRNG bytes, drawn from a pooled buffer as Node's own randomUUID does: one fill serves
 * many small draws, where a randomBytes() call per id cost more than the whole key lookup.
 * Bytes handed out are zeroed in the pool, so no copy of a secret's randomness stays behind.
 */
export const cryptoRandomBytes: RandomBytes = (size) => {
  if (size > POOL_SIZE / 4) return randomFillSync(new Uint8Array(size));
  if (poolOffset + size > POOL_SIZE) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const bytes = pool.slice(poolOffset, poolOffset + size);
  pool.fill(0, poolOffset, poolOffset + size);
  poolOffset += size;
  return bytes;
};
