import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { POSTGRES_TEST_URL, postgresAvailable, uniqueSchemaName } from '@keyhook/testing/postgres';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { dropSchema, tempDir } from './instances.js';
import { ServerProcess } from './server-process.js';

const withPostgres = await postgresAvailable();
const KEY = randomBytes(32).toString('base64');

/** Runs `node dist/main.js` until it exits (a refusal) or listens (then stops it): its exit code and output. */
async function start(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  // A key of its own, so no development key file is written anywhere.
  const server = new ServerProcess({ KEYHOOK_ENCRYPTION_KEY: KEY, ...env });
  const listening = await server.listening().then(
    () => true,
    () => false,
  );
  const code = listening ? await server.stop() : await server.exited;
  return { code, output: server.output };
}

/** What each database's tampering looks like: its migrations tables, written as a newer release or an edit would leave them. */
interface Backend {
  name: string;
  env(): Promise<Record<string, string>>;
  /** Runs SQL on the database the server uses (its keyhook tables and its staging tables). */
  exec(sql: string): Promise<void>;
  cleanup(): Promise<void>;
}

function sqliteBackend(): Backend {
  const temp = tempDir();
  const file = path.join(temp.dir, 'keyhook.db');
  return {
    name: 'SQLite',
    env: async () => ({ KEYHOOK_SQLITE_PATH: file }),
    exec: async (sql) => {
      const db = new Database(file);
      db.exec(sql);
      db.close();
    },
    cleanup: async () => temp.remove(),
  };
}

function postgresBackend(): Backend {
  const schema = uniqueSchemaName('refusals');
  return {
    name: 'Postgres',
    env: async () => ({ DATABASE_URL: POSTGRES_TEST_URL, KEYHOOK_PG_SCHEMA: schema }),
    exec: async (sql) => {
      const client = new pg.Client({
        connectionString: POSTGRES_TEST_URL,
        options: `-c search_path=${schema}`,
      });
      await client.connect();
      try {
        await client.query(sql);
      } finally {
        await client.end();
      }
    },
    cleanup: () => dropSchema(schema),
  };
}

/**
 * The reference server refuses to start on a database whose migrations disagree with its code,
 * on SQLite and on Postgres alike, for keyhook's tables and for its own staging tables: a
 * migration a newer release applied, and a migration edited after it ran. The message says which
 * migration and why; the process exits 1 without listening.
 */
describe.each([
  { name: 'SQLite', available: true, make: sqliteBackend },
  { name: 'Postgres', available: withPostgres, make: postgresBackend },
])('migrations that disagree with the code ($name)', ({ available, make }) => {
  const made: Backend[] = [];
  afterEach(async () => {
    for (const backend of made.splice(0)) await backend.cleanup();
  });

  async function migrated(): Promise<Backend> {
    const backend = make();
    made.push(backend);
    const first = await start(await backend.env());
    expect(first.code, first.output).toBe(0);
    return backend;
  }

  it.skipIf(!available)("refuses keyhook's tables migrated by a newer release", async () => {
    const backend = await migrated();
    await backend.exec(
      backend.name === 'SQLite'
        ? "INSERT INTO keyhook_migrations (version, name, applied_at) VALUES (9999, '9999_from_the_future', 0)"
        : "INSERT INTO keyhook_migrations (version, name) VALUES (9999, 'from_the_future')",
    );
    const refused = await start(await backend.env());
    expect(refused.code).toBe(1);
    expect(refused.output).toMatch(
      /has migration 9999_from_the_future, which this version of @keyhook\/store-/,
    );
    expect(refused.output).toMatch(/knows up to \d{4}_\w+/);
    expect(refused.output).not.toMatch(/listening on/);
  });

  it.skipIf(!available)("refuses keyhook's tables when a migration was edited after it ran", async () => {
    const backend = await migrated();
    await backend.exec("UPDATE keyhook_migrations SET checksum = 'edited' WHERE version = 1");
    const refused = await start(await backend.env());
    expect(refused.code).toBe(1);
    expect(refused.output).toMatch(/migration 0001_api_keys of @keyhook\/store-\w+ was edited after it ran/);
    expect(refused.output).not.toMatch(/listening on/);
  });

  it.skipIf(!available)('refuses its staging tables, newer or edited, the same way', async () => {
    const backend = await migrated();
    await backend.exec(
      "INSERT INTO staging_migrations (version, name, applied_at, checksum) VALUES (9999, '9999_from_the_future', 0, 'x')",
    );
    const newer = await start(await backend.env());
    expect(newer.code).toBe(1);
    expect(newer.output).toMatch(
      /staging tables has migration 9999_from_the_future, which this version of @keyhook\/reference-server does not know/,
    );
    await backend.exec(
      "DELETE FROM staging_migrations WHERE version = 9999; UPDATE staging_migrations SET checksum = 'edited' WHERE version = 2",
    );
    const edited = await start(await backend.env());
    expect(edited.code).toBe(1);
    expect(edited.output).toMatch(
      /migration 0002_chunked_writes of @keyhook\/reference-server was edited after it ran/,
    );
    // Put back, it starts again.
    await backend.exec('UPDATE staging_migrations SET checksum = NULL WHERE version = 2');
    expect((await start(await backend.env())).code).toBe(0);
  });
});
