import { randomBytes } from 'node:crypto';
import { MemoryStore } from '@keyhook/core';
import type { Store } from '@keyhook/core/store';
import { FakeClock, TEST_SCOPES } from '@keyhook/testing/support';
import { beforeEach, describe, expect, it } from 'vitest';
import { ScopeCatalog } from '../src/catalog/scopes.js';
import { ApiKeyService } from '../src/keys/key-service.js';
import { toApiKeyView } from '../src/keys/key-view.js';
import type { ApiKeyRecord } from '../src/store/types.js';

const random = (n: number) => randomBytes(n);

describe('ApiKeys (docs/http-api.md §3 key states, docs/decisions.md §3)', () => {
  let clock: FakeClock;
  let store: MemoryStore;
  let keys: ApiKeyService;

  beforeEach(() => {
    clock = new FakeClock('2026-01-01T00:00:00.000Z');
    store = new MemoryStore();
    keys = new ApiKeyService({ scopes: new ScopeCatalog(TEST_SCOPES), store, clock, randomBytes: random });
  });

  describe('create', () => {
    it('creates an active key and returns the secret once', async () => {
      const { key, secret } = await keys.create('t1', { name: ' Worker ', scopes: ['items:write'] });
      expect(key).toMatchObject({
        tenantId: 't1',
        name: 'Worker',
        status: 'active',
        scopes: ['items:write'],
      });
      expect(secret.startsWith(`${key.keyLookup}_`)).toBe(true);
      expect(JSON.stringify(await store.getApiKey('t1', key.id))).not.toContain(secret.slice(-48));
    });

    it.each([
      [{ name: '', scopes: ['items:read'] }, 'name'],
      [{ name: 'x'.repeat(201), scopes: ['items:read'] }, 'name'],
      [{ name: 'x', scopes: [] }, 'scopes'],
      [{ name: 'x', scopes: ['items:read', 'items:read'] }, 'scopes'],
      [{ name: 'x', scopes: ['admin'] }, 'scopes.0'],
      [{ name: 'x', scopes: ['items:read'], expiresAt: 'tomorrow' }, 'expiresAt'],
      [{ name: 'x', scopes: ['items:read'], expiresAt: '2025-12-31T23:59:59Z' }, 'expiresAt'],
      [{ name: 'x', scopes: ['items:read'], expiresAt: '2026-01-01T00:00:00.000Z' }, 'expiresAt'],
      [{ name: 'x', scopes: ['items:read'], extra: true }, 'extra'],
      [{ name: 'x', scopes: ['items:read'], first: 1, second: 2 }, 'second'],
    ])('refuses %j with validation_failed at %s', async (input, path) => {
      const error = await keys.create('t1', input as never).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'validation_failed', status: 400 });
      expect((error as { details: { path: string }[] }).details.map((d) => d.path)).toContain(path);
    });

    it('accepts an offset timestamp and stores it in UTC', async () => {
      const { key } = await keys.create('t1', {
        name: 'x',
        scopes: ['items:read'],
        expiresAt: '2026-06-01T12:00:00+02:00',
      });
      expect(key.expiresAt?.toISOString()).toBe('2026-06-01T10:00:00.000Z');
    });

    it('mints again when a lookup id is already taken', async () => {
      const taken = await keys.create('t1', { name: 'first', scopes: ['items:read'] });
      let calls = 0;
      // The first 8 random bytes become the key id: hand out the taken one once.
      const takenId = Buffer.from(taken.key.keyLookup.slice(8), 'hex');
      const clashing = new ApiKeyService({
        scopes: new ScopeCatalog(TEST_SCOPES),
        store,
        clock,
        randomBytes: (n) => (n === 8 && calls++ === 1 ? takenId : random(n)),
      });
      const { key } = await clashing.create('t1', { name: 'second', scopes: ['items:read'] });
      expect(key.keyLookup).not.toBe(taken.key.keyLookup);
      expect(calls).toBeGreaterThanOrEqual(2);
    });
  });

  describe('verify (docs/http-api.md §5.3)', () => {
    it('accepts the key and names its tenant', async () => {
      const { key, secret } = await keys.create('t1', { name: 'x', scopes: ['items:read'] });
      await expect(keys.verify(secret)).resolves.toMatchObject({ id: key.id, tenantId: 't1' });
    });

    it('answers invalid_api_key alike for malformed, unknown id and wrong secret', async () => {
      const { secret } = await keys.create('t1', { name: 'x', scopes: ['items:read'] });
      const wrongSecret = `${secret.slice(0, -1)}${secret.endsWith('0') ? '1' : '0'}`;
      const unknownId = `sk_live_${'0'.repeat(16)}${secret.slice(24)}`;
      const errors = await Promise.all(
        ['nope', `${secret}x`, unknownId, wrongSecret, 'x'.repeat(10_000)].map((k) =>
          keys.verify(k).catch((e: unknown) => e),
        ),
      );
      for (const error of errors) {
        expect(error).toMatchObject({ code: 'invalid_api_key', message: 'The API key is not valid.' });
      }
    });

    it('tells key_revoked and key_expired only to the holder of the right secret', async () => {
      const { key, secret } = await keys.create('t1', {
        name: 'x',
        scopes: ['items:read'],
        expiresAt: '2026-01-01T01:00:00Z',
      });
      clock.advance(60 * 60 * 1000 - 1);
      await expect(keys.verify(secret)).resolves.toBeTruthy();
      clock.advance(1);
      await expect(keys.verify(secret)).rejects.toMatchObject({ code: 'key_expired', status: 401 });
      expect(toApiKeyView(key, clock.now()).status).toBe('expired');
      await keys.revoke('t1', key.id);
      await expect(keys.verify(secret)).rejects.toMatchObject({ code: 'key_revoked', status: 401 });
      await expect(keys.verify(`${secret.slice(0, -1)}z`)).rejects.toMatchObject({ code: 'invalid_api_key' });
    });
  });

  describe('rotate and revoke', () => {
    it('rotation invalidates the old secret at once and keeps id and lookup', async () => {
      const first = await keys.create('t1', { name: 'x', scopes: ['items:read'] });
      const second = await keys.rotate('t1', first.key.id);
      expect(second.key.id).toBe(first.key.id);
      expect(second.key.keyLookup).toBe(first.key.keyLookup);
      await expect(keys.verify(first.secret)).rejects.toMatchObject({ code: 'invalid_api_key' });
      await expect(keys.verify(second.secret)).resolves.toMatchObject({ id: first.key.id });
    });

    it('refuses to rotate a revoked key (409 key_revoked) or an expired one (409 key_expired)', async () => {
      const revoked = await keys.create('t1', { name: 'x', scopes: ['items:read'] });
      await keys.revoke('t1', revoked.key.id);
      await expect(keys.rotate('t1', revoked.key.id)).rejects.toMatchObject({
        code: 'key_revoked',
        status: 409,
      });
      const expiring = await keys.create('t1', {
        name: 'x',
        scopes: ['items:read'],
        expiresAt: '2026-01-02T00:00:00Z',
      });
      clock.advance(24 * 60 * 60 * 1000);
      await expect(keys.rotate('t1', expiring.key.id)).rejects.toMatchObject({
        code: 'key_expired',
        status: 409,
      });
    });

    it('gives the loser of two concurrent rotations 409 rotation_conflict, and its secret never works', async () => {
      // A store that lets both rotations read the same hash before either writes.
      const gate: Store = Object.create(store);
      let arrived = 0;
      let release!: () => void;
      const bothRead = new Promise<void>((resolve) => (release = resolve));
      gate.getApiKey = async (tenantId: string, id: string): Promise<ApiKeyRecord | null> => {
        const key = await store.getApiKey(tenantId, id);
        if (++arrived === 2) release();
        await bothRead;
        return key;
      };
      const gated = new ApiKeyService({
        scopes: new ScopeCatalog(TEST_SCOPES),
        store: gate,
        clock,
        randomBytes: random,
      });
      const { key } = await gated.create('t1', { name: 'x', scopes: ['items:read'] });
      const results = await Promise.allSettled([gated.rotate('t1', key.id), gated.rotate('t1', key.id)]);
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.filter((r) => r.status === 'rejected');
      expect(won).toHaveLength(1);
      expect(lost).toHaveLength(1);
      expect((lost[0] as PromiseRejectedResult).reason).toMatchObject({
        code: 'rotation_conflict',
        status: 409,
      });
      const winner = (won[0] as PromiseFulfilledResult<{ secret: string }>).value;
      await expect(gated.verify(winner.secret)).resolves.toBeTruthy();
    });

    it('revoking twice is harmless and keeps the first revokedAt', async () => {
      const { key } = await keys.create('t1', { name: 'x', scopes: ['items:read'] });
      const first = await keys.revoke('t1', key.id);
      clock.advance(5000);
      const second = await keys.revoke('t1', key.id);
      expect(second.revokedAt).toEqual(first.revokedAt);
    });

    it('answers not_found for another tenant’s key and for ids that cannot exist', async () => {
      const { key } = await keys.create('t1', { name: 'x', scopes: ['items:read'] });
      for (const id of [key.id, 'key_nope', '../etc/passwd', '']) {
        await expect(keys.get('t2', id)).rejects.toMatchObject({ code: 'not_found' });
        await expect(keys.rotate('t2', id)).rejects.toMatchObject({ code: 'not_found' });
        await expect(keys.revoke('t2', id)).rejects.toMatchObject({ code: 'not_found' });
      }
      expect((await keys.get('t1', key.id)).status).toBe('active');
    });
  });
});
