import { isKeyhookError, silentLogger } from '@keyhook/core';
import { idempotencyRecord, keyRecord, T0, webhookRecord } from '@keyhook/store-conformance';
import { FaultProxy } from '@keyhook/testing/fault-proxy';
import { POSTGRES_TEST_URL, postgresAvailable, uniqueSchemaName } from '@keyhook/testing/postgres';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { KeyChangeFeed, poolNotifications } from '../src/change-feed.js';
import { checkOut } from '../src/checkout.js';
import { createPostgresStore, PostgresStore } from '../src/index.js';
import { loadMigrations } from '../src/migration-driver.js';
import { statements as claimStatements, toClaimParams } from '../src/operations/claim-idempotency-key.js';
import { statements as insertWebhookStatements } from '../src/operations/insert-webhook.js';
import { statementsIn } from '../src/statements.js';
import { toWebhookParams } from '../src/webhook-row.js';
import { lockKeyRow, outcome } from './support.js';

const available = await postgresAvailable();

const CLOSED_PORT_URL = 'postgres://postgres@127.0.0.1:1/test';

const schemas: string[] = [];
const admin = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 2 });
const freshSchema = (label: string) => {
  const schema = uniqueSchemaName(label);
  schemas.push(schema);
  return schema;
};

/** How many statements on the schema's webhook or idempotency tables wait for a row or index lock. */
async function lockWaiters(schema: string): Promise<number> {
  const { rows } = await admin.query(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
    [`%"${schema}".keyhook_%`],
  );
  return rows[0].n;
}

async function webhookCount(schema: string): Promise<number> {
  const { rows } = await admin.query(`SELECT count(*)::int AS n FROM "${schema}".keyhook_webhooks`);
  return rows[0].n;
}

async function waitingOnLock(schema: string): Promise<boolean> {
  const { rows } = await admin.query(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
    [`%"${schema}".api_keys%`],
  );
  return rows[0].n > 0;
}

(available ? describe : describe.skip)('PostgresStore specifics', () => {
  afterAll(async () => {
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  });

  describe('migrations', () => {
    it('five instances starting at once on one fresh schema all succeed, and each migration is recorded once', async () => {
      const schema = freshSchema('mig');
      const stores = await Promise.all(
        Array.from({ length: 5 }, () =>
          createPostgresStore({ connectionString: POSTGRES_TEST_URL, schema, poolSize: 2 }),
        ),
      );
      try {
        // The table records the name after the number, as it always has.
        const expected = (await loadMigrations()).map((m) => ({ version: m.version, name: m.name.slice(5) }));
        expect(expected.length).toBeGreaterThan(0);
        const { rows } = await admin.query(
          `SELECT version, name, count(*)::int AS times FROM "${schema}".keyhook_migrations
           GROUP BY version, name ORDER BY version`,
        );
        expect(rows).toEqual(expected.map((m) => ({ ...m, times: 1 })));
        for (const store of stores) await expect(store.ping()).resolves.toBeUndefined();
        // Every instance writes to the one table the migrations made.
        await Promise.all(stores.map((store) => store.insertApiKey(keyRecord())));
        const count = await admin.query(`SELECT count(*)::int AS n FROM "${schema}".api_keys`);
        expect(count.rows[0].n).toBe(5);
      } finally {
        await Promise.all(stores.map((store) => store.close()));
      }
    });

    it('a restart on a migrated schema applies nothing again', async () => {
      const schema = freshSchema('restart');
      const first = await createPostgresStore({ connectionString: POSTGRES_TEST_URL, schema, poolSize: 1 });
      const before = await admin.query(`SELECT version, applied_at FROM "${schema}".keyhook_migrations`);
      await first.close();
      const second = await createPostgresStore({ connectionString: POSTGRES_TEST_URL, schema, poolSize: 1 });
      const after = await admin.query(`SELECT version, applied_at FROM "${schema}".keyhook_migrations`);
      await second.close();
      expect(after.rows).toEqual(before.rows);
    });
  });

  describe('an unreachable database fails fast with `unavailable`', () => {
    it('refuses to open on a closed port', async () => {
      const result = await outcome(
        createPostgresStore({ connectionString: CLOSED_PORT_URL, schema: 'keyhook' }),
      );
      expect(result.unavailable, String(result.error)).toBe(true);
      expect(result.ms).toBeLessThan(3000);
    });

    it('a store on a closed port rejects ping and reads', async () => {
      const pool = new pg.Pool({ connectionString: CLOSED_PORT_URL, connectionTimeoutMillis: 5000 });
      // A feed that never connected: the store verifies without caching, and still fails fast.
      const feed = new KeyChangeFeed(poolNotifications(pool), 'keyhook', silentLogger);
      const store = new PostgresStore({ pool, schema: 'keyhook', ownsPool: true, feed });
      expect(store.keyChangeVersion()).toBeNull();
      try {
        for (const attempt of [
          () => store.ping(),
          () => store.findApiKeyByCredential('sk_live_0000000000000000', '00'),
        ]) {
          const result = await outcome(attempt());
          expect(result.unavailable, String(result.error)).toBe(true);
          expect(result.ms).toBeLessThan(3000);
        }
      } finally {
        await store.close();
      }
    });

    it('a store whose database goes away mid-life answers `unavailable` for reads and writes', async () => {
      const proxy = await FaultProxy.start();
      const store = await createPostgresStore({
        connectionString: proxy.url(),
        schema: freshSchema('cut'),
        poolSize: 2,
        logger: silentLogger,
      });
      try {
        await store.ping();
        await proxy.cut();
        const attempts = [
          () => store.ping(),
          () => store.getApiKey('tenant_a', 'key_x'),
          () => store.insertApiKey(keyRecord()),
        ];
        for (const attempt of attempts) {
          const result = await outcome(attempt());
          expect(result.unavailable, String(result.error)).toBe(true);
          expect(result.ms).toBeLessThan(3000);
        }
      } finally {
        await store.close();
      }
    });

    it('caches nothing by default: no listener, version null, every verification reads the row', async () => {
      const store = await createPostgresStore({
        connectionString: POSTGRES_TEST_URL,
        schema: freshSchema('nocache'),
      });
      try {
        expect(store.keyChangeVersion()).toBeNull();
        const key = keyRecord();
        await store.insertApiKey(key);
        await store.revokeApiKey(key.tenantId, key.id, new Date());
        expect(store.keyChangeVersion()).toBeNull();
      } finally {
        await store.close();
      }
    });

    it('while the key-change listener is down nothing is cached, and it comes back as a new generation', async () => {
      const proxy = await FaultProxy.start();
      const store = await createPostgresStore({
        connectionString: proxy.url(),
        schema: freshSchema('listen'),
        verifiedKeyCache: true,
        poolSize: 2,
        logger: silentLogger,
      });
      try {
        const before = store.keyChangeVersion();
        expect(before).not.toBeNull();
        proxy.reset();
        await expect.poll(() => store.keyChangeVersion(), { timeout: 5000, interval: 5 }).toBeNull();
        await expect.poll(() => store.keyChangeVersion(), { timeout: 10_000, interval: 20 }).not.toBeNull();
        expect(store.keyChangeVersion()).not.toBe(before);
        // Listening again: another connection's change moves the version.
        const key = keyRecord();
        await store.insertApiKey(key);
        const settled = store.keyChangeVersion();
        await admin.query(
          `UPDATE "${store.schema}".api_keys SET status = 'revoked', revoked_at = now() WHERE id = $1`,
          [key.id],
        );
        await expect.poll(() => store.keyChangeVersion(), { timeout: 2000, interval: 2 }).not.toBe(settled);
      } finally {
        await store.close();
      }
    });

    it('a write cut off mid-flight answers `unavailable`', async () => {
      const proxy = await FaultProxy.start();
      const schema = freshSchema('inflight');
      const store = await createPostgresStore({
        connectionString: proxy.url(),
        schema,
        poolSize: 2,
        logger: silentLogger,
      });
      const key = keyRecord();
      await store.insertApiKey(key);
      // Hold the row lock so the revoke is certainly in flight when the connection dies.
      const lock = await lockKeyRow(admin, schema, key.id);
      try {
        const revoke = outcome(store.revokeApiKey(key.tenantId, key.id, new Date()));
        await expect.poll(() => waitingOnLock(schema), { timeout: 5000 }).toBe(true);
        await proxy.cut();
        const result = await revoke;
        expect(result.unavailable, String(result.error)).toBe(true);
      } finally {
        await lock.release();
        await store.close();
      }
    });

    it('a server that accepts but never answers times out instead of hanging', async () => {
      const blackhole = await FaultProxy.start();
      blackhole.blackhole();
      try {
        const result = await outcome(
          createPostgresStore({
            connectionString: blackhole.url(),
            connectionTimeoutMillis: 300,
          }),
        );
        expect(result.unavailable, String(result.error)).toBe(true);
        expect(result.ms).toBeLessThan(3000);
      } finally {
        await blackhole.close();
      }
    });
  });

  describe('options', () => {
    it.each(['bad;name', 'Keyhook', '1schema', 'has space', 'a"b', '', 'pg_keyhook', 'x'.repeat(64)])(
      'refuses the schema name %j before connecting',
      async (schema) => {
        // The closed port proves validation comes first: a connection attempt would say `unavailable`.
        await expect(createPostgresStore({ connectionString: CLOSED_PORT_URL, schema })).rejects.toThrow(
          TypeError,
        );
      },
    );

    it('refuses pool settings next to an external pool', async () => {
      const pool = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 1 });
      try {
        await expect(createPostgresStore({ pool, poolSize: 3 })).rejects.toThrow(TypeError);
        await expect(createPostgresStore({ pool, connectionString: POSTGRES_TEST_URL })).rejects.toThrow(
          TypeError,
        );
      } finally {
        await pool.end();
      }
    });

    it('refuses a pool of yours too small to hold its listening connection and run statements', async () => {
      const pool = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 1 });
      try {
        await expect(createPostgresStore({ pool, schema: freshSchema('one') })).rejects.toThrow(
          /at least 2 connections \(this one has max 1\)/,
        );
        // Nothing opened on it: no migration ran, no connection was taken.
        expect(pool.totalCount).toBe(0);
      } finally {
        await pool.end();
      }
    });

    it('leaves an external pool open on close, and is itself unusable afterwards', async () => {
      const pool = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 2 });
      try {
        const store = await createPostgresStore({ pool, schema: freshSchema('ext') });
        await store.ping();
        await store.close();
        expect(pool.ended).toBe(false);
        await expect(pool.query('SELECT 1 AS one')).resolves.toMatchObject({ rows: [{ one: 1 }] });
        expect((await outcome(store.ping())).unavailable).toBe(true);
      } finally {
        await pool.end();
      }
    });

    it('ends the pool it created on close', async () => {
      const store = await createPostgresStore({
        connectionString: POSTGRES_TEST_URL,
        schema: freshSchema('own'),
        poolSize: 1,
      });
      const pool = (store as unknown as { pool: pg.Pool }).pool;
      await store.close();
      expect(pool.ended).toBe(true);
    });
  });

  describe('webhooks and idempotency keys', () => {
    it('a statement that times out waiting for a lock answers `unavailable`, not a 500', async () => {
      const schema = freshSchema('whto');
      const pool = new pg.Pool({ connectionString: POSTGRES_TEST_URL, options: '-c statement_timeout=200' });
      const store = await createPostgresStore({ pool, schema });
      const holder = await checkOut(admin);
      try {
        const record = webhookRecord();
        await store.insertWebhook(record);
        await holder.query('BEGIN');
        await holder.query(`SELECT 1 FROM "${schema}".keyhook_webhooks WHERE id = $1 FOR UPDATE`, [
          record.id,
        ]);
        const error = await store.rotateWebhookSecret('tenant_a', record.id, 'sealed:x', null, T0, null).then(
          () => null,
          (caught: unknown) => caught,
        );
        expect(isKeyhookError(error) && error.code).toBe('unavailable');
      } finally {
        await holder.query('ROLLBACK');
        holder.release();
        await store.close();
        await pool.end().catch(() => {});
      }
    });

    it('an id clash is an error, never mistaken for an active twin', async () => {
      const store = await createPostgresStore({
        connectionString: POSTGRES_TEST_URL,
        schema: freshSchema('whid'),
      });
      try {
        const record = webhookRecord({ status: 'disabled', disabledReason: 'manual' });
        expect(await store.insertWebhook(record)).toBe('inserted');
        await expect(store.insertWebhook(record)).rejects.toMatchObject({
          code: '23505',
          constraint: 'keyhook_webhooks_pkey',
        });
      } finally {
        await store.close();
      }
    });

    it('an insert whose claim was taken over writes nothing, and leaves the new holder alone', async () => {
      const schema = freshSchema('whcl');
      const store = await createPostgresStore({ connectionString: POSTGRES_TEST_URL, schema });
      try {
        const dead = idempotencyRecord();
        await store.claimIdempotencyKey(dead, T0);
        const later = new Date(T0.getTime() + 60_000);
        const holder = idempotencyRecord({
          key: dead.key,
          createdAt: later,
          lockedUntil: new Date(T0.getTime() + 120_000),
        });
        expect(await store.claimIdempotencyKey(holder, later)).toEqual({ outcome: 'claimed' });
        const webhook = webhookRecord();
        const stale = {
          tenantId: dead.tenantId,
          key: dead.key,
          claimId: dead.claimId,
          responseSealed: 'sealed:old',
        };
        expect(await store.insertWebhook(webhook, stale)).toBe('claim_lost');
        expect(await store.getWebhook(webhook.tenantId, webhook.id)).toBeNull();
        expect(await webhookCount(schema)).toBe(0);
        expect(await store.claimIdempotencyKey(idempotencyRecord({ key: dead.key }), later)).toEqual({
          outcome: 'exists',
          record: holder,
        });
      } finally {
        await store.close();
      }
    });

    it('an insert waiting on a takeover that then commits is `claim_lost`, and writes nothing', async () => {
      const schema = freshSchema('whtk');
      const store = await createPostgresStore({ connectionString: POSTGRES_TEST_URL, schema });
      const taker = await checkOut(admin);
      try {
        const dead = idempotencyRecord();
        await store.claimIdempotencyKey(dead, T0);
        const later = new Date(T0.getTime() + 60_000);
        const holder = idempotencyRecord({
          key: dead.key,
          createdAt: later,
          lockedUntil: new Date(T0.getTime() + 120_000),
        });
        // The takeover has locked and rewritten the row but not committed when the insert starts: the
        // insert's snapshot still shows the dead claim in progress.
        await taker.query('BEGIN');
        const taken = await taker.query(statementsIn(schema, claimStatements).claim, [
          ...toClaimParams(holder),
          later,
        ]);
        expect(taken.rows).toEqual([{ claim_id: holder.claimId }]);
        const webhook = webhookRecord();
        const insert = store.insertWebhook(webhook, {
          tenantId: dead.tenantId,
          key: dead.key,
          claimId: dead.claimId,
          responseSealed: 'sealed:old',
        });
        await expect.poll(() => lockWaiters(schema), { timeout: 5000 }).toBe(1);
        await taker.query('COMMIT');
        expect(await insert).toBe('claim_lost');
        expect(await webhookCount(schema)).toBe(0);
        expect(await store.claimIdempotencyKey(idempotencyRecord({ key: dead.key }), later)).toEqual({
          outcome: 'exists',
          record: holder,
        });
      } finally {
        await taker.query('ROLLBACK');
        taker.release();
        await store.close();
      }
    });

    it('a takeover waits for an insert that holds the claim, then finds the key completed', async () => {
      const schema = freshSchema('whhd');
      const store = await createPostgresStore({ connectionString: POSTGRES_TEST_URL, schema, poolSize: 4 });
      const twinWriter = await checkOut(admin);
      try {
        const claim = idempotencyRecord();
        await store.claimIdempotencyKey(claim, T0);
        const webhook = webhookRecord();
        // An uncommitted active twin holds the insert after it locked the idempotency row.
        await twinWriter.query('BEGIN');
        await twinWriter.query(
          statementsIn(schema, insertWebhookStatements).insert,
          toWebhookParams(webhookRecord({ url: webhook.url, events: webhook.events })),
        );
        const completion = {
          tenantId: claim.tenantId,
          key: claim.key,
          claimId: claim.claimId,
          responseSealed: 'sealed:done',
        };
        const insert = store.insertWebhook(webhook, completion);
        await expect.poll(() => lockWaiters(schema), { timeout: 5000 }).toBe(1);
        // The claim's lock has run out by now, but the row is locked: the takeover must wait.
        const later = new Date(T0.getTime() + 60_000);
        const takeover = store.claimIdempotencyKey(idempotencyRecord({ key: claim.key }), later);
        await expect.poll(() => lockWaiters(schema), { timeout: 5000 }).toBe(2);
        await twinWriter.query('ROLLBACK');
        expect(await insert).toBe('inserted');
        expect(await takeover).toEqual({
          outcome: 'exists',
          record: { ...claim, state: 'completed', responseSealed: 'sealed:done' },
        });
        expect(await store.getWebhook(webhook.tenantId, webhook.id)).toEqual(webhook);
      } finally {
        await twinWriter.query('ROLLBACK');
        twinWriter.release();
        await store.close();
      }
    });

    it('every webhook and idempotency method answers `unavailable` once the store is closed', async () => {
      const store = await createPostgresStore({
        connectionString: POSTGRES_TEST_URL,
        schema: freshSchema('whx'),
      });
      await store.close();
      const completion = { tenantId: 'tenant_a', key: 'k', claimId: 'c', responseSealed: 's' };
      const attempts = [
        () => store.insertWebhook(webhookRecord()),
        () => store.insertWebhook(webhookRecord(), completion),
        () => store.getWebhook('tenant_a', 'wh_x'),
        () => store.listWebhooks('tenant_a', { limit: 1 }),
        () => store.setWebhookStatus('tenant_a', 'wh_x', 'disabled', 'manual', T0),
        () => store.rotateWebhookSecret('tenant_a', 'wh_x', 'sealed:x', null, T0, null),
        () => store.deleteWebhook('tenant_a', 'wh_x'),
        () => store.claimIdempotencyKey(idempotencyRecord(), T0),
        () => store.completeIdempotencyKey(completion),
        () => store.releaseIdempotencyKey('tenant_a', 'k', 'c'),
        () => store.purgeIdempotencyKeys(T0),
      ];
      for (const attempt of attempts) {
        const result = await outcome(attempt());
        expect(result.unavailable, String(result.error)).toBe(true);
      }
    });
  });

  describe('concurrency beyond the conformance suite', () => {
    it('concurrent revokes from two instances all return the key revoked, with the first revokedAt', async () => {
      const schema = freshSchema('revoke');
      const here = await createPostgresStore({ connectionString: POSTGRES_TEST_URL, schema, poolSize: 4 });
      const there = await createPostgresStore({ connectionString: POSTGRES_TEST_URL, schema, poolSize: 4 });
      try {
        for (let round = 0; round < 20; round++) {
          const key = keyRecord();
          await here.insertApiKey(key);
          const results = await Promise.all(
            [here, there, here, there].map((store, i) =>
              store.revokeApiKey(key.tenantId, key.id, new Date(Date.UTC(2026, 0, 1, 0, 0, i))),
            ),
          );
          const stored = await there.getApiKey(key.tenantId, key.id);
          expect(stored?.status).toBe('revoked');
          // A revoke that lost the race must still answer with the key as it now is, never a stale 'active'.
          for (const result of results) expect(result).toEqual(stored);
        }
      } finally {
        await here.close();
        await there.close();
      }
    });
  });
});
