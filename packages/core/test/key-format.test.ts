import { randomBytes } from 'node:crypto';
import { createKeyhook, MemoryStore, silentLogger } from '@keyhook/core';
import { TEST_ADMIN_SECRET, TEST_CATALOG } from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';
import { ApiKeyFormats, keyChecksum, mintApiKey, parseApiKey, remintApiKey } from '../src/keys/format.js';
import { hashApiKey } from '../src/keys/hash.js';

const API_KEY_PATTERN = /^sk_live_[0-9a-f]{16}_[0-9a-f]{48}$/;

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

/** A memory store that counts the credential lookups verification makes. */
class CountingStore extends MemoryStore {
  lookups = 0;
  override async findApiKeyByCredential(keyLookup: string, keyHash: string) {
    this.lookups++;
    return super.findApiKeyByCredential(keyLookup, keyHash);
  }
}

const options = (store: MemoryStore) => ({
  ...TEST_CATALOG,
  store,
  adminSession: { secret: TEST_ADMIN_SECRET },
  logger: silentLogger,
  // Every verification reaches the format check and, past it, the store.
  verifiedKeyCacheEntries: 0,
});

describe('key formats of the host’s own', () => {
  it('mints with the prefix and checksum; a mistyped key is refused with zero store reads', async () => {
    const store = new CountingStore();
    const keyhook = createKeyhook({ ...options(store), keyFormat: { prefix: 'acme_live_', checksum: true } });
    const { key, secret } = await keyhook.keys.create('acme', { name: 'k', scopes: ['items:read'] });
    expect(key.keyLookup).toMatch(/^acme_live_[0-9a-f]{16}$/);
    expect(secret).toMatch(new RegExp(`^${keyhook.keyFormats[0]!.pattern}$`));
    expect((await keyhook.guard('items:read')({ authorization: `Bearer ${secret}` })).ok).toBe(true);
    expect(store.lookups).toBe(1);
    // One character wrong, in the secret part: the checksum no longer matches.
    const typo = `${secret.slice(0, 40)}${secret[40] === 'a' ? 'b' : 'a'}${secret.slice(41)}`;
    const refused = await keyhook.guard('items:read')({ authorization: `Bearer ${typo}` });
    expect(!refused.ok && JSON.parse(refused.response.body!).error.code).toBe('invalid_api_key');
    expect(store.lookups).toBe(1);
    // The same mistake without a checksum costs a lookup: that is what the checksum saves.
    const plain = createKeyhook({ ...options(store), keyFormat: { prefix: 'plain_' } });
    const minted = await plain.keys.create('acme', { name: 'p', scopes: ['items:read'] });
    const plainTypo = `${minted.secret.slice(0, 40)}${minted.secret[40] === 'a' ? 'b' : 'a'}${minted.secret.slice(41)}`;
    expect((await plain.guard('items:read')({ authorization: `Bearer ${plainTypo}` })).ok).toBe(false);
    expect(store.lookups).toBe(2);
  });

  it('keeps keys minted in an earlier format working, and rotates them in their own format', async () => {
    const store = new CountingStore();
    const before = createKeyhook(options(store));
    const legacy = await before.keys.create('acme', { name: 'old', scopes: ['items:read'] });
    const after = createKeyhook({
      ...options(store),
      keyFormat: { prefix: 'acme_live_', checksum: true },
      acceptedKeyFormats: [{ prefix: 'sk_live_' }],
    });
    expect((await after.guard('items:read')({ authorization: `Bearer ${legacy.secret}` })).ok).toBe(true);
    const rotated = await after.keys.rotate('acme', legacy.key.id);
    expect(rotated.secret).toMatch(/^sk_live_[0-9a-f]{16}_[0-9a-f]{48}$/);
    expect((await after.guard('items:read')({ authorization: `Bearer ${rotated.secret}` })).ok).toBe(true);
    // Without the earlier format accepted, the old key is refused before the store.
    const strict = createKeyhook({ ...options(store), keyFormat: { prefix: 'acme_live_', checksum: true } });
    const lookups = store.lookups;
    expect((await strict.guard('items:read')({ authorization: `Bearer ${rotated.secret}` })).ok).toBe(false);
    expect(store.lookups).toBe(lookups);
    // Rotating it there would give a secret no verification accepts: refused, the key as it was.
    const error = await strict.keys.rotate('acme', legacy.key.id).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'key_format_not_accepted', status: 409 });
    expect((await after.guard('items:read')({ authorization: `Bearer ${rotated.secret}` })).ok).toBe(true);
    expect(after.keyFormats.map(({ prefix, checksum }) => [prefix, checksum])).toEqual([
      ['acme_live_', true],
      ['sk_live_', false],
    ]);
  });

  it('refuses a bad prefix at setup', () => {
    expect(() => createKeyhook({ ...options(new MemoryStore()), keyFormat: { prefix: 'ACME_' } })).toThrow(
      /keyFormat.prefix must be lowercase/,
    );
    expect(() =>
      createKeyhook({ ...options(new MemoryStore()), acceptedKeyFormats: [{ prefix: 'sk_live_' }] }),
    ).toThrow(/configured twice/);
  });
});
