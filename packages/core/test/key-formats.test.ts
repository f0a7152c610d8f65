import { createKeyhook, MemoryStore, silentLogger } from '@keyhook/core';
import { TEST_ADMIN_SECRET, TEST_CATALOG } from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';

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
    expect((await keyhook.guard({ authorization: `Bearer ${secret}` }, 'items:read')).ok).toBe(true);
    expect(store.lookups).toBe(1);
    // One character wrong, in the secret part: the checksum no longer matches.
    const typo = `${secret.slice(0, 40)}${secret[40] === 'a' ? 'b' : 'a'}${secret.slice(41)}`;
    const refused = await keyhook.guard({ authorization: `Bearer ${typo}` }, 'items:read');
    expect(!refused.ok && JSON.parse(refused.response.body!).error.code).toBe('invalid_api_key');
    expect(store.lookups).toBe(1);
    // The same mistake without a checksum costs a lookup: that is what the checksum saves.
    const plain = createKeyhook({ ...options(store), keyFormat: { prefix: 'plain_' } });
    const minted = await plain.keys.create('acme', { name: 'p', scopes: ['items:read'] });
    const plainTypo = `${minted.secret.slice(0, 40)}${minted.secret[40] === 'a' ? 'b' : 'a'}${minted.secret.slice(41)}`;
    expect((await plain.guard({ authorization: `Bearer ${plainTypo}` }, 'items:read')).ok).toBe(false);
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
    expect((await after.guard({ authorization: `Bearer ${legacy.secret}` }, 'items:read')).ok).toBe(true);
    const rotated = await after.keys.rotate('acme', legacy.key.id);
    expect(rotated.secret).toMatch(/^sk_live_[0-9a-f]{16}_[0-9a-f]{48}$/);
    expect((await after.guard({ authorization: `Bearer ${rotated.secret}` }, 'items:read')).ok).toBe(true);
    // Without the earlier format accepted, the old key is refused before the store.
    const strict = createKeyhook({ ...options(store), keyFormat: { prefix: 'acme_live_', checksum: true } });
    const lookups = store.lookups;
    expect((await strict.guard({ authorization: `Bearer ${rotated.secret}` }, 'items:read')).ok).toBe(false);
    expect(store.lookups).toBe(lookups);
    // Rotating it there would give a secret no verification accepts: refused, the key as it was.
    const error = await strict.keys.rotate('acme', legacy.key.id).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'key_format_not_accepted', status: 409 });
    expect((await after.guard({ authorization: `Bearer ${rotated.secret}` }, 'items:read')).ok).toBe(true);
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
