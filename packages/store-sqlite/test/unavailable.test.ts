import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isKeyhookError, type KeyhookError } from '@keyhook/core';
import { DELIVERY_RULES, type EventRecord } from '@keyhook/core/store';
import { idempotencyRecord, keyRecord, T0, webhookRecord } from '@keyhook/store-conformance';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../src/index.js';
import { isUnavailableError } from '../src/unavailable.js';

const root = mkdtempSync(join(tmpdir(), 'keyhook-sqlite-unavailable-'));
let count = 0;
const freshFile = () => join(root, `db-${++count}.db`);

afterAll(() => rmSync(root, { recursive: true, force: true }));

const eventOf = (id: string): EventRecord => ({
  id,
  tenantId: 'tenant_a',
  type: 'run.completed',
  payload: '{}',
  createdAt: T0,
  traceContext: null,
});

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error,
  );
}

function expectUnavailable(error: unknown, causeCode?: string): void {
  expect(isKeyhookError(error), String(error)).toBe(true);
  const keyhookError = error as KeyhookError;
  expect(keyhookError.code).toBe('unavailable');
  expect(keyhookError.status).toBe(503);
  expect(keyhookError.retryAfter).toBe(1);
  if (causeCode) expect((keyhookError.cause as { code?: string }).code).toBe(causeCode);
}

describe('errors: out of reach → unavailable (503, Retry-After: 1)', () => {
  it('another process holding the write lock past the busy timeout: writes are unavailable, reads go on', async () => {
    const filename = freshFile();
    const store = createSqliteStore({ filename, busyTimeoutMs: 50 });
    const existing = keyRecord();
    await store.insertApiKey(existing);
    const holder = new Database(filename);
    holder.exec('BEGIN IMMEDIATE');
    try {
      const started = Date.now();
      expectUnavailable(await rejection(store.insertApiKey(keyRecord())), 'SQLITE_BUSY');
      expect(Date.now() - started).toBeGreaterThanOrEqual(40);
      expectUnavailable(await rejection(store.touchApiKey(existing.id, new Date(), 0)), 'SQLITE_BUSY');
      // The webhook and idempotency transactions start with BEGIN IMMEDIATE: they wait, then give up alike.
      expectUnavailable(await rejection(store.insertWebhook(webhookRecord())), 'SQLITE_BUSY');
      expectUnavailable(await rejection(store.claimIdempotencyKey(idempotencyRecord(), T0)), 'SQLITE_BUSY');
      // So do the delivery transactions, and the one-statement expiry.
      expectUnavailable(
        await rejection(store.publishEvent(eventOf('evt_busy'), () => 'dlv_busy')),
        'SQLITE_BUSY',
      );
      const lease = { now: T0, limit: 10, leaseMs: 1000, leaseId: 'lease-busy' };
      expectUnavailable(await rejection(store.leaseDeliveries(lease)), 'SQLITE_BUSY');
      expectUnavailable(await rejection(store.expireHeldDeliveries(T0, T0)), 'SQLITE_BUSY');
      expectUnavailable(await rejection(store.deleteWebhook('tenant_a', 'wh_x')), 'SQLITE_BUSY');
      // The delivery reads take no write lock.
      expect(await store.listDeliveries('tenant_a', 'wh_x', { limit: 5 })).toEqual([]);
      expect(await store.getDelivery('tenant_a', 'wh_x', 'dlv_x')).toBeNull();
      // WAL: a reader never waits for the writer.
      expect(await store.findApiKeyByCredential(existing.keyLookup, existing.keyHash)).toEqual(existing);
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
    expect(await store.insertApiKey(keyRecord())).toBe('inserted');
    await store.close();
  });

  it('a full database (SQLITE_FULL) is unavailable, not a 500', async () => {
    const db = new Database(freshFile());
    const store = createSqliteStore({ database: db });
    const pages = db.pragma('page_count', { simple: true }) as number;
    db.pragma(`max_page_count = ${pages}`);
    // The file may not grow by a page: the first insert that needs one fails.
    let error: unknown = null;
    for (let i = 0; i < 100 && error === null; i++) {
      await store.insertApiKey(keyRecord({ name: 'x'.repeat(200) })).catch((e: unknown) => {
        error = e;
      });
    }
    expectUnavailable(error, 'SQLITE_FULL');
    await store.close();
    db.close();
  });

  it('after close() every method is unavailable', async () => {
    const store = createSqliteStore({ filename: freshFile() });
    await store.close();
    await store.close();
    const key = keyRecord();
    const webhook = webhookRecord();
    const claim = idempotencyRecord();
    for (const call of [
      store.ping(),
      store.insertApiKey(key),
      store.findApiKeyByCredential(key.keyLookup, key.keyHash),
      store.getApiKey(key.tenantId, key.id),
      store.listApiKeys(key.tenantId, { limit: 5 }),
      store.rotateApiKey(key.tenantId, key.id, key.keyHash, key.keyHash),
      store.revokeApiKey(key.tenantId, key.id, new Date()),
      store.touchApiKey(key.id, new Date(), 0),
      store.insertWebhook(webhook),
      store.getWebhook(webhook.tenantId, webhook.id),
      store.listWebhooks(webhook.tenantId, { limit: 5 }),
      store.setWebhookStatus(webhook.tenantId, webhook.id, 'disabled', 'manual', new Date()),
      store.rotateWebhookSecret(webhook.tenantId, webhook.id, 'sealed:x', null, new Date(), null),
      store.deleteWebhook(webhook.tenantId, webhook.id),
      store.claimIdempotencyKey(claim, T0),
      store.completeIdempotencyKey({ ...claim, responseSealed: 'sealed:r' }),
      store.releaseIdempotencyKey(claim.tenantId, claim.key, claim.claimId),
      store.purgeIdempotencyKeys(T0),
      store.publishEvent(eventOf('evt_closed'), () => 'dlv_closed'),
      store.leaseDeliveries({ now: T0, limit: 1, leaseMs: 1000, leaseId: 'lease-closed' }),
      store.completeAttempt({
        tenantId: 'tenant_a',
        deliveryId: 'dlv_closed',
        leaseId: 'lease-closed',
        attempt: {
          deliveryId: 'dlv_closed',
          tenantId: 'tenant_a',
          attempt: 1,
          startedAt: T0,
          durationMs: 1,
          statusCode: 200,
          error: null,
          responseBody: null,
        },
        status: 'succeeded',
        dueAt: null,
        endpointFailures: 'reset',
        autoDisable: DELIVERY_RULES.autoDisable,
        at: T0,
      }),
      store.expireHeldDeliveries(T0, T0),
      store.listDeliveries(webhook.tenantId, webhook.id, { limit: 5 }),
      store.getDelivery(webhook.tenantId, webhook.id, 'dlv_closed'),
      store.requeueDelivery(webhook.tenantId, webhook.id, 'dlv_closed', ['failed'], T0),
    ]) {
      expectUnavailable(await rejection(call));
    }
  });

  it('a passed-in connection belongs to the caller: close() leaves it open; closing it makes the store unavailable', async () => {
    const db = new Database(freshFile());
    const store = createSqliteStore({ database: db });
    await store.close();
    expect(db.open).toBe(true);
    expect(db.prepare('SELECT count(*) AS n FROM keyhook_api_keys').get()).toEqual({ n: 0 });
    expectUnavailable(await rejection(store.ping()));

    const second = createSqliteStore({ database: db });
    await second.ping();
    db.close();
    // The driver's "database connection is not open", translated.
    expectUnavailable(await rejection(second.findApiKeyByCredential('sk_live_0000000000000000', '00')));
    expectUnavailable(await rejection(second.ping()));
  });

  it('classifies every SQLite code the mapping names, extended codes included, and nothing else', () => {
    const sqliteError = (code: string) => new Database.SqliteError('from sqlite', code);
    for (const code of [
      'SQLITE_BUSY',
      'SQLITE_BUSY_SNAPSHOT',
      'SQLITE_LOCKED',
      'SQLITE_LOCKED_SHAREDCACHE',
      'SQLITE_IOERR',
      'SQLITE_IOERR_WRITE',
      'SQLITE_IOERR_FSYNC',
      'SQLITE_CANTOPEN',
      'SQLITE_FULL',
      'SQLITE_READONLY',
      'SQLITE_READONLY_DBMOVED',
      'SQLITE_PROTOCOL',
      'SQLITE_NOMEM',
      'SQLITE_INTERRUPT',
    ]) {
      expect(isUnavailableError(sqliteError(code)), code).toBe(true);
    }
    for (const code of ['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_ERROR', 'SQLITE_CORRUPT', 'SQLITE_MISMATCH']) {
      expect(isUnavailableError(sqliteError(code)), code).toBe(false);
    }
    expect(isUnavailableError(new TypeError('The database connection is not open'))).toBe(true);
    expect(isUnavailableError(new TypeError('Cannot read properties of undefined'))).toBe(false);
    expect(isUnavailableError('SQLITE_BUSY')).toBe(false);
  });
});

describe('errors: bugs surface as they are', () => {
  it('publishEvent refuses a caller transaction with a TypeError, and writes nothing', async () => {
    const store = createSqliteStore({ filename: freshFile() });
    await store.insertWebhook(webhookRecord({ events: ['run.completed'] }));
    const error = await rejection(store.publishEvent(eventOf('evt_tx'), () => 'dlv_tx', { query() {} }));
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(/cannot join a transaction/);
    // Not written: publishing it now is new.
    expect((await store.publishEvent(eventOf('evt_tx'), () => 'dlv_tx')).outcome).toBe('published');
    await store.close();
  });

  it('a record that breaks a CHECK is the SQLite error itself, and nothing is written', async () => {
    const store = createSqliteStore({ filename: freshFile() });
    const bad = keyRecord({ status: 'suspended' as never });
    const error = await rejection(store.insertApiKey(bad));
    expect(isKeyhookError(error)).toBe(false);
    expect((error as { code?: string }).code).toBe('SQLITE_CONSTRAINT_CHECK');
    expect(await store.getApiKey(bad.tenantId, bad.id)).toBeNull();
    await store.close();
  });
});
