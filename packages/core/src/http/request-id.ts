import { type Clock, epochMs, type RandomBytes } from '../clock.js';
import { BASE32, encodeTime } from '../ids.js';

const INSTANCE_CHARS = 8; // 40 random bits, drawn once per generator
const COUNTER_LOW_CHARS = 2; // the counter's last 10 bits, from a table
const COUNTER_HIGH_CHARS = 6; // its other 30 bits, encoded once per 1024 ids
const COUNTER_LIMIT = 2 ** 40;
const LOW = Array.from({ length: 1024 }, (_, n) => BASE32[n >> 5]! + BASE32[n & 31]!);

/**
 * Request ids (`req_…`, the same shape as newId's: 10 characters of milliseconds, then 16) for
 * every response. A request id names a request in logs and support tickets and guards nothing,
 * so its tail need not be fresh randomness: it is this generator's random instance part, drawn
 * once, then a counter. Ids from one process never repeat and sort by issue order; two
 * processes' ids differ by their 40-bit instance parts. A CSPRNG draw per id cost the guard a
 * measurable share of a request (docs/decisions.md §1.3, §3.15).
 */
export class RequestIds {
  private readonly instance: string;
  private counter = 0;
  private lastMs = -1;
  private head = '';
  private high = -1;
  private highText = '';

  constructor(
    private readonly clock: Clock,
    randomBytes: RandomBytes,
  ) {
    this.instance = encodeBits(randomBytes(5), INSTANCE_CHARS);
  }

  /** The next id; `nowMs` when the caller has read the clock already. */
  next(nowMs?: number): string {
    const ms = nowMs ?? epochMs(this.clock);
    if (ms !== this.lastMs) {
      this.lastMs = ms;
      this.head = `req_${encodeTime(ms)}${this.instance}`;
    }
    const n = this.counter;
    this.counter = n + 1 === COUNTER_LIMIT ? 0 : n + 1;
    const high = Math.floor(n / 1024);
    if (high !== this.high) {
      this.high = high;
      this.highText = encodeNumber(high, COUNTER_HIGH_CHARS);
    }
    return this.head + this.highText + LOW[n % 1024]!;
  }
}

/** `chars` base32 characters from the first 5 × chars bits of `bytes`. */
function encodeBits(bytes: Uint8Array, chars: number): string {
  let text = '';
  let pending = 0;
  let bits = 0;
  for (let i = 0; text.length < chars; ) {
    if (bits < 5) {
      pending = ((pending << 8) | bytes[i++]!) & 0xfff;
      bits += 8;
    }
    bits -= 5;
    text += BASE32[(pending >> bits) & 31];
  }
  return text;
}

/** A non-negative integer as exactly `chars` base32 characters, most significant first. */
function encodeNumber(value: number, chars: number): string {
  let rest = value;
  let text = '';
  for (let i = 0; i < chars; i++) {
    text = BASE32[rest % 32] + text;
    rest = Math.floor(rest / 32);
  }
  return text;
}

export const REQUEST_ID_COUNTER_CHARS = COUNTER_HIGH_CHARS + COUNTER_LOW_CHARS;
