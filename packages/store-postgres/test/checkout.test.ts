import { FaultProxy } from '@keyhook/testing/fault-proxy';
import { takeUnguardedCheckouts } from '@keyhook/testing/pg-checkouts';
import { POSTGRES_TEST_URL, postgresAvailable } from '@keyhook/testing/postgres';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { checkOut, guardPool, withTransaction } from '../src/checkout.js';

const available = await postgresAvailable();

describe.runIf(available)('a checked-out client whose connection fails', () => {
  let proxy: FaultProxy;
  let pool: pg.Pool;
  const escaped: Error[] = [];
  const onEscaped = (error: Error) => escaped.push(error);

  beforeAll(async () => {
    proxy = await FaultProxy.start();
    // An 'error' nobody hears is an uncaught exception: in a real process, the crash.
    process.on('uncaughtException', onEscaped);
  });
  afterEach(async () => {
    await pool?.end().catch(() => {});
    expect(escaped.splice(0)).toEqual([]);
  });
  afterAll(async () => {
    process.off('uncaughtException', onEscaped);
    await proxy.close();
  });

  it('checkOut: a reset while the client is out fails its query, not the process, and the client is destroyed', async () => {
    pool = new pg.Pool({ connectionString: proxy.url(), max: 1 });
    pool.on('error', () => {});
    const client = await checkOut(pool);
    await client.query('SELECT 1');
    const stuck = client.query('SELECT pg_sleep(30)');
    await expect.poll(() => proxy.open).toBe(1);
    proxy.reset();
    await expect(stuck).rejects.toThrow();
    client.release();
    // Destroyed, not pooled: the next checkout is a new connection that works.
    expect(pool.totalCount).toBe(0);
    expect((await pool.query('SELECT 2 AS n')).rows[0].n).toBe(2);
  });

  it('checkOut: a reset while the client sits idle out of the pool does not crash the process', async () => {
    pool = new pg.Pool({ connectionString: proxy.url(), max: 1 });
    pool.on('error', () => {});
    let heard: Error | undefined;
    const client = await checkOut(pool, (error) => {
      heard = error;
    });
    await client.query('SELECT 1');
    proxy.reset();
    await expect.poll(() => heard).toBeDefined();
    client.release();
    expect(pool.totalCount).toBe(0);
  });

  it('guardPool: a reset while a data layer holds a client it checked out bare fails that client, not the process', async () => {
    pool = new pg.Pool({ connectionString: proxy.url(), max: 1 });
    const heard: Error[] = [];
    guardPool(pool, (error) => heard.push(error));
    // What Drizzle's and Kysely's transactions do: pool.connect(), no listener of their own.
    const client = await pool.connect();
    await client.query('BEGIN');
    proxy.reset();
    await expect.poll(() => heard.length).toBeGreaterThan(0);
    await expect(client.query('SELECT 1')).rejects.toThrow();
    client.release();
    // Released, the failed client is dropped; the pool still serves, and the guard is on the new one.
    expect((await pool.query('SELECT 2 AS n')).rows[0].n).toBe(2);
    proxy.reset();
    await expect.poll(() => heard.length).toBeGreaterThan(1);
  });

  it('withTransaction: a reset mid-transaction rejects with the connection error and writes nothing', async () => {
    pool = new pg.Pool({ connectionString: proxy.url(), max: 1 });
    pool.on('error', () => {});
    const table = `checkout_${process.pid}_${Date.now()}`;
    const direct = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 1 });
    try {
      await direct.query(`CREATE TABLE "${table}" (n int)`);
      const run = withTransaction(pool, async (client) => {
        await client.query(`INSERT INTO "${table}" VALUES (1)`);
        proxy.reset();
        await client.query(`INSERT INTO "${table}" VALUES (2)`);
      });
      await expect(run).rejects.toThrow();
      expect(pool.totalCount).toBe(0);
      expect((await direct.query(`SELECT count(*)::int AS n FROM "${table}"`)).rows[0].n).toBe(0);
    } finally {
      await direct.query(`DROP TABLE IF EXISTS "${table}"`);
      await direct.end();
    }
  });

  it('a bare pool.connect() is caught by the suites’ watch, which fails the test it happens in', async () => {
    pool = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 1 });
    const bare = await pool.connect();
    try {
      await bare.query('SELECT 1');
      await new Promise((resolve) => setImmediate(resolve));
      const caught = takeUnguardedCheckouts();
      expect(caught).toHaveLength(1);
      expect(caught[0]!.stack).toContain('checkout.test.ts');
    } finally {
      bare.release();
    }
    // The guarded forms are not reported.
    const guarded = await checkOut(pool);
    await guarded.query('SELECT 1');
    await new Promise((resolve) => setImmediate(resolve));
    guarded.release();
    await withTransaction(pool, (client) => client.query('SELECT 1'));
    await pool.query('SELECT 1');
    expect(takeUnguardedCheckouts()).toEqual([]);
  });
});
