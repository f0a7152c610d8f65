import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from '@keyhook/core';
import type { Store } from '@keyhook/core/store';
import { createPostgresStore } from '@keyhook/store-postgres';
import { createSqliteStore, openDatabase } from '@keyhook/store-sqlite';
import type { ReferenceKeyhook } from './catalog.js';
import type { StoreConfig } from './config.js';
import type { StagingDb } from './data-plane/db.js';
import { postgresStagingDb } from './data-plane/postgres-db.js';
import { sqliteStagingDb } from './data-plane/sqlite-db.js';

/** keyhook's store, and the data plane's tables beside it in the same database. */
export interface Storage {
  store: Store;
  /** The data plane's access to the same database, publishing through `events`. */
  staging(events: ReferenceKeyhook['events']): StagingDb;
  /** Closes what this opened, the store last but one and the connection last. */
  close(): Promise<void>;
}

/** Opens the configured database; the store runs its migrations on open, logging them to `logger`. */
export async function openStorage(config: StoreConfig, logger: Logger): Promise<Storage> {
  if (config.kind === 'postgres') {
    const store = await createPostgresStore({
      connectionString: config.connectionString,
      schema: config.schema,
      statementTimeoutMs: config.statementTimeoutMs,
      idleInTransactionTimeoutMs: config.idleInTransactionTimeoutMs,
      connectionTimeoutMillis: config.connectTimeoutMs,
      logger,
    });
    let staging: StagingDb | undefined;
    return {
      store,
      staging: (events) => {
        staging = postgresStagingDb(
          {
            connectionString: config.connectionString,
            schema: config.schema,
            statementTimeoutMs: config.statementTimeoutMs,
            idleInTransactionTimeoutMs: config.idleInTransactionTimeoutMs,
            connectTimeoutMs: config.connectTimeoutMs,
          },
          events,
        );
        return staging;
      },
      close: async () => {
        await staging?.close().catch(() => {});
        await store.close();
      },
    };
  }
  // data-plane.md §7.1: `./data/keyhook.db` must work on a fresh checkout, so its directory is
  // made here.
  mkdirSync(path.dirname(config.filename), { recursive: true });
  // One connection for keyhook and the data plane, so an event joins its state change's transaction.
  const database = openDatabase(config.filename);
  let store: Store;
  try {
    store = createSqliteStore({ database, logger });
  } catch (error) {
    database.close();
    throw error;
  }
  let staging: StagingDb | undefined;
  return {
    store,
    staging: (events) => {
      staging = sqliteStagingDb(database, events, logger);
      return staging;
    },
    close: async () => {
      await staging?.close().catch(() => {});
      await store.close();
      database.close();
    },
  };
}
