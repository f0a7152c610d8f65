import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keyRecord } from '@keyhook/testing/fixtures';
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
