import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  type AppliedMigration,
  applyLogged,
  assertKnownMigrations,
  type Logger,
  silentLogger,
} from '@keyhook/core/store';
import type Database from 'better-sqlite3';

export interface Migration {
  version: number;
  /** The file name without `.sql`, e.g. `0001_api_keys`. */
  name: string;
  sql: string;
}

export type { AppliedMigration, PendingMigration } from '@keyhook/core/store';

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
 * The migrations this database does not record, read without writing anything (not even the
 * migrations table). Throws when the database records a migration this version does not know.
 */
export function pendingOf(db: Database.Database, migrations: Migration[] = loadMigrations()): Migration[] {
  const recorded = readRecorded(db);
  assertKnown(recorded, migrations);
  return migrations.filter((migration) => !recorded.has(migration.version));
}

/**
 * Brings the schema up to date and returns what this call applied. Each migration runs in its
 * own `BEGIN IMMEDIATE` transaction: the write lock is taken first and the migrations table read
 * again inside it, so of several connections or processes opening one new file exactly one
 * applies each migration, and the others find it recorded. Each one is logged as it starts and
 * ends, so a long rebuild (0004 holds the write lock for as long as its copy takes) is visible.
 */
export function applyMigrations(
  db: Database.Database,
  migrations: Migration[] = loadMigrations(),
  logger: Logger = silentLogger,
): AppliedMigration[] {
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

  const applied: AppliedMigration[] = [];
  for (const migration of migrations) {
    // Already recorded before we looked: no write lock needed, so reopening never waits on writers.
    if (recorded.has(migration.version)) continue;
    const done = applyLogged(
      { logger, migration, where: { filename: db.name }, appliedElsewhereBy: 'another connection' },
      () => applyOnce.immediate(migration),
    );
    if (done) applied.push(done);
  }
  return applied;
}

/** The versions this call applied; the shape the concurrency tests and their child processes compare. */
export function migrate(db: Database.Database, migrations: Migration[] = loadMigrations()): number[] {
  return applyMigrations(db, migrations).map((migration) => migration.version);
}

function ensureMigrationsTable(db: Database.Database): void {
  if (hasMigrationsTable(db)) return;
  db.transaction(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS keyhook_migrations (
      version    INTEGER NOT NULL PRIMARY KEY,
      name       TEXT    NOT NULL,
      applied_at INTEGER NOT NULL
    ) STRICT`);
  }).immediate();
}

function hasMigrationsTable(db: Database.Database): boolean {
  return (
    db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'keyhook_migrations'").get() !==
    undefined
  );
}

function readRecorded(db: Database.Database): Map<number, string> {
  if (!hasMigrationsTable(db)) return new Map();
  const rows = db
    .prepare<[], { version: number; name: string }>('SELECT version, name FROM keyhook_migrations')
    .all();
  return new Map(rows.map((row) => [row.version, row.name]));
}

// A schema from a newer release, or a renamed file, means this code and the database disagree.
function assertKnown(recorded: Map<number, string>, migrations: Migration[]): void {
  assertKnownMigrations({
    database: 'the database',
    packageName: '@keyhook/store-sqlite',
    recorded,
    shipped: migrations,
  });
}
