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

/** Randomness is injected for the same reason; production uses the CSPRNG. */
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
