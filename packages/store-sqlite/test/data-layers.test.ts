/**
 * publishSync inside a transaction of each data layer the SQLite store joins, on the store's
 * own connection to a real file: raw better-sqlite3, Drizzle, Kysely and Knex (test/host-layers.ts),
 * the same cases for each. Deliveries go to a real receiver through a real worker; a host process
 * killed right after its commit (test/fixtures/publish-and-die.ts) loses nothing.
 */
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createKeyhook, type DeliveryWorker, type Keyhook, silentLogger } from '@keyhook/core';
import type { EventRecord, LeasedDelivery } from '@keyhook/core/store';
import {
  killHostProcessAt,
  type ReceivedRequest,
  TEST_ADMIN_SECRET,
  TEST_CATALOG,
  TEST_ENCRYPTION_KEY,
  TestReceiver,
  waitUntil,
} from '@keyhook/testing/support';
import type Database from 'better-sqlite3';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSqliteStore, openDatabase, type SqliteStore } from '../src/index.js';
import { LAYERS, type Opened, ORDERS_TABLE, type Step } from './host-layers.js';

const root = mkdtempSync(join(tmpdir(), 'keyhook-data-layers-'));
let count = 0;
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A file with the host's own table. */
function openFile(): Database.Database {
  const db = openDatabase(join(root, `db-${++count}.db`));
  db.exec(ORDERS_TABLE);
  return db;
}

const vitestConfig = fileURLToPath(new URL('../vitest.config.ts', import.meta.url));
const publishAndDie = fileURLToPath(new URL('./fixtures/publish-and-die.ts', import.meta.url));

/**
 * test/fixtures/publish-and-die.ts on the file `filename` through `layer`: a host process with no
 * worker that commits order `order_killed` and event `evt_killed` together, killed (SIGKILL) as
 * soon as it has printed that it committed; resolves with the signal it died of.
 */
const commitThenKill = (layer: string, filename: string) =>
  killHostProcessAt(
    publishAndDie,
    vitestConfig,
    { KEYHOOK_TEST_DB: filename, KEYHOOK_TEST_LAYER: layer },
    'committed',
  );

const TENANT = 'tenant_a';
let db: Database.Database;
let store: SqliteStore;
let keyhook: Keyhook;
let receiver: TestReceiver;
let worker: DeliveryWorker;
let secret: string;
/** What happened, in order: `committed`, and `leased <event id>` as each lease returns. */
let log: string[];
/** Each lease the worker asked for: its `now`, and whether it has returned. */
let leases: { now: number; done: boolean }[];
/** When the last `publish` step's event was made. */
let publishedAt: number;

beforeEach(async () => {
  db = openFile();
  store = createSqliteStore({ database: db, logger: silentLogger });
  log = [];
  leases = [];
  const lease = store.leaseDeliveries.bind(store);
  store.leaseDeliveries = async (request): Promise<LeasedDelivery[]> => {
    const asked = { now: request.now.getTime(), done: false };
    leases.push(asked);
    try {
      const leased = await lease(request);
      for (const { event } of leased) log.push(`leased ${event.id}`);
      return leased;
    } finally {
      asked.done = true;
    }
  };
  receiver = await TestReceiver.start();
  keyhook = createKeyhook({
    ...TEST_CATALOG,
    store,
    adminSession: { secret: TEST_ADMIN_SECRET },
    mode: 'development',
    encryptionKey: TEST_ENCRYPTION_KEY,
    logger: silentLogger,
    delivery: { timeoutMs: 2000 },
  });
  ({ secret } = await keyhook.webhooks.create(TENANT, {
    url: receiver.url('/hook'),
    events: ['run.completed'],
  }));
  worker = keyhook.createWorker({ pollIntervalMs: 50 });
  worker.start();
});

afterEach(async () => {
  await keyhook.close();
  await store.close();
  db.close();
  await receiver.close();
});

const orderIds = () => db.prepare('SELECT id FROM orders ORDER BY id').pluck().all();
const eventIds = () => db.prepare('SELECT id FROM keyhook_events ORDER BY id').pluck().all();
const deliveryCount = () => db.prepare('SELECT count(*) FROM keyhook_deliveries').pluck().get();
const sentEventIds = () => receiver.requests.map((r) => r.headers[keyhook.headerNames.eventId]);

/** The receiver's request is signed with the webhook's secret over its raw body (docs/http-api.md §6.4). */
function signedWith(request: ReceivedRequest, key: string): boolean {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(request.headers[keyhook.headerNames.signature]));
  if (!match) return false;
  return createHmac('sha256', key).update(`${match[1]}.`).update(request.body).digest('hex') === match[2];
}

/** publishSync of `run.completed` with id `id` on the step's transaction. */
const publish =
  (id: string): Step =>
  (tx) => {
    const published = keyhook.events.publishSync(
      { tenantId: TENANT, type: 'run.completed', data: { id }, id },
      { transaction: tx },
    );
    publishedAt = published.event.createdAt.getTime();
    // Never handed to a worker inside a caller's transaction.
    expect(published.deliveries.map((d) => d.status)).toEqual(published.deliveries.map(() => 'pending'));
  };

/**
 * Resolves, inside a transaction held open across awaits, once a lease of the worker that would
 * see an event made at `after` has had a turn of the group commit (which flushes on
 * setImmediate), or once a lease asked before it is held back by the open transaction.
 */
async function workerHadATurn(after: number): Promise<void> {
  for (;;) {
    await waitUntil(() => leases.some((lease) => !lease.done));
    const asked = leases.length;
    await new Promise((resolve) => setImmediate(resolve));
    const before = leases.slice(0, asked);
    if (before.some((lease) => lease.now >= after)) return;
    if (before.some((lease) => !lease.done)) return; // asked before the event, waiting for the commit
  }
}

/** An event record as core makes one, for the store's own publishEventSync. */
function eventRecord(id: string): EventRecord {
  const createdAt = new Date();
  const payload = JSON.stringify({ id, type: 'run.completed', createdAt: createdAt.toISOString(), data: {} });
  return { id, tenantId: TENANT, type: 'run.completed', payload, createdAt, traceContext: null };
}

const ACCEPTED = /The SQLite store takes .*Drizzle.*Kysely.*knex\.transaction/;

describe.each(LAYERS)('publishSync in a $name transaction on the store’s connection', (layer) => {
  let opened: Opened;
  beforeEach(() => {
    opened = layer.open(db);
  });
  afterEach(() => opened.close());

  it('commits with the host’s row; a worker delivers it once, after the commit, and it verifies', async () => {
    const steps = [opened.insert('order_1'), publish('evt_1')];
    // An async layer's transaction stays open across awaits: the worker, woken by the publish,
    // asks for work meanwhile, and must get the delivery only after the commit.
    if (layer.async) steps.push(() => workerHadATurn(publishedAt));
    await opened.transaction(steps);
    log.push('committed');
    expect(orderIds()).toEqual(['order_1']);
    expect(eventIds()).toEqual(['evt_1']);
    await receiver.waitFor((r) => r.length === 1);
    await worker.stop(); // once the attempts in flight are recorded
    expect(sentEventIds()).toEqual(['evt_1']);
    expect(signedWith(receiver.requests[0]!, secret)).toBe(true);
    expect(log.filter((line) => line === 'leased evt_1')).toHaveLength(1);
    expect(log.indexOf('committed')).toBeLessThan(log.indexOf('leased evt_1'));
  });

  it('rolls back with it: nothing is written, nothing is delivered', async () => {
    await expect(
      opened.transaction([
        opened.insert('order_2'),
        publish('evt_2'),
        () => {
          throw new Error('the payment was refused after all');
        },
      ]),
    ).rejects.toThrow('refused after all');
    expect(orderIds()).toEqual([]);
    expect(eventIds()).toEqual([]);
    expect(deliveryCount()).toBe(0);
    // A later event through the same path is leased after anything left of the rolled-back one,
    // and the worker's stop waits for the attempts in flight: it is the only delivery.
    await opened.transaction([opened.insert('order_3'), publish('evt_3')]);
    await receiver.waitFor((r) => r.length > 0);
    await worker.stop();
    expect(sentEventIds()).toEqual(['evt_3']);
  });

  it('an event type the catalog does not declare is refused inside it; the host’s next write and publish commit', async () => {
    await opened.transaction([
      opened.insert('order_4'),
      (tx) => {
        expect(() =>
          keyhook.events.publishSync(
            { tenantId: TENANT, type: 'not.declared', data: {}, id: 'evt_undeclared' },
            { transaction: tx },
          ),
        ).toThrow(expect.objectContaining({ code: 'validation_failed' }));
      },
      opened.insert('order_5'),
      publish('evt_5'),
    ]);
    expect(orderIds()).toEqual(['order_4', 'order_5']);
    expect(eventIds()).toEqual(['evt_5']);
    await receiver.waitFor((r) => r.length > 0);
    await worker.stop();
    expect(sentEventIds()).toEqual(['evt_5']);
  });

  it('a publish that fails in SQL rolls back to its savepoint alone; the host’s next write and publish commit', async () => {
    await keyhook.webhooks.create(TENANT, { url: receiver.url('/second'), events: ['run.completed'] });
    await opened.transaction([
      opened.insert('order_6'),
      (tx) => {
        // Two subscribers, one delivery id: the second delivery's insert breaks the primary key.
        expect(() => store.publishEventSync(eventRecord('evt_broken'), () => 'dlv_same', tx)).toThrow(
          expect.objectContaining({ code: expect.stringMatching(/^SQLITE_CONSTRAINT/) }),
        );
      },
      opened.insert('order_7'),
      publish('evt_7'),
    ]);
    expect(orderIds()).toEqual(['order_6', 'order_7']);
    expect(eventIds()).toEqual(['evt_7']);
    expect(db.prepare("SELECT count(*) FROM keyhook_deliveries WHERE id = 'dlv_same'").pluck().get()).toBe(0);
    await receiver.waitFor((r) => r.length === 2);
    await worker.stop();
    expect(receiver.requests.map((r) => [r.path, r.headers[keyhook.headerNames.eventId]]).sort()).toEqual([
      ['/hook', 'evt_7'],
      ['/second', 'evt_7'],
    ]);
  });

  it('refuses the library’s object outside a transaction, and a finished transaction, with a TypeError; nothing is written', async () => {
    const input = { tenantId: TENANT, type: 'run.completed', data: {} };
    expect(() => keyhook.events.publishSync(input, { transaction: opened.outside })).toThrow(TypeError);
    expect(() => keyhook.events.publishSync(input, { transaction: opened.outside })).toThrow(ACCEPTED);
    let finished: unknown;
    await opened.transaction([
      (tx) => {
        finished = tx;
      },
    ]);
    expect(() => keyhook.events.publishSync(input, { transaction: finished })).toThrow(TypeError);
    expect(eventIds()).toEqual([]);
    expect(deliveryCount()).toBe(0);
  });

  it('refuses its transaction on another database file with a TypeError; nothing is written', async () => {
    const other = openFile();
    const elsewhere = layer.open(other);
    try {
      await elsewhere.transaction([
        elsewhere.insert('order_8'),
        (tx) => {
          expect(() =>
            keyhook.events.publishSync(
              { tenantId: TENANT, type: 'run.completed', data: {}, id: 'evt_8' },
              { transaction: tx },
            ),
          ).toThrow(ACCEPTED);
        },
      ]);
    } finally {
      await elsewhere.close();
      other.close();
    }
    expect(eventIds()).toEqual([]);
    expect(deliveryCount()).toBe(0);
  });

  it(
    layer.showsConnection
      ? 'refuses its transaction on another file even while one is open on the store’s connection'
      : 'takes its transaction on another file while one is open on the store’s connection (its connection cannot be read)',
    async () => {
      const other = openFile();
      const elsewhere = layer.open(other);
      db.exec('BEGIN'); // some other transaction, open on the store's connection
      try {
        await elsewhere.transaction([
          (tx) => {
            const publishing = () =>
              keyhook.events.publishSync(
                { tenantId: TENANT, type: 'run.completed', data: {}, id: 'evt_9' },
                { transaction: tx },
              );
            if (layer.showsConnection) expect(publishing).toThrow(ACCEPTED);
            else expect(publishing).not.toThrow(); // written in the store's transaction, not in `tx`
          },
        ]);
        expect(eventIds()).toEqual(layer.showsConnection ? [] : ['evt_9']);
      } finally {
        db.exec('ROLLBACK');
        await elsewhere.close();
        other.close();
      }
      expect(eventIds()).toEqual([]);
    },
  );

  it('the host process killed between its commit and any delivery: after a restart the event is delivered once, and it verifies', async () => {
    await worker.stop(); // nothing in this process delivers before the restart
    expect(await commitThenKill(layer.name, db.name)).toBe('SIGKILL');
    const deliveries = () =>
      db.prepare('SELECT status, attempts FROM keyhook_deliveries').all() as {
        status: string;
        attempts: number;
      }[];
    expect(orderIds()).toEqual(['order_killed']);
    expect(eventIds()).toEqual(['evt_killed']);
    expect(deliveries()).toEqual([{ status: 'pending', attempts: 0 }]);
    expect(receiver.requests).toHaveLength(0);

    // The restart: the host opens the store on its file again, with a keyhook whose worker runs.
    const reopened = openDatabase(db.name);
    const restarted = createSqliteStore({ database: reopened, logger: silentLogger });
    const again = createKeyhook({
      ...TEST_CATALOG,
      store: restarted,
      adminSession: { secret: TEST_ADMIN_SECRET },
      mode: 'development',
      encryptionKey: TEST_ENCRYPTION_KEY,
      logger: silentLogger,
      delivery: { timeoutMs: 2000 },
    });
    try {
      const delivering = again.createWorker({ pollIntervalMs: 50 });
      delivering.start();
      await waitUntil(
        () => deliveries()[0]?.status === 'succeeded',
        10_000,
        () => `deliveries ${JSON.stringify(deliveries())}, ${receiver.requests.length} received`,
      );
      await delivering.stop(); // once the attempts in flight are recorded
      expect(reopened.prepare('SELECT id FROM orders').pluck().all()).toEqual(['order_killed']);
      expect(deliveries()).toEqual([{ status: 'succeeded', attempts: 1 }]);
      expect(sentEventIds()).toEqual(['evt_killed']);
      expect(JSON.parse(receiver.requests[0]!.body)).toMatchObject({
        id: 'evt_killed',
        type: 'run.completed',
        data: { id: 'evt_killed' },
      });
      expect(signedWith(receiver.requests[0]!, secret)).toBe(true);
    } finally {
      await again.close();
      await restarted.close();
      reopened.close();
    }
  });

  it('8 transactions, started together, each commit their row and event, and each event is delivered once', async () => {
    const ids = Array.from({ length: 8 }, (_, i) => i);
    await Promise.all(
      ids.map((i) => opened.transaction([opened.insert(`order_c${i}`), publish(`evt_c${i}`)])),
    );
    expect(orderIds()).toEqual(ids.map((i) => `order_c${i}`));
    expect(eventIds()).toEqual(ids.map((i) => `evt_c${i}`));
    await receiver.waitFor((r) => r.length === 8);
    await worker.stop();
    expect(sentEventIds().sort()).toEqual(ids.map((i) => `evt_c${i}`));
    expect(receiver.requests.every((r) => signedWith(r, secret))).toBe(true);
  });
});
