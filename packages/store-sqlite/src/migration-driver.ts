import { fileURLToPath } from 'node:url';
import {
  type AppliedMigration,
  type Logger,
  type MigrationDriver,
  type MigrationFile,
  pendingMigrationFiles,
  type RecordedMigration,
  readMigrationFiles,
  runMigrations,
  silentLogger,
} from '@keyhook/core/store';
import type Database from 'better-sqlite3';

/** One migration file, as core's runner reads it. */
export type Migration = MigrationFile;

export type { AppliedMigration, PendingMigration } from '@keyhook/core/store';

// One level up from this module: `src/` under tests, `dist/` once built (tsup shims import.meta.url for CJS).
export const MIGRATIONS_DIR = fileURLToPath(new URL('../migrations/', import.meta.url));

/** The package's migrations, in order, each with its checksum (core's rules: readMigrationFiles). */
export function loadMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  return readMigrationFiles(dir);
}

/**
 * The migrations this database does not record, read without writing anything (not even the
 * migrations table). Throws when the database records a migration this version does not know,
 * or one whose file was edited since.
 */
export function pendingOf(db: Database.Database, migrations: Migration[] = loadMigrations()): Migration[] {
  return pendingMigrationFiles(TARGET, migrations, readRecorded(db));
}

/**
 * Brings the schema up to date and returns what this call applied, through core's runner. Each
 * migration runs in its own `BEGIN IMMEDIATE` transaction: the write lock is taken first and the
 * migrations table read again inside it, so of several connections or processes opening one new
 * file exactly one applies each migration, and the others find it recorded. Each one is logged
 * at `info` once applied, with its duration, and at `debug` as it starts, so a long rebuild (0004
 * holds the write lock for as long as its copy takes) can be seen with a logger at `debug`.
 */
export function applyMigrations(
  db: Database.Database,
  migrations: Migration[] = loadMigrations(),
  logger: Logger = silentLogger,
): AppliedMigration[] {
  return runMigrations(sqliteDriver(db), migrations, logger);
}

/** Applies what is pending and returns the versions it applied: the shape the concurrency tests and their child processes compare. */
export function appliedVersions(db: Database.Database, migrations: Migration[] = loadMigrations()): number[] {
  return applyMigrations(db, migrations).map((migration) => migration.version);
}

const TARGET = { database: 'the database', packageName: '@keyhook/store-sqlite' };

/** How SQLite executes core's runner: the write lock of `BEGIN IMMEDIATE`, and the keyhook_migrations table. */
function sqliteDriver(db: Database.Database): MigrationDriver<true> {
  const applyOnce = db.transaction((migration: Migration): boolean => {
    ensureMigrationsTable(db);
    const recorded = db.prepare('SELECT 1 FROM keyhook_migrations WHERE version = ?').get(migration.version);
    if (recorded !== undefined) return false;
    db.exec(migration.sql);
    db.prepare(
      'INSERT INTO keyhook_migrations (version, name, applied_at, checksum) VALUES (?, ?, ?, ?)',
    ).run(migration.version, migration.name, Date.now(), migration.checksum);
    return true;
  });
  const sumOnce = db.transaction((files: readonly Migration[]) => {
    ensureMigrationsTable(db);
    const sum = db.prepare<[string, number]>(
      'UPDATE keyhook_migrations SET checksum = ? WHERE version = ? AND checksum IS NULL',
    );
    for (const file of files) sum.run(file.checksum, file.version);
  });
  return {
    ...TARGET,
    where: { filename: db.name },
    appliedElsewhereBy: 'another connection',
    readRecorded: () => readRecorded(db),
    applyOne: (migration) => applyOnce.immediate(migration),
    recordChecksums: (files) => sumOnce.immediate(files),
  };
}

/** Creates the migrations table, or adds the checksum column a release before checksums lacked. */
function ensureMigrationsTable(db: Database.Database): void {
  if (!hasMigrationsTable(db)) {
    db.exec(`CREATE TABLE keyhook_migrations (
      version    INTEGER NOT NULL PRIMARY KEY,
      name       TEXT    NOT NULL,
      applied_at INTEGER NOT NULL,
      checksum   TEXT
    ) STRICT`);
  } else if (!hasChecksumColumn(db)) {
    db.exec('ALTER TABLE keyhook_migrations ADD COLUMN checksum TEXT');
  }
}

function hasMigrationsTable(db: Database.Database): boolean {
  return (
    db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'keyhook_migrations'").get() !==
    undefined
  );
}

function hasChecksumColumn(db: Database.Database): boolean {
  return db
    .prepare<[], { name: string }>('PRAGMA table_info(keyhook_migrations)')
    .all()
    .some((column) => column.name === 'checksum');
}

function readRecorded(db: Database.Database): RecordedMigration[] {
  if (!hasMigrationsTable(db)) return [];
  const checksum = hasChecksumColumn(db) ? 'checksum' : 'NULL AS checksum';
  return db.prepare<[], RecordedMigration>(`SELECT version, name, ${checksum} FROM keyhook_migrations`).all();
}
