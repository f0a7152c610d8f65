import * as nodeCrypto from 'node:crypto';
import { verify, verifyAsync } from '@keyhook/webhook-verify';
import { describe, expect, it, vi } from 'vitest';
import { matchesAny } from '../src/compare.js';
import { eventBody, hmacHex, OTHER_SECRET, SECRET } from './sign.js';

vi.mock('node:crypto', async (importOriginal) => {
  const original = await importOriginal<typeof import('node:crypto')>();
  return { ...original, timingSafeEqual: vi.fn(original.timingSafeEqual) };
});

const T = 1767225600;
const body = eventBody();
const good = hmacHex(SECRET, T, body);
// The matching signature first: an early return would skip the two after it.
const header = `t=${T},v1=${good},v1=${hmacHex(OTHER_SECRET, T, body)},v1=${'0'.repeat(64)}`;

/** A byte array that counts how many of its bytes were read. */
function counted(bytes: Uint8Array): { bytes: Uint8Array; reads: () => number } {
  let reads = 0;
  const proxy = new Proxy(bytes, {
    get(target, property) {
      if (typeof property === 'string' && /^\d+$/.test(property)) reads++;
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { bytes: proxy, reads: () => reads };
}

describe('constant-time compare (spec §6 rule 4)', () => {
  it('verify compares every secret against every v1, even after a match', () => {
    const timingSafeEqual = vi.mocked(nodeCrypto.timingSafeEqual);
    timingSafeEqual.mockClear();
    expect(verify(body, header, [SECRET, OTHER_SECRET], { now: T * 1000 }).id).toBe('evt_test_1');
    expect(timingSafeEqual).toHaveBeenCalledTimes(6);
  });

  it('matchesAny reads every byte of every candidate, even when the first matches', () => {
    const expected = Uint8Array.from(Buffer.from(good, 'hex'));
    const candidates = [good, 'ff'.repeat(32), `${good.slice(0, 62)}00`].map((hex) =>
      counted(Uint8Array.from(Buffer.from(hex, 'hex'))),
    );
    expect(
      matchesAny(
        expected,
        candidates.map((c) => c.bytes),
      ),
    ).toBe(true);
    expect(candidates.map((c) => c.reads())).toEqual([32, 32, 32]);
  });

  it('matchesAny is true only for an equal candidate of equal length', () => {
    const expected = Uint8Array.from(Buffer.from(good, 'hex'));
    expect(matchesAny(expected, [])).toBe(false);
    expect(matchesAny(expected, [expected.slice(0, 31)])).toBe(false);
    expect(matchesAny(expected, [Uint8Array.of(...expected, 0)])).toBe(false);
    for (let i = 0; i < 32; i++) {
      const changed = expected.slice();
      changed[i] = changed[i]! ^ 1;
      expect(matchesAny(expected, [changed])).toBe(false);
    }
    expect(matchesAny(expected, [changed(expected), expected.slice()])).toBe(true);
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

function changed(bytes: Uint8Array): Uint8Array {
  const copy = bytes.slice();
  copy[31] = copy[31]! ^ 0x80;
  return copy;
}
