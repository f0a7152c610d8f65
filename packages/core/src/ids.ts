import { type Clock, cryptoRandomBytes, type RandomBytes, systemClock } from './clock.js';

// Crockford base32: sortable as plain strings, no ambiguous letters.
export const BASE32 = '0123456789abcdefghjkmnpqrstvwxyz';

/** The prefixes of keyhook's own ids. */
export type IdPrefix = 'key' | 'wh' | 'evt' | 'dlv' | 'req' | 'ps';

/**
 * Opaque, prefixed, time-sortable ids (docs/decisions.md §1.4): 48 bits of milliseconds, then 80
 * random bits, as 26 base32 characters. Ids minted later sort after earlier ones. Public so that
 * a host's own resources, and its request ids, have the shape of keyhook's: `prefix` is two or
 * three lowercase letters (`src`, `run`); `clock` and `random` are injected in tests.
 */
export function newId(
  prefix: string,
  clock: Clock = systemClock,
  random: RandomBytes = cryptoRandomBytes,
): string {
  const head = encodeTime(clock.now().getTime());
  // 80 random bits, five to a character.
  const bytes = random(10);
  let tail = '';
  let pending = 0;
  let bits = 0;
  for (let i = 0; i < 10; i++) {
    pending = ((pending << 8) | bytes[i]!) & 0xfff;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      tail += BASE32[(pending >> bits) & 31];
    }
  }
  return `${prefix}_${head}${tail}`;
}

const ID_PATTERN = /^[a-z]{2,3}_[0-9a-hjkmnp-tv-z]{26}$/;

/** True for a string shaped like an id this library mints; anything else cannot exist. */
export function isWellFormedId(value: string, prefix: IdPrefix): boolean {
  return value.startsWith(`${prefix}_`) && ID_PATTERN.test(value);
}

/**
 * When an id this library minted was made (its first 48 bits, docs/decisions.md §1.4), in ms since
 * the epoch; undefined for a string not shaped like one (a caller's own event id).
 */
export function idTime(value: string, prefix: IdPrefix): number | undefined {
  if (!isWellFormedId(value, prefix)) return undefined;
  let ms = 0;
  for (const character of value.slice(prefix.length + 1, prefix.length + 11)) {
    ms = ms * 32 + BASE32.indexOf(character);
  }
  return ms;
}

/** 48 bits of milliseconds as 10 base32 characters, so ids sort by the time they were made. */
export function encodeTime(ms: number): string {
  let time = ms;
  let head = '';
  for (let i = 0; i < 10; i++) {
    head = BASE32[time % 32] + head;
    time = Math.floor(time / 32);
  }
  return head;
}
