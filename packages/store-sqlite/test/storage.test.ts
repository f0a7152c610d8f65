import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { idempotencyRecord, keyRecord, T0, webhookRecord } from '@keyhook/testing/fixtures';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../src/index.js';

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
        'EXPLAIN QUERY PLAN SELECT * FROM keyhook_api_keys WHERE tenant_id = ? AND id < ? ORDER BY id DESC LIMIT ?',
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
      'SELECT * FROM keyhook_webhooks WHERE tenant_id = ? AND id < ? ORDER BY id DESC LIMIT ?',
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
});
