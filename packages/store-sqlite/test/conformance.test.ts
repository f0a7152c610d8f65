import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Store } from '@keyhook/core/store';
import { runStoreConformance } from '@keyhook/store-conformance';
import Database from 'better-sqlite3';
import { afterAll } from 'vitest';
import { createSqliteStore, openDatabase } from '../src/index.js';

const root = mkdtempSync(join(tmpdir(), 'keyhook-sqlite-conformance-'));
const fileOf = new WeakMap<Store, string>();
// The first store of each file shares its connection with the harness, as a host sharing it would.
const connectionOf = new WeakMap<Store, Database.Database>();
const connections: Database.Database[] = [];
let opened = 0;

afterAll(() => {
  // The store never closes a connection it was given.
  for (const connection of connections) connection.close();
  rmSync(root, { recursive: true, force: true });
});

runStoreConformance({
  name: 'sqlite',
  create: async () => {
    const filename = join(root, `store-${++opened}.db`);
    const database = openDatabase(filename);
    const store = createSqliteStore({ database });
    fileOf.set(store, filename);
    connectionOf.set(store, database);
    connections.push(database);
    return store;
  },
  // A second app instance: its own connection to the same file.
  createPeer: async (store) => {
    const filename = fileOf.get(store);
    if (!filename) throw new Error('createPeer: store was not created by this harness');
    const peer = createSqliteStore({ filename });
    fileOf.set(peer, filename);
    return peer;
  },
  // A host's synchronous transaction on the connection the store shares.
  syncTransaction: (store, work) => {
    const database = connectionOf.get(store);
    if (!database) throw new Error('syncTransaction: store was not created by this harness');
    return database.transaction(() => work(database))();
  },
  // Written through a connection of its own, as another release or a hand edit would.
  migrations: {
    record: async (store, version, name) =>
      rawWrite(store, 'INSERT INTO keyhook_migrations (version, name, applied_at) VALUES (?, ?, ?)', [
        version,
        name,
        Date.now(),
      ]),
    setChecksum: async (store, version, checksum) =>
      rawWrite(store, 'UPDATE keyhook_migrations SET checksum = ? WHERE version = ?', [checksum, version]),
  },
  // Straight from the file, through a connection keyhook never touched.
  readKeyRow: async (store, id) => {
    const raw = new Database(fileOf.get(store)!, { readonly: true });
    try {
      const row = raw.prepare('SELECT * FROM keyhook_api_keys WHERE id = ?').get(id);
      return (row as Record<string, unknown> | undefined) ?? null;
    } finally {
      raw.close();
    }
  },
});

function rawWrite(store: Store, sql: string, params: unknown[]): void {
  const raw = new Database(fileOf.get(store)!);
  try {
    raw.prepare(sql).run(...params);
  } finally {
    raw.close();
  }
}
