import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '@keyhook/core';
import { keyRecord } from '@keyhook/testing/fixtures';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqliteStore, migrate, pendingMigrations, type SqliteStoreOptions } from '../src/index.js';
import { applyMigrations, loadMigrations } from '../src/migrate.js';

const root = mkdtempSync(join(tmpdir(), 'keyhook-sqlite-migrate-'));
let count = 0;
const freshFile = () => join(root, `db-${++count}.db`);

afterAll(() => rmSync(root, { recursive: true, force: true }));

const shipped = loadMigrations();
const shippedNames = shipped.map((m) => m.name);

interface Line {
  level: 'info' | 'warn' | 'error';
  context: Record<string, unknown>;
  message: string;
}

function recordingLogger(): Logger & { lines: Line[] } {
  const lines: Line[] = [];
  const at =
    (level: Line['level']) =>
    (context: object, message: string): void => {
      lines.push({ level, context: context as Record<string, unknown>, message });
    };
  return { lines, info: at('info'), warn: at('warn'), error: at('error') };
}

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

describe('migrate()', () => {
  it('applies every migration to a new file, logs each start and end with its duration, and returns them', async () => {
    const filename = freshFile();
    const logger = recordingLogger();
    const applied = await migrate({ filename, logger });

    expect(applied.map((m) => [m.version, m.name])).toEqual(shipped.map((m) => [m.version, m.name]));
    for (const migration of applied) {
      expect(Number.isInteger(migration.durationMs)).toBe(true);
      expect(migration.durationMs).toBeGreaterThanOrEqual(0);
    }
    expect(logger.lines).toEqual(
      applied.flatMap((m) => [
        {
          level: 'info',
          context: { filename, version: m.version, name: m.name },
          message: `applying migration ${m.name}`,
        },
        {
          level: 'info',
          context: { filename, version: m.version, name: m.name, durationMs: m.durationMs },
          message: `applied migration ${m.name} in ${m.durationMs} ms`,
        },
      ]),
    );
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

  it('refuses a database migrated by a newer release, and names the file', async () => {
    const filename = freshFile();
    await migrate({ filename, logger: recordingLogger() });
    const raw = new Database(filename);
    raw.prepare('INSERT INTO keyhook_migrations VALUES (?, ?, ?)').run(999, '0999_future', Date.now());
    raw.close();
    await expect(migrate({ filename })).rejects.toThrow(
      new RegExp(`cannot migrate the SQLite database at ${filename}: .*0999_future.*upgrade the package`),
    );
    await expect(pendingMigrations({ filename })).rejects.toThrow(/0999_future.*upgrade the package/);
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
    const raw = new Database(filename);
    raw.prepare('INSERT INTO keyhook_migrations VALUES (?, ?, ?)').run(999, '0999_future', Date.now());
    raw.close();
    expect(() => createSqliteStore({ filename, migrations: 'refuse' })).toThrow(
      /0999_future.*upgrade the package/,
    );
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
    const messages = logger.lines.map((line) => line.message);
    expect(messages).toHaveLength(shipped.length * 2);
    for (const name of shippedNames) {
      expect(messages).toContain(`applying migration ${name}`);
      expect(messages.some((m) => new RegExp(`^applied migration ${name} in \\d+ ms$`).test(m))).toBe(true);
    }
    const reopened = recordingLogger();
    await createSqliteStore({ filename, logger: reopened }).close();
    expect(reopened.lines).toEqual([]);
  });
});
