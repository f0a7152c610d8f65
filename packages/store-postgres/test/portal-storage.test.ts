import { portalSessionRecord, sha256, T0, webhookRecord } from '@keyhook/store-conformance';
import { POSTGRES_TEST_URL, postgresAvailable } from '@keyhook/testing/postgres';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { checkOut } from '../src/checkout.js';
import { createPostgresStore, type PostgresStore } from '../src/index.js';
import { statements as countStatements } from '../src/operations/count-recent-attempts.js';
import { statementsIn } from '../src/statements.js';
import { Schemas } from './delivery-helpers.js';

const available = await postgresAvailable();

const admin = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 2 });
const schemas = new Schemas(admin);
const at = (ms: number) => new Date(T0.getTime() + ms);

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Actual Rows': number;
  Plans?: PlanNode[];
}

/** Every node of the plan EXPLAIN ANALYZE gives for `sql`, run in a transaction rolled back. */
async function planNodes(sql: string, params: unknown[]): Promise<PlanNode[]> {
  const client = await checkOut(admin);
  try {
    await client.query('BEGIN');
    const { rows } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
    const nodes: PlanNode[] = [];
    const walk = (node: PlanNode) => {
      nodes.push(node);
      for (const child of node.Plans ?? []) walk(child);
    };
    walk(rows[0]['QUERY PLAN'][0].Plan);
    return nodes;
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

/**
 * `count` deliveries of `webhookId`, each attempted once, written straight to the tables: the
 * k-th attempt started at T0 + k s, with a 200 when k is even and a 500 when it is odd.
 */
async function attemptsOf(store: PostgresStore, tenantId: string, webhookId: string, count: number) {
  const q = (table: string) => `"${store.schema}".${table}`;
  const prefix = `${tenantId}_${webhookId}`;
  await admin.query(
    `INSERT INTO ${q('keyhook_events')} (tenant_id, id, type, payload, created_at)
      SELECT $1, 'evt_' || $2 || g, 'run.completed', '{}', $3::timestamptz + g * interval '1 s'
      FROM generate_series(1, $4::integer) AS g`,
    [tenantId, prefix, T0, count],
  );
  await admin.query(
    `INSERT INTO ${q('keyhook_deliveries')} (id, tenant_id, webhook_id, event_id, event_type, status,
        attempts, last_attempt_at, created_at, updated_at)
      SELECT 'dlv_' || $2 || g, $1, $5, 'evt_' || $2 || g, 'run.completed',
        CASE WHEN g % 2 = 0 THEN 'succeeded' ELSE 'failed' END, 1,
        $3::timestamptz + g * interval '1 s', $3::timestamptz + g * interval '1 s', $3
      FROM generate_series(1, $4::integer) AS g`,
    [tenantId, prefix, T0, count, webhookId],
  );
  await admin.query(
    `INSERT INTO ${q('keyhook_delivery_attempts')} (delivery_id, tenant_id, attempt, started_at, duration_ms,
        status_code, error, response_body)
      SELECT 'dlv_' || $2 || g, $1, 1, $3::timestamptz + g * interval '1 s', 5,
        CASE WHEN g % 2 = 0 THEN 200 ELSE 500 END, NULL, NULL
      FROM generate_series(1, $4::integer) AS g`,
    [tenantId, prefix, T0, count],
  );
}

(available ? describe : describe.skip)('PostgresStore portal sessions and attempt counts', () => {
  afterAll(async () => {
    await schemas.dropAll();
    await admin.end();
  });

  it('keeps hashes only, lists as text[] (NULL for any scope) and timestamps as timestamptz', async () => {
    const store = await schemas.open('portalrow');
    try {
      const record = portalSessionRecord({ permissions: ['keys:read', 'webhooks:read'] });
      const scoped = portalSessionRecord({ scopes: ['items:read'] });
      await store.insertPortalSession(record, T0);
      await store.insertPortalSession(scoped, T0);
      const sessionHash = sha256('kps_session');
      await store.exchangePortalLink(record.linkHash, sessionHash, at(1003));
      const { rows } = await admin.query(
        `SELECT link_hash, session_hash, permissions, scopes, exchanged_at, revoked_at,
            pg_typeof(permissions)::text AS lists, pg_typeof(created_at)::text AS times
          FROM "${store.schema}".keyhook_portal_sessions ORDER BY id = $1 DESC`,
        [record.id],
      );
      expect(rows).toEqual([
        {
          link_hash: record.linkHash,
          session_hash: sessionHash,
          permissions: ['keys:read', 'webhooks:read'],
          scopes: null,
          exchanged_at: at(1003),
          revoked_at: null,
          lists: 'text[]',
          times: 'timestamp with time zone',
        },
        expect.objectContaining({ scopes: ['items:read'], session_hash: null, exchanged_at: null }),
      ]);
    } finally {
      await store.close();
    }
  });

  it("counts from the window's entries of the tenant's index, each delivery read by its key: no scan, with statistics or without", async () => {
    const store = await schemas.open('countplan');
    try {
      const mine = webhookRecord({ events: ['run.completed'] });
      const theirs = webhookRecord({ tenantId: 'tenant_b', events: ['run.completed'] });
      await store.insertWebhook(mine);
      await store.insertWebhook(theirs);
      // 2,000 attempts of tenant_a, 18,000 of tenant_b, one a second from T0.
      await attemptsOf(store, 'tenant_a', mine.id, 2000);
      await attemptsOf(store, 'tenant_b', theirs.id, 18_000);
      const sql = statementsIn(store.schema, countStatements).countRecentAttempts;
      // The last 200 of tenant_a's: from T0 + 1,801 s.
      const since = at(1801 * 1000);
      for (const analysed of [false, true]) {
        if (analysed) {
          await admin.query(`ANALYZE "${store.schema}".keyhook_delivery_attempts`);
          await admin.query(`ANALYZE "${store.schema}".keyhook_deliveries`);
        }
        const nodes = await planNodes(sql, ['tenant_a', since, 200, 299]);
        const shape = JSON.stringify(
          nodes.map((n) => [n['Node Type'], n['Index Name'] ?? n['Relation Name']]),
        );
        expect(
          nodes.map((n) => n['Node Type']),
          shape,
        ).not.toContain('Seq Scan');
        const window = nodes.find((n) => n['Index Name'] === 'keyhook_delivery_attempts_tenant_started_idx');
        expect(window, shape).toBeDefined();
        expect(window!['Actual Rows']).toBe(200);
        expect(
          nodes.some((n) => n['Index Name'] === 'keyhook_deliveries_pkey'),
          shape,
        ).toBe(true);
      }
      expect(await store.countRecentAttempts('tenant_a', since)).toEqual([
        { webhookId: mine.id, succeeded: 100, failed: 100 },
      ]);
    } finally {
      await store.close();
    }
  });

  it('counts attempts recorded before migration 0012: its index is built over the rows already there', async () => {
    const store = await schemas.open('portalupgrade');
    const schema = store.schema;
    const webhook = webhookRecord({ events: ['run.completed'] });
    await store.insertWebhook(webhook);
    await attemptsOf(store, 'tenant_a', webhook.id, 10);
    await store.close();
    // Back to the schema of 0011, rows and all: 0012 only adds, so this is what that release left.
    await admin.query(`DROP INDEX "${schema}".keyhook_delivery_attempts_tenant_started_idx`);
    await admin.query(`DROP TABLE "${schema}".keyhook_portal_sessions`);
    await admin.query(`DELETE FROM "${schema}".keyhook_migrations WHERE version = 12`);

    const upgraded = await createPostgresStore({ connectionString: POSTGRES_TEST_URL, schema, poolSize: 2 });
    try {
      expect(await upgraded.countRecentAttempts('tenant_a', at(6000))).toEqual([
        { webhookId: webhook.id, succeeded: 3, failed: 2 },
      ]);
    } finally {
      await upgraded.close();
    }
  });
});
