import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { packageDir, type StagingDb } from './db.js';

const FILE_NAME = /^(\d{4})_([a-z0-9_]+)\.sql$/;

export interface StagingMigration {
  version: number;
  name: string;
  sql: string;
}

/** The staging migrations of one dialect (`migrations/<dialect>/0001_….sql`), in order, with no gap. */
export function stagingMigrations(dialect: StagingDb['dialect']): StagingMigration[] {
  const dir = path.join(packageDir(import.meta.url), 'migrations', dialect);
  const migrations = readdirSync(dir)
    .filter((file) => file.endsWith('.sql'))
    .sort()
    .map((file) => {
      const match = FILE_NAME.exec(file);
      if (!match) throw new Error(`staging: migration ${file} is not named like 0001_name.sql`);
      return {
        version: Number(match[1]),
        name: file.slice(0, -4),
        sql: readFileSync(path.join(dir, file), 'utf8'),
      };
    });
  migrations.forEach((migration, index) => {
    if (migration.version !== index + 1)
      throw new Error(`staging: expected migration ${index + 1}, found ${migration.name}`);
  });
  return migrations;
}

/**
 * Applies the pending migrations, each in its own transaction with its record in
 * `staging_migrations`. The table is read again inside the transaction, under a lock that
 * every instance takes (SQLite: the write lock of BEGIN IMMEDIATE; Postgres: a transaction
 * advisory lock), so of several instances starting at once exactly one applies each.
 */
export async function migrateStaging(db: StagingDb): Promise<number[]> {
  const applied: number[] = [];
  for (const migration of stagingMigrations(db.dialect)) {
    const ran = await db.transaction(async (tx) => {
      if (db.dialect === 'postgres')
        await tx.get("SELECT pg_advisory_xact_lock(hashtext('staging_migrations'))");
      await tx.exec(
        'CREATE TABLE IF NOT EXISTS staging_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)',
      );
      const done = await tx.get('SELECT version FROM staging_migrations WHERE version = ?', [
        migration.version,
      ]);
      if (done) return false;
      await tx.exec(migration.sql);
      await tx.run('INSERT INTO staging_migrations (version, name, applied_at) VALUES (?, ?, ?)', [
        migration.version,
        migration.name,
        Date.now(),
      ]);
      return true;
    });
    if (ran) applied.push(migration.version);
  }
  return applied;
}
