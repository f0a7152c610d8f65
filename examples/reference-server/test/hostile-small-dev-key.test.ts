import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { POSTGRES_TEST_URL, postgresAvailable, uniqueSchemaName } from '@keyhook/testing/postgres';
import { adminToken, TEST_ADMIN_SECRET } from '@keyhook/testing/support';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { DEV_KEY_FILE, DevEncryptionKeyMissingError } from '../src/encryption-key.js';
import { buildServer } from '../src/server.js';
import { Client, listen } from './client.js';
import { dropSchema, tempDir } from './instances.js';

const withPostgres = await postgresAvailable();

/**
 * Development mode (no KEYHOOK_ENCRYPTION_KEY): the master key lives in a key file. Losing it
 * while the database holds values sealed with it used to make a new key silently, after which
 * every idempotent replay answered 500. Now only a database without sealed values gets a new key.
 */
const backends = [
  {
    name: 'SQLite',
    available: true,
    env: (dir: string): Record<string, string> => ({
      KEYHOOK_SQLITE_PATH: path.join(dir, 'db', 'keyhook.db'),
    }),
  },
  {
    name: 'Postgres',
    available: withPostgres,
    env: (_dir: string, schema = uniqueSchemaName('hostile_dev_key')): Record<string, string> => ({
      DATABASE_URL: POSTGRES_TEST_URL,
      KEYHOOK_PG_SCHEMA: schema,
    }),
  },
];

describe.each(backends)('a lost development key file ($name)', (backend) => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** A development configuration whose key file lives in a temporary directory. */
  const setUp = () => {
    const temp = tempDir();
    cleanups.push(temp.remove);
    const env: Record<string, string> = {
      KEYHOOK_ADMIN_JWT_SECRET: TEST_ADMIN_SECRET,
      ...backend.env(temp.dir),
    };
    const schema = env['KEYHOOK_PG_SCHEMA'];
    if (schema !== undefined) cleanups.push(() => dropSchema(schema));
    const config = loadConfig(env, { cwd: temp.dir });
    expect(config.production).toBe(false);
    expect(config.encryptionKey).toBeNull();
    return { config, keyFile: path.join(config.dataDir, DEV_KEY_FILE) };
  };

  const start = async (config: ReturnType<typeof loadConfig>) => {
    const server = await buildServer(config, { worker: false });
    let closed = false;
    const close = async () => {
      if (!closed) await server.close();
      closed = true;
    };
    cleanups.push(close);
    return { server, client: new Client(await listen(server.app)), close };
  };

  const createWebhook = (client: Client, admin: string) =>
    client.request(
      'POST',
      '/api/v1/admin/webhooks',
      admin,
      { url: 'http://127.0.0.1:9/hook', events: ['run.completed'] },
      { 'idempotency-key': 'lost-key' },
    );

  it.skipIf(!backend.available)(
    'refuses to start, saying what to do, and makes no new key; restoring the file brings the replay back',
    async () => {
      const { config, keyFile } = setUp();
      const admin = await adminToken();

      // A fresh database: the key is generated and kept.
      const first = await start(config);
      expect(existsSync(keyFile)).toBe(true);
      const keptKey = readFileSync(keyFile, 'utf8');
      const created = await createWebhook(first.client, admin);
      expect(created.status).toBe(201);
      await first.close();

      rmSync(keyFile);
      const refused = buildServer(config, { worker: false }).then((server) => {
        cleanups.push(() => server.close());
        return server;
      });
      await expect(refused).rejects.toBeInstanceOf(DevEncryptionKeyMissingError);
      const message = await refused.catch((error: Error) => error.message);
      expect(message).toContain(keyFile);
      expect(message).toMatch(/restore/);
      expect(message).toMatch(/KEYHOOK_ENCRYPTION_KEY/);
      expect(message).toMatch(
        config.store.kind === 'sqlite' ? /delete the development database/ : /DROP SCHEMA/,
      );
      expect(message).not.toContain(POSTGRES_TEST_URL);
      expect(existsSync(keyFile), 'no new key was generated').toBe(false);

      // The file restored: the same answer is replayed (with a new key this was a 500).
      writeFileSync(keyFile, keptKey, { mode: 0o600 });
      const again = await start(config);
      const replay = await createWebhook(again.client, admin);
      expect(replay.status).toBe(201);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.body.secret).toBe(created.body.secret);
    },
  );

  it.skipIf(!backend.available)(
    'a stored idempotent answer alone (its webhook deleted) still counts as sealed data',
    async () => {
      const { config, keyFile } = setUp();
      const admin = await adminToken();
      const first = await start(config);
      const created = await createWebhook(first.client, admin);
      expect(created.status).toBe(201);
      const deleted = await first.client.request(
        'DELETE',
        `/api/v1/admin/webhooks/${created.body.webhook.id}`,
        admin,
      );
      expect(deleted.status).toBe(204);
      await first.close();

      rmSync(keyFile);
      await expect(buildServer(config, { worker: false })).rejects.toBeInstanceOf(
        DevEncryptionKeyMissingError,
      );
      expect(existsSync(keyFile)).toBe(false);
    },
  );

  it.skipIf(!backend.available)(
    'a database without sealed values (API keys are hashed, not sealed) gets a new key file',
    async () => {
      const { config, keyFile } = setUp();
      const admin = await adminToken();
      const first = await start(config);
      const reply = await first.client.request('POST', '/api/v1/admin/keys', admin, {
        name: 'k',
        scopes: ['sources:read'],
      });
      expect(reply.status).toBe(201);
      await first.close();

      const lostKey = readFileSync(keyFile, 'utf8');
      rmSync(keyFile);
      const second = await start(config);
      expect(existsSync(keyFile)).toBe(true);
      expect(readFileSync(keyFile, 'utf8')).not.toBe(lostKey);
      // The API key still works: nothing it needs was sealed.
      const listed = await second.client.request('GET', '/api/v1/admin/keys', admin);
      expect(listed.status).toBe(200);
      expect(listed.body.data).toHaveLength(1);
    },
  );
});

describe('the process: node dist/main.js', () => {
  const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));

  /** Runs the built server in a clean environment; resolves its base URL, or its exit and stderr. */
  const launch = (env: Record<string, string>) => {
    const child = spawn(process.execPath, [MAIN], {
      env: { PATH: process.env.PATH ?? '', PORT: '0', HOST: '127.0.0.1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const outcome = new Promise<{ baseUrl?: string; code?: number | null }>((resolve) => {
      child.stdout.on('data', () => {
        const match = /listening on (http:\/\/\S+)/.exec(stdout);
        if (match) resolve({ baseUrl: match[1]! });
      });
      void exited.then((code) => resolve({ code }));
    });
    return { child, outcome, exited, stderr: () => stderr };
  };

  it('exits 1 with the plain message (no stack) when the key file is lost over a webhook', async () => {
    expect(existsSync(MAIN), 'dist/main.js is built by the global setup').toBe(true);
    const temp = tempDir();
    try {
      const env = {
        KEYHOOK_ADMIN_JWT_SECRET: TEST_ADMIN_SECRET,
        KEYHOOK_SQLITE_PATH: path.join(temp.dir, 'keyhook.db'),
      };
      const first = launch(env);
      const { baseUrl } = await first.outcome;
      expect(baseUrl, first.stderr()).toBeDefined();
      const created = await new Client(baseUrl!).request(
        'POST',
        '/api/v1/admin/webhooks',
        await adminToken(),
        { url: 'http://127.0.0.1:9/hook', events: ['run.completed'] },
      );
      expect(created.status).toBe(201);
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);

      const keyFile = path.join(temp.dir, DEV_KEY_FILE);
      rmSync(keyFile);
      const second = launch(env);
      const { code } = await second.outcome;
      if (code === undefined) second.child.kill('SIGKILL');
      expect(code).toBe(1);
      expect(second.stderr()).toContain(`The development encryption key file ${keyFile} is missing`);
      expect(second.stderr()).not.toMatch(/^\s+at /m);
      expect(existsSync(keyFile)).toBe(false);
    } finally {
      temp.remove();
    }
  });
});
