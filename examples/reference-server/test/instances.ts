import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { POSTGRES_TEST_URL, uniqueSchemaName } from '@keyhook/testing/postgres';
import { TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY } from '@keyhook/testing/support';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { buildServer, type ReferenceServer } from '../src/server.js';
import { Client, listen } from './client.js';

export interface Running {
  server: ReferenceServer;
  client: Client;
}

/** The environment of a test instance: an operator-set admin secret, and the given store. */
export function sqliteEnv(dir: string): Record<string, string> {
  return { KEYHOOK_ADMIN_JWT_SECRET: TEST_ADMIN_SECRET, KEYHOOK_SQLITE_PATH: path.join(dir, 'keyhook.db') };
}

export function postgresEnv(schema: string): Record<string, string> {
  return {
    KEYHOOK_ADMIN_JWT_SECRET: TEST_ADMIN_SECRET,
    DATABASE_URL: POSTGRES_TEST_URL,
    KEYHOOK_PG_SCHEMA: schema,
    // Postgres has no data directory of ours to keep a development key in: the test sets one.
    KEYHOOK_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
  };
}

/** Builds one instance through the real config path and listens on a free port. */
export async function start(env: Record<string, string>): Promise<Running> {
  const server = await buildServer(loadConfig(env));
  return { server, client: await Client.forServer(await listen(server.app)) };
}

export function tempDir(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'keyhook-ref-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export async function dropSchema(schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_TEST_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

/**
 * The two databases a suite runs on: SQLite always, Postgres where a server answers (CI: always,
 * or the run fails). `label` names the suite's schemas.
 */
export function backendsFor(label: string, withPostgres: boolean) {
  return [
    {
      name: 'SQLite',
      available: true,
      setUp: async () => {
        const temp = tempDir();
        return { env: sqliteEnv(temp.dir), tearDown: async () => temp.remove() };
      },
    },
    {
      name: 'Postgres',
      available: withPostgres,
      setUp: async () => {
        const schema = uniqueSchemaName(label);
        return { env: postgresEnv(schema), tearDown: () => dropSchema(schema) };
      },
    },
  ];
}
