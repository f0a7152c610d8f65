import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { EventRecord } from '@keyhook/core/store';
import { webhookRecord } from '@keyhook/store-conformance';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import {
  CheckpointThread,
  COMMITS_BEFORE_THREAD,
  DEFAULT_AUTOCHECKPOINT_PAGES,
  FALLBACK_AUTOCHECKPOINT_PAGES,
} from '../src/checkpoint-thread.js';
import { openDatabase } from '../src/connection.js';
import { createSqliteStore } from '../src/index.js';

const run = promisify(execFile);
const repository = fileURLToPath(new URL('../../..', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'keyhook-checkpoint-'));
let count = 0;
afterAll(() => rmSync(root, { recursive: true, force: true }));

function recordingLogger() {
  const warnings: string[] = [];
  const quiet = () => {};
  return {
    warnings,
    logger: { debug: quiet, info: quiet, error: quiet, warn: (_: object, m: string) => warnings.push(m) },
  };
}

/** Waits for `condition`, checking every few milliseconds: a state, not a time (at most 20 s). */
async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * A WAL file with rows in its WAL only. In WAL mode a commit writes the WAL, and only a checkpoint
 * copies pages into the database file: the file's size says whether one ran.
 */
function walWithRows(file: string) {
  const db = openDatabase(file);
  db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY, body TEXT NOT NULL)');
  db.pragma('wal_checkpoint(TRUNCATE)');
  const before = statSync(file).size;
  const insert = db.prepare('INSERT INTO t (body) VALUES (?)');
  // About 100 pages: far below either automatic threshold of the connection.
  for (let i = 0; i < 100; i++) insert.run('x'.repeat(3000));
  return { db, before, fileSize: () => statSync(file).size };
}

const autocheckpoint = (db: ReturnType<typeof openDatabase>) =>
  db.pragma('wal_autocheckpoint', { simple: true }) as number;

describe('WAL checkpoints on their own thread', () => {
  it('copies committed pages into the database file on the thread, with the connection left to its fallback', async () => {
    const { db, before, fileSize } = walWithRows(join(root, `db-${++count}.db`));
    const { logger, warnings } = recordingLogger();
    const thread = new CheckpointThread(db, logger, { commitsBeforeThread: 1 });
    // Nothing checkpointed the rows yet: the connection waits for 1000 pages, the thread for a commit.
    expect(fileSize()).toBe(before);
    thread.committed();
    expect(thread.running).toBe(true);
    expect(autocheckpoint(db)).toBe(FALLBACK_AUTOCHECKPOINT_PAGES);
    await until(() => thread.passes >= 1, 'a pass of the thread');
    expect(fileSize()).toBeGreaterThan(before + 90 * 4096);
    await thread.stop();
    expect(thread.running).toBe(false);
    // Stopped, the connection checkpoints as SQLite does by default.
    expect(autocheckpoint(db)).toBe(DEFAULT_AUTOCHECKPOINT_PAGES);
    expect(warnings).toEqual([]);
    db.close();
  });

  it('is woken by any statement that wrote, not by one that only read', async () => {
    const { db, before, fileSize } = walWithRows(join(root, `db-${++count}.db`));
    const thread = new CheckpointThread(db, recordingLogger().logger, { commitsBeforeThread: 1 });
    thread.committed();
    await until(() => thread.passes >= 1 && fileSize() > before, 'the first pass');
    const copied = fileSize();
    const wakes = thread.wakes;
    // A statement outside the group commits (the store's run()): a read wakes nothing…
    db.prepare('SELECT count(*) FROM t').get();
    thread.ranStatement();
    expect(thread.wakes).toBe(wakes);
    // …a write does, and its pages reach the file without the connection's own checkpoint.
    const insert = db.prepare('INSERT INTO t (body) VALUES (?)');
    for (let i = 0; i < 100; i++) insert.run('y'.repeat(3000));
    expect(fileSize()).toBe(copied);
    thread.ranStatement();
    expect(thread.wakes).toBe(wakes + 1);
    await until(() => fileSize() > copied + 90 * 4096, 'the second write reaches the file');
    await thread.stop();
    db.close();
  });

  it('never throws at the commit that would start it: a thread refused at once is logged', () => {
    const { db } = walWithRows(join(root, `db-${++count}.db`));
    const { logger, warnings } = recordingLogger();
    // A driver that cannot be sent to a thread: the Worker constructor throws.
    const unsendable = (() => {}) as unknown as string;
    const thread = new CheckpointThread(db, logger, { commitsBeforeThread: 1, driver: unsendable });
    expect(() => thread.committed()).not.toThrow();
    expect(thread.running).toBe(false);
    expect(warnings).toEqual([
      'keyhook: the WAL checkpoint thread stopped; the store checkpoints on its own connection',
    ]);
    expect(autocheckpoint(db)).toBe(DEFAULT_AUTOCHECKPOINT_PAGES);
    db.close();
  });

  it('logs checkpoints that fail once per run of failures, and the one that succeeds again', async () => {
    const { db, before, fileSize } = walWithRows(join(root, `db-${++count}.db`));
    const infos: string[] = [];
    const { logger, warnings } = recordingLogger();
    const thread = new CheckpointThread(
      db,
      { ...logger, info: (_: object, message: string) => infos.push(message) },
      {
        commitsBeforeThread: 1,
        driver: fileURLToPath(new URL('./fixtures/failing-checkpoints.cjs', import.meta.url)),
      },
    );
    // Three passes: two fail alike, the third copies the rows.
    for (let pass = 1; pass <= 3; pass++) {
      thread.committed();
      await until(() => thread.passes >= pass, `pass ${pass}`);
    }
    expect(fileSize()).toBeGreaterThan(before);
    // The thread's messages arrive in a later turn of this one's event loop.
    await until(() => infos.length > 0, 'the recovery is logged');
    expect(warnings).toEqual(['keyhook: background WAL checkpoints fail']);
    expect(infos).toEqual(['keyhook: background WAL checkpoints succeed again']);
    await thread.stop();
    db.close();
  });

  it('starts only after a store has committed COMMITS_BEFORE_THREAD groups', async () => {
    const { db, before, fileSize } = walWithRows(join(root, `db-${++count}.db`));
    const thread = new CheckpointThread(db, recordingLogger().logger);
    for (let i = 1; i < COMMITS_BEFORE_THREAD; i++) thread.committed();
    expect(thread.running).toBe(false);
    expect(autocheckpoint(db)).toBe(DEFAULT_AUTOCHECKPOINT_PAGES);
    thread.committed();
    expect(thread.running).toBe(true);
    await until(() => fileSize() > before, 'the first pass');
    await thread.stop();
    db.close();
  });

  it('never starts once stopped', async () => {
    const { db } = walWithRows(join(root, `db-${++count}.db`));
    const thread = new CheckpointThread(db, recordingLogger().logger, { commitsBeforeThread: 1 });
    await thread.stop();
    thread.committed();
    expect(thread.running).toBe(false);
    expect(autocheckpoint(db)).toBe(DEFAULT_AUTOCHECKPOINT_PAGES);
    db.close();
  });

  it('logs a thread that cannot start, and leaves the connection checkpointing on its own', async () => {
    const { db } = walWithRows(join(root, `db-${++count}.db`));
    const { logger, warnings } = recordingLogger();
    const thread = new CheckpointThread(db, logger, {
      commitsBeforeThread: 1,
      driver: join(root, 'no-such-driver.js'),
    });
    thread.committed();
    await until(() => !thread.running, 'the thread ends');
    expect(warnings).toEqual([
      'keyhook: the WAL checkpoint thread stopped; the store checkpoints on its own connection',
    ]);
    expect(autocheckpoint(db)).toBe(DEFAULT_AUTOCHECKPOINT_PAGES);
    await thread.stop();
    db.close();
  });

  it('runs under a store on a file: its writes, grouped or not, reach the database file', async () => {
    const file = join(root, `db-${++count}.db`);
    const store = createSqliteStore({ filename: file, logger: recordingLogger().logger });
    const before = statSync(file).size;
    const published = COMMITS_BEFORE_THREAD + 16;
    // One group per event (each awaited): enough commits to start the thread, about 100 pages.
    for (let i = 0; i < published; i++) {
      const id = `evt_checkpoint_${i}`;
      const event: EventRecord = {
        id,
        tenantId: 'tenant_a',
        type: 'run.completed',
        payload: JSON.stringify({ id, padding: 'x'.repeat(4000) }),
        createdAt: new Date(),
        traceContext: null,
      };
      await store.publishEvent(event, () => `dlv_${i}`, undefined, undefined);
    }
    await until(() => statSync(file).size > before + 80 * 4096, 'the events reach the database file');
    // A write outside the group commits (run()) wakes the thread too.
    const grouped = statSync(file).size;
    for (let i = 0; i < 60; i++) {
      await store.insertWebhook(webhookRecord({ description: `${i} ${'d'.repeat(3000)}` }));
    }
    await until(() => statSync(file).size > grouped + 50 * 4096, 'the webhooks reach the database file');
    await store.close();
  });

  it('asks SQLite whether a statement wrote only after a write outside the group commits: reads and publishes pay nothing', async () => {
    const file = join(root, `db-${++count}.db`);
    const store = createSqliteStore({ filename: file, logger: recordingLogger().logger });
    const webhook = webhookRecord({ events: ['run.completed'] });
    await store.insertWebhook(webhook);
    const publish = (i: number) => {
      const id = `evt_asks_${i}`;
      const payload = JSON.stringify({ id });
      const event: EventRecord = {
        id,
        tenantId: webhook.tenantId,
        type: 'run.completed',
        payload,
        createdAt: new Date(),
        traceContext: null,
      };
      return store.publishEvent(event, () => `dlv_asks_${i}`, undefined, undefined);
    };
    for (let i = 0; i < COMMITS_BEFORE_THREAD; i++) await publish(i);
    // The statements the connection runs from here on, by their text.
    const probe = new Database(':memory:');
    const statement = Object.getPrototypeOf(probe.prepare('SELECT 1'));
    probe.close();
    const get = statement.get;
    const asked: string[] = [];
    statement.get = function counted(this: { source: string }, ...args: unknown[]) {
      if (this.source.includes('total_changes')) asked.push(this.source);
      return get.apply(this, args);
    };
    try {
      await publish(COMMITS_BEFORE_THREAD);
      await store.getWebhook(webhook.tenantId, webhook.id);
      await store.listWebhooks(webhook.tenantId, { limit: 10 });
      await store.listDeliveries(webhook.tenantId, webhook.id, { limit: 10 });
      await store.findApiKeyByCredential('nothing', 'nothing');
      await store.ping();
      expect(asked).toEqual([]);
      await store.setWebhookStatus(webhook.tenantId, webhook.id, 'disabled', null, new Date());
      expect(asked).toEqual(['SELECT total_changes()']);
    } finally {
      statement.get = get;
      await store.close();
    }
  });

  it("never runs on a host's own connection, nor in memory: their checkpoints stay as they were", async () => {
    const file = join(root, `db-${++count}.db`);
    const hosts = openDatabase(file);
    hosts.pragma('wal_autocheckpoint = 500');
    const stores = [
      createSqliteStore({ database: hosts, logger: recordingLogger().logger }),
      createSqliteStore({ filename: ':memory:', logger: recordingLogger().logger }),
    ];
    for (const store of stores) {
      for (let i = 0; i <= COMMITS_BEFORE_THREAD; i++) {
        await store.leaseDeliveries({ now: new Date(), limit: 0, leaseMs: 60_000, leaseId: `lease_${i}` });
      }
    }
    // Neither has a thread, and the host's setting stands (a thread sets the fallback).
    for (const store of stores)
      expect((store as unknown as { checkpoints?: unknown }).checkpoints).toBeUndefined();
    expect(autocheckpoint(hosts)).toBe(500);
    for (const store of stores) await store.close();
    hosts.close();
  });

  // Built, the thread's body is a function turned to text: a bundler that rewrote its `require`
  // (as esbuild does for ESM output) would leave it a name the thread does not have.
  it.each(['module', 'commonjs'] as const)('runs from the built package (%s)', async (kind) => {
    const file = join(root, `db-${++count}.db`);
    const load =
      kind === 'module'
        ? "const { createSqliteStore } = await import('@keyhook/store-sqlite');"
        : "const { createSqliteStore } = require('@keyhook/store-sqlite');";
    const script = `(async () => {
      ${load}
      const warnings = [];
      const quiet = () => {};
      const store = createSqliteStore({ filename: ${JSON.stringify(file)},
        logger: { debug: quiet, info: quiet, error: quiet, warn: (_, m) => warnings.push(m) } });
      for (let i = 0; i < ${COMMITS_BEFORE_THREAD + 1}; i++)
        await store.leaseDeliveries({ now: new Date(), limit: 0, leaseMs: 60000, leaseId: 'lease' + i });
      while (store.checkpoints.passes === 0 && warnings.length === 0) await new Promise((r) => setTimeout(r, 5));
      await store.close();
      console.log(JSON.stringify({ passes: store.checkpoints.passes, warnings }));
    })();`;
    const { stdout } = await run(process.execPath, [`--input-type=${kind}`, '-e', script], {
      cwd: repository,
    });
    expect(JSON.parse(stdout)).toEqual({ passes: 1, warnings: [] });
  });
});
