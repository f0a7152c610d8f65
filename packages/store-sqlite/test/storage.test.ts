import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DELIVERY_RULES, type EventRecord } from '@keyhook/core/store';
import { idempotencyRecord, keyRecord, T0, webhookRecord } from '@keyhook/store-conformance';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../src/index.js';
import { boundLimit } from '../src/shared-statements.js';

const root = mkdtempSync(join(tmpdir(), 'keyhook-sqlite-storage-'));
let count = 0;
const freshFile = () => join(root, `db-${++count}.db`);

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('how keys are stored', () => {
  it('keeps timestamps as INTEGER epoch milliseconds and scopes as a JSON array', async () => {
    const filename = freshFile();
    const store = createSqliteStore({ filename });
    const key = keyRecord({
      scopes: ['items:read', 'runs:apply'],
      expiresAt: new Date('2027-02-03T04:05:06.789Z'),
      createdAt: new Date('2026-01-01T00:00:00.001Z'),
    });
    await store.insertApiKey(key);
    await store.touchApiKey(key.id, new Date('2026-01-02T00:00:00.002Z'), 60_000);
    await store.revokeApiKey(key.tenantId, key.id, new Date('2026-01-03T00:00:00.003Z'));
    await store.close();

    const raw = new Database(filename, { readonly: true });
    const row = raw
      .prepare(
        `SELECT typeof(expires_at) AS t1, typeof(created_at) AS t2, typeof(last_used_at) AS t3,
          typeof(revoked_at) AS t4, expires_at, created_at, last_used_at, revoked_at, scopes, status
         FROM keyhook_api_keys WHERE id = ?`,
      )
      .get(key.id);
    raw.close();
    expect(row).toEqual({
      t1: 'integer',
      t2: 'integer',
      t3: 'integer',
      t4: 'integer',
      expires_at: Date.parse('2027-02-03T04:05:06.789Z'),
      created_at: Date.parse('2026-01-01T00:00:00.001Z'),
      last_used_at: Date.parse('2026-01-02T00:00:00.002Z'),
      revoked_at: Date.parse('2026-01-03T00:00:00.003Z'),
      scopes: '["items:read","runs:apply"]',
      status: 'revoked',
    });
  });

  it('answers duplicate_lookup for a clashing id too, and writes nothing', async () => {
    const store = createSqliteStore({ filename: freshFile() });
    const first = keyRecord();
    await store.insertApiKey(first);
    expect(await store.insertApiKey(keyRecord({ id: first.id }))).toBe('duplicate_lookup');
    expect(await store.getApiKey(first.tenantId, first.id)).toEqual(first);
    await store.close();
  });

  it('lists a tenant through its (tenant_id, id) index, not a table scan', async () => {
    const filename = freshFile();
    await createSqliteStore({ filename }).close();
    const raw = new Database(filename, { readonly: true });
    const plan = raw
      .prepare(
        `EXPLAIN QUERY PLAN SELECT * FROM keyhook_api_keys WHERE tenant_id = ? AND id < ? ORDER BY id DESC LIMIT ${boundLimit()}`,
      )
      .all('tenant_a', 'key_z', 10) as { detail: string }[];
    raw.close();
    const details = plan.map((step) => step.detail).join('\n');
    expect(details).toContain('keyhook_api_keys_tenant_id');
    expect(details).not.toContain('USE TEMP B-TREE');
  });
});

describe('how webhooks and idempotency keys are stored', () => {
  it('keeps timestamps as INTEGER epoch milliseconds and events as a JSON array in the given order', async () => {
    const filename = freshFile();
    const store = createSqliteStore({ filename });
    const webhook = webhookRecord({
      events: ['run.failed', 'apply.failed'],
      createdAt: new Date('2026-01-01T00:00:00.001Z'),
      updatedAt: new Date('2026-01-02T00:00:00.002Z'),
    });
    await store.insertWebhook(webhook);
    const claim = idempotencyRecord();
    await store.claimIdempotencyKey(claim, T0);
    expect(await store.getWebhook(webhook.tenantId, webhook.id)).toEqual(webhook);
    await store.close();

    const raw = new Database(filename, { readonly: true });
    const webhookRow = raw
      .prepare(
        `SELECT typeof(created_at) AS t1, typeof(updated_at) AS t2, created_at, updated_at, events, status,
          disabled_reason FROM keyhook_webhooks WHERE id = ?`,
      )
      .get(webhook.id);
    const claimRow = raw
      .prepare(
        `SELECT typeof(created_at) AS t1, typeof(locked_until) AS t2, typeof(expires_at) AS t3, state,
          response_sealed FROM keyhook_idempotency_keys WHERE tenant_id = ? AND key = ?`,
      )
      .get(claim.tenantId, claim.key);
    raw.close();
    expect(webhookRow).toEqual({
      t1: 'integer',
      t2: 'integer',
      created_at: Date.parse('2026-01-01T00:00:00.001Z'),
      updated_at: Date.parse('2026-01-02T00:00:00.002Z'),
      events: '["run.failed","apply.failed"]',
      status: 'active',
      disabled_reason: null,
    });
    expect(claimRow).toEqual({
      t1: 'integer',
      t2: 'integer',
      t3: 'integer',
      state: 'in_progress',
      response_sealed: null,
    });
  });

  it('throws a clashing webhook id as the SQLite error, not as an active twin, and writes nothing', async () => {
    const store = createSqliteStore({ filename: freshFile() });
    const first = webhookRecord();
    await store.insertWebhook(first);
    const clash = webhookRecord({ id: first.id, status: 'disabled', disabledReason: 'manual' });
    const error = await store.insertWebhook(clash).then(
      () => null,
      (e: unknown) => e,
    );
    expect((error as { code?: string } | null)?.code).toBe('SQLITE_CONSTRAINT_PRIMARYKEY');
    expect(await store.getWebhook(first.tenantId, first.id)).toEqual(first);
    await store.close();
  });

  it('rolls the webhook back when the completion in its transaction fails', async () => {
    const filename = freshFile();
    const store = createSqliteStore({ filename });
    const claim = idempotencyRecord();
    await store.claimIdempotencyKey(claim, T0);
    // A trigger makes the completion's UPDATE fail after the webhook's INSERT has run.
    const raw = new Database(filename);
    raw.exec(`CREATE TRIGGER fail_completion BEFORE UPDATE ON keyhook_idempotency_keys
      BEGIN SELECT RAISE(ABORT, 'completion refused'); END`);
    raw.close();
    const webhook = webhookRecord();
    const completion = {
      tenantId: claim.tenantId,
      key: claim.key,
      claimId: claim.claimId,
      responseSealed: 's',
    };
    await expect(store.insertWebhook(webhook, completion)).rejects.toThrow('completion refused');
    expect(await store.getWebhook(webhook.tenantId, webhook.id)).toBeNull();
    await store.close();
  });

  it('lists webhooks through their (tenant_id, id) index and purges through the expires_at index', async () => {
    const filename = freshFile();
    await createSqliteStore({ filename }).close();
    const raw = new Database(filename, { readonly: true });
    const planOf = (sql: string, ...params: unknown[]) =>
      (raw.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[])
        .map((step) => step.detail)
        .join('\n');
    const list = planOf(
      `SELECT * FROM keyhook_webhooks WHERE tenant_id = ? AND id < ? ORDER BY id DESC LIMIT ${boundLimit()}`,
      'tenant_a',
      'wh_z',
      10,
    );
    const purge = planOf('DELETE FROM keyhook_idempotency_keys WHERE expires_at <= ?', 0);
    raw.close();
    expect(list).toContain('keyhook_webhooks_tenant_id');
    expect(list).not.toContain('USE TEMP B-TREE');
    expect(purge).toContain('keyhook_idempotency_keys_expires_at');
  });

  it('counts the queue (the queue-depth gauge) from covering indexes, never from the table', async () => {
    const filename = freshFile();
    await createSqliteStore({ filename }).close();
    const raw = new Database(filename, { readonly: true });
    const planOf = (sql: string) =>
      (raw.prepare(`EXPLAIN QUERY PLAN ${sql}`).all({ now: 0 }) as { detail: string }[])
        .map((step) => step.detail)
        .join('\n');
    // The shape of the count in src/operations/count-queued-deliveries.ts: status and due time, of queued rows only.
    const queued = planOf(
      `SELECT count(*) FILTER (WHERE status <> 'in_flight' AND due_at <= @now),
          count(*) FILTER (WHERE status = 'in_flight')
        FROM keyhook_deliveries INDEXED BY keyhook_deliveries_due WHERE due_at IS NOT NULL`,
    );
    const held = planOf(
      `SELECT count(*) FROM keyhook_deliveries INDEXED BY keyhook_deliveries_held WHERE status = 'held'`,
    );
    raw.close();
    expect(queued).toContain('USING COVERING INDEX keyhook_deliveries_due');
    expect(held).toContain('USING COVERING INDEX keyhook_deliveries_held');
  });
});

describe('how events, deliveries and attempts are stored', () => {
  const event = (id: string, createdAt: Date): EventRecord => ({
    id,
    tenantId: 'tenant_a',
    type: 'run.completed',
    payload: JSON.stringify({ id, type: 'run.completed', createdAt: createdAt.toISOString(), data: {} }),
    createdAt,
    traceContext: null,
  });
  let minted = 0;
  const deliveryId = () => `dlv_${String(++minted).padStart(6, '0')}`;

  it('keeps timestamps as INTEGER epoch milliseconds, the payload as given, and the failure count on the webhook', async () => {
    const filename = freshFile();
    const store = createSqliteStore({ filename });
    const webhook = webhookRecord({ events: ['run.completed'] });
    await store.insertWebhook(webhook);
    const published = await store.publishEvent(
      event('evt_1', new Date('2026-01-01T00:00:00.001Z')),
      deliveryId,
    );
    if (published.outcome !== 'published') throw new Error('expected a new event');
    const [leased] = await store.leaseDeliveries({
      now: new Date('2026-01-01T00:00:00.002Z'),
      limit: 1,
      leaseMs: 1000,
      leaseId: 'lease-1',
    });
    await store.completeAttempt({
      tenantId: 'tenant_a',
      deliveryId: leased!.delivery.id,
      leaseId: 'lease-1',
      attempt: {
        deliveryId: leased!.delivery.id,
        tenantId: 'tenant_a',
        attempt: 1,
        startedAt: new Date('2026-01-01T00:00:00.003Z'),
        durationMs: 12,
        statusCode: 500,
        error: 'HTTP 500',
        responseBody: 'no',
      },
      status: 'retry_scheduled',
      dueAt: new Date('2026-01-01T00:01:00.004Z'),
      endpointFailures: 'increment',
      autoDisable: DELIVERY_RULES.autoDisable,
      at: new Date('2026-01-01T00:00:00.005Z'),
    });
    await store.close();

    const raw = new Database(filename, { readonly: true });
    const eventRow = raw
      .prepare('SELECT typeof(created_at) AS t, created_at, payload FROM keyhook_events WHERE id = ?')
      .get('evt_1');
    const deliveryRow = raw
      .prepare(
        `SELECT typeof(due_at) AS t1, typeof(last_attempt_at) AS t2, typeof(created_at) AS t3,
          typeof(updated_at) AS t4, status, attempts, due_at, lease_id, held_since, last_attempt_at,
          created_at, updated_at FROM keyhook_deliveries WHERE id = ?`,
      )
      .get(leased!.delivery.id);
    const attemptRow = raw
      .prepare('SELECT typeof(started_at) AS t, attempt, started_at, duration_ms FROM keyhook_attempts')
      .get();
    const failures = raw
      .prepare('SELECT consecutive_failures FROM keyhook_webhooks WHERE id = ?')
      .pluck()
      .get(webhook.id);
    raw.close();
    expect(eventRow).toEqual({
      t: 'integer',
      created_at: Date.parse('2026-01-01T00:00:00.001Z'),
      payload: published.event.payload,
    });
    expect(deliveryRow).toEqual({
      t1: 'integer',
      t2: 'integer',
      t3: 'integer',
      t4: 'integer',
      status: 'retry_scheduled',
      attempts: 1,
      due_at: Date.parse('2026-01-01T00:01:00.004Z'),
      lease_id: null,
      held_since: null,
      last_attempt_at: Date.parse('2026-01-01T00:00:00.003Z'),
      created_at: Date.parse('2026-01-01T00:00:00.001Z'),
      updated_at: Date.parse('2026-01-01T00:00:00.005Z'),
    });
    expect(attemptRow).toEqual({
      t: 'integer',
      attempt: 1,
      started_at: Date.parse('2026-01-01T00:00:00.003Z'),
      duration_ms: 12,
    });
    expect(failures).toBe(1);
  });

  it('refuses a delivery row that breaks the state machine (a lease outside in_flight)', async () => {
    const filename = freshFile();
    const store = createSqliteStore({ filename });
    const webhook = webhookRecord({ events: ['run.completed'] });
    await store.insertWebhook(webhook);
    const published = await store.publishEvent(event('evt_1', T0), deliveryId);
    if (published.outcome !== 'published') throw new Error('expected a new event');
    await store.close();
    const raw = new Database(filename);
    expect(() =>
      raw
        .prepare("UPDATE keyhook_deliveries SET lease_id = 'x' WHERE id = ?")
        .run(published.deliveries[0]!.id),
    ).toThrow(expect.objectContaining({ code: 'SQLITE_CONSTRAINT_CHECK' }));
    raw.close();
  });

  it('deletes a webhook with its deliveries and attempts on a connection that has foreign keys off', async () => {
    const db = new Database(freshFile());
    db.pragma('foreign_keys = OFF');
    const store = createSqliteStore({ database: db });
    const webhook = webhookRecord({ events: ['run.completed'] });
    const other = webhookRecord({ events: ['run.completed'], url: 'https://other.example.com/hook' });
    await store.insertWebhook(webhook);
    await store.insertWebhook(other);
    await store.publishEvent(event('evt_1', T0), deliveryId);
    const leased = await store.leaseDeliveries({ now: T0, limit: 10, leaseMs: 1000, leaseId: 'lease-1' });
    for (const { delivery } of leased) {
      await store.completeAttempt({
        tenantId: 'tenant_a',
        deliveryId: delivery.id,
        leaseId: 'lease-1',
        attempt: {
          deliveryId: delivery.id,
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
      });
    }
    expect(await store.deleteWebhook('tenant_b', webhook.id)).toBe(false);
    expect(await store.deleteWebhook('tenant_a', webhook.id)).toBe(true);
    const count = (table: string) => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get();
    // Only the other endpoint's delivery and attempt are left; the event stays.
    expect(count('keyhook_deliveries')).toBe(1);
    expect(count('keyhook_attempts')).toBe(1);
    expect(count('keyhook_events')).toBe(1);
    expect(await store.listDeliveries('tenant_a', other.id, { limit: 10 })).toHaveLength(1);
    await store.close();
    db.close();
  });

  it('leases through the partial due index in order, and lists, holds and expires through their indexes', async () => {
    const filename = freshFile();
    await createSqliteStore({ filename }).close();
    const raw = new Database(filename, { readonly: true });
    const planOf = (sql: string, ...params: unknown[]) =>
      (raw.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[])
        .map((step) => step.detail)
        .join('\n');
    const lease = planOf(
      `SELECT d.id FROM keyhook_deliveries AS d INDEXED BY keyhook_deliveries_due
        CROSS JOIN keyhook_webhooks AS w ON w.id = d.webhook_id
        CROSS JOIN keyhook_events AS e ON e.tenant_id = d.tenant_id AND e.id = d.event_id
        WHERE d.due_at <= ? AND w.status = 'active'
        ORDER BY d.due_at, d.id LIMIT ?`,
      0,
      10,
    );
    const list = planOf(
      `SELECT * FROM keyhook_deliveries WHERE webhook_id = ? AND tenant_id = ? AND (? IS NULL OR status = ?)
        AND id < ? ORDER BY id DESC LIMIT ?`,
      'wh_a',
      'tenant_a',
      null,
      null,
      'dlv_z',
      10,
    );
    const hold = planOf(
      `UPDATE keyhook_deliveries SET status = 'held' WHERE webhook_id = ? AND status IN ('pending', 'retry_scheduled')`,
      'wh_a',
    );
    const expire = planOf(
      `UPDATE keyhook_deliveries SET status = 'failed' WHERE status = 'held' AND held_since <= ?`,
      0,
    );
    raw.close();
    expect(lease).toContain('keyhook_deliveries_due');
    expect(list).toContain('keyhook_deliveries_webhook_id');
    expect(hold).toContain('keyhook_deliveries_webhook_id');
    expect(expire).toContain('keyhook_deliveries_held');
    for (const plan of [lease, list]) expect(plan).not.toContain('USE TEMP B-TREE');
  });

  it('recovers failed deliveries in batches walked in order on their partial index, never a scan and a sort', async () => {
    const filename = freshFile();
    await createSqliteStore({ filename }).close();
    const raw = new Database(filename, { readonly: true });
    // The batch as store.recoverFailedDeliveries chooses it (without its INDEXED BY, so this
    // shows the planner's own choice agrees with the pinned one).
    const plan = (
      raw
        .prepare(
          `EXPLAIN QUERY PLAN SELECT id FROM keyhook_deliveries
            WHERE webhook_id = ? AND status = 'failed' AND tenant_id = ? AND created_at >= ? AND created_at < ?
            ORDER BY created_at, id LIMIT ?`,
        )
        .all('wh_a', 'tenant_a', 0, 1, 500) as { detail: string }[]
    )
      .map((step) => step.detail)
      .join('\n');
    raw.close();
    expect(plan).toContain('keyhook_deliveries_failed (webhook_id=? AND created_at>? AND created_at<?)');
    expect(plan).not.toContain('USE TEMP B-TREE');
  });

  it("writes a delivery's insert, lease and end without building a temporary table", async () => {
    // SQLite evaluates `x IN ('a', 'b')` in a check or a partial index's WHERE by building an
    // ephemeral table of the list, for every row written (migration 0004 says what it cost).
    const filename = freshFile();
    await createSqliteStore({ filename }).close();
    const raw = new Database(filename, { readonly: true });
    const opcodes = (sql: string) =>
      (raw.prepare(`EXPLAIN ${sql}`).all() as { opcode: string }[]).map((step) => step.opcode);
    const writes = [
      `INSERT INTO keyhook_deliveries (id, tenant_id, webhook_id, event_id, event_type, status, attempts,
        due_at, lease_id, held_since, last_attempt_at, created_at, updated_at)
        VALUES ('dlv_1', 't', 'wh_1', 'evt_1', 'run.completed', 'in_flight', 0, 1, 'l', NULL, NULL, 1, 1)`,
      `UPDATE keyhook_deliveries SET status = 'in_flight', lease_id = 'l', due_at = 2, updated_at = 2 WHERE id = 'dlv_1'`,
      `UPDATE keyhook_deliveries SET status = 'succeeded', due_at = NULL, lease_id = NULL, attempts = attempts + 1,
        last_attempt_at = 2, updated_at = 2 WHERE id = 'dlv_1' AND status = 'in_flight' AND lease_id = 'l'`,
      `INSERT INTO keyhook_attempts (delivery_id, attempt, tenant_id, started_at, duration_ms, status_code, error,
        response_body) VALUES ('dlv_1', 1, 't', 1, 1, 200, NULL, '')`,
    ];
    for (const sql of writes) expect(opcodes(sql)).not.toContain('OpenEphemeral');
    raw.close();
  });
});

describe("seeing another connection's key changes (what core's key cache relies on)", () => {
  async function revokedByPeer(changeCheckIntervalMs: number) {
    const filename = freshFile();
    const store = createSqliteStore({ filename, changeCheckIntervalMs });
    const peer = createSqliteStore({ filename });
    const key = keyRecord();
    await store.insertApiKey(key);
    const before = store.keyChangeVersion();
    await peer.revokeApiKey(key.tenantId, key.id, new Date());
    await peer.close();
    return { store, before };
  }

  it('asks SQLite at most once per interval, however often it is called', async () => {
    const { store, before } = await revokedByPeer(60_000);
    // The first call above asked; no call in the next minute asks again, so none sees the peer.
    for (let call = 0; call < 10_000; call++) expect(store.keyChangeVersion()).toBe(before);
    await store.close();
  });

  it('sees the change once the interval has passed, for a caller that never lets the event loop turn', async () => {
    const { store, before } = await revokedByPeer(2);
    const start = performance.now();
    let seenAfterMs: number | undefined;
    // Synchronous: no timer can fire in here, only the clock moves.
    while (seenAfterMs === undefined && performance.now() - start < 1000) {
      if (store.keyChangeVersion() !== before) seenAfterMs = performance.now() - start;
    }
    expect(seenAfterMs).toBeDefined();
    await store.close();
  });
});
