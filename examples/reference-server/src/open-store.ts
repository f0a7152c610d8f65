import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Logger, Store } from '@keyhook/core';
import { createPostgresStore } from '@keyhook/store-postgres';
import { createSqliteStore } from '@keyhook/store-sqlite';
import type { StoreConfig } from './config.js';

/** Opens the configured store; both run their migrations on open. */
export async function openStore(config: StoreConfig, logger: Logger): Promise<Store> {
  if (config.kind === 'postgres') {
    return createPostgresStore({ connectionString: config.connectionString, schema: config.schema, logger });
  }
  // DESIGN.md §8: `./data/keyhook.db` must work on a fresh checkout, so its directory is made here.
  mkdirSync(path.dirname(config.filename), { recursive: true });
  return createSqliteStore({ filename: config.filename });
}
