import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { cryptoRandomBytes, systemClock } from '../src/clock.js';
import { RequestIds } from '../src/http/request-id.js';
import { isWellFormedId, newId } from '../src/ids.js';

describe('cryptoRandomBytes', () => {
  it('hands out fresh, distinct bytes across pool refills, small and large', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) seen.add(Buffer.from(cryptoRandomBytes(16)).toString('hex'));
    expect(seen.size).toBe(2000);
    const large = cryptoRandomBytes(5000);
    expect(large).toHaveLength(5000);
    expect(new Set(large).size).toBeGreaterThan(200); // every byte value shows up, roughly
    const ones = [...cryptoRandomBytes(1024)].reduce(
      (n, b) => n + b.toString(2).replaceAll('0', '').length,
      0,
    );
    expect(ones / 8192).toBeGreaterThan(0.45);
    expect(ones / 8192).toBeLessThan(0.55);
  });
});

describe('ids (docs/decisions.md §1.4: opaque, prefixed, time-sortable)', () => {
  it('sort by time, carry 80 random bits in 16 characters, and use every character of the alphabet', () => {
    const at = (ms: number) => ({ now: () => new Date(ms) });
    const earlier = newId('key', at(1_000), (n) => randomBytes(n));
    const later = newId('key', at(1_001), (n) => randomBytes(n));
    expect(earlier < later).toBe(true);
    expect(isWellFormedId(earlier, 'key')).toBe(true);
    const tails = Array.from({ length: 2000 }, () => newId('req', at(5), (n) => randomBytes(n)).slice(14));
    expect(new Set(tails).size).toBe(2000);
    expect(new Set(tails.join('')).size).toBe(32);
    // All-ones bytes map to the last character everywhere: the packing uses every bit.
    expect(newId('evt', at(0), (n) => new Uint8Array(n).fill(255)).slice(14)).toBe('z'.repeat(16));
  });
});

describe('request ids', () => {
  it('have the id shape, sort by time and then by issue order, and never repeat', () => {
    let ms = 1_000;
    const ids = new RequestIds({ now: () => new Date(ms) }, (n) => randomBytes(n));
    const seen = new Set<string>();
    let previous = '';
    for (let i = 0; i < 5000; i++) {
      if (i % 700 === 0) ms++;
      const id = ids.next();
      expect(isWellFormedId(id, 'req')).toBe(true);
      expect(id > previous).toBe(true); // across the counter's 1024 boundaries too
      seen.add(id);
      previous = id;
    }
    expect(seen.size).toBe(5000);
  });

  it('carry the current time, then the random instance part, then the counter', () => {
    const timePart = () => newId('req', systemClock, (n) => new Uint8Array(n)).slice(0, 14);
    const ones = new RequestIds(systemClock, (n) => new Uint8Array(n).fill(255));
    const before = timePart();
    const first = ones.next();
    const after = timePart();
    expect(first.slice(0, 14) >= before && first.slice(0, 14) <= after).toBe(true);
    // 40 all-ones bits: every instance character is the alphabet's last.
    expect(first.slice(14, 22)).toBe('z'.repeat(8));
    expect(first.slice(22)).toBe('00000000');
    for (let i = 1; i < 1025; i++) ones.next();
    expect(ones.next().slice(22)).toBe('00000101'); // 1025 = 32² + 1: base32 digits 1, 0, 1
  });

  it('differ between two generators (two processes) at the same millisecond', () => {
    const clock = { now: () => new Date(5_000) };
    const a = new RequestIds(clock, (n) => randomBytes(n));
    const b = new RequestIds(clock, (n) => randomBytes(n));
    const fromA = new Set(Array.from({ length: 100 }, () => a.next()));
    const fromB = Array.from({ length: 100 }, () => b.next());
    expect(fromB.some((id) => fromA.has(id))).toBe(false);
    // The instance part uses the whole alphabet over many generators.
    const instances = Array.from({ length: 200 }, () =>
      new RequestIds(clock, (n) => randomBytes(n)).next().slice(14, 22),
    );
    expect(new Set(instances.join('')).size).toBe(32);
  });
});
