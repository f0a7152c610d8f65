import path from 'node:path';
import { mountSmallDisk } from '@keyhook/testing/support';
import Database from 'better-sqlite3';
import { expect } from 'vitest';
import { fullDiskSuite } from './full-disk.js';
import { sqliteEnv } from './instances.js';

// The server's SQLite file (keyhook's tables and the data plane's) on an 8 MiB tmpfs.
fullDiskSuite('SQLite', async () => {
  const disk = mountSmallDisk('ref-full-sqlite', { sizeMiB: 8 });
  if (disk === null) return null;
  const env = sqliteEnv(disk.dataDir);
  const read = <T>(work: (db: Database.Database) => T): T => {
    const db = new Database(path.join(disk.dataDir, 'keyhook.db'), { readonly: true });
    try {
      return work(db);
    } finally {
      db.close();
    }
  };
  return {
    disk,
    env,
    eventIds: async () =>
      read((db) => db.prepare('SELECT id FROM keyhook_events ORDER BY id').pluck().all() as string[]),
    checkSound: async () => {
      expect(read((db) => db.pragma('integrity_check', { simple: true }))).toBe('ok');
      expect(read((db) => db.pragma('foreign_key_check'))).toEqual([]);
    },
    tearDown: async () => disk.remove(),
  };
});
