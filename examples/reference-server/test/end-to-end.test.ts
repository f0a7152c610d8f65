import { Writable } from 'node:stream';
import { postgresAvailable, uniqueSchemaName } from '@keyhook/testing/postgres';
import { adminToken } from '@keyhook/testing/support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { buildServer } from '../src/server.js';
import { Client, listen } from './client.js';
import { dropSchema, postgresEnv, type Running, sqliteEnv, start, tempDir } from './instances.js';

const withPostgres = await postgresAvailable();

interface Backend {
  name: string;
  available: boolean;
  setUp(): Promise<{ env: Record<string, string>; tearDown: () => Promise<void> }>;
}

const backends: Backend[] = [
  {
    name: 'SQLite',
    available: true,
    async setUp() {
      const temp = tempDir();
      return { env: sqliteEnv(temp.dir), tearDown: async () => temp.remove() };
    },
  },
  {
    name: 'Postgres',
    available: withPostgres,
    async setUp() {
      const schema = uniqueSchemaName('ref_e2e');
      return { env: postgresEnv(schema), tearDown: () => dropSchema(schema) };
    },
  },
];

describe.each(backends)('end to end over HTTP on $name', (backend) => {
  let running: Running;
  let tearDown: () => Promise<void>;
  let admin: string;

  beforeAll(async () => {
    if (!backend.available) return;
    const setup = await backend.setUp();
    tearDown = setup.tearDown;
    running = await start(setup.env);
    admin = await adminToken({ tenantId: 'acme', subject: 'ops' });
  });

  afterAll(async () => {
    if (!backend.available) return;
    await running.server.close();
    await tearDown();
  });

  it.skipIf(!backend.available)('GET /healthz answers 200 { status: ok } outside the prefix', async () => {
    const reply = await running.client.request('GET', '/healthz');
    expect(reply).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(reply.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it.skipIf(!backend.available)(
    'docs/http-api.md §3: create a key with an admin token, use it on the guarded route, revoke → key_revoked',
    async () => {
      const { client } = running;
      const created = await client.request('POST', '/api/v1/admin/keys', admin, {
        name: 'worker',
        scopes: ['sources:read'],
      });
      expect(created.status).toBe(201);
      expect(created.body.key).toMatchObject({ status: 'active', scopes: ['sources:read'] });
      const { id } = created.body.key;
      const secret: string = created.body.secret;

      const used = await client.listSources(secret);
      expect(used.status).toBe(200);
      expect(used.headers.get('x-request-id')).toMatch(/^req_/);
      expect(used.body).toEqual({ data: [], nextCursor: null });
      const whoami = await client.request('GET', '/api/v1/whoami', secret);
      expect(whoami.body.key).toEqual({
        id,
        keyLookup: created.body.key.keyLookup,
        scopes: ['sources:read'],
        expiresAt: null,
      });

      const revoked = await client.revoke(admin, id);
      expect(revoked).toMatchObject({ status: 200, body: { key: { id, status: 'revoked' } } });
      for (let i = 0; i < 3; i++) {
        const refused = await client.listSources(secret);
        expect(refused.status).toBe(401);
        expect(refused.body.error.code).toBe('key_revoked');
      }
    },
  );

  it.skipIf(!backend.available)(
    'docs/http-api.md §5.4: a key without sources:read gets 403 insufficient_scope',
    async () => {
      const { secret } = await running.client.createKey(admin, { scopes: ['items:write'] });
      const reply = await running.client.listSources(secret);
      expect(reply.status).toBe(403);
      expect(reply.body.error.code).toBe('insufficient_scope');
      expect(reply.headers.get('www-authenticate')).toContain('scope="sources:read"');
    },
  );

  it.skipIf(!backend.available)('the guard answers 401 without a key, and for a forged one', async () => {
    const missing = await running.client.request('GET', '/api/v1/sources');
    expect(missing.status).toBe(401);
    expect(missing.body.error.code).toBe('missing_credentials');
    const forged = await running.client.listSources(`sk_live_${'0'.repeat(16)}_${'0'.repeat(48)}`);
    expect(forged.status).toBe(401);
    expect(forged.body.error.code).toBe('invalid_api_key');
  });

  it.skipIf(!backend.available)('an admin token of another secret is refused', async () => {
    const wrong = await adminToken({ tenantId: 'acme', secret: 'some-other-secret-that-is-32-bytes-long!' });
    const reply = await running.client.request('GET', '/api/v1/admin/keys', wrong);
    expect(reply.status).toBe(401);
    expect(reply.body.error.code).toBe('invalid_admin_session');
  });

  it.skipIf(!backend.available)('unknown paths answer 404 in the error envelope', async () => {
    for (const path of ['/nope', '/api/v1/nope', '/api/v2/admin/keys']) {
      const reply = await running.client.request('GET', path);
      expect(reply.status).toBe(404);
      expect(reply.body).toEqual({ error: { code: 'not_found', message: 'No such route.' } });
    }
  });
});

describe('request ids on the data plane', () => {
  it('a guarded success carries the reqId of the server’s own log line, not one core minted', async () => {
    const temp = tempDir();
    const lines: { reqId?: string; res?: { statusCode: number } }[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
        done();
      },
    });
    const server = await buildServer(loadConfig(sqliteEnv(temp.dir)), { logger: { level: 'info', stream } });
    try {
      const client = await Client.forServer(await listen(server.app));
      const admin = await adminToken({ tenantId: 'acme', subject: 'ops' });
      const created = await client.request('POST', '/api/v1/admin/keys', admin, {
        name: 'reader',
        scopes: ['sources:read'],
      });
      const used = await client.listSources(created.body.secret);
      expect(used.status).toBe(200);
      const id = used.headers.get('x-request-id');
      expect(id).toMatch(/^req_/);
      const completed = lines.filter((line) => line.reqId === id && line.res?.statusCode === 200);
      expect(completed).toHaveLength(1);
    } finally {
      await server.close();
      temp.remove();
    }
  });
});
