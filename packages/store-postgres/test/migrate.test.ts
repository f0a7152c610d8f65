import { isKeyhookError } from '@keyhook/core';
import type { WebhookRecord } from '@keyhook/core/store';
import { keyRecord, T0, webhookRecord } from '@keyhook/store-conformance';
import { POSTGRES_TEST_URL, postgresAvailable } from '@keyhook/testing/postgres';
import {
  BACKFILLED_FEED,
  EVENTS_BEFORE_THE_FEED,
  feedAfterBackfill,
  migrationLogLines,
  migrationLogProblems,
  recordingLogger,
} from '@keyhook/testing/support';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createPostgresStore, migrate, type PostgresStoreOptions, pendingMigrations } from '../src/index.js';
import { KEY_COLUMNS, toKeyParams } from '../src/key-row.js';
import { applyMigrations, loadMigrations, pendingOf } from '../src/migration-driver.js';
import { toWebhookParams, WEBHOOK_COLUMNS } from '../src/webhook-row.js';
import { Schemas } from './delivery-helpers.js';

// Under CI=true this throws when Postgres is down, so CI can never skip this suite silently.
const available = await postgresAvailable();

const shipped = await loadMigrations();
const shippedNames = shipped.map((m) => m.name);

const admin = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 2 });
const schemas = new Schemas(admin);
const freshSchema = (label: string) => schemas.fresh(label);

/** A schema at `version`, as a release of that version left it. */
async function schemaAt(label: string, version: number): Promise<string> {
  const schema = freshSchema(label);
  await applyMigrations(admin, schema, recordingLogger(), shipped.slice(0, version));
  return schema;
}

async function schemaExists(schema: string): Promise<boolean> {
  const { rowCount } = await admin.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
  return rowCount === 1;
}

/** The schema's tables and recorded migrations. */
async function snapshot(schema: string) {
  const tables = await admin.query<{ name: string }>(
    'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1',
    [schema],
  );
  const recorded = await admin.query(
    `SELECT version, name, applied_at FROM "${schema}".keyhook_migrations ORDER BY version`,
  );
  return { tables: tables.rows.map((row) => row.name), migrations: recorded.rows };
}

/** Opening in either mode, migrate() and pendingMigrations() all reject with `refusal`. */
async function expectRefusedEverywhere(schema: string, refusal: string | RegExp): Promise<void> {
  const source = { connectionString: POSTGRES_TEST_URL, schema };
  for (const migrations of ['apply', 'refuse'] as const) {
    await expect(createPostgresStore({ ...source, migrations, poolSize: 1 })).rejects.toThrow(refusal);
  }
  await expect(migrate({ ...source, logger: recordingLogger() })).rejects.toThrow(refusal);
  await expect(pendingMigrations(source)).rejects.toThrow(refusal);
}

async function recordFutureMigration(schema: string): Promise<void> {
  await admin.query(`INSERT INTO "${schema}".keyhook_migrations (version, name) VALUES (99, 'future')`);
}

/** Inserts a webhook as a schema before 0013 holds it: without signature_scheme (nor 0014's rate_per_second, 0016's public_key) and twin_claim. */
async function insertBefore0013(schema: string, webhook: WebhookRecord): Promise<void> {
  await insertWithout(schema, webhook, [
    'rate_per_second',
    'signature_scheme',
    'public_key',
    'disabled_at',
    'description',
  ]);
}

/** Inserts `webhook` into a schema whose table lacks the `later` columns. */
async function insertWithout(
  schema: string,
  webhook: WebhookRecord,
  later: readonly string[],
): Promise<void> {
  const columns = WEBHOOK_COLUMNS.split(', ');
  const params = toWebhookParams(webhook).slice(0, columns.length);
  for (const column of later) {
    const at = columns.indexOf(column);
    params.splice(at, 1);
    columns.splice(at, 1);
  }
  await admin.query(
    `INSERT INTO "${schema}".keyhook_webhooks (${columns.join(', ')})
      VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`,
    params,
  );
}

(available ? describe : describe.skip)('Postgres migrations you can see and run', () => {
  afterAll(async () => {
    await schemas.dropAll();
    await admin.end();
  });

  describe('migrate()', () => {
    it('applies every migration to a new schema, logs each one applied at info with its duration (its start at debug), and returns them', async () => {
      const schema = freshSchema('mig_api');
      const logger = recordingLogger();
      const applied = await migrate({ connectionString: POSTGRES_TEST_URL, schema, logger });

      expect(applied.map((m) => [m.version, m.name])).toEqual(
        shipped.map((m, i) => [m.version, shippedNames[i]]),
      );
      for (const migration of applied) {
        expect(Number.isInteger(migration.durationMs)).toBe(true);
        expect(migration.durationMs).toBeGreaterThanOrEqual(0);
      }
      expect(logger.lines).toEqual(migrationLogLines(applied, { schema }, shipped));
      expect((await snapshot(schema)).migrations).toHaveLength(shipped.length);
    });

    it('applies nothing, and logs nothing, on a schema that is up to date', async () => {
      const schema = freshSchema('mig_again');
      await migrate({ connectionString: POSTGRES_TEST_URL, schema, logger: recordingLogger() });
      const before = await snapshot(schema);
      const logger = recordingLogger();
      await expect(migrate({ connectionString: POSTGRES_TEST_URL, schema, logger })).resolves.toEqual([]);
      expect(logger.lines).toEqual([]);
      expect(await snapshot(schema)).toEqual(before);
    });

    it('brings a schema of an older release up to date, applying only what it lacks', async () => {
      const schema = await schemaAt('mig_older', 2);
      const applied = await migrate({
        connectionString: POSTGRES_TEST_URL,
        schema,
        logger: recordingLogger(),
      });
      expect(applied.map((m) => m.name)).toEqual(shippedNames.slice(2));
    });

    it('runs on a pool you pass and leaves it open', async () => {
      const schema = freshSchema('mig_pool');
      const pool = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 1 });
      try {
        await expect(migrate({ pool, schema, logger: recordingLogger() })).resolves.toHaveLength(
          shipped.length,
        );
        await expect(pool.query('SELECT 1')).resolves.toBeDefined();
      } finally {
        await pool.end();
      }
    });

    it('logs no connection string, and a password in it appears in no error', async () => {
      const password = 'n0t-in-any-log-Zq7';
      const logger = recordingLogger();
      const error = await migrate({
        connectionString: `postgres://postgres:${password}@127.0.0.1:1/test`,
        schema: freshSchema('mig_secret'),
        logger,
      }).catch((e: unknown) => e);
      expect(isKeyhookError(error) && error.code === 'unavailable').toBe(true);
      expect(String((error as Error).message)).not.toContain(password);

      const ok = recordingLogger();
      const url = new URL(POSTGRES_TEST_URL);
      url.password = password; // trust auth: the server accepts it and ignores it
      await migrate({ connectionString: url.href, schema: freshSchema('mig_secret_ok'), logger: ok });
      expect(ok.lines.length).toBeGreaterThan(0);
      const logged = JSON.stringify(ok.lines);
      expect(logged).not.toContain(password);
      expect(logged).not.toContain('postgres://');
    });

    it('refuses a schema migrated by a newer release, and applies nothing', async () => {
      const schema = await schemaAt('mig_newer', 2);
      await recordFutureMigration(schema);
      const before = await snapshot(schema);
      await expect(migrate({ connectionString: POSTGRES_TEST_URL, schema })).rejects.toThrow(
        `keyhook: the PostgreSQL schema "${schema}" has migration 0099_future, which this version of ` +
          `@keyhook/store-postgres does not know (it knows up to ${shippedNames.at(-1)}): a newer release ` +
          'migrated it, so upgrade the package',
      );
      expect(await snapshot(schema)).toEqual(before);
    });
  });

  describe('pendingMigrations()', () => {
    it('lists every migration for a schema that does not exist, and does not create it', async () => {
      const schema = freshSchema('pend_new');
      await expect(pendingMigrations({ connectionString: POSTGRES_TEST_URL, schema })).resolves.toEqual(
        shipped.map((m, i) => ({ version: m.version, name: shippedNames[i] })),
      );
      expect(await schemaExists(schema)).toBe(false);
    });

    it('lists what a schema of an older release lacks, and writes nothing', async () => {
      const schema = await schemaAt('pend_older', 2);
      const before = await snapshot(schema);
      const pending = await pendingMigrations({ connectionString: POSTGRES_TEST_URL, schema });
      expect(pending.map((m) => m.name)).toEqual(shippedNames.slice(2));
      expect(await snapshot(schema)).toEqual(before);
    });

    it('lists nothing once migrate() has run', async () => {
      const schema = freshSchema('pend_done');
      await migrate({ connectionString: POSTGRES_TEST_URL, schema, logger: recordingLogger() });
      await expect(pendingMigrations({ connectionString: POSTGRES_TEST_URL, schema })).resolves.toEqual([]);
    });
  });

  describe("createPostgresStore({ migrations: 'refuse' })", () => {
    const refusal = (names: string[]) =>
      new RegExp(
        `${names.length} migrations? (is|are) pending \\(${names.join(', ')}\\).*npx keyhook migrate`,
      );

    it('refuses a schema that does not exist yet, and creates nothing', async () => {
      const schema = freshSchema('refuse_new');
      await expect(
        createPostgresStore({ connectionString: POSTGRES_TEST_URL, schema, migrations: 'refuse' }),
      ).rejects.toThrow(refusal(shippedNames));
      expect(await schemaExists(schema)).toBe(false);
    });

    it('refuses a schema that is behind, naming what is pending, and writes nothing', async () => {
      const schema = await schemaAt('refuse_behind', 2);
      const before = await snapshot(schema);
      const error = await createPostgresStore({
        connectionString: POSTGRES_TEST_URL,
        schema,
        migrations: 'refuse',
      }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toMatch(refusal(shippedNames.slice(2)));
      expect((error as Error).message).toContain(`--schema ${schema}`);
      const after = await snapshot(schema);
      expect(after).toEqual(before);
      expect(after.tables).not.toContain('keyhook_webhooks');
    });

    it('refuses through a pool you pass, and leaves the pool open', async () => {
      const schema = await schemaAt('refuse_pool', 3);
      const pool = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 2 });
      try {
        await expect(createPostgresStore({ pool, schema, migrations: 'refuse' })).rejects.toThrow(
          refusal(shippedNames.slice(3)),
        );
        await expect(pool.query('SELECT 1')).resolves.toBeDefined();
      } finally {
        await pool.end();
      }
    });

    it('opens normally once migrate() has applied everything', async () => {
      const schema = await schemaAt('refuse_then_ok', 2);
      await migrate({ connectionString: POSTGRES_TEST_URL, schema, logger: recordingLogger() });
      const logger = recordingLogger();
      const store = await createPostgresStore({
        connectionString: POSTGRES_TEST_URL,
        schema,
        migrations: 'refuse',
        poolSize: 1,
        logger,
      });
      try {
        await expect(store.insertApiKey(keyRecord())).resolves.toBe('inserted');
      } finally {
        await store.close();
      }
      expect(logger.lines).toEqual([]);
    });

    it('refuses a value other than apply or refuse', async () => {
      const options = {
        connectionString: POSTGRES_TEST_URL,
        migrations: 'skip',
      } as unknown as PostgresStoreOptions;
      await expect(createPostgresStore(options)).rejects.toThrow(TypeError);
    });
  });

  describe('a schema migrated by a newer release', () => {
    it('is refused at open, in either mode, with the version it does not know', async () => {
      const schema = freshSchema('newer');
      await migrate({ connectionString: POSTGRES_TEST_URL, schema, logger: recordingLogger() });
      await recordFutureMigration(schema);
      await expectRefusedEverywhere(
        schema,
        /schema "keyhook_newer_[0-9a-f]+" has migration 0099_future.*upgrade the package/,
      );
    });

    it('is refused, as on SQLite, when it records a shipped version under another name', async () => {
      const schema = await schemaAt('renamed', 3);
      await admin.query(`UPDATE "${schema}".keyhook_migrations SET name = 'renamed' WHERE version = 2`);
      const before = await snapshot(schema);
      await expectRefusedEverywhere(
        schema,
        `the PostgreSQL schema "${schema}" recorded migration 2 as 0002_renamed, expected ${shippedNames[1]}`,
      );
      expect(await snapshot(schema)).toEqual(before);
    });

    it('is refused when it records any version this release does not ship, not only one above the newest', async () => {
      const schema = await schemaAt('unknown', shipped.length);
      const withoutThird = shipped.filter((migration) => migration.version !== 3);
      await expect(pendingOf(admin, schema, withoutThird)).rejects.toThrow(
        `has migration ${shippedNames[2]}, which this version of @keyhook/store-postgres does not know`,
      );
    });
  });

  describe("createPostgresStore({ migrations: 'apply' }), the default", () => {
    it('logs each migration it applies through the logger option', async () => {
      const schema = freshSchema('apply_log');
      const logger = recordingLogger();
      await (
        await createPostgresStore({ connectionString: POSTGRES_TEST_URL, schema, poolSize: 1, logger })
      ).close();
      // One line per migration at info; its start is the other, at debug.
      expect(migrationLogProblems(logger.lines, shippedNames)).toEqual([]);
      const restarted = recordingLogger();
      await (
        await createPostgresStore({
          connectionString: POSTGRES_TEST_URL,
          schema,
          poolSize: 1,
          logger: restarted,
        })
      ).close();
      expect(restarted.lines).toEqual([]);
    });
  });

  describe('0011_twin_claims', () => {
    it('gives each active webhook of an older schema its twin claim, and none to a disabled one; the rule holds after', async () => {
      const schema = await schemaAt('mig_twin', 10);
      const active = webhookRecord();
      const disabledTwin = webhookRecord({ url: active.url, events: active.events, status: 'disabled' });
      const disabledAlone = webhookRecord({ status: 'disabled' });
      for (const webhook of [active, disabledTwin, disabledAlone]) {
        const record = {
          ...webhook,
          disabledReason: webhook.status === 'disabled' ? ('manual' as const) : null,
        };
        await insertBefore0013(schema, record);
      }
      await migrate({ connectionString: POSTGRES_TEST_URL, schema, logger: recordingLogger() });
      const { rows } = await admin.query(`SELECT id, twin_claim FROM "${schema}".keyhook_webhooks`);
      expect(new Map(rows.map((row) => [row.id, row.twin_claim]))).toEqual(
        new Map([
          [active.id, active.twinKey],
          [disabledTwin.id, null],
          [disabledAlone.id, null],
        ]),
      );
      const store = await createPostgresStore({ connectionString: POSTGRES_TEST_URL, schema, poolSize: 1 });
      try {
        expect(await store.insertWebhook(webhookRecord({ url: active.url, events: active.events }))).toBe(
          'active_twin',
        );
        const enable = (id: string) => store.setWebhookStatus('tenant_a', id, 'active', null, new Date());
        expect(await enable(disabledTwin.id)).toEqual({ outcome: 'active_twin' });
        expect((await enable(disabledAlone.id)).outcome).toBe('updated');
      } finally {
        await store.close();
      }
    });
  });

  describe('0013_signature_scheme', () => {
    it('gives the webhooks of an older schema the keyhook scheme, and the column takes no other value', async () => {
      const schema = await schemaAt('mig_scheme', 12);
      const webhook = webhookRecord();
      await insertBefore0013(schema, webhook);
      await migrate({ connectionString: POSTGRES_TEST_URL, schema, logger: recordingLogger() });
      const store = await createPostgresStore({ connectionString: POSTGRES_TEST_URL, schema, poolSize: 1 });
      try {
        expect(await store.getWebhook('tenant_a', webhook.id)).toEqual({
          ...webhook,
          signatureScheme: 'keyhook',
        });
      } finally {
        await store.close();
      }
      await expect(
        admin.query(`UPDATE "${schema}".keyhook_webhooks SET signature_scheme = 'svix' WHERE id = $1`, [
          webhook.id,
        ]),
      ).rejects.toThrow(/keyhook_webhooks_signature_scheme/);
    });
  });

  describe('0014_endpoint_rate', () => {
    it('gives the webhooks of an older schema no rate and a slot row each; a new webhook gets its row; the rate is positive', async () => {
      const schema = await schemaAt('mig_rate', 13);
      const webhook = webhookRecord();
      await insertBefore0013(schema, webhook);
      await admin.query(`UPDATE "${schema}".keyhook_webhooks SET signature_scheme = 'standard-webhooks'`);
      await migrate({ connectionString: POSTGRES_TEST_URL, schema, logger: recordingLogger() });
      const store = await createPostgresStore({ connectionString: POSTGRES_TEST_URL, schema, poolSize: 1 });
      try {
        expect(await store.getWebhook('tenant_a', webhook.id)).toEqual({
          ...webhook,
          signatureScheme: 'standard-webhooks',
          deliveryRate: null,
        });
        const added = webhookRecord({ deliveryRate: { perSecond: 2.5 } });
        expect(await store.insertWebhook(added)).toBe('inserted');
        expect((await store.getWebhook('tenant_a', added.id))!.deliveryRate).toEqual({ perSecond: 2.5 });
      } finally {
        await store.close();
      }
      const { rows } = await admin.query(
        `SELECT webhook_id, next_at, queue_at FROM "${schema}".keyhook_endpoint_rates ORDER BY webhook_id`,
      );
      expect(rows).toHaveLength(2);
      expect(rows.every((row) => row.next_at === null && row.queue_at === null)).toBe(true);
      await expect(
        admin.query(`UPDATE "${schema}".keyhook_webhooks SET rate_per_second = 0 WHERE id = $1`, [
          webhook.id,
        ]),
      ).rejects.toThrow(/keyhook_webhooks_rate_per_second/);
    });
  });

  describe('0015_event_feed', () => {
    it('gives the events of an older schema feed places by age, then tenant and id, before new ones', async () => {
      const schema = await schemaAt('mig_feed', 14);
      for (const [tenantId, id, seconds] of EVENTS_BEFORE_THE_FEED) {
        await admin.query(
          `INSERT INTO "${schema}".keyhook_events (tenant_id, id, type, payload, created_at)
            VALUES ($1, $2, 'run.completed', '{}', $3::timestamptz + make_interval(secs => $4))`,
          [tenantId, id, T0, seconds],
        );
      }
      await migrate({ connectionString: POSTGRES_TEST_URL, schema, logger: recordingLogger() });
      const store = await createPostgresStore({ connectionString: POSTGRES_TEST_URL, schema, poolSize: 1 });
      try {
        expect(await feedAfterBackfill(store)).toEqual(BACKFILLED_FEED);
      } finally {
        await store.close();
      }
    });
  });

  describe('0016_gone_and_public_key', () => {
    it('keeps the reasons of an older schema and takes gone, and no other', async () => {
      const schema = await schemaAt('mig_gone', 15);
      const webhooks = [
        webhookRecord({ status: 'disabled', disabledReason: 'failures' }),
        webhookRecord({ status: 'disabled', disabledReason: 'manual' }),
        webhookRecord(),
      ];
      for (const webhook of webhooks)
        await insertWithout(schema, webhook, ['public_key', 'disabled_at', 'description']);
      await expect(
        admin.query(`UPDATE "${schema}".keyhook_webhooks SET disabled_reason = 'gone' WHERE id = $1`, [
          webhooks[2]!.id,
        ]),
      ).rejects.toThrow(/keyhook_webhooks_disabled_reason_check/);
      await migrate({ connectionString: POSTGRES_TEST_URL, schema, logger: recordingLogger() });
      const store = await createPostgresStore({ connectionString: POSTGRES_TEST_URL, schema, poolSize: 1 });
      try {
        // A disabled endpoint from before 0018 takes its last change as the time it was disabled.
        for (const webhook of webhooks) {
          const disabledAt = webhook.status === 'disabled' ? webhook.updatedAt : null;
          expect(await store.getWebhook('tenant_a', webhook.id)).toEqual({ ...webhook, disabledAt });
        }
      } finally {
        await store.close();
      }
      await admin.query(
        `UPDATE "${schema}".keyhook_webhooks SET status = 'disabled', disabled_reason = 'gone' WHERE id = $1`,
        [webhooks[2]!.id],
      );
      await expect(
        admin.query(`UPDATE "${schema}".keyhook_webhooks SET disabled_reason = 'vanished' WHERE id = $1`, [
          webhooks[2]!.id,
        ]),
      ).rejects.toThrow(/keyhook_webhooks_disabled_reason_check/);
    });
  });

  describe('0017_rate_limit_by_host', () => {
    it("takes a limit set before it as the host's, and a key without one as having none", async () => {
      const schema = await schemaAt('mig_by_host', 16);
      const limited = keyRecord({ rateLimit: { limit: 1, window: 3_600 } });
      const open = keyRecord();
      const columns = KEY_COLUMNS.split(', ').slice(0, -1);
      for (const key of [limited, open]) {
        await admin.query(
          `INSERT INTO "${schema}".api_keys (${columns.join(', ')})
            VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`,
          toKeyParams(key).slice(0, -1),
        );
      }
      await migrate({ connectionString: POSTGRES_TEST_URL, schema, logger: recordingLogger() });
      const store = await createPostgresStore({ connectionString: POSTGRES_TEST_URL, schema, poolSize: 1 });
      try {
        expect(await store.getApiKey(limited.tenantId, limited.id)).toEqual({
          ...limited,
          rateLimitByHost: true,
        });
        expect(await store.getApiKey(open.tenantId, open.id)).toEqual(open);
      } finally {
        await store.close();
      }
    });
  });

  describe('a migration that fails', () => {
    it('is rolled back whole, logged with its reason, and rethrown; the ones before it stay', async () => {
      const schema = freshSchema('broken');
      const broken = {
        version: 2,
        name: '0002_broken',
        sql: 'CREATE TABLE half_done (id integer);\nNOT VALID SQL;',
        checksum: 'x',
      };
      const logger = recordingLogger();
      await expect(applyMigrations(admin, schema, logger, [shipped[0]!, broken])).rejects.toThrow(
        /syntax error/,
      );
      expect(logger.lines.at(-1)).toMatchObject({
        level: 'error',
        context: { schema, version: 2, name: '0002_broken', err: expect.stringMatching(/syntax error/) },
        message: 'migration 0002_broken failed and was rolled back',
      });
      const { rows } = await admin.query(`SELECT version FROM "${schema}".keyhook_migrations`);
      expect(rows).toEqual([{ version: 1 }]);
      expect(
        (await admin.query('SELECT to_regclass($1) AS t', [`"${schema}".half_done`])).rows[0].t,
      ).toBeNull();
    });
  });

  describe('checksums of applied migrations', () => {
    it('a schema of a release before checksums gets them at open; an edit is refused from then on', async () => {
      const schema = await schemaAt('sums', shipped.length);
      await admin.query(`ALTER TABLE "${schema}".keyhook_migrations DROP COLUMN checksum`);
      await (await createPostgresStore({ connectionString: POSTGRES_TEST_URL, schema })).close();
      const { rows } = await admin.query(
        `SELECT checksum FROM "${schema}".keyhook_migrations ORDER BY version`,
      );
      expect(rows.map((row) => row.checksum)).toEqual(shipped.map((m) => m.checksum));

      const edited = shipped.map((m) => (m.version === 2 ? { ...m, checksum: 'x' } : m));
      await expect(applyMigrations(admin, schema, recordingLogger(), edited)).rejects.toThrow(
        `keyhook: migration 0002_key_change_notify of @keyhook/store-postgres was edited after it ran on the PostgreSQL schema "${schema}"`,
      );
      await expect(pendingOf(admin, schema, edited)).rejects.toThrow(/was edited after it ran/);
    });
  });
});
