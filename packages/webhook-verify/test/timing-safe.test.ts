import { verify, verifyAsync } from '@keyhook/webhook-verify';
import { describe, expect, it, vi } from 'vitest';
import { toHex } from '../src/subtle-crypto.js';
import * as compare from '../src/timing-safe.js';
import { matchesAny } from '../src/timing-safe.js';
import { eventBody, hmacHex, OTHER_SECRET, SECRET } from './wire-format.js';

vi.mock('../src/timing-safe.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../src/timing-safe.js')>();
  return { ...original, matchesAny: vi.fn(original.matchesAny) };
});

const T = 1767225600;
const body = eventBody();
const good = hmacHex(SECRET, T, body);
// The matching signature first: an early return would skip the two after it.
const header = `t=${T},v1=${good},v1=${hmacHex(OTHER_SECRET, T, body)},v1=${'0'.repeat(64)}`;

/** A string whose charCodeAt counts its calls: the compare reads characters only through it. */
function counted(text: string): { text: string; reads: () => number } {
  let reads = 0;
  const boxed = Object.assign(new String(text), {
    charCodeAt(index: number) {
      reads++;
      return String.prototype.charCodeAt.call(text, index);
    },
  });
  return { text: boxed as unknown as string, reads: () => reads };
}

describe('constant-time compare (docs/http-api.md §6.4 rule 4)', () => {
  it('verify and verifyAsync compare every secret against every v1, even after a match', async () => {
    const spy = vi.mocked(compare.matchesAny);
    for (const run of [
      () => verify(body, header, [SECRET, OTHER_SECRET], { now: T * 1000 }),
      () => verifyAsync(body, header, [SECRET, OTHER_SECRET], { now: T * 1000 }),
    ]) {
      spy.mockClear();
      expect((await run()).id).toBe('evt_test_1');
      // One compare per secret, each over all three signatures; both found a match.
      expect(spy.mock.calls.map(([, candidates]) => candidates.length)).toEqual([3, 3]);
      expect(spy.mock.results.map((result) => result.value)).toEqual([true, true]);
    }
  });

  it('matchesAny reads every character of every candidate, even when the first matches', () => {
    const candidates = [good, 'f'.repeat(64), `${good.slice(0, 62)}00`].map(counted);
    expect(
      matchesAny(
        good,
        candidates.map((c) => c.text),
      ),
    ).toBe(true);
    expect(candidates.map((c) => c.reads())).toEqual([64, 64, 64]);
  });

  it('matchesAny is true only for an equal candidate of equal length, in either case', () => {
    expect(matchesAny(good, [])).toBe(false);
    expect(matchesAny(good, [good.slice(0, 63)])).toBe(false);
    expect(matchesAny(good, [`${good}0`])).toBe(false);
    expect(matchesAny(good, [good.toUpperCase()])).toBe(true);
    const digits = '0123456789abcdef';
    for (let i = 0; i < 64; i++) {
      const other = digits[(digits.indexOf(good[i]!) + 1) % 16]!;
      expect(matchesAny(good, [good.slice(0, i) + other + good.slice(i + 1)])).toBe(false);
    }
    expect(matchesAny(good, [`${good.slice(0, 63)}${good[63] === 'a' ? 'b' : 'a'}`, good])).toBe(true);
  });

  it('toHex gives the lowercase hex a digest would', () => {
    const bytes = Uint8Array.from({ length: 256 }, (_, i) => i);
    expect(toHex(bytes)).toBe(Buffer.from(bytes).toString('hex'));
  });

  it('verifyAsync finds a match in any position among secrets and signatures', async () => {
    for (const secret of [
      [SECRET, OTHER_SECRET],
      [OTHER_SECRET, SECRET],
    ]) {
      await expect(verifyAsync(body, header, secret, { now: T * 1000 })).resolves.toBeDefined();
    }
  });
});
