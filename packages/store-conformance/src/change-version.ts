import { describe, expect, it } from 'vitest';
import { keyRecord, sha256 } from './fixtures.js';
import type { StoreHarness, SuiteContext } from './store-harness.js';

/** How long a store may take to see another connection's change (its documented bound, with room). */
const PEER_BOUND_MS = 2000;

async function changes(read: () => number | null, from: number | null): Promise<number> {
  const start = performance.now();
  while (performance.now() - start < PEER_BOUND_MS) {
    const now = read();
    if (now !== null && now !== from) return performance.now() - start;
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  return Number.POSITIVE_INFINITY;
}

export function changeVersionCases(ctx: SuiteContext, harness: StoreHarness): void {
  if (harness.cachesVerifiedKeys === false) {
    describe('key-change version, on a store that cannot hear other instances', () => {
      it('stays null through its own and a peer’s changes, so core caches no verified key', async () => {
        const peer = await ctx.peer();
        const key = keyRecord();
        await ctx.store.insertApiKey(key);
        expect(ctx.store.keyChangeVersion()).toBeNull();
        await ctx.store.rotateApiKey(key.tenantId, key.id, key.keyHash, sha256('next'));
        await peer.revokeApiKey(key.tenantId, key.id, new Date());
        expect(ctx.store.keyChangeVersion()).toBeNull();
        expect(peer.keyChangeVersion()).toBeNull();
      });
    });
    return;
  }
  describe('key-change version (what lets core cache verified keys)', () => {
    it('moves at once when this store revokes or rotates a key', async () => {
      const key = keyRecord();
      await ctx.store.insertApiKey(key);
      const v0 = ctx.store.keyChangeVersion();
      expect(v0).not.toBeNull();
      await ctx.store.rotateApiKey(key.tenantId, key.id, key.keyHash, sha256('next'));
      const v1 = ctx.store.keyChangeVersion();
      expect(v1).not.toBe(v0);
      await ctx.store.revokeApiKey(key.tenantId, key.id, new Date());
      expect(ctx.store.keyChangeVersion()).not.toBe(v1);
    });

    it("moves at once when this store changes a key's rate limit", async () => {
      const key = keyRecord();
      await ctx.store.insertApiKey(key);
      const v0 = ctx.store.keyChangeVersion();
      await ctx.store.updateApiKey(key.tenantId, key.id, { rateLimit: { limit: 3, window: 60 } });
      const v1 = ctx.store.keyChangeVersion();
      expect(v1).not.toBe(v0);
      await ctx.store.updateApiKey(key.tenantId, key.id, { rateLimit: null });
      const v2 = ctx.store.keyChangeVersion();
      expect(v2).not.toBe(v1);
      // A new name, or the same limit again, changes nothing cached keys carry: no move, and
      // on Postgres no wait for a notification that never comes.
      await ctx.store.updateApiKey(key.tenantId, key.id, { name: 'renamed' });
      await ctx.store.updateApiKey(key.tenantId, key.id, { rateLimit: null });
      expect(ctx.store.keyChangeVersion()).toBe(v2);
    });

    it("moves when another connection changes a key's rate limit, within the store’s bound", async () => {
      const peer = await ctx.peer();
      const key = keyRecord();
      await ctx.store.insertApiKey(key);
      const before = ctx.store.keyChangeVersion();
      await peer.updateApiKey(key.tenantId, key.id, { rateLimit: { limit: 3, window: 60 } });
      expect(await changes(() => ctx.store.keyChangeVersion(), before)).toBeLessThan(PEER_BOUND_MS);
    });

    it('moves when another connection revokes or rotates a key, within the store’s bound', async () => {
      const peer = await ctx.peer();
      const key = keyRecord();
      await ctx.store.insertApiKey(key);
      const before = ctx.store.keyChangeVersion();
      await peer.rotateApiKey(key.tenantId, key.id, key.keyHash, sha256('next'));
      const rotateMs = await changes(() => ctx.store.keyChangeVersion(), before);
      const middle = ctx.store.keyChangeVersion();
      await peer.revokeApiKey(key.tenantId, key.id, new Date());
      const revokeMs = await changes(() => ctx.store.keyChangeVersion(), middle);
      console.log(
        `peer change seen after ${rotateMs.toFixed(2)} ms (rotate), ${revokeMs.toFixed(2)} ms (revoke)`,
      );
      expect(rotateMs).toBeLessThan(PEER_BOUND_MS);
      expect(revokeMs).toBeLessThan(PEER_BOUND_MS);
    });

    it('cannot tell once closed', async () => {
      const peer = await ctx.peer();
      if (peer === ctx.store) return; // the memory store has no second connection to close
      await peer.close();
      expect(peer.keyChangeVersion()).toBeNull();
    });
  });
}
