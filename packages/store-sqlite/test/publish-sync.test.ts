import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKeyhook, type DeliveryWorker, type Keyhook } from '@keyhook/core';
import { TEST_ADMIN_SECRET, TEST_CATALOG, TEST_ENCRYPTION_KEY, TestReceiver } from '@keyhook/testing/support';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSqliteStore, openDatabase, type SqliteStore } from '../src/index.js';

const root = mkdtempSync(join(tmpdir(), 'keyhook-publish-sync-'));
let count = 0;
afterAll(() => rmSync(root, { recursive: true, force: true }));

const TENANT = 'tenant_a';
let db: Database.Database;
let store: SqliteStore;
let keyhook: Keyhook;
let worker: DeliveryWorker;
let receiver: TestReceiver;

beforeEach(async () => {
  db = openDatabase(join(root, `db-${++count}.db`));
  // The host's own table, on the connection it shares with the store.
  db.exec('CREATE TABLE orders (id TEXT PRIMARY KEY, status TEXT NOT NULL)');
  store = createSqliteStore({ database: db });
  receiver = await TestReceiver.start();
  keyhook = createKeyhook({
    ...TEST_CATALOG,
    store,
    adminSession: { secret: TEST_ADMIN_SECRET },
    mode: 'development',
    encryptionKey: TEST_ENCRYPTION_KEY,
    delivery: { timeoutMs: 2000 },
  });
  await keyhook.webhooks.create(TENANT, { url: receiver.url('/hook'), events: ['run.completed'] });
  worker = keyhook.createWorker({ pollIntervalMs: 50 });
  worker.start();
});

afterEach(async () => {
  await keyhook.close();
  await store.close();
  db.close();
  await receiver.close();
});

const orders = () => db.prepare('SELECT id FROM orders ORDER BY id').pluck().all();
const events = () => db.prepare('SELECT id FROM keyhook_events ORDER BY id').pluck().all();

/** The host's business write and its event, in one synchronous transaction of the host's. */
function paid(orderId: string, eventId: string, data: Record<string, unknown> = { orderId }) {
  db.prepare('INSERT INTO orders (id, status) VALUES (?, ?)').run(orderId, 'paid');
  return keyhook.events.publishSync(
    { tenantId: TENANT, type: 'run.completed', data, id: eventId },
    { transaction: db },
  );
}

describe('publishSync: the event joins a synchronous transaction on the store’s own connection', () => {
  it('commits with the host’s write, and the delivery goes out after the commit', async () => {
    const published = db.transaction(() => paid('order_1', 'evt_order_1'))();
    expect(published.deliveries).toHaveLength(1);
    expect(published.deliveries[0]!.status).toBe('pending'); // never handed over inside a caller's transaction
    expect(orders()).toEqual(['order_1']);
    expect(events()).toEqual(['evt_order_1']);
    await receiver.waitFor((r) => r.length === 1);
    expect(receiver.requests[0]!.headers['keyhook-event-id']).toBe('evt_order_1');
  });

  it('rolls back with it: neither the write nor the event nor its delivery remains', async () => {
    expect(() =>
      db.transaction(() => {
        paid('order_2', 'evt_order_2');
        throw new Error('the payment was refused after all');
      })(),
    ).toThrow('refused');
    expect(orders()).toEqual([]);
    expect(events()).toEqual([]);
    expect(db.prepare('SELECT count(*) FROM keyhook_deliveries').pluck().get()).toBe(0);
    // A later event through the same path: written pending and leased in due order, so anything
    // of the rolled-back one the worker could send goes out before it or with it, and the stop
    // waits for every attempt in flight.
    db.transaction(() => paid('order_after', 'evt_after'))();
    await receiver.waitFor((r) => r.length > 0);
    await worker.stop();
    expect(receiver.requests.map((r) => r.headers['keyhook-event-id'])).toEqual(['evt_after']);
  });

  it('throws, not rejects, so an id reused with other data rolls the host’s transaction back', async () => {
    db.transaction(() => paid('order_3', 'evt_order_3'))();
    expect(() => db.transaction(() => paid('order_4', 'evt_order_3', { other: true }))()).toThrow(
      expect.objectContaining({ code: 'idempotency_conflict' }),
    );
    expect(orders()).toEqual(['order_3']);
    // The same id with the same data is a replay: nothing new is written.
    const replay = db.transaction(() => {
      return keyhook.events.publishSync(
        { tenantId: TENANT, type: 'run.completed', data: { orderId: 'order_3' }, id: 'evt_order_3' },
        { transaction: db },
      );
    })();
    expect(replay.replayed).toBe(true);
    expect(events()).toEqual(['evt_order_3']);
  });

  it('refuses without a transaction open on the store’s own connection, writing nothing', async () => {
    const input = { tenantId: TENANT, type: 'run.completed' as const, data: {} };
    expect(() => keyhook.events.publishSync(input, { transaction: db })).toThrow(TypeError);
    const other = new Database(db.name);
    try {
      expect(() =>
        other.transaction(() => keyhook.events.publishSync(input, { transaction: other }))(),
      ).toThrow(TypeError);
    } finally {
      other.close();
    }
    expect(events()).toEqual([]);
  });

  it('a host transaction held open across an await delays the store’s own group commit until it ends', async () => {
    db.exec('BEGIN');
    db.prepare('INSERT INTO orders (id, status) VALUES (?, ?)').run('order_5', 'open');
    let settled = false;
    const publishing = keyhook.events
      .publish({ tenantId: TENANT, type: 'run.completed', data: { n: 5 } })
      .then(() => {
        settled = true;
      });
    // The group commit flushes on setImmediate (group-commit.ts): this turn comes after its first look.
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    db.exec('ROLLBACK'); // the host's transaction ends; the group commit writes on its own
    await publishing;
    expect(orders()).toEqual([]);
    expect(events()).toHaveLength(1);
  });
});
