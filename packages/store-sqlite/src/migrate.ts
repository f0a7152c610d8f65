import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type Database from 'better-sqlite3';

export interface Migration {
  version: number;
  /** The file name without `.sql`, e.g. `0001_api_keys`. */
  name: string;
  sql: string;
}

// One level up from this module: `src/` under tests, `dist/` once built (tsup shims import.meta.url for CJS).
export const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations/', import.meta.url));

const FILE_NAME = /^(\d{4})_([a-z0-9_]+)\.sql$/;

/** The package's migrations, in order. Versions must run 1, 2, 3… with no gap or twin. */
export function loadMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  const migrations = readdirSync(dir)
    .filter((file) => file.endsWith('.sql'))
    .sort()
    .map((file): Migration => {
      const match = FILE_NAME.exec(file);
      if (!match) throw new Error(`keyhook: migration file ${file} is not named like 0001_name.sql`);
      return {
        version: Number(match[1]),
        name: file.slice(0, -4),
        sql: readFileSync(`${dir}/${file}`, 'utf8'),
      };
    });
  migrations.forEach((migration, index) => {
    if (migration.version !== index + 1) {
      throw new Error(`keyhook: expected migration ${index + 1} in ${dir}, found ${migration.name}`);
    }
  });
  return migrations;
}

/**
 * Brings the schema up to date and returns the versions this call applied. Each migration runs
 * in its own `BEGIN IMMEDIATE` transaction: the write lock is taken first and the migrations
 * table read again inside it, so of several connections or processes opening one new file
 * exactly one applies each migration, and the others find it recorded.
 */
export function migrate(db: Database.Database, migrations: Migration[] = loadMigrations()): number[] {
  ensureMigrationsTable(db);
  const recorded = readRecorded(db);
  assertKnown(recorded, migrations);

  const isRecorded = db.prepare<[number], { version: number }>(
    'SELECT version FROM keyhook_migrations WHERE version = ?',
  );
  const record = db.prepare<[number, string, number]>(
    'INSERT INTO keyhook_migrations (version, name, applied_at) VALUES (?, ?, ?)',
  );
  const applyOnce = db.transaction((migration: Migration): boolean => {
    if (isRecorded.get(migration.version)) return false;
    db.exec(migration.sql);
    record.run(migration.version, migration.name, Date.now());
    return true;
  });

  const applied: number[] = [];
  for (const migration of migrations) {
    // Already recorded before we looked: no write lock needed, so reopening never waits on writers.
    if (recorded.has(migration.version)) continue;
    if (applyOnce.immediate(migration)) applied.push(migration.version);
  }
  return applied;
}

function ensureMigrationsTable(db: Database.Database): void {
  const exists = db
    .prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'keyhook_migrations'")
    .get();
  if (exists) return;
  db.transaction(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS keyhook_migrations (
      version    INTEGER NOT NULL PRIMARY KEY,
      name       TEXT    NOT NULL,
      applied_at INTEGER NOT NULL
    ) STRICT`);
  }).immediate();
}

function readRecorded(db: Database.Database): Map<number, string> {
  const rows = db
    .prepare<[], { version: number; name: string }>('SELECT version, name FROM keyhook_migrations')
    .all();
  return new Map(rows.map((row) => [row.version, row.name]));
}

// A schema from a newer release, or a renamed file, means this code and the database disagree.
function assertKnown(recorded: Map<number, string>, migrations: Migration[]): void {
  const known = new Map(migrations.map((m) => [m.version, m.name]));
  for (const [version, name] of recorded) {
    const expected = known.get(version);
    if (expected === undefined) {
      throw new Error(
        `keyhook: the database has migration ${name}, which this version of @keyhook/store-sqlite ` +
          `does not know (it knows up to ${migrations.length}); upgrade the package`,
      );
    }
    if (expected !== name) {
      throw new Error(`keyhook: the database recorded migration ${version} as ${name}, expected ${expected}`);
    }
  }
}
