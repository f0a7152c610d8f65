import { silentLogger } from '@keyhook/core';
import { keyRecord, T0, webhookRecord } from '@keyhook/store-conformance';
import { FaultProxy } from '@keyhook/testing/fault-proxy';
import { POSTGRES_TEST_URL, postgresAvailable } from '@keyhook/testing/postgres';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, migrate, type PostgresStore } from '../src/index.js';
import { deliveryId, eventRecord, Schemas } from './delivery-helpers.js';
import { lockKeyRow, outcome } from './support.js';

// The store on a host's postgres.js `sql` (src/postgres-js.ts). The conformance suite runs every
// store operation on one (test/conformance.test.ts); these cases are what only a `sql` raises.

const available = await postgresAvailable();

const admin = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 2 });
const schemas = new Schemas(admin);
const BOUND_MS = 300;
/** What a loaded machine may add to a bound before the answer comes. */
const SLACK_MS = 5000;

async function schemaExists(schema: string): Promise<boolean> {
  const { rows } = await admin.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
  return rows.length > 0;
}

/** Backends of this database by application_name. */
async function backends(applicationName: string): Promise<number> {
  const { rows } = await admin.query(
    'SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1',
    [applicationName],
  );
  return rows[0].n;
}

/** A host's `sql`, ended by the case. */
function hostSql(options: Parameters<typeof postgres>[1] = {}): postgres.Sql {
  return postgres(POSTGRES_TEST_URL, { max: 4, onnotice: () => {}, ...options });
}

async function withStore(
  label: string,
  sql: postgres.Sql,
  work: (store: PostgresStore) => Promise<void>,
  options: { statementTimeoutMs?: number } = {},
): Promise<void> {
  const store = await createPostgresStore({
    pool: sql,
    schema: schemas.fresh(label),
    logger: silentLogger,
    ...options,
  });
  try {
    await work(store);
  } finally {
    await store.close();
  }
}

(available ? describe : describe.skip)('the store on a postgres.js `sql`', () => {
  afterAll(async () => {
    await schemas.dropAll();
    await admin.end();
  });

  it('refuses, writing nothing, a `sql` whose rows it could not read, one inside a transaction or reserved, and the key cache', async () => {
    const sql = hostSql();
    const camel = hostSql({ transform: postgres.camel });
    const untyped = hostSql({ fetch_types: false });
    const reserved = await sql.reserve();
    try {
      const refusals: [(schema: string) => Promise<unknown>, RegExp][] = [
        [(schema) => createPostgresStore({ pool: camel, schema }), /transforms the rows/],
        [(schema) => createPostgresStore({ pool: untyped, schema }), /fetch_types: false/],
        [
          (schema) => createPostgresStore({ pool: reserved as unknown as postgres.Sql, schema }),
          /top-level `sql`/,
        ],
        [
          (schema) => sql.begin((tx) => createPostgresStore({ pool: tx as unknown as postgres.Sql, schema })),
          /top-level `sql`/,
        ],
        [
          (schema) => createPostgresStore({ pool: sql, schema, verifiedKeyCache: true }),
          /verifiedKeyCache` needs a pg.Pool/,
        ],
        [(schema) => migrate({ pool: camel, schema }), /transforms the rows/],
      ];
      for (const [open, message] of refusals) {
        const schema = schemas.fresh('pjsno');
        await expect(open(schema)).rejects.toThrow(TypeError);
        await expect(open(schema)).rejects.toThrow(message);
        expect(await schemaExists(schema)).toBe(false);
      }
    } finally {
      reserved.release();
      await Promise.all([sql.end(), camel.end(), untyped.end()]);
    }
  });

  it('adds no connection of its own: statements and transactions on the `sql`’s, wake-ups on its listen connection', async () => {
    const name = `host-${process.pid}-${Date.now()}`;
    const sql = hostSql({ connection: { application_name: name } });
    const peerSql = hostSql({ connection: { application_name: `${name}-peer` } });
    try {
      await withStore('pjsconn', sql, async (store) => {
        const peer = await createPostgresStore({ pool: peerSql, schema: store.schema, logger: silentLogger });
        try {
          let woken = 0;
          const stop = store.watchDeliveries(() => woken++);
          // Every (re)listen wakes the watchers once: it is listening.
          await expect.poll(() => woken, { timeout: 5000, interval: 5 }).toBeGreaterThan(0);
          const before = woken;
          const webhook = webhookRecord({ tenantId: 'tenant_a', events: ['run.completed'] });
          await peer.insertWebhook(webhook);
          await peer.publishEvent(eventRecord(), deliveryId);
          await expect.poll(() => woken, { timeout: 5000, interval: 5 }).toBeGreaterThan(before);
          // A transaction of the store's (a lease) and reads, at once.
          await Promise.all([
            store.leaseDeliveries({ now: new Date(), limit: 10, leaseMs: 30_000, leaseId: 'l1' }),
            store.insertApiKey(keyRecord()),
            store.listWebhooks('tenant_a', { limit: 10 }),
          ]);
          stop();
        } finally {
          await peer.close();
        }
        // Every connection that ran a statement on the schema is one of the two `sql`s' (a pool of
        // keyhook's own would be named 'keyhook'), and there are at most max + its listen connection.
        const { rows } = await admin.query(
          'SELECT DISTINCT application_name AS name FROM pg_stat_activity WHERE query LIKE $1',
          [`%"${store.schema}".%`],
        );
        expect(rows.map((row: { name: string }) => row.name).sort()).toEqual([name, `${name}-peer`]);
        expect(await backends(name)).toBeLessThanOrEqual(4 + 1);
      });
    } finally {
      await Promise.all([sql.end(), peerSql.end()]);
    }
  });

  it('wakes its workers again once postgres.js re-listens after its listen connection was killed', async () => {
    const name = `listen-${process.pid}-${Date.now()}`;
    const sql = hostSql({ connection: { application_name: name } });
    try {
      await withStore('pjslisten', sql, async (store) => {
        let woken = 0;
        const stop = store.watchDeliveries(() => woken++);
        await expect.poll(() => woken, { timeout: 5000, interval: 5 }).toBeGreaterThan(0);
        const listenerPids = async () =>
          (
            await admin.query(
              "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE 'listen%'",
              [name],
            )
          ).rows.map((row: { pid: number }) => row.pid);
        const [pid] = await listenerPids();
        expect(pid).toBeDefined();
        const before = woken;
        await admin.query('SELECT pg_terminate_backend($1)', [pid]);
        // postgres.js re-listens on a new connection; the store wakes its workers for what it missed.
        await expect.poll(() => woken, { timeout: 10_000, interval: 5 }).toBeGreaterThan(before);
        await expect
          .poll(async () => (await listenerPids()).some((next) => next !== pid), { timeout: 10_000 })
          .toBe(true);
        const resumed = woken;
        await store.insertWebhook(webhookRecord({ tenantId: 'tenant_a', events: ['run.completed'] }));
        await store.publishEvent(eventRecord(), deliveryId);
        await expect.poll(() => woken, { timeout: 5000, interval: 5 }).toBeGreaterThan(resumed);
        stop();
      });
    } finally {
      await sql.end();
    }
  });

  it('a statement held past the bound is cancelled on the server: `unavailable`, nothing written, the `sql` still serves', async () => {
    const sql = hostSql();
    try {
      await withStore(
        'pjslock',
        sql,
        async (store) => {
          const key = keyRecord();
          await store.insertApiKey(key);
          const lock = await lockKeyRow(admin, store.schema, key.id);
          try {
            const result = await outcome(store.revokeApiKey(key.tenantId, key.id, new Date()));
            expect(result.unavailable, String(result.error)).toBe(true);
            // The client's bound (BOUND_MS + 1 s): the server keeps the host's own, here none.
            expect(result.ms).toBeGreaterThanOrEqual(BOUND_MS + 1000);
            expect(result.ms).toBeLessThan(BOUND_MS + 1000 + SLACK_MS);
            // The cancel reached the server: nobody waits on the lock any more.
            await expect
              .poll(
                async () =>
                  (
                    await admin.query(
                      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1",
                      [`%"${store.schema}".%`],
                    )
                  ).rows[0].n,
                { timeout: 5000 },
              )
              .toBe(0);
          } finally {
            await lock.release();
          }
          expect((await store.getApiKey(key.tenantId, key.id))?.status).toBe('active');
          expect(await store.revokeApiKey(key.tenantId, key.id, T0)).toBeTruthy();
        },
        { statementTimeoutMs: BOUND_MS },
      );
    } finally {
      await sql.end();
    }
  });

  it('a network that stopped answering ends a statement `unavailable` at the client’s bound', async () => {
    const proxy = await FaultProxy.start();
    const sql = postgres(proxy.url(), { max: 2, onnotice: () => {}, connect_timeout: 1 });
    try {
      await withStore(
        'pjsblack',
        sql,
        async (store) => {
          const key = keyRecord();
          await store.insertApiKey(key);
          proxy.blackhole();
          const result = await outcome(store.getApiKey(key.tenantId, key.id));
          expect(result.unavailable, String(result.error)).toBe(true);
          expect(result.ms).toBeLessThan(BOUND_MS + 1000 + SLACK_MS);
          await proxy.pass();
          await expect
            .poll(() => store.getApiKey(key.tenantId, key.id).catch(() => null), { timeout: 15_000 })
            .not.toBeNull();
        },
        { statementTimeoutMs: BOUND_MS },
      );
    } finally {
      await sql.end({ timeout: 0 });
      await proxy.close();
    }
  });
});
