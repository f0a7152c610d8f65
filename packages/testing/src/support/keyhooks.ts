import { type ApiKeys, createKeyhook, MemoryStore, type Store, silentLogger } from '@keyhook/core';
import { TEST_CATALOG } from './catalog.js';
import { TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY } from './credentials.js';

/**
 * Two keyhooks whose scope types differ, for the adapters' `requireScope` type tests: an app's
 * own scopes, and the tests' catalog (TEST_CATALOG).
 */
export function scopedKeyhooks() {
  const base = {
    store: new MemoryStore(),
    adminSession: { secret: TEST_ADMIN_SECRET },
    logger: silentLogger,
  };
  return {
    invoices: createKeyhook({
      ...base,
      scopes: ['invoices:read', { name: 'invoices:write', description: 'Create and pay invoices' }],
    }),
    reference: createKeyhook({ ...base, ...TEST_CATALOG, store: new MemoryStore() }),
  };
}

/**
 * `keyhook.keys` on `store`, as a host gets it: for store suites that exercise the key rules
 * against a real store. `cacheEntries: 0` turns the verified-key cache off, so every verify
 * asks the store.
 */
export function keysOn(store: Store, options: { cacheEntries?: number } = {}): ApiKeys {
  return createKeyhook({
    ...TEST_CATALOG,
    store,
    adminSession: { secret: TEST_ADMIN_SECRET },
    encryptionKey: TEST_ENCRYPTION_KEY,
    logger: silentLogger,
    verifiedKeyCacheEntries: options.cacheEntries,
    // Keys need no feed: a store without one (docs/decisions.md §20.5) runs the key cases too.
    eventsFeed: false,
  }).keys;
}
