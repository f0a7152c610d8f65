import path from 'node:path';
import {
  type AppliedMigration,
  type Logger,
  type MigrationDriver,
  type MigrationFile,
  type RecordedMigration,
  readMigrationFiles,
  runMigrations,
} from '@keyhook/core/store';
import { packageDir, type StagingDb, type Tx } from './db.js';

/** The staging migrations of one dialect (`migrations/<dialect>/0001_….sql`), in order, with no gap. */
export function stagingMigrations(dialect: StagingDb['dialect']): MigrationFile[] {
  return readMigrationFiles(path.join(packageDir(import.meta.url), 'migrations', dialect));
}

/**
 * Applies the pending staging migrations through keyhook's migration runner, as the stores
 * apply theirs: the same file rules, and the same refusals (a database a newer release migrated,
 * a migration edited after it ran). Each runs in its own transaction with its record in
 * `staging_migrations`, read again under a lock every instance takes (SQLite: the write lock;
 * Postgres: a transaction advisory lock), so of several instances starting at once exactly one
 * applies each. Logged to the server's logger, as the store's are.
 */
export async function migrateStaging(db: StagingDb, logger: Logger): Promise<number[]> {
  const applied: AppliedMigration[] = await runMigrations(
    stagingDriver(db),
    stagingMigrations(db.dialect),
    logger,
  );
  return applied.map((migration) => migration.version);
}

const TABLE = 'staging_migrations';

function stagingDriver(db: StagingDb): MigrationDriver<false> {
  const underLock = <T>(work: (tx: Tx) => Promise<T>) =>
    db.transaction(async (tx) => {
      if (db.dialect === 'postgres')
        await tx.get("SELECT pg_advisory_xact_lock(hashtext('staging_migrations'))");
      await tx.exec(
        `CREATE TABLE IF NOT EXISTS ${TABLE} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL, checksum TEXT)`,
      );
      // A table of a release before checksums: the column comes first.
      if (!(await hasChecksum(tx, db.dialect)))
        await tx.exec(`ALTER TABLE ${TABLE} ADD COLUMN checksum TEXT`);
      return work(tx);
    });
  return {
    database: `the reference server's ${db.dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'} staging tables`,
    packageName: '@keyhook/reference-server',
    where: { tables: 'staging' },
    appliedElsewhereBy: 'another instance',
    readRecorded: () => db.read((tx) => readRecorded(tx, db.dialect)),
    applyOne: (migration) =>
      underLock(async (tx) => {
        if (await tx.get(`SELECT version FROM ${TABLE} WHERE version = ?`, [migration.version])) return false;
        await tx.exec(migration.sql);
        await tx.run(`INSERT INTO ${TABLE} (version, name, applied_at, checksum) VALUES (?, ?, ?, ?)`, [
          migration.version,
          migration.name,
          Date.now(),
          migration.checksum,
        ]);
        return true;
      }),
    recordChecksums: (files) =>
      underLock(async (tx) => {
        for (const file of files) {
          await tx.run(`UPDATE ${TABLE} SET checksum = ? WHERE version = ? AND checksum IS NULL`, [
            file.checksum,
            file.version,
          ]);
        }
      }),
  };
}

async function readRecorded(tx: Tx, dialect: StagingDb['dialect']): Promise<RecordedMigration[]> {
  const exists =
    dialect === 'sqlite'
      ? await tx.get(`SELECT 1 AS present FROM sqlite_schema WHERE type = 'table' AND name = '${TABLE}'`)
      : await tx.get<{ present: boolean }>(`SELECT to_regclass('${TABLE}') IS NOT NULL AS present`);
  if (dialect === 'sqlite' ? exists === undefined : !(exists as { present: boolean }).present) return [];
  const checksum = (await hasChecksum(tx, dialect)) ? 'checksum' : 'NULL AS checksum';
  const rows = await tx.all<{ version: number | string; name: string; checksum: string | null }>(
    `SELECT version, name, ${checksum} FROM ${TABLE}`,
  );
  return rows.map((row) => ({ version: Number(row.version), name: row.name, checksum: row.checksum }));
}

async function hasChecksum(tx: Tx, dialect: StagingDb['dialect']): Promise<boolean> {
  const found =
    dialect === 'sqlite'
      ? await tx.get(`SELECT 1 AS found FROM pragma_table_info('${TABLE}') WHERE name = 'checksum'`)
      : await tx.get(
          `SELECT 1 AS found FROM information_schema.columns
            WHERE table_schema = current_schema() AND table_name = '${TABLE}' AND column_name = 'checksum'`,
        );
  return found !== undefined;
}
