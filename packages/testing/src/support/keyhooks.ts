import { createKeyhook, MemoryStore, silentLogger } from '@keyhook/core';
import { TEST_ADMIN_SECRET, TEST_CATALOG } from '@keyhook/store-conformance/support';

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
