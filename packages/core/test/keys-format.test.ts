import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ApiKeyFormats, keyChecksum, mintApiKey, parseApiKey, remintApiKey } from '../src/keys/format.js';

const API_KEY_PATTERN = /^sk_live_[0-9a-f]{16}_[0-9a-f]{48}$/;

import { hashApiKey } from '../src/keys/hash.js';

const random = (n: number) => randomBytes(n);

describe('key format (docs/http-api.md §2, §5.2, §8)', () => {
  it('mints sk_live_<16 hex>_<48 hex> with the lookup id as its prefix', () => {
    for (let i = 0; i < 200; i++) {
      const { keyLookup, secret } = mintApiKey(random);
      expect(secret).toMatch(/^sk_live_[0-9a-f]{16}_[0-9a-f]{48}$/);
      expect(keyLookup).toMatch(/^sk_live_[0-9a-f]{16}$/);
      expect(secret.startsWith(`${keyLookup}_`)).toBe(true);
    }
  });

  it('parses only the exact format, anchored at both ends', () => {
    const { keyLookup, secret } = mintApiKey(random);
    expect(parseApiKey(secret)).toEqual({ keyLookup, keyIdHex: keyLookup.slice(8) });
    const bad = [
      '',
      keyLookup,
      `${secret}0`,
      ` ${secret}`,
      `${secret}\n`,
      secret.toUpperCase(),
      secret.replace('sk_live_', 'sk_test_'),
      `${keyLookup}_${'g'.repeat(48)}`,
      `${keyLookup}_${'a'.repeat(47)}`,
      `sk_live_${'a'.repeat(15)}_${'a'.repeat(49)}`,
    ];
    for (const value of bad) expect(parseApiKey(value), value).toBeNull();
  });

  it('rotation keeps the lookup id and changes the secret part', () => {
    const first = mintApiKey(random);
    const second = remintApiKey(random, first.keyLookup)!;
    expect(second.keyLookup).toBe(first.keyLookup);
    expect(second.secret).not.toBe(first.secret);
    expect(second.secret).toMatch(API_KEY_PATTERN);
  });

  it('mints in a prefix of the host’s own, with a checksum that catches every single-character typo', () => {
    const formats = new ApiKeyFormats({ prefix: 'acme_live_', checksum: true });
    const { keyLookup, secret } = formats.mint(random);
    expect(secret).toMatch(/^acme_live_[0-9a-f]{16}_[0-9a-f]{48}[0-9A-Za-z]{6}$/);
    expect(keyLookup).toMatch(/^acme_live_[0-9a-f]{16}$/);
    expect(formats.parse(secret)).toEqual({ keyLookup, keyIdHex: keyLookup.slice(10) });
    expect(secret.slice(-6)).toBe(keyChecksum(secret.slice(0, -6)));
    // CRC32 detects every error in one character: each position, each other character of its alphabet.
    let refused = 0;
    for (let i = 10; i < secret.length; i++) {
      const alphabet =
        i >= secret.length - 6
          ? '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
          : '0123456789abcdef';
      for (const c of alphabet) {
        if (c === secret[i] || (i === 26 && c !== '_')) continue;
        expect(formats.parse(`${secret.slice(0, i)}${c}${secret.slice(i + 1)}`)).toBeNull();
        refused++;
      }
    }
    expect(refused).toBeGreaterThan(1000);
    // The default format is not accepted unless configured.
    expect(formats.parse(mintApiKey(random).secret)).toBeNull();
  });

  it('accepts older formats beside the minting one, and rotates a key in the format of its own prefix', () => {
    const formats = new ApiKeyFormats({ prefix: 'acme_live_', checksum: true }, [{ prefix: 'sk_live_' }]);
    const legacy = mintApiKey(random);
    expect(formats.parse(legacy.secret)).toEqual({
      keyLookup: legacy.keyLookup,
      keyIdHex: legacy.keyLookup.slice(8),
    });
    const rotated = formats.remint(random, legacy.keyLookup)!;
    expect(rotated.keyLookup).toBe(legacy.keyLookup);
    expect(rotated.secret).toMatch(API_KEY_PATTERN);
    expect(formats.describe()).toEqual([
      {
        prefix: 'acme_live_',
        checksum: true,
        pattern: '\\bacme_live_[0-9a-f]{16}_[0-9a-f]{48}[0-9A-Za-z]{6}\\b',
      },
      { prefix: 'sk_live_', checksum: false, pattern: '\\bsk_live_[0-9a-f]{16}_[0-9a-f]{48}\\b' },
    ]);
    // The scanner's pattern finds a key in text, and only a whole one.
    const minted = formats.mint(random).secret;
    const scan = new RegExp(formats.describe()[0]!.pattern, 'g');
    expect(`token=${minted}; x`.match(scan)).toEqual([minted]);
    expect(`${minted}z`.match(scan)).toBeNull();
  });

  it('rotates a key in the format its whole lookup id belongs to, when one prefix begins another', () => {
    const formats = new ApiKeyFormats({ prefix: 'acme_', checksum: true }, [{ prefix: 'acme_live_' }]);
    const older = new ApiKeyFormats({ prefix: 'acme_live_' }).mint(random);
    expect(formats.parse(older.secret)?.keyLookup).toBe(older.keyLookup);
    const rotated = formats.remint(random, older.keyLookup)!;
    expect(rotated.keyLookup).toBe(older.keyLookup);
    expect(formats.parse(rotated.secret)?.keyLookup).toBe(older.keyLookup);
    // A lookup id of no configured format does not rotate into an unusable key.
    expect(formats.remint(random, mintApiKey(random).keyLookup)).toBeNull();
  });

  it('refuses a prefix that is not lowercase, short and ending in _, or one configured twice', () => {
    for (const prefix of [
      'Acme_',
      'acme',
      '_acme_',
      'ac me_',
      'acme__',
      '1acme_',
      `${'a'.repeat(24)}_`,
      'acme-live_',
    ]) {
      expect(() => new ApiKeyFormats({ prefix }), prefix).toThrow(TypeError);
    }
    expect(() => new ApiKeyFormats({ prefix: 'acme_' }, [{ prefix: 'acme_' }])).toThrow(/twice/);
    expect(new ApiKeyFormats({ prefix: 'a_' }).mint(random).secret.startsWith('a_')).toBe(true);
  });

  it('hashes the full key with SHA-256 as lowercase hex', () => {
    expect(hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('cryptoRandomBytes', () => {
  it('hands out fresh, distinct bytes across pool refills, small and large', async () => {
    const { cryptoRandomBytes } = await import('@keyhook/core');
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
  it('sort by time, carry 80 random bits in 16 characters, and use every character of the alphabet', async () => {
    const { newId, isWellFormedId } = await import('../src/ids.js');
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
  it('have the id shape, sort by time and then by issue order, and never repeat', async () => {
    const { RequestIds } = await import('../src/http/request-id.js');
    const { isWellFormedId } = await import('../src/ids.js');
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

  it('carry the current time, then the random instance part, then the counter', async () => {
    const { RequestIds } = await import('../src/http/request-id.js');
    const { newId, systemClock } = await import('@keyhook/core');
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

  it('differ between two generators (two processes) at the same millisecond', async () => {
    const { RequestIds } = await import('../src/http/request-id.js');
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
