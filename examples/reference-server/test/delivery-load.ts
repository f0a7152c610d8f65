import path from 'node:path';
import { createKeyhook, type Keyhook, type Logger, type PublishedEvent } from '@keyhook/core';
import type { DeliveryRecord, Store } from '@keyhook/core/store';
import { createPostgresStore } from '@keyhook/store-postgres';
import { createSqliteStore } from '@keyhook/store-sqlite';
import { POSTGRES_TEST_URL, uniqueSchemaName } from '@keyhook/testing/postgres';
import { TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY, TestReceiver } from '@keyhook/testing/support';
import { REFERENCE_EVENTS, REFERENCE_HEADERS } from '../src/catalog.js';
import { runCompletedData } from './event-data.js';
import { dropSchema, tempDir } from './instances.js';

/**
 * Helpers of the delivery load tests (delivery-crash, delivery-two-workers, delivery-pg-restart):
 * real stores, a real receiver, and counts taken from what the receiver got.
 */

export const TENANT = 'acme';
export const EVENT_ID_HEADER = 'x-chatbot-event-id';

/** One opened store of a test, and what a child process needs to open the same one. */
export interface Backend {
  store: Store;
  /** The environment of test/fixtures/delivery-worker.mjs for this store. */
  env: Record<string, string>;
  /** Another store object (its own connection or pool) on the same data. */
  openAnother(logger?: Logger): Promise<Store>;
  tearDown(): Promise<void>;
}

export async function openSqlite(): Promise<Backend> {
  const temp = tempDir();
  const filename = path.join(temp.dir, 'keyhook.db');
  const store = createSqliteStore({ filename });
  return {
    store,
    env: { KEYHOOK_SQLITE_PATH: filename },
    openAnother: async () => createSqliteStore({ filename }),
    tearDown: async () => {
      await store.close().catch(() => {});
      temp.remove();
    },
  };
}

export async function openPostgres(label: string, logger?: Logger): Promise<Backend> {
  const schema = uniqueSchemaName(label);
  const open = (log?: Logger) =>
    createPostgresStore({ connectionString: POSTGRES_TEST_URL, schema, ...(log && { logger: log }) });
  const store = await open(logger);
  return {
    store,
    env: { DATABASE_URL: POSTGRES_TEST_URL, KEYHOOK_PG_SCHEMA: schema },
    openAnother: open,
    tearDown: async () => {
      await store.close().catch(() => {});
      await dropSchema(schema);
    },
  };
}

/**
 * One Postgres schema opened three times (the first store, a second and a third, each with its own
 * pool), as two worker processes and an API process beside them open it, and a receiver that
 * answers 200 at once.
 */
export interface SharedSchema {
  backend: Backend;
  second: Store;
  third: Store;
  receiver: TestReceiver;
  /** Closes the stores and the receiver, and drops the schema. */
  close(): Promise<void>;
}

export async function sharedPostgresSchema(label: string): Promise<SharedSchema> {
  const backend = await openPostgres(label);
  const second = await backend.openAnother();
  const third = await backend.openAnother();
  const receiver = await TestReceiver.start();
  return {
    backend,
    second,
    third,
    receiver,
    close: async () => {
      await second.close().catch(() => {});
      await third.close().catch(() => {});
      await receiver.close();
      await backend.tearDown();
    },
  };
}

/**
 * A keyhook as the tests' hosts make it: development mode, the suites' key, a short retry schedule
 * and a 1 s send timeout. `timeoutMs` longer for a test that counts every send as the only one: on
 * a busy machine a receiver's answer can take over a second, and its timed-out attempt is sent
 * again, as it should be.
 */
export function testKeyhook(store: Store, logger: Logger, timeoutMs = 1000): Keyhook {
  // The server's own catalog and header names (src/catalog.ts).
  return createKeyhook({
    eventCatalog: REFERENCE_EVENTS,
    store,
    adminSession: { secret: TEST_ADMIN_SECRET },
    mode: 'development',
    encryptionKey: TEST_ENCRYPTION_KEY,
    logger,
    delivery: { headers: REFERENCE_HEADERS, retrySchedule: [50, 50, 50], timeoutMs },
  });
}

export interface LogLine {
  level: 'info' | 'warn' | 'error';
  msg: string;
  context: object;
}

/** A logger that keeps every line, for assertions on what the worker said. */
export function recordingLogger(): Logger & { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const at = (level: LogLine['level']) => (context: object, msg: string) => {
    lines.push({ level, msg, context });
  };
  return { lines, info: at('info'), warn: at('warn'), error: at('error') };
}

/** Publishes `count` run.completed events, `parallel` at a time, spread over the given keyhooks. */
export async function publishMany(
  keyhooks: readonly Keyhook[],
  count: number,
  label: string,
  parallel = 1,
): Promise<PublishedEvent[]> {
  const published: PublishedEvent[] = new Array(count);
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const index = next++;
      const keyhook = keyhooks[index % keyhooks.length]!;
      published[index] = await keyhook.events.publish({
        tenantId: TENANT,
        type: 'run.completed',
        id: `evt_${label}_${String(index).padStart(5, '0')}`,
        data: runCompletedData({ runId: `run_${index}` }),
      });
    }
  };
  await Promise.all(Array.from({ length: parallel }, lane));
  return published;
}

/** How many times the receiver got each event id on `path`; the body's id must be the header's. */
export function receivedCounts(receiver: TestReceiver, path: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const request of receiver.requests) {
    if (request.path !== path) continue;
    const id = String(request.headers[EVENT_ID_HEADER]);
    const bodyId = (JSON.parse(request.body) as { id: string }).id;
    if (bodyId !== id) throw new Error(`event id header ${id} does not match the body's id ${bodyId}`);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/** Every delivery of the webhook, through the store's own paging. */
export async function allDeliveries(store: Store, webhookId: string): Promise<DeliveryRecord[]> {
  const all: DeliveryRecord[] = [];
  let before: string | undefined;
  for (;;) {
    const page = await store.listDeliveries(TENANT, webhookId, { limit: 500, before });
    all.push(...page);
    if (page.length < 500) return all;
    before = page.at(-1)!.id;
  }
}

export function countBy<T>(items: readonly T[], key: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1;
  return counts;
}

/** Ids the receiver got more than once. */
export function repeated(counts: Map<string, number>): string[] {
  return [...counts].filter(([, n]) => n > 1).map(([id]) => id);
}
