import { createKeyhook, type Keyhook, silentLogger } from '@keyhook/core';
import { POSTGRES_TEST_URL, postgresAvailable, uniqueSchemaName } from '@keyhook/testing/postgres';
import { FakeClock, TEST_ADMIN_SECRET, TEST_CATALOG, TEST_ENCRYPTION_KEY } from '@keyhook/testing/support';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresStore, type PostgresStore } from '../src/index.js';

const available = await postgresAvailable();

/**
 * Two app instances on one schema, each caching verified keys (`verifiedKeyCache`): rate limits
 * are counted per instance, and a changed limit reaches the other instance's cached key through
 * the key-change feed.
 */
describe.skipIf(!available)('rate limits on two instances sharing one Postgres, keys cached', () => {
  const schema = uniqueSchemaName('ratelimit');
  const clock = new FakeClock('2026-01-01T00:00:00.000Z');
  const stores: PostgresStore[] = [];
  let a: Keyhook;
  let b: Keyhook;

  beforeAll(async () => {
    const instance = async () => {
      const store = await createPostgresStore({
        connectionString: POSTGRES_TEST_URL,
        schema,
        poolSize: 2,
        verifiedKeyCache: true,
      });
      stores.push(store);
      return createKeyhook({
        ...TEST_CATALOG,
        store,
        adminSession: { secret: TEST_ADMIN_SECRET },
        clock,
        logger: silentLogger,
        encryptionKey: TEST_ENCRYPTION_KEY,
      });
    };
    // One after the other: the first migrates the schema, the second finds it migrated.
    a = await instance();
    b = await instance();
  });

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await Promise.all(stores.map((store) => store.close()));
    const admin = new pg.Client({ connectionString: POSTGRES_TEST_URL });
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  });

  const admitted = async (keyhook: Keyhook, secret: string, count: number) => {
    let ok = 0;
    for (let i = 0; i < count; i++)
      if ((await keyhook.guard('items:read')({ authorization: `Bearer ${secret}` })).ok) ok++;
    return ok;
  };

  it('each instance admits exactly the limit, so two admit at most 2 × the limit in a window', async () => {
    const { secret } = await a.keys.create('acme', {
      name: 'limited',
      scopes: ['items:read'],
      rateLimit: { limit: 5, window: 60 },
    });
    expect(await admitted(a, secret, 8)).toBe(5);
    expect(await admitted(b, secret, 8)).toBe(5);
    clock.advance(60_000);
    expect(await admitted(b, secret, 8)).toBe(5);
  });

  it("a limit changed on one instance reaches the other's cached key", async () => {
    clock.advance(60_000);
    const { key, secret } = await a.keys.create('acme', {
      name: 'cached',
      scopes: ['items:read'],
      rateLimit: { limit: 5, window: 60 },
    });
    expect(await admitted(b, secret, 1)).toBe(1); // B has the key cached now, with limit 5
    const before = stores[1]!.keyChangeVersion();
    await a.keys.update('acme', key.id, { rateLimit: { limit: 2, window: 60 } });
    // B hears of it through the change feed, within the store's bound.
    await expect.poll(() => stores[1]!.keyChangeVersion(), { timeout: 2000, interval: 2 }).not.toBe(before);
    // One request made in this window; the new limit leaves one more.
    expect(await admitted(b, secret, 5)).toBe(1);
  });
});
