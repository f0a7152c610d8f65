import { MemoryStore } from '@keyhook/core';
import { runStoreConformance } from '@keyhook/store-conformance';

runStoreConformance({
  name: 'memory',
  create: async () => new MemoryStore(),
  createPeer: async (store) => store,
  // The memory store's "database" is its own maps: read the stored object as it is held.
  readKeyRow: async (store, id) => {
    const held = (store as unknown as { keys: Map<string, Record<string, unknown>> }).keys.get(id);
    return held ? { ...held } : null;
  },
});
