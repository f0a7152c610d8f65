import { silentLogger } from '@keyhook/core';
import { keyRecord, webhookRecord } from '@keyhook/store-conformance';
import { FaultProxy } from '@keyhook/testing/fault-proxy';
import { POSTGRES_TEST_URL, postgresAvailable, uniqueSchemaName } from '@keyhook/testing/postgres';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { checkOut, isReadTimeout, withTransaction } from '../src/checkout.js';
import { openPool } from '../src/connection.js';
import { createPostgresStore } from '../src/index.js';
import { lockKeyRow, outcome } from './support.js';

const available = await postgresAvailable();

const admin = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 2 });
const schemas: string[] = [];
const freshSchema = (label: string) => {
  const schema = uniqueSchemaName(label);
  schemas.push(schema);
  return schema;
};
/** A statement bound short enough for a test; the bulk bound is 12 times as long. */
const BOUND_MS = 300;
/** What a loaded machine may add to a bound before the answer comes; an unbounded wait hits the test's timeout. */
const SLACK_MS = 5000;

/** Statements on the schema waiting for a lock, for at least `forMs`. */
async function lockWaiters(schema: string, forMs = 0): Promise<number> {
  const { rows } = await admin.query(
    `SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE wait_event_type = 'Lock' AND query LIKE $1 AND now() - query_start >= $2 * interval '1 millisecond'`,
    [`%"${schema}".%`, forMs],
  );
  return rows[0].n;
}

(available ? describe : describe.skip)('statement and transaction bounds (docs/decisions.md §20.2)', () => {
  afterAll(async () => {
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  });

  it('a statement sent into a network that stopped answering ends `unavailable` at the client’s bound', async () => {
    const proxy = await FaultProxy.start();
    const store = await createPostgresStore({
      connectionString: proxy.url(),
      schema: freshSchema('bh'),
      statementTimeoutMs: BOUND_MS,
      connectionTimeoutMillis: BOUND_MS,
      poolSize: 2,
      logger: silentLogger,
    });
    try {
      const key = keyRecord();
      await store.insertApiKey(key);
      proxy.blackhole();
      for (const attempt of [
        () => store.getApiKey(key.tenantId, key.id),
        () => store.insertApiKey(keyRecord()),
      ]) {
        const result = await outcome(attempt());
        expect(result.unavailable, String(result.error)).toBe(true);
        // The server never saw it: the client's bound (BOUND_MS + 1 s) ended it, or the pool's wait for a new connection.
        expect(result.ms).toBeGreaterThanOrEqual(BOUND_MS);
        expect(result.ms).toBeLessThan(BOUND_MS + 1000 + SLACK_MS);
      }
      // Healed, the store answers again on new connections.
      await proxy.pass();
      await expect
        .poll(() => store.getApiKey(key.tenantId, key.id).catch(() => null), { timeout: 10_000 })
        .not.toBeNull();
    } finally {
      await store.close();
      await proxy.close();
    }
  });

  it('a COMMIT sent into a network that stopped answering ends at the client’s bound too, and its client is not pooled again', async () => {
    const proxy = await FaultProxy.start();
    const pool = new pg.Pool({ connectionString: proxy.url(), max: 1 });
    try {
      const committing = withTransaction(
        pool,
        async (client) => {
          await client.query('SELECT 1');
          proxy.blackhole();
        },
        { readTimeout: BOUND_MS },
      );
      const result = await outcome(committing);
      expect(isReadTimeout(result.error), String(result.error)).toBe(true);
      expect(result.ms).toBeGreaterThanOrEqual(BOUND_MS);
      expect(result.ms).toBeLessThan(BOUND_MS + SLACK_MS);
      // The client that timed out was destroyed: healed, the pool opens a new one that answers.
      await proxy.pass();
      expect(pool.totalCount).toBe(0);
      expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await pool.end();
      await proxy.close();
    }
  });

  it('a statement the server holds too long (a lock wait) is cancelled by the server: `unavailable`, the connection kept', async () => {
    const schema = freshSchema('lockwait');
    const store = await createPostgresStore({
      connectionString: POSTGRES_TEST_URL,
      schema,
      statementTimeoutMs: BOUND_MS,
      poolSize: 1,
      logger: silentLogger,
    });
    const key = keyRecord();
    await store.insertApiKey(key);
    const lock = await lockKeyRow(admin, schema, key.id);
    try {
      const result = await outcome(store.revokeApiKey(key.tenantId, key.id, new Date()));
      expect(result.unavailable, String(result.error)).toBe(true);
      expect((result.error as Error).cause).toMatchObject({ code: '57014' });
      expect(result.ms).toBeLessThan(BOUND_MS + 1000 + SLACK_MS);
      await lock.release();
      // Nothing was written, and the one pooled connection still works.
      expect((await store.getApiKey(key.tenantId, key.id))?.status).toBe('active');
    } finally {
      await lock.release();
      await store.close();
    }
  });

  it('a disable, whose work grows with the endpoint’s queue, may take the bulk bound: a wait longer than one statement’s passes', async () => {
    const schema = freshSchema('bulk');
    const store = await createPostgresStore({
      connectionString: POSTGRES_TEST_URL,
      schema,
      statementTimeoutMs: BOUND_MS,
      poolSize: 2,
      logger: silentLogger,
    });
    const locker = await checkOut(admin);
    try {
      const webhook = webhookRecord({ events: ['run.completed'] });
      await store.insertWebhook(webhook);
      await store.publishEvent(
        {
          tenantId: webhook.tenantId,
          id: 'evt_bulk',
          type: 'run.completed',
          payload: '{}',
          createdAt: new Date(),
          traceContext: null,
        },
        () => 'dlv_bulk',
      );
      // The queued delivery is locked, so the disable's hold waits for it beyond one statement's bound.
      await locker.query('BEGIN');
      await locker.query(`SELECT 1 FROM "${schema}".keyhook_deliveries WHERE id = 'dlv_bulk' FOR UPDATE`);
      const disable = outcome(
        store.setWebhookStatus(webhook.tenantId, webhook.id, 'disabled', 'manual', new Date()),
      );
      // Until the hold has waited past one statement's server and client bounds.
      await expect
        .poll(() => lockWaiters(schema, BOUND_MS + 1000 + 200), { timeout: BOUND_MS + 1000 + SLACK_MS })
        .toBe(1);
      await locker.query('COMMIT');
      const result = await disable;
      expect(result.error).toBeNull();
      const { rows } = await admin.query(
        `SELECT status FROM "${schema}".keyhook_deliveries WHERE id = 'dlv_bulk'`,
      );
      expect(rows[0].status).toBe('held');
    } finally {
      locker.release();
      await store.close();
    }
  });

  it('a transaction of the store’s pool left idle is ended by the server, which frees its locks; the process hears it', async () => {
    const schema = freshSchema('idle');
    const store = await createPostgresStore({
      connectionString: POSTGRES_TEST_URL,
      schema,
      logger: silentLogger,
    });
    await store.close();
    const pool = openPool(
      { connectionString: POSTGRES_TEST_URL, idleInTransactionTimeoutMs: BOUND_MS },
      silentLogger,
    );
    try {
      // The first error heard: the server's FATAL 25P03; pg may report the closed socket after it.
      let heard: Error | undefined;
      const client = await checkOut(pool, (error) => {
        heard ??= error;
      });
      try {
        // One round trip, so a busy machine cannot leave the session idle before it holds the lock.
        await client.query(`BEGIN; LOCK TABLE "${schema}".api_keys IN ACCESS EXCLUSIVE MODE`);
        // The server ends the session: the client hears it, and the lock is free for others.
        await expect.poll(() => heard, { timeout: BOUND_MS + SLACK_MS }).toBeDefined();
        expect(heard).toMatchObject({ code: '25P03' });
      } finally {
        client.release();
      }
      await admin.query(`SELECT count(*) FROM "${schema}".api_keys`);
    } finally {
      await pool.end();
    }
  });

  it('refuses a negative bound, and an idle-in-transaction bound beside a pool of the host’s', async () => {
    await expect(
      createPostgresStore({ connectionString: POSTGRES_TEST_URL, statementTimeoutMs: -1 }),
    ).rejects.toThrow(TypeError);
    const pool = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 1 });
    try {
      await expect(createPostgresStore({ pool, idleInTransactionTimeoutMs: 1000 })).rejects.toThrow(
        TypeError,
      );
    } finally {
      await pool.end();
    }
  });
});
