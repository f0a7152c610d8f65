import path from 'node:path';
import { POSTGRES_TEST_URL, postgresAvailable, uniqueSchemaName } from '@keyhook/testing/postgres';
import { adminToken, waitUntil } from '@keyhook/testing/support';
import Database from 'better-sqlite3';
import pg from 'pg';
import { expect } from 'vitest';
import { loadConfig } from '../src/config.js';
import { SCOPES } from '../src/data-plane/index.js';
import { type BuildServerOptions, buildServer } from '../src/server.js';
import type { Reply } from './client.js';
import { Client, listen } from './client.js';
import { backendsFor, dropSchema, type Running, tempDir } from './instances.js';

export const withPostgres = await postgresAvailable();

export const ALL_SCOPES = [...SCOPES];

/** The two databases the data plane runs on; Postgres only where a server answers (CI: always). */
export const backends = backendsFor('ref_data', withPostgres);

export type Backend = (typeof backends)[number];

/** One server on a fresh database, with an admin token and a key holding every scope. */
export async function startDataPlane(
  backend: Backend,
  options: BuildServerOptions & { env?: Record<string, string> } = {},
) {
  const setUp = await backend.setUp();
  const server = await buildServer(loadConfig({ ...setUp.env, ...options.env }), {
    staging: { sweepMs: 200, ...options.staging },
    ...(options.worker !== undefined && { worker: options.worker }),
  });
  const running: Running = { server, client: await Client.forServer(await listen(server.app)) };
  const admin = await adminToken({ tenantId: 'acme', subject: 'ops' });
  const { secret: key } = await running.client.createKey(admin, { name: 'all scopes', scopes: ALL_SCOPES });
  return {
    running,
    admin,
    key,
    api: new DataPlaneClient(running.client, key),
    close: async () => {
      await server.close();
      await setUp.tearDown();
    },
  };
}

/**
 * startDataPlane on a database of the test's own choosing (a fresh file, or a fresh schema),
 * with `sql` to run statements in it over a connection of the test's own: to install a failing
 * trigger, or to read what the server wrote. `close` stops the server and removes the database.
 */
export async function startDataPlaneWithSql(
  backend: Backend,
  options: Parameters<typeof startDataPlane>[1] = {},
): Promise<{
  plane: Awaited<ReturnType<typeof startDataPlane>>;
  sql: (text: string) => Promise<Record<string, unknown>[]>;
  close: () => Promise<void>;
}> {
  if (backend.name === 'SQLite') {
    const temp = tempDir();
    const file = path.join(temp.dir, 'keyhook.db');
    const plane = await startDataPlane(backend, {
      ...options,
      env: { ...options.env, KEYHOOK_SQLITE_PATH: file },
    });
    const db = new Database(file);
    return {
      plane,
      sql: async (text) => {
        const statement = db.prepare(text);
        if (statement.reader) return statement.all() as Record<string, unknown>[];
        statement.run();
        return [];
      },
      close: async () => {
        await plane.close();
        db.close();
        temp.remove();
      },
    };
  }
  const schema = uniqueSchemaName('ref_sql');
  const plane = await startDataPlane(backend, {
    ...options,
    env: { ...options.env, KEYHOOK_PG_SCHEMA: schema },
  });
  const client = new pg.Client({ connectionString: POSTGRES_TEST_URL, options: `-c search_path=${schema}` });
  await client.connect();
  return {
    plane,
    sql: async (text) => (await client.query(text)).rows,
    close: async () => {
      await plane.close();
      await client.end();
      await dropSchema(schema);
    },
  };
}

/** The data plane over real HTTP, with one API key. */
export class DataPlaneClient {
  constructor(
    readonly client: Client,
    readonly key: string,
  ) {}

  call(method: string, path: string, body?: unknown, key = this.key): Promise<Reply> {
    return this.client.request(method, `/api/v1${path}`, key, body);
  }

  async createSource(name = 'docs'): Promise<string> {
    const reply = await this.call('POST', '/sources', { name });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    return reply.body.source.id as string;
  }

  async put(sourceId: string, key: string, content: string, extra: Record<string, unknown> = {}) {
    const reply = await this.call('PUT', `/sources/${sourceId}/items/${key}`, { content, ...extra });
    expect([200, 201], JSON.stringify(reply.body)).toContain(reply.status);
    return reply.body.result as string;
  }

  async startRun(sourceId: string, body?: unknown) {
    const reply = await this.call('POST', `/sources/${sourceId}/runs`, body);
    expect(reply.status, JSON.stringify(reply.body)).toBe(202);
    return reply.body.run as { id: string; status: string };
  }

  /** Polls the run until it leaves queued/running (or applying); fails after 20 s. */
  async settled(sourceId: string, runId: string, from = ['queued', 'running', 'applying']) {
    let run: { status: string } & Record<string, unknown> = { status: 'unread' };
    await waitUntil(
      async () => {
        run = (await this.call('GET', `/sources/${sourceId}/runs/${runId}`)).body.run;
        return !from.includes(run.status);
      },
      20_000,
      () => `run ${runId} is still ${run.status}`,
    );
    return run;
  }

  async diff(sourceId: string, runId: string, change?: string) {
    const changes: { key: string; change: string }[] = [];
    let cursor: string | null = null;
    do {
      const query = new URLSearchParams({
        limit: '100',
        ...(change && { change }),
        ...(cursor && { cursor }),
      });
      const reply = await this.call('GET', `/sources/${sourceId}/runs/${runId}/diff?${query}`);
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      changes.push(...reply.body.data);
      cursor = reply.body.nextCursor;
    } while (cursor);
    return changes.map(({ key, change: kind }) => `${kind} ${key}`);
  }

  /** Starts a run, waits for its discovery, applies it and waits for the apply: the run as it ended. */
  async runAndApply(sourceId: string) {
    const run = await this.startRun(sourceId);
    await this.settled(sourceId, run.id);
    await this.apply(sourceId, run.id);
    return { id: run.id, ...(await this.settled(sourceId, run.id)) };
  }

  async apply(sourceId: string, runId: string): Promise<Reply> {
    return this.call('POST', `/sources/${sourceId}/runs/${runId}/apply`);
  }

  async activeGeneration(sourceId: string): Promise<number | null> {
    const reply = await this.call('GET', `/sources/${sourceId}/generations/active`);
    return reply.status === 404 ? null : (reply.body.generation.number as number);
  }
}
