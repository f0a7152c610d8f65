import { type ApiKeys, createKeyhook, silentLogger } from '@keyhook/core';
import type { Store } from '@keyhook/core/store';
import { TEST_CATALOG } from './catalog.js';
import { TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY } from './credentials.js';

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
