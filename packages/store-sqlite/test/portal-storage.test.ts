import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DELIVERY_RULES } from '@keyhook/core/store';
import { portalSessionRecord, sha256, T0, webhookRecord } from '@keyhook/store-conformance';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../src/index.js';
import { prepareCountRecentAttempts } from '../src/operations/count-recent-attempts.js';
import { EXCHANGE_LINK_SQL, SESSION_BY_LINK_SQL } from '../src/operations/exchange-portal-link.js';
import { prepareFindPortalSession } from '../src/operations/find-portal-session.js';
import { PURGE_SESSIONS_SQL } from '../src/operations/insert-portal-session.js';
import { prepareRevokePortalSessions } from '../src/operations/revoke-portal-sessions.js';

const root = mkdtempSync(join(tmpdir(), 'keyhook-sqlite-portal-'));
let count = 0;
const freshFile = () => join(root, `db-${++count}.db`);
const at = (ms: number) => new Date(T0.getTime() + ms);

afterAll(() => rmSync(root, { recursive: true, force: true }));

/** What SQLite plans for `sql`, one step a line. */
function planOf(db: Database.Database, sql: string, ...params: unknown[]): string {
  return (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[])
    .map((step) => step.detail)
    .join('\n');
}

/** One delivery to tenant_a's one webhook, attempted once at `ms` with `statusCode`, through the store. */
async function attemptOnce(store: ReturnType<typeof createSqliteStore>, ms: number, statusCode: number) {
  const ok = statusCode < 300;
  const event = {
    id: `evt_${ms}`,
    tenantId: 'tenant_a',
    type: 'run.completed',
    payload: '{}',
    createdAt: at(ms),
    traceContext: null,
  };
  await store.publishEvent(event, () => `dlv_${ms}`);
  const [leased] = await store.leaseDeliveries({
    now: at(ms),
    limit: 1,
    leaseMs: 30_000,
    leaseId: `l_${ms}`,
  });
  const delivery = leased!.delivery;
  await store.completeAttempt({
    tenantId: 'tenant_a',
    deliveryId: delivery.id,
    leaseId: delivery.leaseId!,
    attempt: {
      deliveryId: delivery.id,
      tenantId: 'tenant_a',
      attempt: 1,
      startedAt: at(ms),
      durationMs: 5,
      statusCode,
      error: ok ? null : `HTTP ${statusCode}`,
      responseBody: null,
    },
    status: ok ? 'succeeded' : 'failed',
    dueAt: null,
    endpointFailures: ok ? 'reset' : 'increment',
    autoDisable: DELIVERY_RULES.autoDisable,
    at: at(ms),
  });
}

describe('how portal sessions are stored', () => {
  it('keeps hashes only, lists as JSON arrays (NULL for any scope) and timestamps as INTEGER epoch milliseconds', async () => {
    const filename = freshFile();
    const store = createSqliteStore({ filename });
    const record = portalSessionRecord({
      permissions: ['keys:read', 'webhooks:read'],
      createdAt: new Date('2026-03-01T12:00:00.001Z'),
      expiresAt: new Date('2026-03-01T13:00:00.002Z'),
    });
    const scoped = portalSessionRecord({ scopes: ['items:read'] });
    await store.insertPortalSession(record, T0);
    await store.insertPortalSession(scoped, T0);
    const sessionHash = sha256('kps_session');
    await store.exchangePortalLink(record.linkHash, sessionHash, new Date('2026-03-01T12:00:01.003Z'));
    await store.revokePortalSessions('tenant_a', record.id, new Date('2026-03-01T12:00:02.004Z'));
    await store.close();

    const raw = new Database(filename, { readonly: true });
    const rows = raw
      .prepare(
        `SELECT link_hash, session_hash, permissions, scopes, typeof(created_at) AS t1, typeof(expires_at) AS t2,
          typeof(exchanged_at) AS t3, typeof(revoked_at) AS t4, created_at, expires_at, exchanged_at, revoked_at
         FROM keyhook_portal_sessions WHERE id IN (?, ?) ORDER BY id = ? DESC`,
      )
      .all(record.id, scoped.id, record.id);
    raw.close();
    expect(rows).toEqual([
      {
        link_hash: record.linkHash,
        session_hash: sessionHash,
        permissions: '["keys:read","webhooks:read"]',
        scopes: null,
        t1: 'integer',
        t2: 'integer',
        t3: 'integer',
        t4: 'integer',
        created_at: Date.parse('2026-03-01T12:00:00.001Z'),
        expires_at: Date.parse('2026-03-01T13:00:00.002Z'),
        exchanged_at: Date.parse('2026-03-01T12:00:01.003Z'),
        revoked_at: Date.parse('2026-03-01T12:00:02.004Z'),
      },
      expect.objectContaining({ scopes: '["items:read"]', session_hash: null, exchanged_at: null }),
    ]);
  });

  it("reads through an index in every statement: the link, the session hash, the expiry, the tenant, and the tenant's attempts by time", async () => {
    const filename = freshFile();
    await createSqliteStore({ filename }).close();
    const raw = new Database(filename, { readonly: true });
    const revoke = prepareRevokePortalSessions(raw);
    const exchange = planOf(raw, EXCHANGE_LINK_SQL, 'h', 0, 'l', 0);
    const byLink = planOf(raw, SESSION_BY_LINK_SQL, 'l');
    const byHash = planOf(raw, prepareFindPortalSession(raw).source, 'h');
    const purge = planOf(raw, PURGE_SESSIONS_SQL, 0);
    const revokeOne = planOf(raw, revoke.one.source, 0, 'tenant_a', 'ps_1');
    const revokeAll = planOf(raw, revoke.everyOfTenant.source, 0, 'tenant_a');
    const counts = planOf(raw, prepareCountRecentAttempts(raw).source, 200, 299, 200, 299, 'tenant_a', 0);
    raw.close();
    // The UNIQUE columns' own indexes.
    expect(exchange).toMatch(
      /SEARCH keyhook_portal_sessions USING INDEX sqlite_autoindex_\w+ \(link_hash=\?\)/,
    );
    expect(byLink).toMatch(/USING INDEX sqlite_autoindex_\w+ \(link_hash=\?\)/);
    expect(byHash).toMatch(/USING INDEX sqlite_autoindex_\w+ \(session_hash=\?\)/);
    expect(purge).toContain('USING INDEX keyhook_portal_sessions_expires_at (expires_at<?)');
    expect(revokeOne).toMatch(/USING INDEX sqlite_autoindex_keyhook_portal_sessions_\d+ \(id=\?\)/);
    expect(revokeAll).toContain('USING INDEX keyhook_portal_sessions_tenant_id (tenant_id=?)');
    // The window's entries of the tenant alone, each attempt's delivery by its key: no scan.
    expect(counts).toContain(
      'SEARCH a USING COVERING INDEX keyhook_attempts_tenant_started (tenant_id=? AND started_at>?)',
    );
    expect(counts).toContain('SEARCH d USING PRIMARY KEY (id=?)');
    expect(counts).not.toMatch(/\bSCAN\b/);
  });

  it('counts attempts recorded before migration 0011: its index is built over the rows already there', async () => {
    const filename = freshFile();
    const store = createSqliteStore({ filename });
    const webhook = webhookRecord({ events: ['run.completed'] });
    await store.insertWebhook(webhook);
    await attemptOnce(store, 1000, 200);
    await attemptOnce(store, 2000, 503);
    await store.close();
    // Back to the schema of 0010, rows and all: 0011 only adds, so this is what that release left.
    const raw = new Database(filename);
    raw.exec(`DROP INDEX keyhook_attempts_tenant_started; DROP TABLE keyhook_portal_sessions;
      DELETE FROM keyhook_migrations WHERE version = 11`);
    raw.close();

    const upgraded = createSqliteStore({ filename });
    expect(await upgraded.countRecentAttempts('tenant_a', at(1000))).toEqual([
      { webhookId: webhook.id, succeeded: 1, failed: 1 },
    ]);
    expect(await upgraded.countRecentAttempts('tenant_a', at(1001))).toEqual([
      { webhookId: webhook.id, succeeded: 0, failed: 1 },
    ]);
    await upgraded.close();
  });
});
