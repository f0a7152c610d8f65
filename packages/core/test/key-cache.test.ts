import { randomBytes } from 'node:crypto';
import { MemoryStore } from '@keyhook/core';
import { FakeClock, TEST_SCOPES } from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';
import { ScopeCatalog } from '../src/catalog/scopes.js';
import { VerifiedKeyCache } from '../src/keys/cache.js';
import { ApiKeyService } from '../src/keys/key-service.js';

const random = (n: number) => randomBytes(n);

/** A memory store that counts the reads verification makes, and can say "cannot tell". */
class CountingStore extends MemoryStore {
  reads = 0;
  versionUnknown = false;
  override async findApiKeyByCredential(keyLookup: string, keyHash: string) {
    this.reads++;
    return super.findApiKeyByCredential(keyLookup, keyHash);
  }
  override keyChangeVersion() {
    return this.versionUnknown ? null : super.keyChangeVersion();
  }
}

function twoInstances(cacheEntries?: number) {
  const clock = new FakeClock('2026-01-01T00:00:00Z');
  const store = new CountingStore();
  const here = new ApiKeyService({
    scopes: new ScopeCatalog(TEST_SCOPES),
    store,
    clock,
    randomBytes: random,
    cacheEntries,
  });
  const there = new ApiKeyService({
    scopes: new ScopeCatalog(TEST_SCOPES),
    store,
    clock,
    randomBytes: random,
    cacheEntries,
  });
  return { clock, store, here, there };
}

describe('the verified-key cache (docs/decisions.md §3.9: it must keep the revocation promise)', () => {
  it('reads the store once per key while the key-change version stands', async () => {
    const { store, here } = twoInstances();
    const { secret } = await here.create('t1', { name: 'x', scopes: ['items:read'] });
    for (let i = 0; i < 10; i++) await here.verify(secret);
    expect(store.reads).toBe(1);
  });

  it('refuses a key revoked through another instance on the very next verification', async () => {
    const { here, there } = twoInstances();
    const { key, secret } = await here.create('t1', { name: 'x', scopes: ['items:read'] });
    await here.verify(secret); // cached here
    await there.revoke('t1', key.id);
    await expect(here.verify(secret)).rejects.toMatchObject({ code: 'key_revoked' });
  });

  it('refuses a rotated-out secret through another instance on the very next verification', async () => {
    const { here, there } = twoInstances();
    const { key, secret } = await here.create('t1', { name: 'x', scopes: ['items:read'] });
    await here.verify(secret);
    const rotated = await there.rotate('t1', key.id);
    await expect(here.verify(secret)).rejects.toMatchObject({ code: 'invalid_api_key' });
    await expect(here.verify(rotated.secret)).resolves.toMatchObject({ id: key.id });
  });

  it('never caches a failure: unknown ids and wrong secrets read the store every time', async () => {
    const { store, here } = twoInstances();
    const { secret } = await here.create('t1', { name: 'x', scopes: ['items:read'] });
    const wrong = `${secret.slice(0, 25)}${'0'.repeat(48)}`;
    for (let i = 0; i < 5; i++) await here.verify(wrong).catch(() => {});
    expect(store.reads).toBe(5);
  });

  it('still enforces expiry on a cached key', async () => {
    const { clock, here } = twoInstances();
    const { secret } = await here.create('t1', {
      name: 'x',
      scopes: ['items:read'],
      expiresAt: '2026-01-01T00:01:00Z',
    });
    await here.verify(secret);
    clock.advance(60_000);
    await expect(here.verify(secret)).rejects.toMatchObject({ code: 'key_expired' });
  });

  it('caches nothing while the store cannot tell its version, or when turned off', async () => {
    const unknown = twoInstances();
    const { secret } = await unknown.here.create('t1', { name: 'x', scopes: ['items:read'] });
    unknown.store.versionUnknown = true;
    for (let i = 0; i < 3; i++) await unknown.here.verify(secret);
    expect(unknown.store.reads).toBe(3);

    const off = twoInstances(0);
    const issued = await off.here.create('t1', { name: 'x', scopes: ['items:read'] });
    for (let i = 0; i < 3; i++) await off.here.verify(issued.secret);
    expect(off.store.reads).toBe(3);
  });

  it('never answers for another digest that shares its slot: the two take turns', () => {
    const cache = new VerifiedKeyCache();
    const a = { id: 'a' } as never;
    const b = { id: 'b' } as never;
    // The slot is the first 30 bits: these share it (the fourth character differs only above them).
    const digestA = `\x01\x02\x03\x04${'a'.repeat(28)}`;
    const digestB = `\x01\x02\x03\xc4${'b'.repeat(28)}`;
    cache.set(digestA, a, 1);
    expect(cache.get(digestB, 1)).toBeUndefined();
    cache.set(digestB, b, 1);
    expect(cache.get(digestA, 1)).toBeUndefined();
    expect(cache.get(digestB, 1)).toBe(b);
    expect(cache.size).toBe(1);
    // Same slot, same first 30 bits, different tail: still not the cached key.
    expect(cache.get(`\x01\x02\x03\x04${'b'.repeat(28)}`, 1)).toBeUndefined();
  });

  it('holds at most its configured number of entries, dropping the oldest', () => {
    const cache = new VerifiedKeyCache(2);
    const record = {} as never;
    cache.set('a', record, 1);
    cache.set('b', record, 1);
    cache.set('c', record, 1);
    expect(cache.size).toBe(2);
    expect(cache.get('a', 1)).toBeUndefined();
    expect(cache.get('c', 1)).toBe(record);
    expect(cache.get('c', 2)).toBeUndefined(); // another version: gone
    expect(cache.size).toBe(1);
  });
});
