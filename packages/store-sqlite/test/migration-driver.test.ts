import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { keyRecord, T0, webhookRecord } from '@keyhook/store-conformance';
import {
  BACKFILLED_FEED,
  EVENTS_BEFORE_THE_FEED,
  feedAfterBackfill,
  recordingLogger,
} from '@keyhook/testing/support';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/connection.js';
import { createSqliteStore } from '../src/index.js';
import { KEY_COLUMNS, toRow } from '../src/key-row.js';
import { applyMigrations, loadMigrations, appliedVersions as migrate } from '../src/migration-driver.js';

const root = mkdtempSync(join(tmpdir(), 'keyhook-sqlite-migrations-'));
let count = 0;
const freshFile = () => join(root, `db-${++count}.db`);

afterAll(() => rmSync(root, { recursive: true, force: true }));

interface MigrationRow {
  version: number;
  name: string;
  applied_at: number;
}

function recorded(filename: string): MigrationRow[] {
  const raw = new Database(filename, { readonly: true });
  try {
    return raw.prepare('SELECT * FROM keyhook_migrations ORDER BY version').all() as MigrationRow[];
  } finally {
    raw.close();
  }
}

const shipped = loadMigrations();

describe('migrations', () => {
  it('ships numbered .sql files, starting at 0001_api_keys', () => {
    expect(shipped.length).toBeGreaterThan(0);
    expect(shipped[0]).toMatchObject({ version: 1, name: '0001_api_keys' });
    expect(shipped.map((m) => m.version)).toEqual(shipped.map((_, i) => i + 1));
  });

  it('applies every migration once at open and records version, name and applied_at', async () => {
    const filename = freshFile();
    const before = Date.now();
    const store = createSqliteStore({ filename });
    const after = Date.now();
    await store.close();
    const rows = recorded(filename);
    expect(rows.map((r) => [r.version, r.name])).toEqual(shipped.map((m) => [m.version, m.name]));
    for (const row of rows) {
      expect(Number.isInteger(row.applied_at)).toBe(true);
      expect(row.applied_at).toBeGreaterThanOrEqual(before);
      expect(row.applied_at).toBeLessThanOrEqual(after);
    }
  });

  it('is idempotent: reopening applies nothing and leaves the records as they were', async () => {
    const filename = freshFile();
    await createSqliteStore({ filename }).close();
    const first = recorded(filename);
    for (let i = 0; i < 3; i++) await createSqliteStore({ filename }).close();
    expect(recorded(filename)).toEqual(first);
    const db = openDatabase(filename);
    expect(migrate(db)).toEqual([]);
    db.close();
  });

  it('several connections opening one new file in turn: the first applies, the rest find it done', () => {
    const filename = freshFile();
    const connections = Array.from({ length: 5 }, () => openDatabase(filename));
    const applied = connections.map((db) => migrate(db));
    for (const db of connections) db.close();
    expect(applied[0]).toEqual(shipped.map((m) => m.version));
    expect(applied.slice(1)).toEqual([[], [], [], []]);
    expect(recorded(filename)).toHaveLength(shipped.length);
  });

  it('several processes opening one new file at the same moment apply each migration exactly once', async () => {
    const filename = freshFile();
    const children = Array.from({ length: 4 }, () => startChild(filename));
    await Promise.all(children.map((child) => child.ready));
    for (const child of children) child.process.stdin?.end('go\n');
    const results = await Promise.all(children.map((child) => child.done));
    const appliedBy = new Map<number, number>();
    for (const { applied } of results) {
      for (const version of applied) appliedBy.set(version, (appliedBy.get(version) ?? 0) + 1);
    }
    // By number: a plain sort() compares the pairs as text, and puts 10 before 2.
    expect([...appliedBy.entries()].sort((a, b) => a[0] - b[0])).toEqual(shipped.map((m) => [m.version, 1]));
    expect(recorded(filename).map((r) => r.version)).toEqual(shipped.map((m) => m.version));
  });

  it('runs each migration in its own transaction: a failing one leaves no trace, earlier ones stay', () => {
    const dir = join(root, `migrations-${++count}`);
    mkdirSync(dir);
    writeFileSync(join(dir, '0001_first.sql'), 'CREATE TABLE first_table (id INTEGER PRIMARY KEY);');
    writeFileSync(join(dir, '0002_broken.sql'), 'CREATE TABLE half_done (id INTEGER);\nNOT VALID SQL;');
    const filename = freshFile();
    const db = openDatabase(filename);
    const logger = recordingLogger();
    expect(() => applyMigrations(db, loadMigrations(dir), logger)).toThrow(/syntax error/);
    // Said in the log too, beside its start line, with the driver's reason.
    expect(logger.lines.at(-1)).toMatchObject({
      level: 'error',
      context: { version: 2, name: '0002_broken', err: expect.stringMatching(/syntax error/) },
      message: 'migration 0002_broken failed and was rolled back',
    });
    const tables = db
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
      .pluck()
      .all();
    expect(tables).toEqual(['first_table', 'keyhook_migrations']);
    expect(db.prepare('SELECT version FROM keyhook_migrations').pluck().all()).toEqual([1]);
    db.close();
  });

  it('refuses migration files that skip a number or are misnamed', () => {
    const gap = join(root, `gap-${++count}`);
    mkdirSync(gap);
    writeFileSync(join(gap, '0001_a.sql'), 'SELECT 1;');
    writeFileSync(join(gap, '0003_c.sql'), 'SELECT 1;');
    expect(() => loadMigrations(gap)).toThrow(/expected migration 2/);
    const misnamed = join(root, `misnamed-${++count}`);
    mkdirSync(misnamed);
    writeFileSync(join(misnamed, 'first.sql'), 'SELECT 1;');
    expect(() => loadMigrations(misnamed)).toThrow(/not named like 0001_name\.sql/);
  });

  it('upgrades a database of the webhooks release: existing webhooks start with no failures and get deliveries', async () => {
    const filename = freshFile();
    const db = openDatabase(filename);
    expect(migrate(db, shipped.slice(0, 2))).toEqual([1, 2]);
    const webhook = webhookRecord({ events: ['run.completed'] });
    db.prepare(
      `INSERT INTO keyhook_webhooks (id, tenant_id, url, events, twin_key, status, disabled_reason,
        secret_sealed, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'active', NULL, ?, ?, ?)`,
    ).run(
      webhook.id,
      webhook.tenantId,
      webhook.url,
      JSON.stringify(webhook.events),
      webhook.twinKey,
      webhook.secretSealed,
      webhook.createdAt.getTime(),
      webhook.updatedAt.getTime(),
    );
    db.close();

    const store = createSqliteStore({ filename });
    expect(await store.getWebhook(webhook.tenantId, webhook.id)).toEqual(webhook);
    const event = {
      id: 'evt_1',
      tenantId: webhook.tenantId,
      type: 'run.completed' as const,
      payload: '{}',
      createdAt: T0,
      traceContext: null,
    };
    const published = await store.publishEvent(event, () => 'dlv_1');
    expect(published).toMatchObject({
      outcome: 'published',
      deliveries: [{ webhookId: webhook.id, status: 'pending' }],
    });
    await store.close();
    const raw = new Database(filename, { readonly: true });
    expect(raw.prepare('SELECT consecutive_failures FROM keyhook_webhooks').pluck().all()).toEqual([0]);
    expect(raw.prepare('SELECT version FROM keyhook_migrations').pluck().all()).toEqual(
      shipped.map((m) => m.version),
    );
    raw.close();
  });

  it('upgrades a database of the telemetry release: each active webhook gets its twin claim, a disabled one none, and the rule holds after', async () => {
    const filename = freshFile();
    const db = openDatabase(filename);
    expect(migrate(db, shipped.slice(0, 9))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const active = webhookRecord();
    const disabledTwin = webhookRecord({ url: active.url, events: active.events, status: 'disabled' });
    const disabledAlone = webhookRecord({ status: 'disabled' });
    const insert = db.prepare(
      `INSERT INTO keyhook_webhooks (id, tenant_id, url, events, twin_key, status, disabled_reason,
        secret_sealed, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    for (const webhook of [active, disabledTwin, disabledAlone]) {
      const reason = webhook.status === 'disabled' ? 'manual' : null;
      const at = webhook.createdAt.getTime();
      const { id, tenantId, url, events, twinKey, status, secretSealed } = webhook;
      insert.run(id, tenantId, url, JSON.stringify(events), twinKey, status, reason, secretSealed, at, at);
    }
    db.close();

    const store = createSqliteStore({ filename });
    const raw = new Database(filename, { readonly: true });
    const claims = raw.prepare('SELECT id, twin_claim FROM keyhook_webhooks').all() as {
      id: string;
      twin_claim: string | null;
    }[];
    raw.close();
    expect(new Map(claims.map((row) => [row.id, row.twin_claim]))).toEqual(
      new Map([
        [active.id, active.twinKey],
        [disabledTwin.id, null],
        [disabledAlone.id, null],
      ]),
    );
    expect(await store.insertWebhook(webhookRecord({ url: active.url, events: active.events }))).toBe(
      'active_twin',
    );
    const enable = (id: string) => store.setWebhookStatus('tenant_a', id, 'active', null, T0);
    expect(await enable(disabledTwin.id)).toEqual({ outcome: 'active_twin' });
    expect((await enable(disabledAlone.id)).outcome).toBe('updated');
    await store.close();
  });

  it('upgrades a database of the portal release: its webhooks read the keyhook scheme, and the column takes no other value', async () => {
    const filename = freshFile();
    const db = openDatabase(filename);
    expect(migrate(db, shipped.slice(0, 11))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    const webhook = webhookRecord();
    const at = webhook.createdAt.getTime();
    db.prepare(
      `INSERT INTO keyhook_webhooks (id, tenant_id, url, events, twin_key, status, disabled_reason,
        secret_sealed, created_at, updated_at, twin_claim) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      webhook.id,
      'tenant_a',
      webhook.url,
      JSON.stringify(webhook.events),
      webhook.twinKey,
      'active',
      null,
      webhook.secretSealed,
      at,
      at,
      webhook.twinKey,
    );
    db.close();

    const store = createSqliteStore({ filename });
    expect(await store.getWebhook('tenant_a', webhook.id)).toEqual({
      ...webhook,
      signatureScheme: 'keyhook',
    });
    await store.close();
    const raw = new Database(filename);
    expect(() =>
      raw.prepare("UPDATE keyhook_webhooks SET signature_scheme = 'svix' WHERE id = ?").run(webhook.id),
    ).toThrow(/CHECK constraint failed/);
    raw.close();
  });

  it('upgrades a database of the signature-scheme release: its webhooks read no rate, and a stored rate is positive', async () => {
    const filename = freshFile();
    const db = openDatabase(filename);
    expect(migrate(db, shipped.slice(0, 12))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    const webhook = webhookRecord({ signatureScheme: 'standard-webhooks' });
    const at = webhook.createdAt.getTime();
    db.prepare(
      `INSERT INTO keyhook_webhooks (id, tenant_id, url, events, twin_key, status, disabled_reason,
        secret_sealed, signature_scheme, created_at, updated_at, twin_claim) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      webhook.id,
      'tenant_a',
      webhook.url,
      JSON.stringify(webhook.events),
      webhook.twinKey,
      'active',
      null,
      webhook.secretSealed,
      'standard-webhooks',
      at,
      at,
      webhook.twinKey,
    );
    db.close();

    const store = createSqliteStore({ filename });
    expect(await store.getWebhook('tenant_a', webhook.id)).toEqual({ ...webhook, deliveryRate: null });
    await store.close();
    const raw = new Database(filename);
    expect(() =>
      raw.prepare('UPDATE keyhook_webhooks SET rate_per_second = 0 WHERE id = ?').run(webhook.id),
    ).toThrow(/CHECK constraint failed/);
    raw.close();
  });

  it('upgrades a database of the signature-scheme release: its events take feed places by age, then tenant and id, before new ones', async () => {
    const filename = freshFile();
    const db = openDatabase(filename);
    expect(migrate(db, shipped.slice(0, 13))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
    const insert = db.prepare(
      `INSERT INTO keyhook_events (tenant_id, id, type, payload, created_at) VALUES (?, ?, 'run.completed', ?, ?)`,
    );
    for (const [tenant, id, seconds] of EVENTS_BEFORE_THE_FEED) {
      const createdAt = new Date(T0.getTime() + seconds * 1000);
      const payload = JSON.stringify({
        id,
        type: 'run.completed',
        createdAt: createdAt.toISOString(),
        data: {},
      });
      insert.run(tenant, id, payload, createdAt.getTime());
    }
    db.close();

    const store = createSqliteStore({ filename });
    expect(await feedAfterBackfill(store)).toEqual(BACKFILLED_FEED);
    await store.close();
  });

  it.each([
    ['on a connection of its own', false],
    ['on a connection with legacy_alter_table on and foreign_keys off', true],
  ])(
    'upgrades a database of the event-feed release %s: the reasons kept, gone taken, deliveries untouched',
    async (_, legacyAlterTable) => {
      const filename = freshFile();
      const db = openDatabase(filename);
      expect(migrate(db, shipped.slice(0, 14))).toHaveLength(14);
      const webhooks = [
        webhookRecord({ status: 'disabled', disabledReason: 'failures' }),
        webhookRecord({ status: 'disabled', disabledReason: 'manual' }),
        webhookRecord(),
      ];
      const insert = db.prepare(
        `INSERT INTO keyhook_webhooks (id, tenant_id, url, events, twin_key, status, disabled_reason,
          secret_sealed, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      for (const w of webhooks) {
        const at = w.createdAt.getTime();
        insert.run(
          w.id,
          w.tenantId,
          w.url,
          JSON.stringify(w.events),
          w.twinKey,
          w.status,
          w.disabledReason,
          w.secretSealed,
          at,
          at,
        );
      }
      const active = webhooks[2]!;
      db.prepare(
        `INSERT INTO keyhook_events (tenant_id, id, type, payload, created_at, feed_seq) VALUES (?, 'evt_1', 'run.completed', '{}', ?, 1)`,
      ).run(active.tenantId, T0.getTime());
      db.prepare(
        `INSERT INTO keyhook_deliveries (id, tenant_id, webhook_id, event_id, event_type, status, attempts,
          due_at, created_at, updated_at) VALUES ('dlv_1', ?, ?, 'evt_1', 'run.completed', 'pending', 0, ?, ?, ?)`,
      ).run(active.tenantId, active.id, T0.getTime(), T0.getTime(), T0.getTime());
      if (legacyAlterTable) {
        db.pragma('legacy_alter_table = ON');
        db.pragma('foreign_keys = OFF');
        expect(migrate(db, shipped.slice(0, 15))).toEqual([15]);
      }
      db.close();

      const store = createSqliteStore({ filename });
      // A disabled endpoint from before 0017 takes its last change as the time it was disabled.
      for (const w of webhooks) {
        const disabledAt = w.status === 'disabled' ? w.updatedAt : null;
        expect(await store.getWebhook(w.tenantId, w.id)).toEqual({ ...w, disabledAt });
      }
      expect((await store.getDelivery(active.tenantId, active.id, 'dlv_1'))?.delivery.status).toBe('pending');
      await store.close();
      const raw = new Database(filename);
      raw.pragma('foreign_keys = ON');
      raw
        .prepare("UPDATE keyhook_webhooks SET status = 'disabled', disabled_reason = 'gone' WHERE id = ?")
        .run(active.id);
      expect(() =>
        raw.prepare("UPDATE keyhook_webhooks SET disabled_reason = 'vanished' WHERE id = ?").run(active.id),
      ).toThrow(/CHECK constraint failed/);
      expect(raw.pragma('foreign_key_check')).toEqual([]);
      expect(raw.pragma('integrity_check', { simple: true })).toBe('ok');
      // The deliveries still follow their webhook.
      raw.prepare('DELETE FROM keyhook_webhooks WHERE id = ?').run(active.id);
      expect(raw.prepare('SELECT count(*) FROM keyhook_deliveries').pluck().get()).toBe(0);
      raw.close();
    },
  );

  it("upgrades a database of the gone release: a limit set before it is the host's, a key without one has none", async () => {
    const filename = freshFile();
    const db = openDatabase(filename);
    expect(migrate(db, shipped.slice(0, 15))).toHaveLength(15);
    const limited = keyRecord({ rateLimit: { limit: 1, window: 3_600 } });
    const open = keyRecord();
    const columns = KEY_COLUMNS.split(', ').slice(0, -1);
    const insert = db.prepare(
      `INSERT INTO keyhook_api_keys (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`,
    );
    for (const key of [limited, open]) {
      const { rate_limit_by_host: _, ...row } = toRow(key);
      insert.run(row);
    }
    expect(migrate(db, shipped.slice(0, 16))).toEqual([16]);
    db.close();
    const store = createSqliteStore({ filename });
    expect(await store.getApiKey(limited.tenantId, limited.id)).toEqual({
      ...limited,
      rateLimitByHost: true,
    });
    expect(await store.getApiKey(open.tenantId, open.id)).toEqual(open);
    await store.close();
  });

  // A connection passed in as `database` keeps its own pragmas. With legacy_alter_table on and
  // foreign_keys off, a rename does not rewrite the references to the renamed table, so 0004 must
  // not rely on one.
  it.each([
    ['on a connection of its own', false],
    ['on a connection with legacy_alter_table on and foreign_keys off', true],
  ])(
    'upgrades a database of the deliveries release %s: deliveries and attempts become clustered on their keys, every row kept',
    async (_, legacyAlterTable) => {
      const filename = freshFile();
      const db = openDatabase(filename);
      expect(migrate(db, shipped.slice(0, 3))).toEqual([1, 2, 3]);
      const webhook = webhookRecord({ events: ['run.completed'] });
      const at = T0.getTime();
      db.prepare(
        `INSERT INTO keyhook_webhooks (id, tenant_id, url, events, twin_key, status, disabled_reason,
        secret_sealed, created_at, updated_at) VALUES (?, ?, ?, '["run.completed"]', ?, 'active', NULL, ?, ?, ?)`,
      ).run(webhook.id, webhook.tenantId, webhook.url, webhook.twinKey, webhook.secretSealed, at, at);
      const insertEvent = db.prepare(
        `INSERT INTO keyhook_events (tenant_id, id, type, payload, created_at) VALUES (?, ?, 'run.completed', '{}', ?)`,
      );
      const insertDelivery = db.prepare(
        `INSERT INTO keyhook_deliveries (id, tenant_id, webhook_id, event_id, event_type, status, attempts,
        due_at, lease_id, held_since, last_attempt_at, created_at, updated_at)
        VALUES (?, ?, ?, ?, 'run.completed', ?, ?, ?, NULL, NULL, ?, ?, ?)`,
      );
      const insertAttempt = db.prepare(
        `INSERT INTO keyhook_attempts (delivery_id, attempt, tenant_id, started_at, duration_ms, status_code,
        error, response_body) VALUES (?, ?, ?, ?, 12, ?, NULL, ?)`,
      );
      db.transaction(() => {
        insertEvent.run(webhook.tenantId, 'evt_1', at);
        insertEvent.run(webhook.tenantId, 'evt_2', at);
        // One delivery that succeeded on its second attempt, one still waiting for its first.
        insertDelivery.run('dlv_1', webhook.tenantId, webhook.id, 'evt_1', 'succeeded', 2, null, at, at, at);
        insertDelivery.run('dlv_2', webhook.tenantId, webhook.id, 'evt_2', 'pending', 0, at, null, at, at);
        insertAttempt.run('dlv_1', 1, webhook.tenantId, at, 500, 'oops');
        insertAttempt.run('dlv_1', 2, webhook.tenantId, at, 200, '');
      })();
      const before = {
        deliveries: db.prepare('SELECT * FROM keyhook_deliveries ORDER BY id').all(),
        attempts: db.prepare('SELECT * FROM keyhook_attempts ORDER BY delivery_id, attempt').all(),
      };
      if (legacyAlterTable) {
        db.pragma('legacy_alter_table = ON');
        db.pragma('foreign_keys = OFF');
        expect(migrate(db, shipped.slice(0, 4))).toEqual([4]);
      }
      db.close();

      const store = createSqliteStore({ filename });
      // The pending delivery is still due and leasable through the rebuilt due index.
      const leased = await store.leaseDeliveries({
        now: new Date(at + 1),
        limit: 10,
        leaseMs: 60_000,
        leaseId: 'l1',
      });
      expect(leased.map((l) => l.delivery.id)).toEqual(['dlv_2']);
      const detail = await store.getDelivery(webhook.tenantId, webhook.id, 'dlv_1');
      expect(detail?.attempts.map((a) => [a.attempt, a.statusCode, a.responseBody])).toEqual([
        [1, 500, 'oops'],
        [2, 200, ''],
      ]);
      await store.close();

      const raw = new Database(filename);
      raw.pragma('foreign_keys = ON');
      const sql = (name: string) =>
        raw.prepare('SELECT sql FROM sqlite_schema WHERE name = ?').pluck().get(name) as string;
      expect(sql('keyhook_deliveries')).toMatch(/STRICT, WITHOUT ROWID$/);
      expect(sql('keyhook_attempts')).toMatch(/STRICT, WITHOUT ROWID$/);
      expect(sql('keyhook_attempts')).toMatch(/REFERENCES "?keyhook_deliveries"? \(id\) ON DELETE CASCADE/);
      expect(
        raw.prepare("SELECT name FROM sqlite_schema WHERE name LIKE '%\\_next' ESCAPE '\\'").all(),
      ).toEqual([]);
      expect(
        raw
          .prepare(
            "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'keyhook_deliveries' ORDER BY name",
          )
          .pluck()
          .all(),
      ).toEqual([
        'keyhook_deliveries_due',
        'keyhook_deliveries_event', // 0005
        'keyhook_deliveries_failed', // 0008
        'keyhook_deliveries_finished', // 0005
        'keyhook_deliveries_held',
        'keyhook_deliveries_webhook_id',
      ]);
      expect(raw.pragma('foreign_key_check')).toEqual([]);
      expect(raw.pragma('integrity_check', { simple: true })).toBe('ok');
      // Every row came across as it was, apart from the lease taken above.
      expect(raw.prepare("SELECT * FROM keyhook_deliveries WHERE id = 'dlv_1'").all()).toEqual([
        before.deliveries[0],
      ]);
      expect(raw.prepare('SELECT * FROM keyhook_attempts ORDER BY delivery_id, attempt').all()).toEqual(
        before.attempts,
      );
      // The attempts still follow their delivery.
      raw.prepare("DELETE FROM keyhook_deliveries WHERE id = 'dlv_1'").run();
      expect(raw.prepare('SELECT count(*) FROM keyhook_attempts').pluck().get()).toBe(0);
      raw.close();
    },
  );

  it('refuses a database migrated by a newer release', async () => {
    const filename = freshFile();
    await createSqliteStore({ filename }).close();
    const raw = new Database(filename);
    raw
      .prepare('INSERT INTO keyhook_migrations (version, name, applied_at) VALUES (?, ?, ?)')
      .run(999, '0999_future', Date.now());
    raw.close();
    expect(() => createSqliteStore({ filename })).toThrow(/0999_future.*upgrade the package/);
  });
});

const fixture = fileURLToPath(new URL('./fixtures/open-concurrently.ts', import.meta.url));
const viteNode = fileURLToPath(new URL('../../../node_modules/.bin/vite-node', import.meta.url));
const config = fileURLToPath(new URL('../vitest.config.ts', import.meta.url));

interface Child {
  process: ChildProcess;
  ready: Promise<void>;
  done: Promise<{ applied: number[] }>;
}

/** A child process that opens the file when told "go" and prints the versions it applied. */
function startChild(filename: string): Child {
  const child = spawn(viteNode, ['--config', config, fixture], {
    env: { ...process.env, KEYHOOK_TEST_DB: filename },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let markReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    if (stdout.includes('ready\n')) markReady();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const done = new Promise<{ applied: number[] }>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      markReady();
      const last = stdout.trim().split('\n').at(-1) ?? '';
      if (code === 0 && last.startsWith('{')) resolve(JSON.parse(last) as { applied: number[] });
      else reject(new Error(`child exited with ${code}: ${stderr || stdout}`));
    });
  });
  return { process: child, ready, done };
}
