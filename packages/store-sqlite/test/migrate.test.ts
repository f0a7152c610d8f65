import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrationChecksum } from '@keyhook/core/store';
import { keyRecord } from '@keyhook/store-conformance';
import { migrationLogLines, migrationLogProblems, recordingLogger } from '@keyhook/testing/support';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqliteStore, migrate, pendingMigrations, type SqliteStoreOptions } from '../src/index.js';
import { applyMigrations, loadMigrations } from '../src/migration-driver.js';

const root = mkdtempSync(join(tmpdir(), 'keyhook-sqlite-migrate-'));
let count = 0;
const freshFile = () => join(root, `db-${++count}.db`);

afterAll(() => rmSync(root, { recursive: true, force: true }));

const shipped = loadMigrations();
const shippedNames = shipped.map((m) => m.name);

/** A file at `version`, written the way a release of that version left it (rollback journal, no WAL). */
function databaseAt(version: number): string {
  const filename = freshFile();
  const db = new Database(filename);
  applyMigrations(db, shipped.slice(0, version));
  db.close();
  return filename;
}

/** What the file holds: its tables, its recorded migrations and its journal mode, read without writing. */
function snapshot(filename: string) {
  const raw = new Database(filename, { readonly: true });
  try {
    return {
      tables: raw.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name").pluck().all(),
      migrations: raw.prepare('SELECT * FROM keyhook_migrations ORDER BY version').all(),
      journalMode: raw.pragma('journal_mode', { simple: true }),
    };
  } finally {
    raw.close();
  }
}

/** Records a migration no release of this package ships, as a newer release would have. */
function recordFutureMigration(filename: string): void {
  const raw = new Database(filename);
  raw
    .prepare('INSERT INTO keyhook_migrations (version, name, applied_at) VALUES (?, ?, ?)')
    .run(999, '0999_future', Date.now());
  raw.close();
}

const NEWER =
  'the database has migration 0999_future, which this version of @keyhook/store-sqlite does not know ' +
  `(it knows up to ${shippedNames.at(-1)}): a newer release migrated it, so upgrade the package`;

describe('migrate()', () => {
  it('applies every migration to a new file, logs each one applied at info with its duration (its start at debug), and returns them', async () => {
    const filename = freshFile();
    const logger = recordingLogger();
    const applied = await migrate({ filename, logger });

    expect(applied.map((m) => [m.version, m.name])).toEqual(shipped.map((m) => [m.version, m.name]));
    for (const migration of applied) {
      expect(Number.isInteger(migration.durationMs)).toBe(true);
      expect(migration.durationMs).toBeGreaterThanOrEqual(0);
    }
    expect(logger.lines).toEqual(migrationLogLines(applied, { filename }, shipped));
    expect(snapshot(filename).migrations).toHaveLength(shipped.length);
  });

  it('applies nothing, and logs nothing, on a database that is up to date', async () => {
    const filename = freshFile();
    await migrate({ filename, logger: recordingLogger() });
    const before = snapshot(filename);
    const logger = recordingLogger();
    await expect(migrate({ filename, logger })).resolves.toEqual([]);
    expect(logger.lines).toEqual([]);
    expect(snapshot(filename)).toEqual(before);
  });

  it('brings a database of an older release up to date, applying only what it lacks', async () => {
    const filename = databaseAt(2);
    const applied = await migrate({ filename, logger: recordingLogger() });
    expect(applied.map((m) => m.name)).toEqual(shippedNames.slice(2));
  });

  it('runs on a connection you opened and leaves it open', async () => {
    const db = new Database(freshFile());
    const applied = await migrate({ database: db, logger: recordingLogger() });
    expect(applied).toHaveLength(shipped.length);
    expect(db.open).toBe(true);
    expect(db.prepare('SELECT count(*) FROM keyhook_migrations').pluck().get()).toBe(shipped.length);
    db.close();
  });

  it('refuses a database migrated by a newer release, and names the file once, with one keyhook: prefix', async () => {
    const filename = freshFile();
    await migrate({ filename, logger: recordingLogger() });
    recordFutureMigration(filename);
    const before = snapshot(filename);
    await expect(migrate({ filename })).rejects.toThrow(
      new Error(`keyhook: cannot migrate the SQLite database at ${filename}: ${NEWER}`),
    );
    await expect(pendingMigrations({ filename })).rejects.toThrow(
      new Error(`keyhook: cannot open the SQLite database at ${filename}: ${NEWER}`),
    );
    expect(snapshot(filename)).toEqual(before);
  });

  it('refuses a database that records a shipped version under another name, in every entry point', async () => {
    const filename = databaseAt(2);
    const raw = new Database(filename);
    raw.prepare('UPDATE keyhook_migrations SET name = ? WHERE version = 2').run('0002_renamed');
    raw.close();
    const renamed = /the database recorded migration 2 as 0002_renamed, expected 0002_webhooks/;
    await expect(migrate({ filename, logger: recordingLogger() })).rejects.toThrow(renamed);
    await expect(pendingMigrations({ filename })).rejects.toThrow(renamed);
    for (const migrations of ['apply', 'refuse'] as const) {
      expect(() => createSqliteStore({ filename, migrations })).toThrow(renamed);
    }
  });
});

describe('pendingMigrations()', () => {
  it('lists every migration for a file that does not exist, and does not create it', async () => {
    const filename = freshFile();
    await expect(pendingMigrations({ filename })).resolves.toEqual(
      shipped.map(({ version, name }) => ({ version, name })),
    );
    expect(existsSync(filename)).toBe(false);
  });

  it('lists what a database of an older release lacks, and writes nothing', async () => {
    const filename = databaseAt(2);
    const before = snapshot(filename);
    const pending = await pendingMigrations({ filename });
    expect(pending.map((m) => m.name)).toEqual(shippedNames.slice(2));
    expect(snapshot(filename)).toEqual(before);
  });

  it('lists nothing once migrate() has run', async () => {
    const filename = freshFile();
    await migrate({ filename, logger: recordingLogger() });
    await expect(pendingMigrations({ filename })).resolves.toEqual([]);
  });

  it('reads a connection you opened, even one without the migrations table, without creating it', async () => {
    const db = new Database(freshFile());
    await expect(pendingMigrations({ database: db })).resolves.toHaveLength(shipped.length);
    expect(db.prepare("SELECT count(*) FROM sqlite_schema WHERE type = 'table'").pluck().get()).toBe(0);
    db.close();
  });
});

describe("createSqliteStore({ migrations: 'refuse' })", () => {
  const refusal = (names: string[]) =>
    new RegExp(`${names.length} migrations? (is|are) pending \\(${names.join(', ')}\\).*npx keyhook migrate`);

  it('refuses a file that does not exist yet, and does not create it', () => {
    const filename = freshFile();
    expect(() => createSqliteStore({ filename, migrations: 'refuse' })).toThrow(refusal(shippedNames));
    expect(existsSync(filename)).toBe(false);
  });

  it('quotes a path with a space in the command it suggests, so it can be pasted', () => {
    const filename = join(root, `with space ${++count}.db`);
    expect(() => createSqliteStore({ filename, migrations: 'refuse' })).toThrow(
      `\`npx keyhook migrate --database '${filename}'\``,
    );
  });

  it('refuses a database that is behind, naming what is pending, and writes nothing (not even WAL)', () => {
    const filename = databaseAt(2);
    const before = snapshot(filename);
    expect(before.journalMode).toBe('delete');
    expect(() => createSqliteStore({ filename, migrations: 'refuse' })).toThrow(
      refusal(shippedNames.slice(2)),
    );
    const after = snapshot(filename);
    expect(after).toEqual(before);
    expect(after.tables).not.toContain('keyhook_deliveries');
  });

  it('refuses a connection you opened that is behind, and writes nothing through it', () => {
    const filename = databaseAt(3);
    const before = snapshot(filename);
    const db = new Database(filename);
    expect(() => createSqliteStore({ database: db, migrations: 'refuse' })).toThrow(
      refusal(shippedNames.slice(3)),
    );
    expect(db.open).toBe(true);
    db.close();
    expect(snapshot(filename)).toEqual(before);
  });

  it('opens normally once migrate() has applied everything', async () => {
    const filename = databaseAt(2);
    await migrate({ filename, logger: recordingLogger() });
    const logger = recordingLogger();
    const store = createSqliteStore({ filename, migrations: 'refuse', logger });
    await expect(store.insertApiKey(keyRecord())).resolves.toBe('inserted');
    await store.close();
    expect(logger.lines).toEqual([]);
  });

  it('still refuses a database migrated by a newer release', async () => {
    const filename = freshFile();
    await migrate({ filename, logger: recordingLogger() });
    recordFutureMigration(filename);
    expect(() => createSqliteStore({ filename, migrations: 'refuse' })).toThrow(NEWER);
  });

  it('tells an in-memory database to migrate its connection, not to run a command that cannot reach it', async () => {
    const inMemory = captureError(() => createSqliteStore({ filename: ':memory:', migrations: 'refuse' }));
    expect(inMemory.message).toMatch(
      `keyhook: cannot open the in-memory SQLite database: ${shipped.length} migrations are pending`,
    );
    expect(inMemory.message).toContain(
      'Apply them first with migrate({ database }) from @keyhook/store-sqlite on a connection you open, ' +
        'then pass that connection to createSqliteStore({ database })',
    );
    expect(inMemory.message).not.toContain('npx keyhook');

    const database = new Database(':memory:');
    const error = captureError(() => createSqliteStore({ database, migrations: 'refuse' }));
    expect(error.message).toMatch(
      /Apply them first with migrate\(\{ database \}\) from @keyhook\/store-sqlite on that connection\.$/,
    );
    expect(error.message).not.toContain('npx keyhook');
    // What it advises works: migrate() on that connection, then the store opens on it.
    await migrate({ database, logger: recordingLogger() });
    const store = createSqliteStore({ database, migrations: 'refuse' });
    await expect(store.insertApiKey(keyRecord())).resolves.toBe('inserted');
    await store.close();
    database.close();
  });

  it('refuses a value other than apply or refuse', () => {
    const options = { filename: freshFile(), migrations: 'skip' } as unknown as SqliteStoreOptions;
    expect(() => createSqliteStore(options)).toThrow(TypeError);
  });
});

describe("createSqliteStore({ migrations: 'apply' }), the default", () => {
  it('logs each migration it applies through the logger option', async () => {
    const filename = freshFile();
    const logger = recordingLogger();
    await createSqliteStore({ filename, logger }).close();
    // One line per migration at info; its start is the other, at debug.
    expect(migrationLogProblems(logger.lines, shippedNames)).toEqual([]);
    const reopened = recordingLogger();
    await createSqliteStore({ filename, logger: reopened }).close();
    expect(reopened.lines).toEqual([]);
  });
});

function captureError(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a throw');
}

describe('checksums of applied migrations', () => {
  it('a database of a release before checksums gets them at open; an edit is refused from then on', () => {
    const filename = databaseAt(shipped.length);
    const raw = new Database(filename);
    raw.exec('ALTER TABLE keyhook_migrations DROP COLUMN checksum');
    raw.close();
    createSqliteStore({ filename }).close();
    const recorded = snapshot(filename).migrations as { version: number; checksum: string }[];
    expect(recorded.map((m) => m.checksum)).toEqual(shipped.map((m) => m.checksum));

    const edited = shipped.map((m) =>
      m.version === 2 ? { ...m, sql: `${m.sql}\n-- edited`, checksum: 'x' } : m,
    );
    const db = new Database(filename);
    try {
      expect(() => applyMigrations(db, edited)).toThrow(
        /migration 0002_webhooks of @keyhook\/store-sqlite was edited after it ran on the database/,
      );
    } finally {
      db.close();
    }
  });

  it('counts a file with CRLF line endings as the same file', () => {
    // What a Windows checkout with autocrlf ships sums as the file released with LF line endings.
    expect(migrationChecksum(shipped[0]!.sql.replaceAll('\n', '\r\n'))).toBe(shipped[0]!.checksum);
    expect(migrationChecksum(`${shipped[0]!.sql} `)).not.toBe(shipped[0]!.checksum);
  });
});
