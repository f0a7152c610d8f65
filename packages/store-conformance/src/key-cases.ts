import { isKeyhookError, KeyhookError } from '@keyhook/core';
import { describe, expect, it } from 'vitest';
import { keyRecord, orderedIds, sha256 } from './fixtures.js';
import type { SuiteContext } from './store-harness.js';
import { keysOn } from './support/keys-on.js';
import { waitUntil } from './support/wait-until.js';

export function keyCases(ctx: SuiteContext): void {
  describe('API keys', () => {
    it('round-trips every field of a key', async () => {
      const key = keyRecord({
        scopes: ['runs:apply', 'items:read', 'sources:read'],
        expiresAt: new Date('2027-02-03T04:05:06.789Z'),
        name: 'Ünïcode – name',
        rateLimit: { limit: 1_000_000_000, window: 86_400 },
        rateLimitByHost: true,
      });
      expect(await ctx.store.insertApiKey(key)).toBe('inserted');
      expect(await ctx.store.getApiKey(key.tenantId, key.id)).toEqual(key);
      expect(await ctx.store.findApiKeyByCredential(key.keyLookup, key.keyHash)).toEqual(key);
    });

    it('updates the name and the rate limit; a field left out keeps its value', async () => {
      const key = keyRecord({ rateLimit: { limit: 10, window: 60 } });
      await ctx.store.insertApiKey(key);
      const renamed = await ctx.store.updateApiKey(key.tenantId, key.id, { name: 'renamed' });
      expect(renamed).toEqual({ ...key, name: 'renamed' });
      const limited = await ctx.store.updateApiKey(key.tenantId, key.id, {
        rateLimit: { limit: 5, window: 1 },
      });
      expect(limited).toEqual({ ...key, name: 'renamed', rateLimit: { limit: 5, window: 1 } });
      const byHost = await ctx.store.updateApiKey(key.tenantId, key.id, {
        rateLimit: { limit: 1, window: 3_600 },
        rateLimitByHost: true,
      });
      expect(byHost).toMatchObject({ rateLimit: { limit: 1, window: 3_600 }, rateLimitByHost: true });
      // Who set the limit changes only with the limit.
      expect(await ctx.store.updateApiKey(key.tenantId, key.id, { name: 'renamed' })).toEqual(byHost);
      const both = await ctx.store.updateApiKey(key.tenantId, key.id, { name: 'both', rateLimit: null });
      expect(both).toEqual({ ...key, name: 'both', rateLimit: null, rateLimitByHost: false });
      expect(await ctx.store.getApiKey(key.tenantId, key.id)).toEqual(both);
      expect(await ctx.store.findApiKeyByCredential(key.keyLookup, key.keyHash)).toEqual(both);
      // The same limit again changes nothing.
      expect(await ctx.store.updateApiKey(key.tenantId, key.id, { rateLimit: null })).toEqual(both);
    });

    it('updates no key of another tenant, and no unknown key', async () => {
      const key = keyRecord();
      await ctx.store.insertApiKey(key);
      expect(
        await ctx.store.updateApiKey('tenant_b', key.id, {
          name: 'stolen',
          rateLimit: { limit: 1, window: 1 },
        }),
      ).toBeNull();
      expect(
        await ctx.store.updateApiKey(key.tenantId, 'key_00000000000000000000000000', { name: 'x' }),
      ).toBeNull();
      expect(await ctx.store.getApiKey(key.tenantId, key.id)).toEqual(key);
    });

    it('finds a key by credential only when lookup id and hash both match', async () => {
      const key = keyRecord({ tenantId: 'tenant_z' });
      await ctx.store.insertApiKey(key);
      expect(await ctx.store.findApiKeyByCredential(key.keyLookup, sha256('wrong'))).toBeNull();
      expect(await ctx.store.findApiKeyByCredential('sk_live_0000000000000000', key.keyHash)).toBeNull();
      expect(await ctx.store.findApiKeyByCredential(key.keyLookup, key.keyHash)).toEqual(key);
    });

    it('refuses a second key with the same lookup id, in any tenant, and keeps the first', async () => {
      const first = keyRecord();
      await ctx.store.insertApiKey(first);
      const clash = keyRecord({ keyLookup: first.keyLookup, tenantId: 'tenant_b' });
      expect(await ctx.store.insertApiKey(clash)).toBe('duplicate_lookup');
      expect(await ctx.store.findApiKeyByCredential(first.keyLookup, first.keyHash)).toEqual(first);
      expect(await ctx.store.findApiKeyByCredential(clash.keyLookup, clash.keyHash)).toBeNull();
      expect(await ctx.store.getApiKey('tenant_b', clash.id)).toBeNull();
    });

    it('stores only the lookup id and the SHA-256 of the key, never the plaintext', async () => {
      const keys = keysOn(ctx.store);
      const { key, secret } = await keys.create('tenant_a', { name: 'raw row', scopes: ['items:read'] });
      const row = await ctx.readKeyRow(key.id);
      expect(row).not.toBeNull();
      const dump = JSON.stringify(row);
      expect(dump).not.toContain(secret);
      expect(dump).not.toContain(secret.slice(-48));
      expect(dump).toContain(sha256(secret));
      expect(dump).toContain(key.keyLookup);
    });

    it('never shows one tenant another tenant’s key', async () => {
      const key = keyRecord({ tenantId: 'tenant_a' });
      await ctx.store.insertApiKey(key);
      expect(await ctx.store.getApiKey('tenant_b', key.id)).toBeNull();
      expect(await ctx.store.listApiKeys('tenant_b', { limit: 10 })).toEqual([]);
      expect(await ctx.store.revokeApiKey('tenant_b', key.id, new Date())).toBeNull();
      expect(await ctx.store.rotateApiKey('tenant_b', key.id, key.keyHash, sha256('x'))).toEqual({
        outcome: 'not_found',
      });
      expect(await ctx.store.getApiKey('tenant_a', key.id)).toEqual(key);
    });

    it('lists newest first and pages with `before`', async () => {
      const ids = orderedIds('key', 5);
      for (const id of [ids[2], ids[0], ids[4], ids[1], ids[3]]) {
        await ctx.store.insertApiKey(keyRecord({ id: id! }));
      }
      await ctx.store.insertApiKey(keyRecord({ tenantId: 'tenant_b' }));
      const first = await ctx.store.listApiKeys('tenant_a', { limit: 2 });
      expect(first.map((k) => k.id)).toEqual([ids[4], ids[3]]);
      const second = await ctx.store.listApiKeys('tenant_a', { limit: 2, before: ids[3] });
      expect(second.map((k) => k.id)).toEqual([ids[2], ids[1]]);
      const rest = await ctx.store.listApiKeys('tenant_a', { limit: 10, before: ids[1] });
      expect(rest.map((k) => k.id)).toEqual([ids[0]]);
    });

    it('rotates only from the expected hash of an active key', async () => {
      const key = keyRecord();
      await ctx.store.insertApiKey(key);
      const stale = await ctx.store.rotateApiKey(key.tenantId, key.id, sha256('other'), sha256('new'));
      expect(stale).toEqual({ outcome: 'stale', key });
      const rotated = await ctx.store.rotateApiKey(key.tenantId, key.id, key.keyHash, sha256('new'));
      expect(rotated).toEqual({ outcome: 'rotated', key: { ...key, keyHash: sha256('new') } });
      expect(await ctx.store.findApiKeyByCredential(key.keyLookup, key.keyHash)).toBeNull();
      expect((await ctx.store.findApiKeyByCredential(key.keyLookup, sha256('new')))?.id).toBe(key.id);
      await ctx.store.revokeApiKey(key.tenantId, key.id, new Date());
      const afterRevoke = await ctx.store.rotateApiKey(key.tenantId, key.id, sha256('new'), sha256('newer'));
      expect(afterRevoke.outcome).toBe('stale');
    });

    it('revokes once: a second revoke keeps the first revokedAt', async () => {
      const key = keyRecord();
      await ctx.store.insertApiKey(key);
      const firstAt = new Date('2026-03-01T00:00:00.001Z');
      const revoked = await ctx.store.revokeApiKey(key.tenantId, key.id, firstAt);
      expect(revoked).toEqual({ ...key, status: 'revoked', revokedAt: firstAt });
      const again = await ctx.store.revokeApiKey(key.tenantId, key.id, new Date('2026-04-01T00:00:00Z'));
      expect(again?.revokedAt).toEqual(firstAt);
      expect(
        await ctx.store.revokeApiKey(key.tenantId, 'key_00000000000000000000000000', firstAt),
      ).toBeNull();
    });

    it('writes lastUsedAt at most once per interval', async () => {
      const key = keyRecord();
      await ctx.store.insertApiKey(key);
      const t0 = new Date('2026-05-01T00:00:00.000Z');
      expect(await ctx.store.touchApiKey(key.id, t0, 60_000)).toBe(true);
      expect(await ctx.store.touchApiKey(key.id, new Date(t0.getTime() + 59_999), 60_000)).toBe(false);
      expect((await ctx.store.getApiKey(key.tenantId, key.id))?.lastUsedAt).toEqual(t0);
      const t1 = new Date(t0.getTime() + 60_000);
      expect(await ctx.store.touchApiKey(key.id, t1, 60_000)).toBe(true);
      expect((await ctx.store.getApiKey(key.tenantId, key.id))?.lastUsedAt).toEqual(t1);
      expect(await ctx.store.touchApiKey('key_00000000000000000000000000', t1, 60_000)).toBe(false);
    });
  });

  describe('API keys under concurrency', () => {
    it('two rotations at once from the same hash: exactly one wins, the other sees the new state', async () => {
      const peer = await ctx.peer();
      for (let round = 0; round < 10; round++) {
        const key = keyRecord();
        await ctx.store.insertApiKey(key);
        const [a, b] = await Promise.all([
          ctx.store.rotateApiKey(key.tenantId, key.id, key.keyHash, sha256(`a${round}`)),
          peer.rotateApiKey(key.tenantId, key.id, key.keyHash, sha256(`b${round}`)),
        ]);
        const outcomes = [a.outcome, b.outcome].sort();
        expect(outcomes).toEqual(['rotated', 'stale']);
        const winner = a.outcome === 'rotated' ? a : b;
        const loser = a.outcome === 'rotated' ? b : a;
        if (winner.outcome !== 'rotated' || loser.outcome !== 'stale') throw new Error('unreachable');
        expect(loser.key.keyHash).toBe(winner.key.keyHash);
        expect((await peer.getApiKey(key.tenantId, key.id))?.keyHash).toBe(winner.key.keyHash);
      }
    });

    it('a revoke is seen by every connection as soon as it returns, also while verifications race it', async () => {
      const peer = await ctx.peer();
      const keysHere = keysOn(ctx.store);
      // The store's own visibility, so no cache: core's cache has its own bound (change-version.ts).
      const keysThere = keysOn(peer, { cacheEntries: 0 });
      const { key, secret } = await keysHere.create('tenant_a', { name: 'raced', scopes: ['items:read'] });
      let revokeReturned = false;
      const outcomes: { afterRevoke: boolean; code: string }[] = [];
      const verifier = (async () => {
        let afterCount = 0;
        for (let i = 0; i < 10_000 && afterCount < 20; i++) {
          const startedAfterRevoke = revokeReturned;
          if (startedAfterRevoke) afterCount++;
          await new Promise((resolve) => setImmediate(resolve));
          const code = await keysThere.verify(secret).then(
            () => 'ok',
            (error: unknown) => (isKeyhookError(error) ? error.code : 'thrown'),
          );
          outcomes.push({ afterRevoke: startedAfterRevoke, code });
        }
      })();
      // The race starts from a key that verifies: a verification has answered ok before the revoke.
      await waitUntil(() => outcomes.some((outcome) => outcome.code === 'ok'));
      await keysHere.revoke('tenant_a', key.id);
      revokeReturned = true;
      await verifier;
      for (const outcome of outcomes) {
        expect(['ok', 'key_revoked']).toContain(outcome.code);
        if (outcome.afterRevoke) expect(outcome.code).toBe('key_revoked');
      }
      expect(outcomes.some((o) => o.afterRevoke)).toBe(true);
      await expect(keysThere.verify(secret)).rejects.toMatchObject({ code: 'key_revoked' });
    });

    it('a revoke racing a rotation always ends revoked, and a rotation that lost says so', async () => {
      const peer = await ctx.peer();
      for (let round = 0; round < 10; round++) {
        const key = keyRecord();
        await ctx.store.insertApiKey(key);
        const [rotated, revoked] = await Promise.all([
          peer.rotateApiKey(key.tenantId, key.id, key.keyHash, sha256(`r${round}`)),
          ctx.store.revokeApiKey(key.tenantId, key.id, new Date()),
        ]);
        expect(revoked?.status).toBe('revoked');
        const final = await peer.getApiKey(key.tenantId, key.id);
        expect(final?.status).toBe('revoked');
        if (rotated.outcome === 'stale') expect(rotated.key.status).toBe('revoked');
        else expect(rotated.outcome).toBe('rotated');
      }
    });

    it('concurrent revokes from two connections each return the key revoked, with the first revokedAt', async () => {
      const peer = await ctx.peer();
      for (let round = 0; round < 20; round++) {
        const key = keyRecord();
        await ctx.store.insertApiKey(key);
        const results = await Promise.all(
          [0, 1, 2, 3].map((i) =>
            (i % 2 ? peer : ctx.store).revokeApiKey(
              key.tenantId,
              key.id,
              new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
            ),
          ),
        );
        for (const result of results) expect(result?.status).toBe('revoked');
        const stamps = new Set(results.map((r) => r?.revokedAt?.getTime()));
        expect(stamps.size).toBe(1);
        expect((await peer.getApiKey(key.tenantId, key.id))?.revokedAt?.getTime()).toBe([...stamps][0]);
      }
    });

    it('concurrent lastUsedAt writes for one key: exactly one writes', async () => {
      const peer = await ctx.peer();
      const key = keyRecord();
      await ctx.store.insertApiKey(key);
      const at = new Date('2026-06-01T00:00:00.000Z');
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 ? peer : ctx.store).touchApiKey(key.id, at, 60_000)),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
    });

    it('concurrent inserts of one lookup id: exactly one is stored', async () => {
      const peer = await ctx.peer();
      const lookup = keyRecord().keyLookup;
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          (i % 2 ? peer : ctx.store).insertApiKey(keyRecord({ keyLookup: lookup })),
        ),
      );
      expect(results.filter((r) => r === 'inserted')).toHaveLength(1);
      expect(results.filter((r) => r === 'duplicate_lookup')).toHaveLength(9);
    });
  });
}

export function isUnavailable(error: unknown): boolean {
  return error instanceof KeyhookError || isKeyhookError(error)
    ? (error as KeyhookError).code === 'unavailable'
    : false;
}
