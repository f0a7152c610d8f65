/**
 * The README's blocks for joining a data layer's transaction, run as a reader pastes them, each
 * against the real library on the store's connection to a fresh file, with its own values
 * (`db`, `keyhook`, `tenantId`, `runId`) in place. Each must leave the run completed and its
 * `run.completed` event committed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKeyhook, silentLogger } from '@keyhook/core';
import { runReadmeBlock } from '@keyhook/testing/readme';
import { TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY } from '@keyhook/testing/support';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqliteStore, openDatabase } from '../src/index.js';

const root = mkdtempSync(join(tmpdir(), 'keyhook-readme-layers-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('the README’s blocks for joining a data layer’s transaction run', () => {
  it.each(['drizzle({ client: db })', 'new SqliteDialect({ database: db })', 'connectionPool: pool'])(
    'the block with %s',
    async (marker) => {
      const db = openDatabase(join(root, `${marker.replace(/\W+/g, '-')}.db`));
      db.exec("CREATE TABLE runs (id TEXT PRIMARY KEY, status TEXT NOT NULL DEFAULT 'running')");
      db.prepare('INSERT INTO runs (id) VALUES (?)').run('run_1');
      const store = createSqliteStore({ database: db, logger: silentLogger });
      const keyhook = createKeyhook({
        store,
        adminSession: { secret: TEST_ADMIN_SECRET },
        encryptionKey: TEST_ENCRYPTION_KEY,
        logger: silentLogger,
        eventCatalog: { 'run.completed': { description: 'A run finished.' } },
      });
      try {
        await runReadmeBlock(new URL('..', import.meta.url), marker, {
          db,
          keyhook,
          tenantId: 'acme',
          runId: 'run_1',
        });
        expect(db.prepare('SELECT status FROM runs').pluck().all()).toEqual(['completed']);
        expect(db.prepare('SELECT tenant_id, id, type FROM keyhook_events').all()).toEqual([
          { tenant_id: 'acme', id: 'evt_run_run_1', type: 'run.completed' },
        ]);
        expect(db.open).toBe(true); // the block left the store's connection open
      } finally {
        await keyhook.close();
        await store.close();
        db.close();
      }
    },
  );
});
